// fsdp training with a tensor-parallel rollout (actor_rollout_ref.rollout.tensor_model_parallel_size=T, verl's usual
// layout: vLLM TP replicas over the FSDP ranks) under `mpirun -np 1+W verl train`, against the 1-rank run on the same
// global batch with greedy rollouts: each group of T consecutive ranks gathers its rows, generates them together on
// slices of the whole weights (ZeRO-3 shards gathered first; LoRA adapters merged first) and each rank keeps its own.
//   - T=2 (-np 3) and DP=2 ranks per group x T=2 with ZeRO-3 (-np 5): two GAE steps end with the 1-rank run's weights
//     and metrics, the same response lengths and scores (so every token was the same);
//   - LoRA (rank 4) with T=2: the 1-rank LoRA run's adapters and metrics;
//   - megatron with a rollout TP unlike the actor's (verl's *_diff_tp scripts): actor TP 2 with a whole-weights
//     rollout, 2 stages with rollout TP 2, DP 2 x TP 2 with rollout TP 4 (each group holding two model copies, whose
//     rows it generates once each): the whole model gathered and sliced again; the same two steps;
//   - a T that does not divide the rollout's devices, or without mpirun: one error line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

// 4 heads and 4 KV heads, vocabulary 16, intermediate 64: every split of T=2 is real.
const DigitCompletionSetup& rollout_tp_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_rollout_tp_setup"), 8,
                                                                    /*hidden_size=*/32, /*num_layers=*/2,
                                                                    /*num_heads=*/4);
  return s;
}

// megatron_tp x megatron_pp > 1: strategy=megatron for the actor (its ref follows) and the critic.
std::vector<std::string> rollout_tp_run(const std::string& run_dir, int slots, int rollout_tp, bool zero3 = false,
                                        bool lora = false, int megatron_tp = 1, int megatron_pp = 1) {
  std::vector<std::string> o = rollout_tp_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.rollout.do_sample=false"),
        std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"),
        std::string("critic.ppo_micro_batch_size_per_gpu=2"), std::string("trainer.balance_batch=false"),
        std::string("trainer.total_training_steps=2"), std::string("trainer.save_freq=2"),
        std::string("trainer.num_cpu_threads=1"), std::string("trainer.test_freq=2"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.actor.checkpoint.save_contents=[model,hf_model]"),
        std::string("critic.checkpoint.save_contents=[model,hf_model]"),
        "actor_rollout_ref.rollout.tensor_model_parallel_size=" + std::to_string(rollout_tp),
        "trainer.n_gpus_per_node=" + std::to_string(slots)}) {
    o.push_back(extra);
  }
  if (zero3) o.push_back("actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true");
  if (megatron_tp * megatron_pp > 1) {
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"), std::string("critic.strategy=megatron"),
          "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + std::to_string(megatron_tp),
          "critic.megatron.tensor_model_parallel_size=" + std::to_string(megatron_tp),
          "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=" + std::to_string(megatron_pp),
          "critic.megatron.pipeline_model_parallel_size=" + std::to_string(megatron_pp)}) {
      o.push_back(extra);
    }
  }
  if (lora) {
    o.push_back("actor_rollout_ref.model.lora_rank=4");
    o.push_back("actor_rollout_ref.model.lora_alpha=8");
  }
  return o;
}

// `weight_tolerance`: megatron's row-parallel layers add partial products in another order (tests/dist/
// test_megatron.cpp: up to 2e-4 relative after AdamW turns a ~0 gradient into a step of up to lr).
void expect_same_rollout_tp_run(const std::string& one_dir, const std::string& dir, bool lora = false,
                                double weight_tolerance = 1e-4) {
  const std::string actor = lora ? "/global_step_2/actor/lora_adapter/adapter_model.safetensors"
                                 : "/global_step_2/actor/huggingface/model.safetensors";
  for (const std::string file : {actor, std::string("/global_step_2/critic/huggingface/model.safetensors")}) {
    ASSERT_TRUE(fs::exists(dir + file)) << file;
    // Data-parallel training of the same rows: fp32 rounding of the gradient averages (< 1e-5); lora_B, all of it
    // two AdamW steps from zero, relatively more. A different token anywhere changes a loss: ~1e-2 and more.
    auto [diff, name] = max_relative_difference(dir + file, one_dir + file);
    EXPECT_LT(diff, lora && file == actor ? 1e-3 : weight_tolerance) << file << ": " << name;
  }
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(dir + "/metrics.jsonl");
  for (const char* key :
       {"actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/values/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) {
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
  // Greedy generation on the slices chose the same tokens: equal lengths and scores, in training and validation.
  int validation_keys = 0;
  for (const auto& [key, by_step] : m1) {
    const bool tokens =
        key.rfind("response_length/", 0) == 0 || key.rfind("critic/score/", 0) == 0 || key.rfind("val-core/", 0) == 0;
    if (!tokens) continue;
    validation_keys += key.rfind("val-core/", 0) == 0 ? 1 : 0;
    ASSERT_TRUE(m2.count(key)) << key;
    for (const auto& [step, value] : by_step) EXPECT_EQ(m2.at(key).at(step), value) << key << " step " << step;
  }
  EXPECT_GT(validation_keys, 0);
}

TEST(RolloutTensorParallel, FsdpWithRolloutTpTwoEqualsOneRank) {
  const std::string one_dir = make_temp_dir("dist_rollout_tp_one");
  CommandResult one = run_command(verl_train_command(rollout_tp_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string tp_dir = make_temp_dir("dist_rollout_tp2");
  CommandResult tp = run_command(mpirun(3) + verl_train_command(rollout_tp_run(tp_dir, 2, 2)));
  ASSERT_EQ(tp.exit_code, 0) << tp.out << tp.err;
  expect_same_rollout_tp_run(one_dir, tp_dir);
  // Two groups of two ranks, the actor's weights ZeRO-3 shards gathered for generation.
  const std::string dp_dir = make_temp_dir("dist_rollout_dp2_tp2");
  CommandResult dp = run_command(mpirun(5) + verl_train_command(rollout_tp_run(dp_dir, 4, 2, /*zero3=*/true)));
  ASSERT_EQ(dp.exit_code, 0) << dp.out << dp.err;
  expect_same_rollout_tp_run(one_dir, dp_dir);
}

TEST(RolloutTensorParallel, LoraWithRolloutTpTwoEqualsOneRank) {
  const std::string one_dir = make_temp_dir("dist_rollout_tp_lora_one");
  CommandResult one = run_command(verl_train_command(rollout_tp_run(one_dir, 1, 1, false, /*lora=*/true)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string tp_dir = make_temp_dir("dist_rollout_tp2_lora");
  CommandResult tp = run_command(mpirun(3) + verl_train_command(rollout_tp_run(tp_dir, 2, 2, false, /*lora=*/true)));
  ASSERT_EQ(tp.exit_code, 0) << tp.out << tp.err;
  expect_same_rollout_tp_run(one_dir, tp_dir, /*lora=*/true);
}

// megatron with a rollout TP unlike the actor's (verl's *_diff_tp scripts): the whole model gathered from the
// stages and slices, sliced again for the rollout's groups (or whole with rollout TP 1); a group holding several
// copies gets each copy's rows once.
TEST(RolloutTensorParallel, MegatronWithARolloutTpUnlikeTheActorsEqualsOneRank) {
  const std::string one_dir = make_temp_dir("dist_rollout_tp_mg_one");
  CommandResult one = run_command(verl_train_command(rollout_tp_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  struct Layout {
    const char* name;
    int np, slots, rollout_tp, tp, pp;
  };
  for (const Layout& l :
       {Layout{"actor TP 2, rollout whole", 3, 2, 1, 2, 1}, Layout{"actor 2 stages, rollout TP 2", 3, 2, 2, 1, 2},
        Layout{"actor DP 2 x TP 2, rollout TP 4 over both copies", 5, 4, 4, 2, 1}}) {
    SCOPED_TRACE(l.name);
    const std::string dir = make_temp_dir("dist_rollout_tp_mg");
    CommandResult run = run_command(
        mpirun(l.np) + verl_train_command(rollout_tp_run(dir, l.slots, l.rollout_tp, false, false, l.tp, l.pp)));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    expect_same_rollout_tp_run(one_dir, dir, false, /*weight_tolerance=*/1e-3);
  }
}

void rollout_tp_one_line(const CommandResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST(RolloutTensorParallel, BadSizesAreOneErrorLine) {
  const std::string dir = make_temp_dir("dist_rollout_tp_bad");
  rollout_tp_one_line(run_command(verl_train_command(rollout_tp_run(dir, 2, 3))),
                      "actor_rollout_ref.rollout.tensor_model_parallel_size=3 must divide the rollout's 2 devices");
  CommandResult in_process = run_command(verl_train_command(rollout_tp_run(dir, 2, 2)));
  EXPECT_NE(in_process.exit_code, 0);
  EXPECT_NE(in_process.err.find("launch with mpirun"), std::string::npos) << in_process.err;
}

}  // namespace
}  // namespace verl::test
