// Transformer modules: HF parameter names, save/load, load errors, KV-cache equivalence, log-probs,
// rotary frequencies, value and reward heads.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "support/error_text.h"
#include "support/run_command.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"

namespace verl::model {
namespace {

using verl::test::error_of;

HFConfig transformer_tiny(Arch arch) { return test::tiny_config(arch); }

CausalLM make(const HFConfig& c, uint64_t seed = 1, HeadKind head = HeadKind::LM) {
  CausalLM m(c, head);
  init_weights(m, seed, /*perturb=*/true);
  m->eval();
  return m;
}

std::vector<std::string> names_of(CausalLM& m) {
  std::vector<std::string> out;
  for (const auto& p : m->named_parameters()) out.push_back(p.key());
  return out;
}

TEST(Transformer, Qwen2ParameterNamesAreExactlyHFs) {
  HFConfig c = transformer_tiny(Arch::Qwen2);
  c.num_hidden_layers = 1;
  CausalLM m(c);
  // Qwen2ForCausalLM(num_hidden_layers=1).state_dict().keys() in HF transformers.
  const std::vector<std::string> hf = {
      "model.embed_tokens.weight",
      "model.layers.0.self_attn.q_proj.weight",
      "model.layers.0.self_attn.q_proj.bias",
      "model.layers.0.self_attn.k_proj.weight",
      "model.layers.0.self_attn.k_proj.bias",
      "model.layers.0.self_attn.v_proj.weight",
      "model.layers.0.self_attn.v_proj.bias",
      "model.layers.0.self_attn.o_proj.weight",
      "model.layers.0.mlp.gate_proj.weight",
      "model.layers.0.mlp.up_proj.weight",
      "model.layers.0.mlp.down_proj.weight",
      "model.layers.0.input_layernorm.weight",
      "model.layers.0.post_attention_layernorm.weight",
      "model.norm.weight",
      "lm_head.weight",
  };
  EXPECT_EQ(names_of(m), hf);
  EXPECT_EQ(m->named_buffers().size(), 0u);
}

TEST(Transformer, FamilyVariantsHaveTheirParameters) {
  HFConfig q3 = transformer_tiny(Arch::Qwen3);
  q3.tie_word_embeddings = true;
  CausalLM m3(q3);
  auto n3 = names_of(m3);
  EXPECT_NE(std::find(n3.begin(), n3.end(), "model.layers.1.self_attn.q_norm.weight"), n3.end());
  EXPECT_NE(std::find(n3.begin(), n3.end(), "model.layers.1.self_attn.k_norm.weight"), n3.end());
  EXPECT_EQ(std::find(n3.begin(), n3.end(), "lm_head.weight"), n3.end());  // tied
  EXPECT_EQ(std::find(n3.begin(), n3.end(), "model.layers.0.self_attn.q_proj.bias"), n3.end());
  EXPECT_EQ(m3->model->layer_list[0]->self_attn->q_norm->weight.size(0), 16);

  HFConfig ll = transformer_tiny(Arch::Llama);
  ll.attention_bias = true;
  ll.mlp_bias = true;
  CausalLM ml(ll);
  auto nl = names_of(ml);
  for (const char* name : {"model.layers.0.self_attn.o_proj.bias", "model.layers.0.mlp.down_proj.bias",
                           "model.layers.0.mlp.gate_proj.bias", "model.layers.0.self_attn.k_proj.bias"})
    EXPECT_NE(std::find(nl.begin(), nl.end(), name), nl.end()) << name;

  CausalLM value(transformer_tiny(Arch::Qwen2), HeadKind::Value);
  auto nv = names_of(value);
  EXPECT_EQ(nv[nv.size() - 2], "score.weight");
  EXPECT_EQ(nv.back(), "score.bias");
  EXPECT_EQ(std::find(nv.begin(), nv.end(), "lm_head.weight"), nv.end());
}

TEST(Transformer, SaveThenLoadIsBitExact) {
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    const std::string dir = test::make_temp_dir("save_load");
    CausalLM m = make(transformer_tiny(arch), 7);
    save_model(m, dir);
    EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/generation_config.json"));
    CausalLM back = load_model(dir);
    auto a = m->named_parameters(), b = back->named_parameters();
    ASSERT_EQ(a.size(), b.size());
    for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()])) << item.key();
  }
}

TEST(Transformer, Bf16CheckpointLoadsAsFp32AndShardsWork) {
  const std::string dir = test::make_temp_dir("bf16_load");
  CausalLM m = make(transformer_tiny(Arch::Qwen2), 3);
  SaveOptions opts;
  opts.dtype = torch::kBFloat16;
  opts.max_shard_bytes = 4000;
  save_model(m, dir, opts);
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(load_hf_config(dir).torch_dtype, "bfloat16");
  CausalLM back = load_model(dir);
  for (const auto& item : m->named_parameters()) {
    auto expect = item.value().to(torch::kBFloat16).to(torch::kFloat32);
    EXPECT_EQ(back->named_parameters()[item.key()].scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(back->named_parameters()[item.key()], expect)) << item.key();
  }
}

TEST(Transformer, MissingUnexpectedAndMismatchedWeightsAreErrorsNamingThem) {
  const std::string dir = test::make_temp_dir("load_errors");
  CausalLM m = make(transformer_tiny(Arch::Qwen2), 3);
  NamedTensors all;
  for (const auto& item : m->named_parameters()) all.emplace_back(item.key(), item.value());
  save_hf_config(m->config, dir);

  NamedTensors missing(all.begin(), all.end());
  missing.erase(missing.begin() + 3);
  save_tensors(dir + "/model.safetensors", missing);
  std::string err = error_of([&] { load_model(dir); });
  EXPECT_NE(err.find("missing tensor '" + all[3].first + "'"), std::string::npos) << err;

  NamedTensors extra = all;
  extra.emplace_back("model.layers.0.self_attn.rope.scale", torch::zeros({2}));
  save_tensors(dir + "/model.safetensors", extra);
  err = error_of([&] { load_model(dir); });
  EXPECT_NE(err.find("unexpected tensor 'model.layers.0.self_attn.rope.scale'"), std::string::npos) << err;

  // A config that does not match the weights.
  save_tensors(dir + "/model.safetensors", all);
  HFConfig wrong = m->config;
  wrong.intermediate_size = 64;
  save_hf_config(wrong, dir);
  err = error_of([&] { load_model(dir); });
  // Checked against the checkpoint's headers before the model is allocated, naming the config.json field.
  EXPECT_NE(err.find("intermediate_size=64, hidden_size=32 imply [64, 32] for 'model.layers.0.mlp.gate_proj.weight' "
                     "but the checkpoint has [48, 32]"),
            std::string::npos)
      << err;
  wrong = m->config;
  wrong.num_hidden_layers = 3;
  save_hf_config(wrong, dir);
  err = error_of([&] { load_model(dir); });
  EXPECT_NE(err.find("num_hidden_layers=3 but the checkpoint has 2 layers ('model.layers.2.self_attn.q_proj.weight' "
                     "is missing)"),
            std::string::npos)
      << err;
}

// Each family, and Qwen2 with a 2-token window on its second layer (the decode steps run past it).
TEST(Transformer, KVCacheDecodeEqualsFullForwardAtEveryStep) {
  HFConfig sliding = transformer_tiny(Arch::Qwen2);
  sliding.sliding_window = 2;
  sliding.sliding_layers = {false, true};
  for (const HFConfig& config :
       {transformer_tiny(Arch::Llama), transformer_tiny(Arch::Qwen2), transformer_tiny(Arch::Qwen3), sliding}) {
    torch::NoGradGuard ng;
    CausalLM m = make(config, 11);
    // Two left-padded rows: lengths 3 and 5 in a prompt of 5, then 4 decode steps.
    auto ids = torch::tensor({{39, 39, 4, 9, 2, 17, 30, 5, 6}, {1, 12, 7, 3, 22, 8, 13, 21, 2}}, torch::kInt64);
    auto mask = torch::ones_like(ids);
    mask[0][0] = 0;
    mask[0][1] = 0;
    auto pos = position_ids_from_mask(mask);
    auto full = m->forward(ids, mask, pos);
    const int64_t P = 5, L = ids.size(1);
    KVCache cache = m->make_cache(2, L);
    auto h = m->hidden_states(ids.narrow(1, 0, P), mask.narrow(1, 0, P), pos.narrow(1, 0, P), &cache);
    auto pre = m->logits(h);
    for (int64_t i = 0; i < P; ++i) {
      EXPECT_TRUE(torch::allclose(pre[1][i], full[1][i], 1e-5, 1e-6)) << i;
      if (i >= 2) EXPECT_TRUE(torch::allclose(pre[0][i], full[0][i], 1e-5, 1e-6)) << i;
    }
    for (int64_t t = P; t < L; ++t) {
      auto step = m->logits(m->hidden_states(ids.narrow(1, t, 1), mask.narrow(1, 0, t + 1), pos.narrow(1, t, 1), &cache));
      EXPECT_LT((step.squeeze(1) - full.select(1, t)).abs().max().item<float>(), 1e-5) << "step " << t;
    }
    EXPECT_EQ(cache.length, L);
  }
}

// A sliding layer's query sees the last `window` positions only: one sliding layer's logits at position t are
// those of the last position of tokens t-window+1..t alone (rotary embeddings depend on offsets only), with
// either attention kernel; without the window they are not.
TEST(Transformer, SlidingWindowLayerSeesOnlyTheLastWindowTokens) {
  torch::NoGradGuard ng;
  HFConfig c = transformer_tiny(Arch::Mistral);
  c.num_hidden_layers = 1;
  CausalLM full_attention = make(c, 21);
  c.sliding_window = 3;
  c.sliding_layers = {true};
  CausalLM m = make(c, 21);
  const auto ids = torch::tensor({{5, 17, 2, 30, 11, 8, 23, 4}}, torch::kInt64);
  const auto ones = [](const torch::Tensor& t) { return torch::ones_like(t); };
  for (auto kernel : {AttentionKernel::Sdpa, AttentionKernel::Eager}) {
    set_attention_kernel(m, kernel);
    const auto out = m->forward(ids, ones(ids), position_ids_from_mask(ones(ids)));
    const auto without = full_attention->forward(ids, ones(ids), position_ids_from_mask(ones(ids)));
    for (int64_t t = 0; t < ids.size(1); ++t) {
      const int64_t first = std::max<int64_t>(0, t - 2);
      const auto window = ids.narrow(1, first, t - first + 1);
      const auto alone = m->forward(window, ones(window), position_ids_from_mask(ones(window)));
      EXPECT_LT((out[0][t] - alone[0][t - first]).abs().max().item<float>(), 1e-5) << "position " << t;
      const float differs = (out[0][t] - without[0][t]).abs().max().item<float>();
      if (t < 3) EXPECT_LT(differs, 1e-5) << "position " << t;
      else EXPECT_GT(differs, 1e-3) << "position " << t;
    }
    // The window counts a row's tokens, not its columns: masked columns inside the row (a multi-turn cache's gap
    // between turns) change nothing.
    const auto gapped = torch::tensor({{5, 17, 2, 39, 39, 30, 11, 8, 23, 4}}, torch::kInt64);
    const auto gap_mask = torch::tensor({{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}}, torch::kInt64);
    const auto with_gap = m->forward(gapped, gap_mask, position_ids_from_mask(gap_mask));
    EXPECT_LT((with_gap.narrow(1, 5, 5) - out.narrow(1, 3, 5)).abs().max().item<float>(), 1e-5);
  }
}

TEST(Transformer, LeftPaddingDoesNotChangeValidLogits) {
  torch::NoGradGuard ng;
  CausalLM m = make(transformer_tiny(Arch::Qwen2), 5);
  auto row = torch::tensor({{3, 14, 15, 9, 26}}, torch::kInt64);
  auto alone = m->forward(row, torch::ones_like(row), position_ids_from_mask(torch::ones_like(row)));
  auto padded = torch::tensor({{39, 39, 39, 3, 14, 15, 9, 26}}, torch::kInt64);
  auto mask = torch::tensor({{0, 0, 0, 1, 1, 1, 1, 1}}, torch::kInt64);
  auto out = m->forward(padded, mask, position_ids_from_mask(mask));
  EXPECT_LT((out.narrow(1, 3, 5) - alone).abs().max().item<float>(), 1e-5);
  EXPECT_TRUE(torch::equal(position_ids_from_mask(mask), torch::tensor({{0, 0, 0, 0, 1, 2, 3, 4}}, torch::kInt64)));
}

TEST(Transformer, LogProbsAndEntropyMatchHandValues) {
  auto logits = torch::tensor({{0.0, std::log(2.0), std::log(5.0)}}, torch::kFloat32);
  auto tok = torch::tensor({2}, torch::kInt64);
  EXPECT_NEAR(token_log_probs(logits, tok, 1.0).item<float>(), std::log(5.0 / 8.0), 1e-6);
  const double s2 = std::sqrt(2.0), s5 = std::sqrt(5.0);
  EXPECT_NEAR(token_log_probs(logits, tok, 2.0).item<float>(), std::log(s5 / (1 + s2 + s5)), 1e-6);
  const double h = -(1.0 / 8 * std::log(1.0 / 8) + 2.0 / 8 * std::log(2.0 / 8) + 5.0 / 8 * std::log(5.0 / 8));
  EXPECT_NEAR(entropy_from_logits(logits).item<float>(), h, 1e-6);
  // bf16 logits are promoted to fp32 before the softmax.
  EXPECT_EQ(token_log_probs(logits.to(torch::kBFloat16), tok).scalar_type(), torch::kFloat32);
}

TEST(Transformer, ResponseLogProbsReadPositionsPMinus1) {
  torch::NoGradGuard ng;
  CausalLM m = make(transformer_tiny(Arch::Llama), 2);
  auto ids = torch::tensor({{39, 5, 6, 7, 8, 9, 10}, {1, 2, 3, 4, 5, 39, 39}}, torch::kInt64);
  auto mask = torch::tensor({{0, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 0, 0}}, torch::kInt64);
  auto pos = position_ids_from_mask(mask);
  const int64_t R = 3;
  auto responses = ids.narrow(1, 4, R);
  auto out = response_log_probs(m, ids, mask, pos, responses, 0.7, true);
  auto full = m->forward(ids, mask, pos) / 0.7;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < R; ++t) {
      auto lp = torch::log_softmax(full[b][3 + t], -1)[responses[b][t].item<int64_t>()].item<float>();
      EXPECT_NEAR(out.log_probs[b][t].item<float>(), lp, 1e-5);
      EXPECT_NEAR(out.entropy[b][t].item<float>(), entropy_from_logits(full[b][3 + t]).item<float>(), 1e-5);
    }
}

TEST(Transformer, RopeInvFreqLlama3AndLinearMatchHandValues) {
  HFConfig c = transformer_tiny(Arch::Llama);
  c.num_attention_heads = 2;
  c.num_key_value_heads = 2;
  c.head_dim = 4;  // base inv_freq = [1, 1/sqrt(10000)] = [1, 0.01]
  auto base = rope_inv_freq(c);
  EXPECT_NEAR(base[0].item<float>(), 1.0, 1e-7);
  EXPECT_NEAR(base[1].item<float>(), 0.01, 1e-9);
  c.rope_scaling.type = RopeScaling::Type::Linear;
  c.rope_scaling.factor = 4;
  EXPECT_NEAR(rope_inv_freq(c)[1].item<float>(), 0.0025, 1e-9);
  c.rope_scaling.type = RopeScaling::Type::Llama3;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position_embeddings = 16;  // wavelens 4 (high) and 16 (low)
  auto f = rope_inv_freq(c);
  // wavelen 2*pi is between 4 and 16: smoothed; wavelen 200*pi > 16: divided by the factor.
  const double s = (16.0 / (2 * M_PI) - 1.0) / 3.0;
  EXPECT_NEAR(f[0].item<float>(), (1 - s) / 8.0 + s, 1e-6);
  EXPECT_NEAR(f[1].item<float>(), 0.01 / 8.0, 1e-9);
}

TEST(Transformer, ValueHeadFromLmCheckpointIsFreshAndSeeded) {
  const std::string dir = test::make_temp_dir("value_head");
  CausalLM lm = make(transformer_tiny(Arch::Qwen2), 4);
  save_model(lm, dir);
  LoadOptions o;
  o.head = HeadKind::Value;
  o.value_head_seed = 42;
  CausalLM v1 = load_model(dir, o), v2 = load_model(dir, o);
  o.value_head_seed = 43;
  CausalLM v3 = load_model(dir, o);
  EXPECT_TRUE(torch::equal(v1->score->weight, v2->score->weight));
  EXPECT_FALSE(torch::equal(v1->score->weight, v3->score->weight));
  EXPECT_EQ(v1->score->bias.item<float>(), 0.0f);
  EXPECT_NEAR(v1->score->weight.std().item<float>(), 0.02, 0.01);
  EXPECT_TRUE(torch::equal(v1->model->embed_tokens->weight, lm->model->embed_tokens->weight));
  // The trunk is shared; the critic reads values at positions P-1 .. P+R-2, the reward model at the last
  // valid token.
  torch::NoGradGuard ng;
  auto ids = torch::tensor({{39, 5, 6, 7, 8}, {1, 2, 3, 39, 39}}, torch::kInt64);
  auto mask = torch::tensor({{0, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}, torch::kInt64);
  auto pos = position_ids_from_mask(mask);
  auto all = v1->values(v1->hidden_states(ids, mask, pos));
  EXPECT_EQ(all.sizes(), (std::vector<int64_t>{2, 5}));
  auto vals = response_values(v1, ids, mask, pos, 2);
  EXPECT_TRUE(torch::allclose(vals, all.narrow(1, 2, 2)));
  auto scores = reward_scores(v1, ids, mask, pos);
  EXPECT_NEAR(scores[0].item<float>(), all[0][4].item<float>(), 1e-6);
  EXPECT_NEAR(scores[1].item<float>(), all[1][2].item<float>(), 1e-6);
  // Save a value model and load it back with its head.
  const std::string vdir = test::make_temp_dir("value_head_saved");
  save_model(v1, vdir);
  HFConfig saved = load_hf_config(vdir);
  EXPECT_TRUE(saved.token_classification);
  EXPECT_NE(test::read_file(vdir + "/config.json").find("\"Qwen2ForTokenClassification\""), std::string::npos);
  CausalLM v4 = load_model(vdir, o);
  EXPECT_TRUE(torch::equal(v4->score->weight, v1->score->weight));
}

}  // namespace
}  // namespace verl::model

namespace verl::model {
namespace {

TEST(Transformer, LogProbsAreDifferentiableForEveryParameter) {
  HFConfig c = transformer_tiny(Arch::Qwen3);
  CausalLM m = make(c, 9);
  m->train();
  auto ids = torch::tensor({{39, 5, 6, 7, 8}, {1, 2, 3, 4, 6}}, torch::kInt64);
  auto mask = torch::tensor({{0, 1, 1, 1, 1}, {1, 1, 1, 1, 1}}, torch::kInt64);
  auto out = response_log_probs(m, ids, mask, position_ids_from_mask(mask), ids.narrow(1, 3, 2), 1.0, true);
  (out.log_probs.sum() + out.entropy.sum()).backward();
  for (const auto& p : m->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.0f) << p.key();
  }
}

// SDPA (the default) against the eager reference, for logits, KV-cache prefill and every parameter's gradient:
// left padding (fully masked query rows), grouped-query heads, all three families, fp32 and bf16 (fp64 runs
// eager). Tolerances, relative to the largest magnitude: fp32 1e-5 (two summation orders of the same fp32
// softmax; measured up to ~1e-6); bf16 forward 2e-2 (eager rounds the fp32 softmax to bf16 before the second
// matmul, SDPA does not: a few bf16 ulps).
TEST(Transformer, SdpaEqualsEagerAttentionForwardPrefillAndGradients) {
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      const bool bf16 = dtype == torch::kBFloat16;
      const double tolerance = bf16 ? 2e-2 : 1e-5;
      CausalLM m = make(transformer_tiny(arch), 21);
      m->to(dtype);
      auto ids = torch::tensor({{39, 39, 4, 9, 2, 17, 30}, {1, 12, 7, 3, 22, 8, 13}}, torch::kInt64);
      auto mask = torch::ones_like(ids);
      mask[0][0] = 0;
      mask[0][1] = 0;
      auto pos = position_ids_from_mask(mask);
      auto run = [&](AttentionKernel kernel) {
        set_attention_kernel(m, kernel);
        m->zero_grad();
        auto out = response_log_probs(m, ids, mask, pos, ids.narrow(1, 4, 3), 0.7, true);
        std::vector<torch::Tensor> grads;
        if (!bf16) {
          (out.log_probs.sum() + 0.1 * out.entropy.sum()).backward();
          for (const auto& p : m->parameters()) grads.push_back(p.grad().clone());
        }
        torch::NoGradGuard ng;
        KVCache cache = m->make_cache(2, ids.size(1));
        auto prefill = m->logits(m->hidden_states(ids, mask, pos, &cache));
        return std::make_tuple(m->forward(ids, mask, pos).to(torch::kFloat32), prefill.to(torch::kFloat32),
                               out.log_probs.detach(), grads);
      };
      auto [eager_logits, eager_prefill, eager_lp, eager_grads] = run(AttentionKernel::Eager);
      auto [sdpa_logits, sdpa_prefill, sdpa_lp, sdpa_grads] = run(AttentionKernel::Sdpa);
      auto close = [&](const torch::Tensor& a, const torch::Tensor& b) {
        return (a - b).abs().max().item<double>() <= tolerance * std::max(1.0, b.abs().max().item<double>());
      };
      const std::string what = std::string(arch == Arch::Llama ? "llama" : arch == Arch::Qwen2 ? "qwen2" : "qwen3") +
                               (bf16 ? " bf16" : " fp32");
      EXPECT_TRUE(close(sdpa_logits, eager_logits)) << what;
      EXPECT_TRUE(close(sdpa_prefill, eager_prefill)) << what;
      EXPECT_TRUE(close(sdpa_lp, eager_lp)) << what;
      ASSERT_EQ(sdpa_grads.size(), eager_grads.size());
      for (size_t i = 0; i < sdpa_grads.size(); ++i) {
        EXPECT_TRUE(close(sdpa_grads[i], eager_grads[i]))
            << what << " grad " << i << ": " << (sdpa_grads[i] - eager_grads[i]).abs().max().item<double>();
      }
    }
  }
}

}  // namespace
}  // namespace verl::model
