// Shared set-up for the actor worker tests: a tiny random model folder and a PPO config pointing at it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "verl/config/config_loader.h"
#include "verl/model/model_tools.h"

namespace verl::test {

// A seeded Qwen2 (q/k/v biases, perturbed norms) with hidden 32, `num_layers` layers, 4 heads / 2 kv heads, vocab
// 64, made in `dir` as `verl model init` makes it.
inline std::string make_tiny_model(const std::string& dir, uint64_t seed = 5, int64_t num_layers = 2) {
  model::InitOptions o;
  o.arch = model::Arch::Qwen2;
  o.out_dir = dir;
  o.seed = seed;
  o.hidden_size = 32;
  o.num_layers = num_layers;
  o.num_heads = 4;
  o.num_kv_heads = 2;
  o.intermediate_size = 48;
  o.vocab_size = 64;
  o.initializer_range = 0.2;
  o.perturb_norms_and_biases = true;
  model::init_model_folder(o);
  return dir;
}

// The default config plus `overrides`, with the model path, the CPU and small sizes set.
inline std::shared_ptr<const config::PPOConfig> tiny_ppo_config(const std::string& model_dir,
                                                                std::vector<std::string> overrides) {
  config::ConfigArgs args;
  args.overrides = {"actor_rollout_ref.model.path=" + model_dir, "trainer.device=cpu", "data.max_prompt_length=5",
                    "data.max_response_length=6", "data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
                    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=3",
                    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=5"};
  args.overrides.insert(args.overrides.end(), overrides.begin(), overrides.end());
  return std::make_shared<const config::PPOConfig>(config::load_config(args).ppo);
}

}  // namespace verl::test

#include <torch/torch.h>

#include <cmath>

#include "verl/model/transformer.h"
#include "verl/protocol/data_proto.h"

namespace verl::test {

// A ragged batch in verl's layout: B=8 rows, P=5 (left-padded prompts), R=6 (right-padded responses), with
// advantages, old_log_probs (-1.5 + a pattern) and ref_log_prob, meta temperature 1.0.
inline protocol::DataProto ragged_actor_batch() {
  const int64_t B = 8, P = 5, R = 6;
  const std::vector<int64_t> plen = {5, 3, 1, 4, 2, 5, 3, 4}, rlen = {6, 2, 4, 1, 6, 3, 5, 6};
  auto input_ids = torch::zeros({B, P + R}, torch::kInt64);
  auto attention_mask = torch::zeros({B, P + R}, torch::kInt64);
  auto adv = torch::zeros({B, R}, torch::kFloat32), old = torch::zeros({B, R}, torch::kFloat32);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t j = P - plen[i]; j < P + rlen[i]; ++j) {
      input_ids[i][j] = (i * 7 + j * 3 + 1) % 64;
      attention_mask[i][j] = 1;
    }
    for (int64_t t = 0; t < R; ++t) {
      adv[i][t] = 1.5 * std::cos(0.7 * i + 1.3 * t);
      old[i][t] = -4.0 + 0.3 * std::sin(1.1 * i + 0.6 * t + 0.5);
    }
  }
  auto out = protocol::DataProto::from_dict({{"input_ids", input_ids},
                                             {"attention_mask", attention_mask},
                                             {"position_ids", model::position_ids_from_mask(attention_mask)},
                                             {"responses", input_ids.narrow(1, P, R).clone()},
                                             {"response_mask", attention_mask.narrow(1, P, R).clone()},
                                             {"advantages", adv},
                                             {"old_log_probs", old},
                                             {"ref_log_prob", old - 0.1}});
  out.meta_info["temperature"] = 1.0;
  return out;
}

// The prompts of ragged_actor_batch (input_ids / attention_mask / position_ids [8, 5]) as generate_sequences takes
// them: eos ids 3 and 7, pad 0, sampling.
inline protocol::DataProto ragged_actor_prompts() {
  const auto b = ragged_actor_batch();
  const int64_t P = 5;
  auto out = protocol::DataProto::from_dict({{"input_ids", b.tensor("input_ids").narrow(1, 0, P).clone()},
                                             {"attention_mask", b.tensor("attention_mask").narrow(1, 0, P).clone()},
                                             {"position_ids", b.tensor("position_ids").narrow(1, 0, P).clone()}});
  out.meta_info = {{"eos_token_id", nlohmann::json::array({3, 7})}, {"pad_token_id", 0}, {"do_sample", true}};
  return out;
}

}  // namespace verl::test
