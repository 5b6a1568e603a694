// config.json parsing for the supported families, and the error for others.
#include <gtest/gtest.h>

#include <cmath>

#include "verl/common/error.h"
#include "verl/model/hf_config.h"

namespace verl::model {
namespace {

std::string hf_config_error_of(const std::string& text) {
  try {
    parse_hf_config_text(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HFConfig, ParsesLlama3WithGqaAndRopeScaling) {
  // The fields of Llama-3.2-1B's config.json.
  auto c = parse_hf_config_text(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
    "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256})");
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{128001});
  EXPECT_FALSE(c.qkv_bias());
  EXPECT_FALSE(c.qk_norm());
}

TEST(HFConfig, ParsesQwen2WithQkvBiasAndEosList) {
  // Qwen2.5-0.5B-Instruct's shape; head_dim absent -> hidden / heads.
  auto c = parse_hf_config_text(R"({
    "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643, "eos_token_id": [151645, 151643],
    "hidden_act": "silu", "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
    "max_window_layers": 21, "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
  EXPECT_EQ(c.arch, Arch::Qwen2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_TRUE(c.qkv_bias());
  EXPECT_FALSE(c.o_bias());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
}

TEST(HFConfig, ParsesQwen3WithQkNormAndExplicitHeadDim) {
  auto c = parse_hf_config_text(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "head_dim": 128, "hidden_size": 1024,
    "intermediate_size": 3072, "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "tie_word_embeddings": true,
    "vocab_size": 151936, "eos_token_id": 151645})");
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_EQ(c.head_dim, 128);  // not hidden / heads = 64
  EXPECT_TRUE(c.qk_norm());
  EXPECT_FALSE(c.qkv_bias());
  EXPECT_EQ(c.rope_theta, 1000000.0);
}

TEST(HFConfig, LinearRopeScalingAndLlamaBiases) {
  auto c = parse_hf_config_text(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 1, "vocab_size": 10,
    "attention_bias": true, "mlp_bias": true, "rope_scaling": {"type": "linear", "factor": 2.0}})");
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Linear);
  EXPECT_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_EQ(c.num_key_value_heads, 4);  // defaults to num_attention_heads
  EXPECT_TRUE(c.qkv_bias());
  EXPECT_TRUE(c.o_bias());
  EXPECT_TRUE(c.mlp_bias);
}

TEST(HFConfig, UnsupportedArchitectureListsSupportedOnes) {
  std::string err = hf_config_error_of(R"({"architectures": ["GemmaForCausalLM"], "hidden_size": 8})");
  EXPECT_NE(err.find("unsupported architecture 'GemmaForCausalLM'"), std::string::npos) << err;
  EXPECT_NE(err.find("LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM"), std::string::npos)
      << err;
}

// Mistral as transformers' MistralConfig reads it: Llama's layers without biases (attention_bias / mlp_bias are not
// read), 131072 positions and a 4096-token window on every layer by default, null for none. Written back with its
// window and no bias fields.
TEST(HFConfig, MistralReadsAsTransformers) {
  const std::string base = R"({"architectures": ["MistralForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, )";
  const HFConfig c = parse_hf_config_text(base + R"("sliding_window": null, "attention_bias": true,
    "mlp_bias": true, "rope_theta": 1000000.0, "max_position_embeddings": 32768})");
  EXPECT_EQ(c.arch, Arch::Mistral);
  EXPECT_FALSE(c.attention_bias || c.mlp_bias || c.qkv_bias() || c.o_bias() || c.qk_norm());
  EXPECT_EQ(c.rope_theta, 1000000.0);
  EXPECT_TRUE(c.sliding_layers.empty());
  const std::string written = hf_config_to_json(c);
  EXPECT_NE(written.find("\"sliding_window\": null"), std::string::npos) << written;
  EXPECT_EQ(written.find("attention_bias"), std::string::npos) << written;
  EXPECT_EQ(hf_config_to_json(parse_hf_config_text(written)), written);
  EXPECT_EQ(parse_hf_config_text(R"({"model_type": "mistral", "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "sliding_window": null})")
                .arch,
            Arch::Mistral);

  // yarn's original length defaults to Mistral's default max_position_embeddings.
  EXPECT_EQ(parse_hf_config_text(base + R"("sliding_window": null, "rope_scaling": {"rope_type": "yarn",
    "factor": 2.0}})")
                .rope_scaling.original_max_position_embeddings,
            131072);

  // Mistral 7B v0.1: a 4096-token window on every layer (transformers' default when the field is absent).
  for (const std::string fields :
       {R"("sliding_window": 4096, "max_position_embeddings": 32768})", R"("max_position_embeddings": 32768})"}) {
    const HFConfig v01 = parse_hf_config_text(base + fields);
    EXPECT_EQ(v01.sliding_window, 4096) << fields;
    EXPECT_EQ(v01.sliding_layers, (std::vector<bool>{true, true})) << fields;
    const std::string text = hf_config_to_json(v01);
    EXPECT_NE(text.find("\"sliding_window\": 4096"), std::string::npos) << text;
    EXPECT_EQ(hf_config_to_json(parse_hf_config_text(text)), text);
  }
  const std::string err = hf_config_error_of(base + R"("sliding_window": 0})");
  EXPECT_NE(err.find("sliding_window must be a positive number of positions or null, got 0"), std::string::npos)
      << err;
}

// Qwen2 / Qwen3 as their transformers configs resolve the window: none unless use_sliding_window; then the layers
// from max_window_layers (default 28) on, or those layer_types names "sliding_attention". Written back with
// layer_types, which transformers reads first.
TEST(HFConfig, QwenSlidingWindowLayers) {
  const std::string base = R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, )";
  EXPECT_TRUE(parse_hf_config_text(base + R"("use_sliding_window": false, "sliding_window": 16,
    "max_window_layers": 0})").sliding_layers.empty());
  const HFConfig c = parse_hf_config_text(base + R"("use_sliding_window": true, "sliding_window": 16,
    "max_window_layers": 2})");
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, false, true, true}));
  EXPECT_TRUE(c.layer_slides(3));
  EXPECT_FALSE(c.layer_slides(1));
  const std::string written = hf_config_to_json(c);
  EXPECT_NE(written.find("\"use_sliding_window\": true"), std::string::npos) << written;
  EXPECT_EQ(parse_hf_config_text(written).sliding_layers, c.sliding_layers);
  EXPECT_EQ(hf_config_to_json(parse_hf_config_text(written)), written);
  // max_window_layers at 28 by default: no layer of 4 slides.
  EXPECT_TRUE(parse_hf_config_text(base + R"("use_sliding_window": true})").sliding_layers.empty());
  const HFConfig q3 = parse_hf_config_text(std::string(R"({"architectures": ["Qwen3ForCausalLM"],)") +
                                           base.substr(base.find(',') + 1) + R"("use_sliding_window": true,
    "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"]})");
  EXPECT_EQ(q3.sliding_window, 4096);
  EXPECT_EQ(q3.sliding_layers, (std::vector<bool>{false, true, false, true}));

  std::string err = hf_config_error_of(base + R"("use_sliding_window": true, "layer_types": ["full_attention"]})");
  EXPECT_NE(err.find("layer_types must list one entry per layer (4)"), std::string::npos) << err;
  err = hf_config_error_of(base + R"("use_sliding_window": true, "layer_types": ["full_attention",
    "chunked_attention", "full_attention", "full_attention"]})");
  EXPECT_NE(err.find("layer_types[1] is \"chunked_attention\""), std::string::npos) << err;
  err = hf_config_error_of(base + R"("use_sliding_window": true, "sliding_window": -4})");
  EXPECT_NE(err.find("sliding_window must be a positive number"), std::string::npos) << err;
}

TEST(HFConfig, BadFieldsAreClearErrors) {
  const std::string base = R"("architectures": ["Qwen2ForCausalLM"], "intermediate_size": 128,
    "num_hidden_layers": 1, "vocab_size": 10)";
  EXPECT_NE(
      hf_config_error_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3})")
          .find("multiple of num_key_value_heads"),
      std::string::npos);
  EXPECT_NE(hf_config_error_of("{" + base + R"(, "num_attention_heads": 4})")
                .find("missing required integer \"hidden_size\""),
            std::string::npos);
  EXPECT_NE(hf_config_error_of("{" + base + R"(, "hidden_size": "big", "num_attention_heads": 4})")
                .find("must be an integer"),
            std::string::npos);
  EXPECT_NE(hf_config_error_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4, "hidden_act": "gelu"})")
                .find("hidden_act"),
            std::string::npos);
  EXPECT_NE(hf_config_error_of(
                "{" + base +
                R"(, "hidden_size": 64, "num_attention_heads": 4, "rope_scaling": {"type": "dynamic", "factor": 2}})")
                .find("'dynamic' is not supported"),
            std::string::npos);
  EXPECT_NE(hf_config_error_of("not json").find("not valid JSON"), std::string::npos);
}

TEST(HFConfig, WritesWhatItReads) {
  HFConfig c;
  c.arch = Arch::Llama;
  c.vocab_size = 100;
  c.hidden_size = 48;
  c.intermediate_size = 96;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 6;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.rope_theta = 500000.0;
  c.rope_scaling.type = RopeScaling::Type::Llama3;
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.original_max_position_embeddings = 1024;
  c.attention_bias = true;
  c.mlp_bias = true;
  c.tie_word_embeddings = true;
  c.rms_norm_eps = 1e-5;
  c.eos_token_ids = {7, 9};
  c.pad_token_id = 3;
  auto d = parse_hf_config_text(hf_config_to_json(c));
  EXPECT_EQ(hf_config_to_json(d), hf_config_to_json(c));
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_EQ(d.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(d.rope_scaling.original_max_position_embeddings, 1024);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(d.pad_token_id, 3);
  EXPECT_TRUE(d.mlp_bias && d.attention_bias && d.tie_word_embeddings);
}

// yarn read as transformers 5.9's _compute_yarn_parameters reads it (the frequencies and logits are compared with
// transformers by oracle.ModelOracle): a null factor is max_position_embeddings / original; the attention factor
// comes from the factor alone or from the mscale pair unless given; 0 betas are the defaults; a top-level
// original_max_position_embeddings wins. The written config keeps the resolved numbers.
TEST(HFConfig, YarnRopeResolvesAsTransformers) {
  const std::string base = R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 131072, )";
  const HFConfig c = parse_hf_config_text(
      base + R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})");
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Yarn);
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1.0);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(c.rope_scaling.beta_slow, 1.0);
  EXPECT_TRUE(c.rope_scaling.truncate);

  const HFConfig implicit = parse_hf_config_text(base + R"("rope_scaling": {"rope_type": "yarn", "factor": null,
    "original_max_position_embeddings": 16384, "beta_fast": 0, "beta_slow": 2, "truncate": false}})");
  EXPECT_EQ(implicit.rope_scaling.factor, 8.0);
  EXPECT_EQ(implicit.rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(implicit.rope_scaling.beta_slow, 2.0);
  EXPECT_FALSE(implicit.rope_scaling.truncate);

  const HFConfig mscale = parse_hf_config_text(base + R"("rope_scaling": {"rope_type": "yarn", "factor": 8,
    "mscale": 1.0, "mscale_all_dim": 0.5, "original_max_position_embeddings": 4096}})");
  EXPECT_DOUBLE_EQ(mscale.rope_scaling.attention_factor, (0.1 * std::log(8.0) + 1) / (0.05 * std::log(8.0) + 1));
  const HFConfig round_trip = parse_hf_config_text(hf_config_to_json(mscale));
  EXPECT_EQ(hf_config_to_json(round_trip), hf_config_to_json(mscale));
  EXPECT_EQ(round_trip.rope_scaling.attention_factor, mscale.rope_scaling.attention_factor);

  const HFConfig given = parse_hf_config_text(base + R"("original_max_position_embeddings": 8192, "rope_scaling":
    {"rope_type": "yarn", "factor": 2, "attention_factor": 1.5, "original_max_position_embeddings": 4096}})");
  EXPECT_EQ(given.rope_scaling.attention_factor, 1.5);
  EXPECT_EQ(given.rope_scaling.original_max_position_embeddings, 8192);

  EXPECT_NE(hf_config_error_of(base + R"("rope_scaling": {"rope_type": "yarn", "factor": 2, "beta_fast": -1}})")
                .find("yarn's beta_fast and beta_slow must be positive"),
            std::string::npos);
  EXPECT_NE(hf_config_error_of(base + R"("rope_scaling": {"rope_type": "yarn", "factor": 2, "mscale": "big"}})")
                .find("\"mscale\" must be a number"),
            std::string::npos);
}

}  // namespace
}  // namespace verl::model
