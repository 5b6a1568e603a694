// The fixed-shape decode step (DecoderImpl::decode_step_static, what rollout/cuda_graph_decode.h captures on a
// GPU) against the general cached forward, on the CPU: the same hidden states step after step, with left
// padding, over the whole cache capacity masked by the bias.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "support/tiny_model.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"
#include "verl/rollout/cuda_graph_decode.h"
#include "verl/rollout/generator.h"

namespace verl::test {
namespace {

TEST(DecodeStepStatic, EqualsTheGeneralCachedStep) {
  torch::NoGradGuard no_grad;
  for (auto arch : {model::Arch::Llama, model::Arch::Qwen2, model::Arch::Qwen3}) {
    model::CausalLM m(tiny_config(arch));
    model::init_weights(m, 3, /*perturb=*/true);
    m->eval();
    const int64_t B = 2, P = 4, R = 5;
    auto ids = torch::tensor({{0, 0, 5, 9}, {3, 7, 11, 2}}, torch::kInt64);
    auto mask = torch::tensor({{0, 0, 1, 1}, {1, 1, 1, 1}}, torch::kInt64);
    auto pos = model::position_ids_from_mask(mask);
    // Two caches with the same prefill: one stepped by the general path, one by the static step.
    model::KVCache general = m->make_cache(B, P + R), fixed = m->make_cache(B, P + R);
    m->hidden_states(ids, mask, pos, &general);
    m->hidden_states(ids, mask, pos, &fixed);
    auto bias = torch::full({B, P + R}, static_cast<double>(std::numeric_limits<float>::lowest()));
    bias.narrow(1, 0, P).masked_fill_(mask.to(torch::kBool), 0.0);
    fixed.write_index = torch::zeros({1}, torch::kInt64);
    auto next_pos = pos.narrow(1, P - 1, 1) + 1;
    auto full_mask = torch::cat({mask, torch::ones({B, R}, torch::kInt64)}, 1);
    auto tokens = torch::tensor({{4}, {8}}, torch::kInt64);
    for (int64_t t = 0; t < R; ++t) {
      auto want = m->hidden_states(tokens, full_mask.narrow(1, 0, P + t + 1), next_pos, &general);
      bias.narrow(1, P + t, 1).zero_();
      fixed.write_index.fill_(P + t);
      auto got = m->model->decode_step_static(tokens, next_pos, bias, fixed);
      EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << static_cast<int>(arch) << " step " << t << ": "
                                                          << (got - want).abs().max().item<double>();
      tokens = (tokens * 5 + 3) % 40;
      next_pos = next_pos + 1;
    }
  }
}

// rollout::generate with the fixed-shape step (VERL_CUDA_GRAPHS=force: what the CUDA graph replays, run eagerly
// here) against the general step: the same tokens and log-probs, greedy and sampled, with rows stopping at eos.
TEST(DecodeStepStatic, GenerateGivesTheGeneralStepsTokens) {
  torch::NoGradGuard no_grad;
  for (auto arch : {model::Arch::Llama, model::Arch::Qwen2, model::Arch::Qwen3}) {
    for (bool sample : {false, true}) {
      model::CausalLM m(tiny_config(arch));
      model::init_weights(m, 17, /*perturb=*/true);
      m->eval();
      auto [prompts, mask] = rollout::left_pad({{3, 14, 15}, {9, 26, 5, 35, 8}, {7}}, 39);
      rollout::SamplingParams params;
      params.do_sample = sample;
      params.temperature = 0.9;
      params.n = 2;
      params.max_response_length = 12;
      params.eos_token_ids = {38, 11};
      params.pad_token_id = 39;
      params.calculate_log_probs = true;
      params.seed = 3;
      auto general = rollout::generate(m, prompts, mask, params);
      setenv("VERL_CUDA_GRAPHS", "force", 1);
      auto fixed = rollout::generate(m, prompts, mask, params);
      unsetenv("VERL_CUDA_GRAPHS");
      EXPECT_TRUE(torch::equal(fixed.responses, general.responses)) << static_cast<int>(arch) << " " << sample;
      EXPECT_TRUE(torch::equal(fixed.response_mask, general.response_mask)) << static_cast<int>(arch) << " " << sample;
      EXPECT_TRUE(torch::allclose(fixed.rollout_log_probs, general.rollout_log_probs, 1e-5, 1e-5))
          << static_cast<int>(arch) << " " << sample;
    }
  }
}

// A model with sliding layers needs two masks, which the fixed-shape step's one bias cannot hold: the graph step
// steps aside (even when forced) and generation runs the general step, past the window.
TEST(DecodeStepStatic, SlidingWindowModelsDecodeWithTheGeneralStep) {
  torch::NoGradGuard no_grad;
  model::HFConfig c = tiny_config(model::Arch::Mistral);
  c.sliding_window = 3;
  c.sliding_layers = {true, true};
  model::CausalLM m(c);
  model::init_weights(m, 17, /*perturb=*/true);
  m->eval();
  auto [prompts, mask] = rollout::left_pad({{3, 14, 15}, {9, 26, 5, 35, 8}}, 39);
  rollout::SamplingParams params;
  params.do_sample = false;
  params.max_response_length = 8;
  params.pad_token_id = 39;
  params.calculate_log_probs = true;
  auto general = rollout::generate(m, prompts, mask, params);
  setenv("VERL_CUDA_GRAPHS", "force", 1);
  EXPECT_FALSE(rollout::cuda_graph_decode_applies(m, torch::Device(torch::kCPU)));
  auto forced = rollout::generate(m, prompts, mask, params);
  unsetenv("VERL_CUDA_GRAPHS");
  EXPECT_TRUE(torch::equal(forced.responses, general.responses));
  c.sliding_layers.clear();
  model::CausalLM full(c);
  setenv("VERL_CUDA_GRAPHS", "force", 1);
  EXPECT_TRUE(rollout::cuda_graph_decode_applies(full, torch::Device(torch::kCPU)));
  unsetenv("VERL_CUDA_GRAPHS");
}

}  // namespace
}  // namespace verl::test
