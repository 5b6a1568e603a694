// Split placement (trainer.split_placement=true, verl's examples/split_placement): the actor and the critic on
// pools of their own.
//   - in one process and under mpirun, three GAE steps give the co-located run's parameters and metrics;
//   - the critic's and the actor's updates run at the same time, which the timing metrics show: the controller's
//     wall time for both (update_critic_call + update_actor_call + update_actor_critic) is well under the sum of
//     the workers' own update times (timing_s/update_critic + timing_s/update_actor);
//   - a run without a critic, or with slots that do not halve, is one error line.
#include <gtest/gtest.h>

#include <algorithm>
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

// A model large enough that an update takes tens of milliseconds, so the overlap is not timer noise.
const DigitCompletionSetup& split_placement_setup() {
  static const DigitCompletionSetup s =
      make_digit_completion_setup(make_temp_dir("dist_split_setup"), 8, /*hidden_size=*/128, /*num_layers=*/2,
                                  /*num_heads=*/4);
  return s;
}

std::vector<std::string> split_placement_gae_run(const std::string& run_dir, int slots, bool split) {
  std::vector<std::string> o = split_placement_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"),
        std::string("critic.ppo_micro_batch_size_per_gpu=2"), std::string("trainer.total_training_steps=3"),
        std::string("trainer.save_freq=3"), std::string("trainer.num_cpu_threads=1"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        "trainer.n_gpus_per_node=" + std::to_string(slots),
        std::string("trainer.split_placement=") + (split ? "true" : "false")}) {
    o.push_back(extra);
  }
  return o;
}

// Every parameter of `role` at step 3 equals the co-located run's, bit for bit: the same computations run,
// only on other threads or processes.
void expect_same_parameters(const std::string& a_dir, const std::string& b_dir) {
  for (const std::string role : {"actor", "critic"}) {
    const std::string file = "/global_step_3/" + role + "/model_world_size_1_rank_0.safetensors";
    ASSERT_TRUE(fs::exists(a_dir + file) && fs::exists(b_dir + file)) << role;
    auto a = model::load_tensors(a_dir + file);
    auto b = model::load_tensors(b_dir + file);
    ASSERT_EQ(a.size(), b.size()) << role;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].first, b[i].first);
      EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << role << " " << a[i].first;
    }
  }
}

void split_placement_expect_same_metrics(const trainer::MetricHistory& a, const trainer::MetricHistory& b) {
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/grad_norm",
                          "critic/values/mean", "critic/advantages/mean", "response_length/mean"}) {
    ASSERT_TRUE(a.count(key) && b.count(key)) << key;
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(a.at(key).count(step) && b.at(key).count(step)) << key << " step " << step;
      EXPECT_EQ(a.at(key).at(step), b.at(key).at(step)) << key << " step " << step;
    }
  }
}

// Seconds the two updates overlapped, summed over the steps, against the most they could have (the shorter
// update each step). Run one after the other they would not overlap at all: wall >= critic + actor.
std::pair<double, double> overlap_seconds(const trainer::MetricHistory& m) {
  double overlap = 0, possible = 0;
  for (int64_t step = 1; step <= 3; ++step) {
    const double critic = m.at("timing_s/update_critic").at(step);
    const double actor = m.at("timing_s/update_actor").at(step);
    // The controller's wall time from issuing the critic's update to having both results.
    const double wall = m.at("timing_s/update_critic_call").at(step) + m.at("timing_s/update_actor_call").at(step) +
                        m.at("timing_s/update_actor_critic").at(step);
    overlap += critic + actor - wall;
    possible += std::min(critic, actor);
  }
  return {overlap, possible};
}

TEST(SplitPlacement, InOneProcessSameTrajectoryAsColocatedWithOverlappingUpdates) {
  const std::string colocated = make_temp_dir("split_colocated");
  const std::string split = make_temp_dir("split_inprocess");
  CommandResult one = run_command(verl_train_command(split_placement_gae_run(colocated, 1, false)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(verl_train_command(split_placement_gae_run(split, 2, true)));
  ASSERT_EQ(two.exit_code, 0) << two.err;

  expect_same_parameters(colocated, split);
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(colocated + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(split + "/metrics.jsonl");
  split_placement_expect_same_metrics(m1, m2);

  // verl's split timings only where the updates are split.
  EXPECT_EQ(m1.count("timing_s/update_actor_critic"), 0u);
  for (const char* key : {"timing_s/update_critic_call", "timing_s/update_actor_call", "timing_s/update_actor_critic",
                          "timing_s/update_critic", "timing_s/update_actor", "timing_per_token_ms/update_actor"}) {
    EXPECT_EQ(m2.count(key), 1u) << key;
  }
  auto [overlap, possible] = overlap_seconds(m2);
  EXPECT_GT(overlap, 0.5 * possible) << "the updates overlapped " << overlap << " s of at most " << possible << " s";
}

TEST(SplitPlacement, UnderMpiSameTrajectoryAsColocatedWithOverlappingUpdates) {
  const std::string colocated = make_temp_dir("split_mpi_colocated");
  const std::string split = make_temp_dir("split_mpi");
  CommandResult one = run_command(verl_train_command(split_placement_gae_run(colocated, 1, false)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(split_placement_gae_run(split, 2, true)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;

  expect_same_parameters(colocated, split);
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(split + "/metrics.jsonl");
  split_placement_expect_same_metrics(trainer::read_metrics_jsonl(colocated + "/metrics.jsonl"), m2);
  auto [overlap, possible] = overlap_seconds(m2);
  EXPECT_GT(overlap, 0.5 * possible) << "the updates overlapped " << overlap << " s of at most " << possible << " s";
}

TEST(SplitPlacement, WithoutACriticOrWithSlotsThatDoNotHalveIsOneErrorLine) {
  const std::string dir = make_temp_dir("split_bad");
  std::vector<std::string> grpo = split_placement_gae_run(dir, 2, true);
  grpo.push_back("algorithm.adv_estimator=grpo");
  CommandResult no_critic = run_command(verl_train_command(grpo));
  EXPECT_NE(no_critic.exit_code, 0);
  EXPECT_NE(no_critic.err.find("trainer.split_placement=true puts the critic on a pool of its own"), std::string::npos)
      << no_critic.err;

  std::vector<std::string> odd = split_placement_gae_run(dir, 3, true);
  CommandResult three = run_command(verl_train_command(odd));
  EXPECT_NE(three.exit_code, 0);
  EXPECT_NE(three.err.find("trainer.n_gpus_per_node (3) or trainer.nnodes (1) must be even"), std::string::npos)
      << three.err;
  for (const CommandResult* r : {&no_critic, &three}) {
    EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
  }
}

}  // namespace
}  // namespace verl::test
