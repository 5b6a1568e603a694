// Ulysses sequence parallelism (actor, ref and critic ulysses_sequence_parallel_size=2) under
// `mpirun -np 1+S verl train`, against the 1-rank run on the same global batch:
//   - SP=2 (mpirun -np 3) and DP=2 x SP=2 (-np 5, with ZeRO-3): two GAE steps with a KL loss against the ref and
//     greedy rollouts end with the actor's and the critic's weights within 1e-4 of the 1-rank run's, and the same
//     losses, gradient norms, entropy, KL and values (so the log-probs, values and gradients agreed);
//   - LoRA (lora_rank 4, only the adapters train, the ref is the base with the adapters off) with SP=2 and with
//     DP=2 x SP=2 (with ZeRO-1/2 and with a ZeRO-3 base): the same two steps end with the 1-rank LoRA run's adapters
//     (lora_adapter/) and critic, and the same metrics;
//   - a size that does not divide the devices, Ulysses with megatron, LoRA with a ref size unlike the actor's, or
//     without mpirun: one error line. (With the multi-turn rollout: tests/dist/test_multi_turn_parallel.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/model/weights.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

// 2 heads and 2 KV heads: each of 2 sequence-parallel ranks attends with one.
const DigitCompletionSetup& ulysses_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_ulysses_setup"), 8);
  return s;
}

std::vector<std::string> ulysses_gae_run(const std::string& run_dir, int slots, int sp, bool zero3 = false,
                                         bool lora = false) {
  std::vector<std::string> o = ulysses_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.rollout.do_sample=false"),
        std::string("actor_rollout_ref.actor.use_kl_loss=true"),
        std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
        std::string("critic.ppo_micro_batch_size_per_gpu=4"), std::string("trainer.balance_batch=false"),
        std::string("trainer.total_training_steps=2"), std::string("trainer.save_freq=2"),
        std::string("trainer.num_cpu_threads=1"), std::string("trainer.test_freq=-1"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.actor.checkpoint.save_contents=[model,hf_model]"),
        std::string("critic.checkpoint.save_contents=[model,hf_model]"),
        "trainer.n_gpus_per_node=" + std::to_string(slots)}) {
    o.push_back(extra);
  }
  if (sp > 1) {
    // The actor's and the ref's through the engine keys, the critic's through the deprecated role-level key.
    o.push_back("actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=" + std::to_string(sp));
    o.push_back("actor_rollout_ref.ref.fsdp_config.ulysses_sequence_parallel_size=" + std::to_string(sp));
    o.push_back("critic.ulysses_sequence_parallel_size=" + std::to_string(sp));
  }
  if (zero3) {
    o.push_back("actor_rollout_ref.actor.fsdp_config.reshard_after_forward=true");
    o.push_back("critic.model.fsdp_config.reshard_after_forward=true");
  }
  if (lora) {
    o.push_back("actor_rollout_ref.model.lora_rank=4");
    o.push_back("actor_rollout_ref.model.lora_alpha=8");
  }
  return o;
}

// The actor's trained weights: the adapters under LoRA (PEFT's folder; huggingface/ holds the merged model).
std::string actor_weights(bool lora) {
  return lora ? "/global_step_2/actor/lora_adapter/adapter_model.safetensors"
              : "/global_step_2/actor/huggingface/model.safetensors";
}

void ulysses_expect_same_run(const std::string& one_dir, const std::string& sp_dir, bool lora = false) {
  for (const std::string file : {actor_weights(lora), std::string("/global_step_2/critic/huggingface/model.safetensors")}) {
    ASSERT_TRUE(fs::exists(sp_dir + file)) << file;
    // AdamW's first steps move every element by ~lr (1e-3 relative to weights ~1e-1..1): a wrong gradient scale or a
    // misplaced shard shows as ~1e-2; fp32 rounding of the split GEMMs as < 1e-5. lora_B starts at zero, so all of
    // it is those two updates and its rounding is relatively larger (1.7e-4 on an AVX2 AMD EPYC), a wrong update O(1).
    const double tolerance = file == actor_weights(true) ? 1e-3 : 1e-4;
    auto [diff, name] = max_relative_difference(sp_dir + file, one_dir + file);
    EXPECT_LT(diff, tolerance) << file << ": " << name;
  }
  if (lora) {
    // lora_B starts at zero; two AdamW steps of lr 1e-3 move it by ~1e-3 per element.
    double largest_b = 0;
    for (const auto& [name, t] : model::load_tensors(one_dir + actor_weights(true))) {
      if (name.find("lora_B") != std::string::npos) largest_b = std::max(largest_b, t.abs().max().item<double>());
    }
    EXPECT_GT(largest_b, 5e-4) << "the adapters hardly changed in two steps";
  } else {
    auto [moved, name] =
        max_relative_difference(one_dir + actor_weights(false), ulysses_setup().model_dir + "/model.safetensors");
    EXPECT_GT(moved, 1e-2) << "the actor hardly changed in two steps";
  }
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(sp_dir + "/metrics.jsonl");
  for (const char* key : {"actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/entropy", "actor/ppo_kl",
                          "critic/vf_loss", "critic/grad_norm", "critic/values/mean", "critic/advantages/mean",
                          "response_length/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) {
      ASSERT_TRUE(m1.at(key).count(step) && m2.at(key).count(step)) << key << " step " << step;
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
}

TEST(Ulysses, SequenceParallelTwoEqualsOneRankForTwoPpoSteps) {
  const std::string one_dir = make_temp_dir("dist_ulysses_sp1");
  const std::string sp_dir = make_temp_dir("dist_ulysses_sp2");
  CommandResult one = run_command(verl_train_command(ulysses_gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(ulysses_gae_run(sp_dir, 2, 2)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  ulysses_expect_same_run(one_dir, sp_dir);
}

TEST(Ulysses, DataTimesSequenceParallelWithZero3EqualsOneRankForTwoPpoSteps) {
  const std::string one_dir = make_temp_dir("dist_ulysses_dp1");
  const std::string mesh_dir = make_temp_dir("dist_ulysses_dp2sp2");
  CommandResult one = run_command(verl_train_command(ulysses_gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult four = run_command(mpirun(5) + verl_train_command(ulysses_gae_run(mesh_dir, 4, 2, /*zero3=*/true)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  ulysses_expect_same_run(one_dir, mesh_dir);
}

TEST(Ulysses, LoraWithSequenceParallelTwoEqualsOneRankForTwoPpoSteps) {
  const std::string one_dir = make_temp_dir("dist_ulysses_lora_sp1");
  const std::string sp_dir = make_temp_dir("dist_ulysses_lora_sp2");
  CommandResult one = run_command(verl_train_command(ulysses_gae_run(one_dir, 1, 1, /*zero3=*/false, /*lora=*/true)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two =
      run_command(mpirun(3) + verl_train_command(ulysses_gae_run(sp_dir, 2, 2, /*zero3=*/false, /*lora=*/true)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  ulysses_expect_same_run(one_dir, sp_dir, /*lora=*/true);
  // DP=2 x SP=2: the adapters' gradients averaged over all 4 ranks (ZeRO-2 shards their optimizer state).
  const std::string mesh_dir = make_temp_dir("dist_ulysses_lora_dp2sp2");
  CommandResult four =
      run_command(mpirun(5) + verl_train_command(ulysses_gae_run(mesh_dir, 4, 2, /*zero3=*/false, /*lora=*/true)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  ulysses_expect_same_run(one_dir, mesh_dir, /*lora=*/true);
  // The same mesh over a ZeRO-3 base: the adapters stay whole beside the sharded layers.
  const std::string zero3_dir = make_temp_dir("dist_ulysses_lora_dp2sp2_zero3");
  CommandResult sharded =
      run_command(mpirun(5) + verl_train_command(ulysses_gae_run(zero3_dir, 4, 2, /*zero3=*/true, /*lora=*/true)));
  ASSERT_EQ(sharded.exit_code, 0) << sharded.out << sharded.err;
  ulysses_expect_same_run(one_dir, zero3_dir, /*lora=*/true);
}

TEST(Ulysses, UnsupportedCombinationsAreOneErrorLine) {
  const std::string dir = make_temp_dir("dist_ulysses_bad");
  auto one_line = [](const CommandResult& r, const std::string& expected) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    size_t lines = 0;
    for (size_t at = r.err.find("error: "); at != std::string::npos; at = r.err.find("error: ", at + 1)) ++lines;
    EXPECT_EQ(lines, 1u) << r.err;
  };
  std::vector<std::string> three = ulysses_gae_run(dir, 2, 1);
  three.push_back("critic.ulysses_sequence_parallel_size=3");
  one_line(run_command(verl_train_command(three)), "critic.ulysses_sequence_parallel_size=3 must divide the role's 2 devices");
  std::vector<std::string> megatron = ulysses_gae_run(dir, 2, 1);
  megatron.push_back("actor_rollout_ref.actor.strategy=megatron");
  megatron.push_back("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2");
  one_line(run_command(verl_train_command(megatron)),
           "actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 with strategy=megatron");
  // LoRA's reference is the actor's module with the adapters off: it splits sequences as the actor does.
  std::vector<std::string> lora = ulysses_gae_run(dir, 2, 1, /*zero3=*/false, /*lora=*/true);
  lora.push_back("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2");
  lora.push_back("actor_rollout_ref.ref.ulysses_sequence_parallel_size=1");
  one_line(run_command(verl_train_command(lora)),
           "actor_rollout_ref.model.lora_rank > 0 with actor_rollout_ref.ref.ulysses_sequence_parallel_size=1 unlike");
  // Sequence parallelism needs collectives between the ranks: in one process there are none.
  CommandResult in_process = run_command(verl_train_command(ulysses_gae_run(dir, 2, 2)));
  EXPECT_NE(in_process.exit_code, 0);
  EXPECT_NE(in_process.err.find("launch with mpirun"), std::string::npos) << in_process.err;
}

}  // namespace
}  // namespace verl::test
