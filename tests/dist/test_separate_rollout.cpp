// A separate Rollout role (actor_rollout_ref.hybrid_engine=false, verl's one_step_off_policy layout): the actor
// trains on trainer.* devices, the rollout generates on rollout.* devices and gets the actor's weights by
// broadcast after every update.
//   - in one process (sampled rollouts) and under mpirun, three GAE steps give the hybrid engine's parameters
//     and metrics: the rollout always generates with the weights the actor just made;
//   - 2 actor ranks + 2 rollout ranks (greedy) end where 1 hybrid rank ends, the rollout ranks also as one
//     tensor-parallel group (rollout.tensor_model_parallel_size=2);
//   - a resumed run restores the rollout's sampling state and ends bit-identical;
//   - layouts that cannot run are one error line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

const DigitCompletionSetup& separate_rollout_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_rollout_setup"), 8);
  return s;
}

std::vector<std::string> separate_rollout_gae_run(const std::string& run_dir, bool hybrid,
                                                  const std::vector<std::string>& more = {}) {
  std::vector<std::string> o = separate_rollout_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
        std::string("critic.ppo_micro_batch_size_per_gpu=4"), std::string("trainer.total_training_steps=3"),
        std::string("trainer.save_freq=2"), std::string("trainer.num_cpu_threads=1"),
        // Large steps: a rollout left on stale weights samples other responses from step 2 on (at 1e-3 the
        // sampled tokens did not change yet, and a missing sync went unseen).
        std::string("actor_rollout_ref.actor.optim.lr=1e-2"), std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.hybrid_engine=") + (hybrid ? "true" : "false")}) {
    o.push_back(extra);
  }
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

std::string weights(const std::string& dir, const std::string& role, int world = 1, int rank = 0) {
  return dir + "/global_step_3/" + role + "/model_world_size_" + std::to_string(world) + "_rank_" +
         std::to_string(rank) + ".safetensors";
}

double max_difference(const std::string& a_file, const std::string& b_file) {
  return max_relative_difference(a_file, b_file).first;
}

void separate_rollout_expect_same_metrics(const trainer::MetricHistory& a, const trainer::MetricHistory& b,
                                          double tolerance) {
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/values/mean",
                          "critic/score/mean", "response_length/mean"}) {
    ASSERT_TRUE(a.count(key) && b.count(key)) << key;
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(a.at(key).count(step) && b.at(key).count(step)) << key << " step " << step;
      const double x = a.at(key).at(step), y = b.at(key).at(step);
      EXPECT_LE(std::abs(x - y), tolerance * std::max(1.0, std::abs(y))) << key << " step " << step;
    }
  }
}

TEST(SeparateRollout, InOneProcessSameTrajectoryAsTheHybridEngineAndResumesExactly) {
  const std::string hybrid = make_temp_dir("rollout_hybrid");
  const std::string separate = make_temp_dir("rollout_separate");
  CommandResult one = run_command(verl_train_command(separate_rollout_gae_run(hybrid, true)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(verl_train_command(separate_rollout_gae_run(separate, false)));
  ASSERT_EQ(two.exit_code, 0) << two.err;

  for (const char* role : {"actor", "critic"}) {
    EXPECT_EQ(max_difference(weights(separate, role), weights(hybrid, role)), 0.0) << role;
  }
  const trainer::MetricHistory m = trainer::read_metrics_jsonl(separate + "/metrics.jsonl");
  separate_rollout_expect_same_metrics(m, trainer::read_metrics_jsonl(hybrid + "/metrics.jsonl"), 0.0);
  EXPECT_EQ(m.count("timing_s/sync_rollout_weights"), 1u);
  EXPECT_TRUE(fs::exists(separate + "/global_step_2/rollout/extra_state_world_size_1_rank_0.json"));

  // Resume from step 2: the rollout's sampling state comes back with the actor's, so step 3 is the same.
  const std::string resumed = make_temp_dir("rollout_resumed");
  fs::copy(separate, resumed, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove_all(resumed + "/global_step_3");
  std::ofstream(resumed + "/latest_checkpointed_iteration.txt") << "2";
  CommandResult again = run_command(verl_train_command(separate_rollout_gae_run(resumed, false)));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resuming from"), std::string::npos) << again.err;
  for (const char* role : {"actor", "critic"}) {
    EXPECT_EQ(max_difference(weights(resumed, role), weights(separate, role)), 0.0) << role;
  }
}

TEST(SeparateRollout, UnderMpiSameTrajectoryAsTheHybridEngine) {
  const std::string hybrid = make_temp_dir("rollout_mpi_hybrid");
  const std::string separate = make_temp_dir("rollout_mpi_separate");
  CommandResult one = run_command(verl_train_command(separate_rollout_gae_run(hybrid, true)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(separate_rollout_gae_run(separate, false)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  for (const char* role : {"actor", "critic"}) {
    EXPECT_EQ(max_difference(weights(separate, role), weights(hybrid, role)), 0.0) << role;
  }
  separate_rollout_expect_same_metrics(trainer::read_metrics_jsonl(separate + "/metrics.jsonl"),
                                       trainer::read_metrics_jsonl(hybrid + "/metrics.jsonl"), 0.0);
}

TEST(SeparateRollout, TwoActorRanksAndTwoRolloutRanksEndWhereOneHybridRankEnds) {
  // Greedy rollouts and one mini-batch in micro-batches of 4, so every layout computes the same gradients.
  const std::vector<std::string> greedy = {"actor_rollout_ref.rollout.do_sample=false", "trainer.balance_batch=false"};
  const std::string hybrid = make_temp_dir("rollout_dp_hybrid");
  const std::string separate = make_temp_dir("rollout_dp_separate");
  CommandResult one = run_command(verl_train_command(separate_rollout_gae_run(hybrid, true, greedy)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> layout = greedy;
  layout.push_back("trainer.n_gpus_per_node=2");
  layout.push_back("rollout.n_gpus_per_node=2");
  CommandResult four = run_command(mpirun(5) + verl_train_command(separate_rollout_gae_run(separate, false, layout)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  for (const char* role : {"actor", "critic"}) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_LT(max_difference(weights(separate, role, 2, r), weights(hybrid, role)), 1e-5)
          << role << " rank " << r;
    }
  }
  separate_rollout_expect_same_metrics(trainer::read_metrics_jsonl(separate + "/metrics.jsonl"),
                                       trainer::read_metrics_jsonl(hybrid + "/metrics.jsonl"), 1e-4);
  EXPECT_TRUE(fs::exists(separate + "/global_step_3/rollout/extra_state_world_size_2_rank_1.json"));
}

// The two rollout ranks as one tensor-parallel group (rollout.tensor_model_parallel_size=2): the weights broadcast
// whole, each rollout rank generates both ranks' rows on its slices of them.
TEST(SeparateRollout, TwoRolloutRanksOfOneTensorParallelGroupEndWhereOneHybridRankEnds) {
  const std::vector<std::string> greedy = {"actor_rollout_ref.rollout.do_sample=false", "trainer.balance_batch=false"};
  const std::string hybrid = make_temp_dir("rollout_tp_hybrid");
  const std::string separate = make_temp_dir("rollout_tp_separate");
  CommandResult one = run_command(verl_train_command(separate_rollout_gae_run(hybrid, true, greedy)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> layout = greedy;
  for (const char* extra : {"trainer.n_gpus_per_node=2", "rollout.n_gpus_per_node=2",
                            "actor_rollout_ref.rollout.tensor_model_parallel_size=2"}) {
    layout.push_back(extra);
  }
  CommandResult four = run_command(mpirun(5) + verl_train_command(separate_rollout_gae_run(separate, false, layout)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  for (const char* role : {"actor", "critic"}) {
    EXPECT_LT(max_difference(weights(separate, role, 2, 0), weights(hybrid, role)), 1e-5) << role;
  }
  separate_rollout_expect_same_metrics(trainer::read_metrics_jsonl(separate + "/metrics.jsonl"),
                                       trainer::read_metrics_jsonl(hybrid + "/metrics.jsonl"), 1e-4);
}

TEST(SeparateRollout, LayoutsThatCannotRunAreOneErrorLine) {
  const std::string dir = make_temp_dir("rollout_bad");
  CommandResult in_process =
      run_command(verl_train_command(separate_rollout_gae_run(dir, false, {"rollout.n_gpus_per_node=2"})));
  EXPECT_NE(in_process.exit_code, 0);
  EXPECT_NE(in_process.err.find("in one process the separate rollout runs on one slot"), std::string::npos)
      << in_process.err;
  size_t error_lines = 0;
  for (size_t at = in_process.err.find("error:"); at != std::string::npos; at = in_process.err.find("error:", at + 1)) {
    ++error_lines;
  }
  EXPECT_EQ(error_lines, 1u) << in_process.err;

  CommandResult wrong_np =
      run_command(mpirun(3) + verl_train_command(separate_rollout_gae_run(dir, false, {"rollout.n_gpus_per_node=2"})));
  EXPECT_NE(wrong_np.exit_code, 0);
  EXPECT_NE(wrong_np.err.find("rollout.nnodes=1 x rollout.n_gpus_per_node=2 device slots): run mpirun -np 4"),
            std::string::npos)
      << wrong_np.err;
}

}  // namespace
}  // namespace verl::test
