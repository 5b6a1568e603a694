// Helpers for the worker tests: tiny model folders, configs from overrides, and a fixed PPO batch in verl's
// layout (left-padded prompts, right-padded responses).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "support/actor_fixture.h"
#include "support/run_command.h"
#include "verl/config/config_loader.h"
#include "verl/model/model_tools.h"
#include "verl/model/weights.h"
#include "verl/protocol/data_proto.h"

namespace verl::test {

// make_tiny_model's LM (Qwen2, hidden 32, vocab 64) in a fresh temp folder `name`.
inline std::string make_lm_folder(const std::string& name, uint64_t seed = 3, int64_t layers = 2) {
  return make_tiny_model(make_temp_dir(name), seed, layers);
}

// A value-model folder (score.weight / score.bias present) built from an LM folder with a seeded head.
inline std::string make_value_folder(const std::string& lm_dir, const std::string& name, uint64_t head_seed = 11) {
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  o.value_head_seed = head_seed;
  model::CausalLM m = model::load_model(lm_dir, o);
  const std::string dir = make_temp_dir(name);
  model::save_model(m, dir);
  return dir;
}

// Override lists joined: `with(base, {"key=value"})`.
inline std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::shared_ptr<const config::PPOConfig> ppo_config(const std::vector<std::string>& overrides) {
  config::ConfigArgs args;
  args.overrides = overrides;
  return std::make_shared<const config::PPOConfig>(config::load_config(args).ppo);
}

// B rows, prompts of P tokens left-padded, responses of R tokens right-padded (pad id 0); every row has at
// least one prompt and one response token. values / returns are seeded normal numbers.
inline protocol::DataProto make_ppo_batch(int64_t B, int64_t P, int64_t R, uint64_t seed, int64_t vocab = 64) {
  auto gen = at::detail::createCPUGenerator(seed);
  torch::Tensor prompts = torch::randint(1, vocab, {B, P}, gen, torch::kInt64);
  torch::Tensor responses = torch::randint(1, vocab, {B, R}, gen, torch::kInt64);
  torch::Tensor prompt_mask = torch::zeros({B, P}, torch::kInt64);
  torch::Tensor response_mask = torch::zeros({B, R}, torch::kInt64);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t p = 1 + (i * 3 + 1) % P;  // 1..P prompt tokens
    const int64_t r = 1 + (i * 5 + 2) % R;  // 1..R response tokens
    prompt_mask[i].narrow(0, P - p, p).fill_(1);
    response_mask[i].narrow(0, 0, r).fill_(1);
  }
  prompts = prompts * prompt_mask;
  responses = responses * response_mask;
  torch::Tensor attention_mask = torch::cat({prompt_mask, response_mask}, 1);
  torch::Tensor input_ids = torch::cat({prompts, responses}, 1);
  torch::Tensor position_ids = torch::clamp(attention_mask.cumsum(1) - 1, 0);
  torch::Tensor values = torch::randn({B, R}, gen, torch::kFloat32) * 0.5 * response_mask;
  torch::Tensor returns = torch::randn({B, R}, gen, torch::kFloat32) * response_mask;
  return protocol::DataProto::from_dict({{"prompts", prompts},
                                         {"responses", responses},
                                         {"input_ids", input_ids},
                                         {"attention_mask", attention_mask},
                                         {"position_ids", position_ids},
                                         {"response_mask", response_mask},
                                         {"values", values},
                                         {"returns", returns}});
}

inline std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace verl::test
