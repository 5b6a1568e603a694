// The rollout engine against full forwards (greedy tokens, log-probs), verl's output layout, stop rules,
// n samples, reproducibility, and chi-square tests of the sampler on a fixed distribution.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "verl/common/error.h"
#include "verl/model/decode_kernels.h"
#include "verl/model/transformer.h"
#include "verl/rollout/generator.h"

namespace verl::rollout {
namespace {

using model::CausalLM;

model::HFConfig tiny_config(model::Arch arch) {
  model::HFConfig c;
  c.arch = arch;
  c.vocab_size = 24;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.initializer_range = 0.3;  // peaked distributions, so argmax is not a near tie
  return c;
}

CausalLM generator_tiny_model(const model::HFConfig& c, uint64_t seed) {
  CausalLM m(c);
  model::init_weights(m, seed, true);
  m->eval();
  return m;
}

CausalLM generator_tiny_model(model::Arch arch, uint64_t seed) { return generator_tiny_model(tiny_config(arch), seed); }

const std::vector<std::vector<int64_t>> kPrompts = {{3, 4, 5}, {7}, {1, 2, 3, 4, 5, 6}, {9, 10}};
constexpr int64_t kGeneratorPad = 23;

// Greedy continuation of one unpadded row by repeated full forwards.
std::vector<int64_t> generator_reference_greedy(CausalLM& m, std::vector<int64_t> ids, int64_t steps,
                                                const std::vector<int64_t>& eos) {
  torch::NoGradGuard ng;
  std::vector<int64_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    auto t = torch::tensor(ids, torch::kInt64).unsqueeze(0);
    auto mask = torch::ones_like(t);
    auto logits = m->forward(t, mask, model::position_ids_from_mask(mask));
    int64_t next = logits[0][-1].argmax().item<int64_t>();
    out.push_back(next);
    ids.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
  }
  return out;
}

// Greedy generation of kPrompts, 7 tokens each, against repeated full forwards.
void expect_greedy_equals_full_forwards(CausalLM& m) {
  auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
  SamplingParams p;
  p.do_sample = false;
  p.max_response_length = 7;
  p.pad_token_id = kGeneratorPad;
  auto out = generate(m, prompts, mask, p);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto ref = generator_reference_greedy(m, kPrompts[i], 7, {});
    for (int64_t t = 0; t < 7; ++t) EXPECT_EQ(out.responses[i][t].item<int64_t>(), ref[t]) << "row " << i << " t " << t;
  }
}

TEST(Generator, GreedyEqualsStepwiseArgmaxOfFullForwards) {
  for (auto arch : {model::Arch::Llama, model::Arch::Qwen2, model::Arch::Qwen3}) {
    CausalLM m = generator_tiny_model(arch, 21);
    expect_greedy_equals_full_forwards(m);
  }
}

// The decode loop packs its weights in place (model/decode_kernels.h): with every width a multiple of 32 and the
// LM head tied to the input embedding, all of them are packed (on an AVX-512F CPU), the tokens are still those of
// full forwards, and the model's parameters are bit-identical afterwards.
TEST(Generator, PackedDecodeWeightsGiveFullForwardTokensAndAreRestored) {
  auto c = tiny_config(model::Arch::Qwen2);
  c.vocab_size = 64;
  c.intermediate_size = 64;
  c.num_key_value_heads = 4;
  c.tie_word_embeddings = true;
  CausalLM m = generator_tiny_model(c, 5);
  {
    torch::NoGradGuard no_grad;
    auto cache = m->make_cache(1, 8);
    const auto weights = model::fused_decode_weights(m, cache);
    EXPECT_EQ(weights.size(), 7u * 2 + 1);
    model::DecodeWeightPacking packing(weights);
    if (packing.size() > 0) EXPECT_EQ(packing.size(), weights.size());  // 0: no AVX-512F here
  }
  std::vector<torch::Tensor> before;
  for (const auto& p : m->parameters()) before.push_back(p.detach().clone());
  expect_greedy_equals_full_forwards(m);  // the reference's full forwards also run after generate's unpacking
  const auto params = m->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], before[i])) << "parameter " << i;
}

TEST(Generator, StopsAtEosDropsFinishedRowsAndKeepsVerlLayout) {
  CausalLM m = generator_tiny_model(model::Arch::Qwen2, 5);
  auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
  const int64_t R = 8, P = prompts.size(1);
  SamplingParams p;
  p.do_sample = false;
  p.max_response_length = R;
  p.pad_token_id = kGeneratorPad;
  auto free_run = generate(m, prompts, mask, p);
  // Pick as eos the second token of row 0, so at least one row stops early.
  const int64_t eos = free_run.responses[0][1].item<int64_t>();
  p.eos_token_ids = {eos, 1000};
  p.calculate_log_probs = true;
  auto out = generate(m, prompts, mask, p);
  const int64_t B = kPrompts.size();
  ASSERT_EQ(out.responses.sizes(), (std::vector<int64_t>{B, R}));
  ASSERT_EQ(out.input_ids.sizes(), (std::vector<int64_t>{B, P + R}));
  bool some_early = false;
  for (int64_t i = 0; i < B; ++i) {
    auto ref = generator_reference_greedy(m, kPrompts[i], R, {eos});
    const int64_t len = ref.size();
    some_early |= len < R;
    EXPECT_EQ(out.response_lengths[i], len);
    for (int64_t t = 0; t < R; ++t) {
      EXPECT_EQ(out.responses[i][t].item<int64_t>(), t < len ? ref[t] : kGeneratorPad) << i << "," << t;
      EXPECT_EQ(out.response_mask[i][t].item<int64_t>(), t < len ? 1 : 0);
      EXPECT_EQ(out.attention_mask[i][P + t].item<int64_t>(), t < len ? 1 : 0);
      // Positions continue past the last prompt position, also over padding.
      EXPECT_EQ(out.position_ids[i][P + t].item<int64_t>(), static_cast<int64_t>(kPrompts[i].size()) + t);
    }
    const int64_t plen = kPrompts[i].size();
    for (int64_t j = 0; j < P; ++j) {
      EXPECT_EQ(out.attention_mask[i][j].item<int64_t>(), j >= P - plen ? 1 : 0);
      EXPECT_EQ(out.prompts[i][j].item<int64_t>(), j >= P - plen ? kPrompts[i][j - (P - plen)] : kGeneratorPad);
    }
  }
  EXPECT_TRUE(some_early);
  EXPECT_TRUE(torch::equal(out.input_ids, torch::cat({out.prompts, out.responses}, 1)));
  // KV-cache log-probs equal those of a full forward over verl's layout (positions P-1+t).
  torch::NoGradGuard ng;
  auto lp = model::response_log_probs(m, out.input_ids, out.attention_mask, out.position_ids, out.responses, 1.0, false);
  auto diff = ((lp.log_probs - out.rollout_log_probs) * out.response_mask.to(torch::kFloat32)).abs().max();
  EXPECT_LT(diff.item<float>(), 1e-5);
  EXPECT_EQ((out.rollout_log_probs * (1 - out.response_mask).to(torch::kFloat32)).abs().sum().item<float>(), 0.0f);

  p.ignore_eos = true;
  auto all = generate(m, prompts, mask, p);
  for (int64_t i = 0; i < B; ++i) EXPECT_EQ(all.response_lengths[i], R);
  EXPECT_EQ(all.response_mask.sum().item<int64_t>(), B * R);
}

// rollout.gpu_memory_utilization's passes: greedy generation in passes of 1 and 3 prompts (n = 2, rows stopping at
// eos) gives the one-pass batch exactly, field by field; the pass size is what the budget holds, and a budget
// below one prompt's cache is an error naming the key.
TEST(Generator, PassesOfFewerPromptsGiveTheOnePassBatch) {
  CausalLM m = generator_tiny_model(model::Arch::Qwen2, 5);
  auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
  SamplingParams p;
  p.do_sample = false;
  p.n = 2;
  p.max_response_length = 6;
  p.pad_token_id = kGeneratorPad;
  p.calculate_log_probs = true;
  p.eos_token_ids = {generate(m, prompts, mask, p).responses[0][1].item<int64_t>()};
  const GenerationOutput whole = generate(m, prompts, mask, p);
  for (int64_t per_pass : {1, 3}) {
    const GenerationOutput parts = generate_in_passes(m, prompts, mask, p, per_pass);
    EXPECT_TRUE(torch::equal(parts.prompts, whole.prompts)) << per_pass;
    EXPECT_TRUE(torch::equal(parts.responses, whole.responses)) << per_pass;
    EXPECT_TRUE(torch::equal(parts.attention_mask, whole.attention_mask)) << per_pass;
    EXPECT_TRUE(torch::equal(parts.position_ids, whole.position_ids)) << per_pass;
    EXPECT_TRUE(torch::equal(parts.response_mask, whole.response_mask)) << per_pass;
    // Fewer rows take other GEMM blocking: a few float32 ulps apart on some CPUs (1.1e-6 on a 2-core AMD EPYC).
    EXPECT_TRUE(torch::allclose(parts.rollout_log_probs, whole.rollout_log_probs, 1e-5, 1e-6)) << per_pass;
    EXPECT_EQ(parts.response_lengths, whole.response_lengths) << per_pass;
  }
  EXPECT_LT(whole.response_mask.sum().item<int64_t>(), 8 * 6);  // some row stopped at eos
  // fp32 cache: 2 layers x (K, V) x 2 heads x 8 dims x 4 bytes = 256 bytes a position; a prompt is n x (P + R).
  const int64_t per_prompt = 2 * (prompts.size(1) + 6) * 256;
  EXPECT_EQ(prompts_per_pass(m, prompts.size(1), p, 3 * per_prompt + 1), 3);
  try {
    prompts_per_pass(m, prompts.size(1), p, per_prompt - 1);
    FAIL() << "a budget below one prompt must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_memory_utilization"), std::string::npos) << e.what();
  }
}

// Prompts padded to a wider max_prompt_length (five more columns of padding in every row) generate the same
// responses and log-probs: the columns no prompt uses stay out of the prefill and the KV cache, and the outputs keep
// the wider layout.
TEST(Generator, SharedLeftPaddingChangesNothingButTheLayout) {
  CausalLM m = generator_tiny_model(model::Arch::Qwen2, 5);
  for (bool sample : {false, true}) {
    SamplingParams p;
    p.do_sample = sample;
    p.n = 2;
    p.max_response_length = 6;
    p.pad_token_id = kGeneratorPad;
    p.calculate_log_probs = true;
    p.seed = 11;
    auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
    auto [wide_prompts, wide_mask] = left_pad(kPrompts, kGeneratorPad, prompts.size(1) + 5);
    const GenerationOutput tight = generate(m, prompts, mask, p);
    const GenerationOutput wide = generate(m, wide_prompts, wide_mask, p);
    EXPECT_TRUE(torch::equal(wide.responses, tight.responses)) << sample;
    EXPECT_TRUE(torch::allclose(wide.rollout_log_probs, tight.rollout_log_probs, 0, 1e-6)) << sample;
    EXPECT_EQ(wide.response_lengths, tight.response_lengths) << sample;
    ASSERT_EQ(wide.prompts.size(1), prompts.size(1) + 5);
    EXPECT_TRUE(torch::equal(wide.prompts.narrow(1, 5, prompts.size(1)), tight.prompts)) << sample;
    EXPECT_TRUE(torch::all(wide.prompts.narrow(1, 0, 5) == kGeneratorPad).item<bool>()) << sample;
    EXPECT_TRUE(torch::equal(wide.attention_mask.narrow(1, 5, tight.attention_mask.size(1)), tight.attention_mask));
    EXPECT_EQ(wide.attention_mask.narrow(1, 0, 5).sum().item<int64_t>(), 0);
    EXPECT_TRUE(torch::equal(wide.position_ids.narrow(1, 5, tight.position_ids.size(1)), tight.position_ids));
  }
}

// rollout.max_num_seqs (vLLM's concurrent sequences): at most that many rows (prompts x n) decode at once. With n = 2
// and max_num_seqs = 3, generate() runs passes of one prompt: greedy tokens equal the one-pass batch, and sampled
// tokens equal generate_in_passes with one prompt per pass (its own draw order).
TEST(Generator, MaxNumSeqsBoundsTheRowsOfAPass) {
  CausalLM m = generator_tiny_model(model::Arch::Qwen2, 5);
  auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
  SamplingParams p;
  p.n = 2;
  p.max_response_length = 6;
  p.pad_token_id = kGeneratorPad;
  p.seed = 7;
  p.do_sample = false;
  const GenerationOutput greedy_whole = generate(m, prompts, mask, p);
  SamplingParams capped = p;
  capped.max_num_seqs = 3;
  EXPECT_TRUE(torch::equal(generate(m, prompts, mask, capped).responses, greedy_whole.responses));
  p.do_sample = true;
  capped.do_sample = true;
  const GenerationOutput sampled = generate(m, prompts, mask, capped);
  EXPECT_TRUE(torch::equal(sampled.responses, generate_in_passes(m, prompts, mask, p, 1).responses));
  capped.max_num_seqs = 1000;  // all rows fit: one pass
  EXPECT_TRUE(torch::equal(generate(m, prompts, mask, capped).responses, generate(m, prompts, mask, p).responses));
}

TEST(Generator, SampledTokensWithLogProbsMatchFullForward) {
  CausalLM m = generator_tiny_model(model::Arch::Llama, 8);
  auto [prompts, mask] = left_pad(kPrompts, kGeneratorPad);
  SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 10;
  p.top_p = 0.9;
  p.n = 3;
  p.max_response_length = 6;
  p.eos_token_ids = {2, 5};
  p.pad_token_id = kGeneratorPad;
  p.calculate_log_probs = true;
  p.seed = 1234;
  auto a = generate(m, prompts, mask, p);
  auto b = generate(m, prompts, mask, p);
  EXPECT_TRUE(torch::equal(a.responses, b.responses));  // seeded and reproducible
  p.seed = 99;
  auto c = generate(m, prompts, mask, p);
  EXPECT_FALSE(torch::equal(a.responses, c.responses));
  const int64_t N = kPrompts.size() * 3;
  ASSERT_EQ(a.prompts.size(0), N);
  for (int64_t i = 0; i < N; ++i) EXPECT_TRUE(torch::equal(a.prompts[i], prompts[i / 3]));  // [x0]*n + [x1]*n ...
  torch::NoGradGuard ng;
  auto lp = model::response_log_probs(m, a.input_ids, a.attention_mask, a.position_ids, a.responses, 0.8, false);
  auto diff = ((lp.log_probs - a.rollout_log_probs) * a.response_mask.to(torch::kFloat32)).abs().max();
  EXPECT_LT(diff.item<float>(), 1e-5);
  // A token after eos never appears: the mask ends at the first eos.
  for (int64_t i = 0; i < N; ++i)
    for (int64_t t = 0; t + 1 < a.response_lengths[i]; ++t) {
      int64_t tok = a.responses[i][t].item<int64_t>();
      EXPECT_TRUE(tok != 2 && tok != 5);
    }
}

// Pearson chi-square of counts against probabilities (only categories with p > 0).
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs, int64_t n) {
  double x2 = 0;
  for (size_t i = 0; i < probs.size(); ++i)
    if (probs[i] > 0) x2 += std::pow(counts[i] - n * probs[i], 2) / (n * probs[i]);
  return x2;
}

std::vector<int64_t> draw(const torch::Tensor& probs_row, int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto probs = probs_row.unsqueeze(0).expand({n, probs_row.size(0)}).contiguous();
  auto idx = sample_from_probs(probs, gen);
  std::vector<int64_t> counts(probs_row.size(0), 0);
  auto acc = idx.accessor<int64_t, 1>();
  for (int64_t i = 0; i < n; ++i) counts[acc[i]]++;
  return counts;
}

TEST(Generator, SamplerMatchesFixedDistributionsChiSquare) {
  const std::vector<double> p = {0.4, 0.25, 0.15, 0.12, 0.08};
  std::vector<float> logp;
  for (double v : p) logp.push_back(static_cast<float>(std::log(v)));
  auto logits = torch::tensor(logp).unsqueeze(0);
  const int64_t n = 40000;
  // Critical values of chi-square at p = 0.001: df 1: 10.83, df 2: 13.82, df 4: 18.47.
  struct Case {
    double temperature;
    int64_t top_k;
    double top_p;
    std::vector<double> expect;
    double critical;
  };
  double z = 0;
  for (double v : p) z += std::sqrt(v);
  std::vector<double> t2;
  for (double v : p) t2.push_back(std::sqrt(v) / z);  // temperature 2: p^(1/2), renormalised
  const std::vector<Case> cases = {
      {1.0, -1, 1.0, p, 18.47},
      {2.0, -1, 1.0, t2, 18.47},
      {1.0, 3, 1.0, {0.4 / 0.8, 0.25 / 0.8, 0.15 / 0.8, 0, 0}, 13.82},
      // top_p 0.6: 0.4 (mass before 0), 0.25 (mass before 0.4 < 0.6) kept; 0.15 has 0.65 before: dropped.
      {1.0, -1, 0.6, {0.4 / 0.65, 0.25 / 0.65, 0, 0, 0}, 10.83},
      {1.0, -1, 0.3, {1, 0, 0, 0, 0}, 0},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    auto probs = sampling_probs(logits, cases[c].temperature, cases[c].top_k, cases[c].top_p)[0];
    for (size_t i = 0; i < p.size(); ++i)
      EXPECT_NEAR(probs[i].item<float>(), cases[c].expect[i], 1e-6) << "case " << c << " token " << i;
    auto counts = draw(probs, n, 17 + c);
    for (size_t i = 0; i < p.size(); ++i)
      if (cases[c].expect[i] == 0) EXPECT_EQ(counts[i], 0) << "case " << c << " token " << i;
    if (cases[c].critical > 0) EXPECT_LT(chi_square(counts, cases[c].expect, n), cases[c].critical) << "case " << c;
  }
  // The test can fail: counts drawn from p judged against the temperature-2 distribution.
  auto counts = draw(sampling_probs(logits, 1.0, -1, 1.0)[0], n, 5);
  EXPECT_GT(chi_square(counts, t2, n), 18.47);
}

TEST(Generator, BadParametersAreErrors) {
  CausalLM m = generator_tiny_model(model::Arch::Qwen2, 1);
  auto [prompts, mask] = left_pad({{1, 2}, {}}, kGeneratorPad);
  SamplingParams p;
  EXPECT_THROW(generate(m, prompts, mask, p), Error);  // an empty prompt
  auto [pr, mk] = left_pad({{1, 2}}, kGeneratorPad);
  p.n = 0;
  EXPECT_THROW(generate(m, pr, mk, p), Error);
  p.n = 1;
  p.top_p = 0;
  EXPECT_THROW(generate(m, pr, mk, p), Error);
}

}  // namespace
}  // namespace verl::rollout

namespace verl::rollout {
namespace {

TEST(Generator, SamplingParamsFromVerlRolloutConfig) {
  config::RolloutConfig r;
  r.sampling.temperature = 0.7;
  r.sampling.top_k = 20;
  r.sampling.top_p = 0.95;
  r.sampling.n = 4;
  r.sampling.do_sample = true;
  r.val_kwargs.temperature = 0.0;
  r.val_kwargs.n = 1;
  r.val_kwargs.do_sample = false;
  r.response_length = 64;
  r.calculate_log_probs = true;
  auto p = sampling_params_from_config(r, false, {2, 3}, 0, 7);
  EXPECT_EQ(p.temperature, 0.7);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_EQ(p.n, 4);
  EXPECT_FALSE(p.greedy());
  EXPECT_EQ(p.max_response_length, 64);
  EXPECT_TRUE(p.calculate_log_probs);
  EXPECT_EQ(p.eos_token_ids, (std::vector<int64_t>{2, 3}));
  auto v = sampling_params_from_config(r, true, {2}, 0, 7);
  EXPECT_TRUE(v.greedy());
  EXPECT_EQ(v.n, 1);
}

}  // namespace
}  // namespace verl::rollout
