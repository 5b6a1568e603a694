// Plausibility of config.json sizes: upper bounds per field, the parameter-count estimate behind the memory
// check (against the parameters a model actually has), and the check itself.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/error_text.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/hf_config.h"
#include "verl/model/model_size.h"
#include "verl/model/transformer.h"

namespace verl::model {
namespace {

std::string config_error(const nlohmann::json& overrides = nlohmann::json::object()) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}}, {"vocab_size", 40},         {"hidden_size", 32},
                      {"intermediate_size", 48},                {"num_hidden_layers", 2},  {"num_attention_heads", 4},
                      {"num_key_value_heads", 2},                {"head_dim", 8}};
  j.update(overrides);
  try {
    parse_hf_config_text(j.dump(), "m/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HFConfigLimits, EachSizeHasAnUpperBound) {
  EXPECT_EQ(config_error(), "");
  const struct {
    const char* field;
    int64_t limit;
  } cases[] = {{"vocab_size", 4194304},       {"hidden_size", 65536},        {"intermediate_size", 262144},
               {"num_hidden_layers", 1024},   {"num_attention_heads", 1024}, {"num_key_value_heads", 1024},
               {"head_dim", 4096},            {"max_position_embeddings", 33554432}};
  for (const auto& c : cases) {
    const std::string e = config_error(nlohmann::json::object({{c.field, c.limit + 1}}));
    EXPECT_NE(e.find(std::string("m/config.json: ") + c.field + "=" + std::to_string(c.limit + 1) +
                     " is beyond any real model (limit " + std::to_string(c.limit) + ")"),
              std::string::npos)
        << e;
  }
  EXPECT_NE(config_error(nlohmann::json::object({{"num_hidden_layers", 400000000000LL}}))
                .find("num_hidden_layers=400000000000"),
            std::string::npos);
}

TEST(HFConfigLimits, HiddenSizeMustDivideIntoHeads) {
  EXPECT_NE(config_error(nlohmann::json::object({{"hidden_size", 30}, {"head_dim", nullptr}}))
                .find("hidden_size (30) must be a multiple of num_attention_heads (4)"),
            std::string::npos);
}

TEST(HFConfigLimits, DeeplyNestedConfigJson) {
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  try {
    parse_hf_config_text("{\"x\": " + deep + "}", "m/config.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m/config.json: arrays/objects nested deeper than 256 levels"),
              std::string::npos)
        << e.what();
  }
}

TEST(HFConfigLimits, ParameterCountIsWhatTheModelAllocates) {
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    for (int variant = 0; variant < 3; ++variant) {
      HFConfig c = test::tiny_config(arch);
      if (variant == 1) c.tie_word_embeddings = true;
      if (variant == 2 && arch != Arch::Qwen2) c.attention_bias = true;
      if (variant == 2 && arch == Arch::Llama) c.mlp_bias = true;
      CausalLM model(c, HeadKind::LM);
      int64_t numel = 0;
      for (const auto& p : model->parameters()) numel += p.numel();
      EXPECT_EQ(parameter_count(c), static_cast<double>(numel)) << arch_class_name(arch) << " variant " << variant;
    }
  }
}

TEST(HFConfigLimits, ModelLargerThanMemoryIsRefusedBeforeAllocation) {
  HFConfig c = test::tiny_config(Arch::Llama);
  EXPECT_NO_THROW(check_model_fits_in_memory(c, "m/config.json"));
  c.hidden_size = 65536;
  c.intermediate_size = 262144;
  c.num_hidden_layers = 1024;
  c.num_attention_heads = 512;
  c.num_key_value_heads = 512;
  c.head_dim = 128;  // ~7e13 parameters: 2.5e5 GiB in fp32
  try {
    check_model_fits_in_memory(c, "m/config.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("m/config.json: the model needs 2"), std::string::npos) << m;
    EXPECT_NE(m.find("GiB for its fp32 weights (num_hidden_layers=1024, hidden_size=65536, intermediate_size=262144"),
              std::string::npos) << m;
    EXPECT_NE(m.find("(limit: physical RAM)"), std::string::npos) << m;
  }
}

// Qwen3-235B-A22B's shapes: 235B parameters, nearly all in its 94 x 128 experts, which the error names.
TEST(HFConfigLimits, MixtureOfExpertsSizeCountsEveryExpert) {
  HFConfig c = test::tiny_config(Arch::Qwen3);
  c.moe.enabled = true;
  c.moe.num_experts = 128;
  c.moe.num_experts_per_tok = 8;
  c.moe.moe_intermediate_size = 1536;
  c.hidden_size = 4096;
  c.intermediate_size = 12288;
  c.num_hidden_layers = 94;
  c.num_attention_heads = 64;
  c.num_key_value_heads = 4;
  c.head_dim = 128;
  c.vocab_size = 151936;
  EXPECT_NEAR(parameter_count(c) / 1e9, 235.1, 0.1);
  const std::string m = test::error_of([&] { check_model_fits_in_memory(c, "m/config.json"); });
  EXPECT_NE(m.find("intermediate_size=12288, num_experts=128, moe_intermediate_size=1536, vocab_size=151936"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace verl::model
