// LoRA (lora_rank 4, the actor's and the critic's) under strategy=megatron, TP=2 (mpirun -np 3), against the 1-rank
// LoRA run on the same batch:
//   - three GAE steps with a KL loss (the ref is the base with the adapters off) and greedy rollouts end with the
//     1-rank run's adapters (lora_adapter/, and the critic's adapters and value head, within test_megatron's 1e-3),
//     metrics and greedy validation;
//   - the adapter folder is the 1-rank one's format (the same tensor names and shapes, the same
//     adapter_config.json); each rank's checkpoint file holds the whole adapters (the critic's: plus its value
//     head); `verl model export` writes them;
//   - lora_adapter_path: PEFT adapters with random B (a CAUSAL_LM one for the actor, a TOKEN_CLS one for the
//     critic) load into the slices (a 2-step run from them equals the 1-rank run from them), and a run resumed at
//     step 1 from the TP=2 checkpoint ends bit-identical.
// The checks were seen to fail with the code perturbed: A's gradient not summed over the TP group (lora.cpp's
// copy_to_tp_region dropped), and every rank given rank 0's slice of a whole adapter (tensor_parallel_part). The
// critic's parts: with every rank loading rank 0's slice of its TOKEN_CLS adapter (value_lora.cpp's copy_exactly) the
// adapter-path test failed; with value_lora_full_state not gathering the slices both tests failed.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/peft_token_cls.h"
#include "support/run_command.h"
#include "verl/model/lora.h"
#include "verl/model/value_lora.h"
#include "verl/model/weights.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

// 4 query and 4 KV heads, intermediate 64: every split of TP=2 is real.
const DigitCompletionSetup& megatron_lora_setup() {
  static const DigitCompletionSetup s =
      make_digit_completion_setup(make_temp_dir("dist_megatron_lora_setup"), 8, /*hidden_size=*/32, /*num_layers=*/2,
                                  /*num_heads=*/4);
  return s;
}

model::LoraSpec rank4_spec() {
  model::LoraSpec spec;
  spec.rank = 4;
  spec.alpha = 8;
  return spec;
}

std::vector<std::string> lora_run(const std::string& run_dir, int tp, int steps) {
  std::vector<std::string> o = megatron_lora_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.rollout.do_sample=false"),
        std::string("actor_rollout_ref.actor.use_kl_loss=true"), std::string("actor_rollout_ref.model.lora_rank=4"),
        std::string("actor_rollout_ref.model.lora_alpha=8"), std::string("critic.model.lora_rank=4"),
        std::string("critic.model.lora_alpha=8"),
        std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
        std::string("critic.ppo_micro_batch_size_per_gpu=4"), std::string("trainer.balance_batch=false"),
        "trainer.total_training_steps=" + std::to_string(steps), "trainer.save_freq=" + std::to_string(steps),
        "trainer.test_freq=" + std::to_string(steps), std::string("trainer.num_cpu_threads=1"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"),
        std::string("critic.checkpoint.save_contents=[model,optimizer,extra,hf_model]"),
        "trainer.n_gpus_per_node=" + std::to_string(tp)}) {
    o.push_back(extra);
  }
  if (tp > 1) {
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"), std::string("critic.strategy=megatron"),
          "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + std::to_string(tp),
          "actor_rollout_ref.rollout.tensor_model_parallel_size=" + std::to_string(tp),
          "critic.megatron.tensor_model_parallel_size=" + std::to_string(tp)}) {
      o.push_back(extra);
    }
  }
  return o;
}

std::map<std::string, std::vector<int64_t>> shapes_of(const std::string& file) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, t] : model::load_tensors(file)) out[name] = t.sizes().vec();
  return out;
}

nlohmann::json read_json(const std::string& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

void expect_same_metrics(const std::string& one_dir, const std::string& tp_dir, int steps) {
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(tp_dir + "/metrics.jsonl");
  for (const char* key : {"actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/entropy", "actor/ppo_kl",
                          "critic/vf_loss", "critic/grad_norm", "critic/values/mean", "critic/advantages/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= steps; ++step) {
      ASSERT_TRUE(m1.at(key).count(step) && m2.at(key).count(step)) << key << " step " << step;
      const double expected = m1.at(key).at(step);
      // test_megatron's tolerance: 1e-4 relative with a floor (fp32 rounding of the split GEMMs differs by ~1e-7).
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
  // Greedy generation on the slices with the merged adapters chose the same tokens, in training and validation.
  int validation_keys = 0;
  for (const auto& [key, by_step] : m1) {
    const bool tokens = key.rfind("response_length/", 0) == 0 || key.rfind("critic/score/", 0) == 0 ||
                        key.rfind("val-core/", 0) == 0;
    if (!tokens) continue;
    validation_keys += key.rfind("val-core/", 0) == 0 ? 1 : 0;
    ASSERT_TRUE(m2.count(key)) << key;
    for (const auto& [step, value] : by_step) EXPECT_EQ(m2.at(key).at(step), value) << key << " step " << step;
  }
  EXPECT_GT(validation_keys, 0);
}

TEST(MegatronLora, TensorParallelTwoEqualsOneRankForThreePpoSteps) {
  const std::string one_dir = make_temp_dir("dist_megatron_lora_tp1");
  const std::string tp_dir = make_temp_dir("dist_megatron_lora_tp2");
  CommandResult one = run_command(verl_train_command(lora_run(one_dir, 1, 3)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(lora_run(tp_dir, 2, 3)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_metrics(one_dir, tp_dir, 3);

  const std::string adapter = "/global_step_3/actor/lora_adapter/";
  const std::string one_weights = one_dir + adapter + "adapter_model.safetensors";
  const std::string tp_weights = tp_dir + adapter + "adapter_model.safetensors";
  ASSERT_TRUE(fs::exists(tp_weights));
  // PEFT's folder as the 1-rank run writes it: names, whole shapes and config.
  const auto one_shapes = shapes_of(one_weights);
  EXPECT_EQ(one_shapes.size(), 2u * 7u * 2u);  // 2 layers x 7 projections x (A, B)
  EXPECT_EQ(shapes_of(tp_weights), one_shapes);
  EXPECT_EQ(read_json(tp_dir + adapter + "adapter_config.json"), read_json(one_dir + adapter + "adapter_config.json"));
  // Within test_megatron's 1e-3 (AdamW turns rounding-level gradient differences into steps of up to lr; a wrong
  // slice or a missing sum over the group is ~1e-1).
  auto [diff, name] = max_relative_difference(tp_weights, one_weights);
  EXPECT_LT(diff, 1e-3) << name;
  auto [critic_diff, critic_name] =
      max_relative_difference(tp_dir + "/global_step_3/critic/huggingface/model.safetensors",
                              one_dir + "/global_step_3/critic/huggingface/model.safetensors");
  EXPECT_LT(critic_diff, 1e-3) << critic_name;
  double largest_b = 0;
  for (const auto& [n, t] : model::load_tensors(one_weights)) {
    if (n.find("lora_B") != std::string::npos) largest_b = std::max(largest_b, t.abs().max().item<double>());
  }
  EXPECT_GT(largest_b, 1e-3) << "the adapters hardly changed in three steps";

  // Each rank's checkpoint file holds the whole adapters (HF names, no prefix).
  std::map<std::string, std::vector<int64_t>> unprefixed;
  for (const auto& [n, shape] : one_shapes) unprefixed[n.substr(std::string("base_model.model.").size())] = shape;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(shapes_of(tp_dir + "/global_step_3/actor/model_world_size_2_rank_" + std::to_string(r) + ".safetensors"),
              unprefixed)
        << "rank " << r;
  }
  // The critic's files: its whole adapters and value head on every rank, the 1-rank run's within 1e-3.
  const std::string critic_one = one_dir + "/global_step_3/critic/model_world_size_1_rank_0.safetensors";
  const auto critic_shapes = shapes_of(critic_one);
  EXPECT_EQ(critic_shapes.size(), 2u * 7u * 2u + 2u);  // the adapters, score.weight and score.bias
  EXPECT_TRUE(critic_shapes.count("score.weight")) << critic_one;
  for (int r = 0; r < 2; ++r) {
    const std::string file = tp_dir + "/global_step_3/critic/model_world_size_2_rank_" + std::to_string(r) + ".safetensors";
    EXPECT_EQ(shapes_of(file), critic_shapes) << "rank " << r;
    auto [state_diff, state_name] = max_relative_difference(file, critic_one);
    EXPECT_LT(state_diff, 1e-3) << "rank " << r << ": " << state_name;
  }
  // The exporter writes the same adapter from the checkpoint.
  const std::string exported = make_temp_dir("dist_megatron_lora_export");
  CommandResult ex = run_command(verl_binary() + " model export --checkpoint '" + tp_dir + "/global_step_3' --out '" +
                                 exported + "'");
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  auto [export_diff, export_name] = max_relative_difference(exported + "/adapter_model.safetensors", tp_weights);
  EXPECT_EQ(export_diff, 0.0) << export_name;
  EXPECT_EQ(shapes_of(exported + "/adapter_model.safetensors"), one_shapes);
}

TEST(MegatronLora, AdapterPathIsSlicedAndAResumedRunEndsBitIdentical) {
  // A PEFT adapter with B far from zero: a wrong slice of it changes every log-prob.
  const std::string adapter = make_temp_dir("dist_megatron_lora_adapter");
  {
    model::CausalLM m = model::load_model(megatron_lora_setup().model_dir);
    model::add_lora(m, rank4_spec(), /*seed=*/3);
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(4);
    for (auto& [name, t] : model::lora_named_parameters(m)) {
      if (name.find("lora_B") != std::string::npos) t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.2, gen));
    }
    model::save_peft_adapter(m, adapter, megatron_lora_setup().model_dir);
  }
  // The critic's: PEFT's TOKEN_CLS folder (the adapters and the value head, names base_model.model.*).
  const std::string critic_adapter = make_temp_dir("dist_megatron_lora_critic_adapter");
  {
    model::LoadOptions options;
    options.head = model::HeadKind::Value;
    model::CausalLM m = model::load_model(megatron_lora_setup().model_dir, options);
    model::add_value_lora(m, rank4_spec(), /*seed=*/5);
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(6);
    for (auto& [name, t] : model::value_lora_named_parameters(m)) {
      if (name.find("lora_B") != std::string::npos || name == "score.weight") {
        t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.2, gen));
      }
    }
    write_token_cls_adapter(model::value_lora_named_parameters(m), critic_adapter, 4, 8);
  }
  auto from_adapter = [&](const std::string& dir, int tp) {
    std::vector<std::string> o = lora_run(dir, tp, 2);
    o.push_back("actor_rollout_ref.model.lora_adapter_path=" + adapter);
    o.push_back("critic.model.lora_adapter_path=" + critic_adapter);
    o.push_back("trainer.save_freq=1");
    return o;
  };
  const std::string one_dir = make_temp_dir("dist_megatron_lora_from1");
  const std::string tp_dir = make_temp_dir("dist_megatron_lora_from2");
  CommandResult one = run_command(verl_train_command(from_adapter(one_dir, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(from_adapter(tp_dir, 2)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_metrics(one_dir, tp_dir, 2);

  // Stopped after step 1 and resumed: each rank slices the whole adapters of its file.
  const std::string resumed_dir = make_temp_dir("dist_megatron_lora_resumed");
  fs::copy(tp_dir, resumed_dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove_all(resumed_dir + "/global_step_2");
  std::ofstream(resumed_dir + "/latest_checkpointed_iteration.txt") << "1";
  CommandResult part2 = run_command(mpirun(3) + verl_train_command(from_adapter(resumed_dir, 2)));
  ASSERT_EQ(part2.exit_code, 0) << part2.out << part2.err;
  for (const std::string file :
       {std::string("/global_step_2/actor/lora_adapter/adapter_model.safetensors"),
        std::string("/global_step_2/actor/model_world_size_2_rank_1.safetensors"),
        std::string("/global_step_2/critic/model_world_size_2_rank_1.safetensors")}) {
    ASSERT_TRUE(fs::exists(resumed_dir + file)) << file;
    auto [diff, name] = max_relative_difference(resumed_dir + file, tp_dir + file);
    EXPECT_EQ(diff, 0.0) << file << ": " << name;
  }
}

}  // namespace
}  // namespace verl::test
