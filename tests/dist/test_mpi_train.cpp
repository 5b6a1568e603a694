// `mpirun -np 1+S verl train`: the controller on rank 0, the worker slots on ranks 1..S (MPI transport).
//   - data parallel: 2 slots (actor and critic gradients averaged across the ranks, optimizer state sharded)
//     end three PPO steps with the parameters of the 1-slot run on the same global batch, each rank's
//     optimizer state about half of the 1-slot one;
//   - a job with the wrong process count or a bad config, and a worker that fails in a method, end with
//     one line naming the problem and a non-zero exit, promptly;
//   - kill -9 of a worker mid-run ends the job non-zero; the previous checkpoint is intact and resumes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/model/weights.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const DigitCompletionSetup& mpi_train_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_mpi_train_setup"), 8);
  return s;
}

// Three GAE steps with greedy rollouts (so every rank count draws the same responses), one mini-batch per
// step split into micro-batches of `micro` rows. Each micro-batch's loss is taken against the whole mini-batch
// (verl 0.9.1's global batch info), so the gradient of a step is the same on 1 and 2 ranks whatever the split.
std::vector<std::string> data_parallel_run(const std::string& run_dir, int slots, int micro = 4) {
  std::vector<std::string> o = mpi_train_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"), std::string("actor_rollout_ref.rollout.do_sample=false"),
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=" + std::to_string(micro),
        "critic.ppo_micro_batch_size_per_gpu=" + std::to_string(micro), std::string("trainer.balance_batch=false"),
        std::string("trainer.total_training_steps=3"), std::string("trainer.save_freq=3"),
        std::string("trainer.num_cpu_threads=1"),
        // Large steps, so a rank that applied only its own gradients would end far from the 1-rank run.
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        "trainer.n_gpus_per_node=" + std::to_string(slots),
        // A schedule over the trainer's steps, which a worker rank under mpirun must get from the controller.
        std::string("critic.optim.lr_scheduler_type=cosine")}) {
    o.push_back(extra);
  }
  return o;
}

TEST(MpiTrain, DataParallelTwoRanksEqualsOneRankForThreePpoSteps) {
  const std::string one_dir = make_temp_dir("dist_dp1");
  const std::string two_dir = make_temp_dir("dist_dp2");
  CommandResult one = run_command(verl_train_command(data_parallel_run(one_dir, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  // Micro-batches of 2 rows on 2 ranks against 4 on one: other token counts per micro-batch, the same loss.
  CommandResult two = run_command(mpirun(3) + verl_train_command(data_parallel_run(two_dir, 2, 2)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;

  for (const std::string role : {"actor", "critic"}) {
    const std::string reference = one_dir + "/global_step_3/" + role + "/model_world_size_1_rank_0.safetensors";
    const std::string initial = mpi_train_setup().model_dir + "/model.safetensors";
    for (int r = 0; r < 2; ++r) {
      const std::string file =
          two_dir + "/global_step_3/" + role + "/model_world_size_2_rank_" + std::to_string(r) + ".safetensors";
      ASSERT_TRUE(fs::exists(file)) << file;
      auto [diff, name] = max_relative_difference(file, reference);
      EXPECT_LT(diff, 1e-5) << role << " rank " << r << ": " << name;
    }
    // ZeRO-1: each rank's optimizer state holds about half of the model's AdamW moments.
    const double whole = static_cast<double>(
        fs::file_size(one_dir + "/global_step_3/" + role + "/optim_world_size_1_rank_0.pt"));
    double parts = 0;
    for (int r = 0; r < 2; ++r) {
      const double part = static_cast<double>(fs::file_size(two_dir + "/global_step_3/" + role +
                                                            "/optim_world_size_2_rank_" + std::to_string(r) + ".pt"));
      EXPECT_GT(part / whole, 0.3) << role << " rank " << r;
      EXPECT_LT(part / whole, 0.7) << role << " rank " << r;
      parts += part;
    }
    EXPECT_NEAR(parts / whole, 1.0, 0.15) << role;
    // The runs trained: the step-3 actor is not the initial model.
    if (std::string(role) == "actor") {
      auto [moved, name] = max_relative_difference(reference, initial);
      EXPECT_GT(moved, 0.1) << "the actor hardly changed in three steps";
    }
  }
  // The controller's metrics, gathered from both ranks, are the 1-rank run's.
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(two_dir + "/metrics.jsonl");
  for (const char* key :
       {"actor/pg_loss", "actor/loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/grad_norm",
        "critic/values/mean", "critic/advantages/mean", "response_length/mean", "critic/lr"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(m1.at(key).count(step) && m2.at(key).count(step)) << key << " step " << step;
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-3)) << key << " step " << step;
    }
  }
}

// fsdp_config.fsdp_size=1 on 2 ranks: sharding groups of one rank (verl's HSDP with no sharding), so every
// rank keeps the whole optimizer state, and the run is still the 1-rank run; the default (ZeRO-2 over both ranks)
// gives that run's bits.
TEST(MpiTrain, FsdpSizeOneKeepsTheWholeOptimizerOnEveryRankAndTheSameTrajectory) {
  const std::string one_dir = make_temp_dir("dist_fsdp1_dp1");
  const std::string two_dir = make_temp_dir("dist_fsdp1_dp2");
  CommandResult one = run_command(verl_train_command(data_parallel_run(one_dir, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> o = data_parallel_run(two_dir, 2);
  o.push_back("actor_rollout_ref.actor.fsdp_config.fsdp_size=1");
  o.push_back("critic.model.fsdp_config.fsdp_size=1");
  CommandResult two = run_command(mpirun(3) + verl_train_command(o));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  for (const std::string role : {"actor", "critic"}) {
    const std::string step = "/global_step_3/" + role + "/";
    const double whole = static_cast<double>(fs::file_size(one_dir + step + "optim_world_size_1_rank_0.pt"));
    for (int r = 0; r < 2; ++r) {
      const std::string rank = "world_size_2_rank_" + std::to_string(r);
      auto [diff, name] = max_relative_difference(two_dir + step + "model_" + rank + ".safetensors",
                                                  one_dir + step + "model_world_size_1_rank_0.safetensors");
      EXPECT_LT(diff, 1e-5) << role << " rank " << r << ": " << name;
      const double part = static_cast<double>(fs::file_size(two_dir + step + "optim_" + rank + ".pt"));
      EXPECT_NEAR(part / whole, 1.0, 0.05) << role << " rank " << r;
    }
  }
  // The default shards gradients too (ZeRO-2: reduce-scatter to the owners, the clip norm assembled from them):
  // the same bits as the all-reduce with whole optimizers.
  const std::string zero2_dir = make_temp_dir("dist_zero2_dp2");
  CommandResult zero2 = run_command(mpirun(3) + verl_train_command(data_parallel_run(zero2_dir, 2)));
  ASSERT_EQ(zero2.exit_code, 0) << zero2.out << zero2.err;
  EXPECT_NE(zero2.err.find("ZeRO-2 over 2 ranks"), std::string::npos) << zero2.err;
  for (const std::string role : {"actor", "critic"}) {
    for (int r = 0; r < 2; ++r) {
      const std::string file = "/global_step_3/" + role + "/model_world_size_2_rank_" + std::to_string(r) + ".safetensors";
      auto [diff, name] = max_relative_difference(zero2_dir + file, two_dir + file);
      EXPECT_EQ(diff, 0.0) << role << " rank " << r << ": " << name;
    }
  }
  // fsdp_size must divide the group.
  std::vector<std::string> three = data_parallel_run(make_temp_dir("dist_fsdp_bad"), 2);
  three.push_back("actor_rollout_ref.actor.fsdp_config.fsdp_size=3");
  CommandResult bad = run_command(verl_train_command(three));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("actor_rollout_ref.actor.fsdp_config.fsdp_size=3 must divide the role's 2 devices"),
            std::string::npos)
      << bad.err;
}

TEST(MpiTrain, WrongProcessCountIsOneLineAndNonZero) {
  const std::string dir = make_temp_dir("dist_wrong_np");
  CommandResult r = run_command(mpirun(2) + verl_train_command(data_parallel_run(dir, 2)));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("mpirun started 2 processes but this config needs 1 + 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -np 3"), std::string::npos) << r.err;
}

TEST(MpiTrain, ABadConfigIsOneLineFromTheController) {
  // The worker ranks would reject it too; they build their workers only on the first command, which the
  // controller, failing its own checks first, never sends.
  std::vector<std::string> o = data_parallel_run(make_temp_dir("dist_bad_config"), 2);
  o.push_back("actor_rollout_ref.actor.ppo_mini_batch_size=5");
  CommandResult r = run_command(mpirun(3) + verl_train_command(o));
  EXPECT_NE(r.exit_code, 0);
  size_t lines = 0;
  for (size_t at = r.err.find("error: "); at != std::string::npos; at = r.err.find("error: ", at + 1)) ++lines;
  EXPECT_EQ(lines, 1u) << r.err;
  EXPECT_NE(r.err.find("ppo_mini_batch_size"), std::string::npos) << r.err;
}

TEST(MpiTrain, AWorkerFailureNamesRankAndMethodAndEndsTheJob) {
  const std::string dir = make_temp_dir("dist_worker_failure");
  // The critic's model folder exists for the controller's preflight but has no weights, so init_model fails
  // on the worker ranks.
  const std::string broken = dir + "/broken_critic";
  fs::create_directories(broken);
  fs::copy_file(mpi_train_setup().model_dir + "/config.json", broken + "/config.json");
  std::vector<std::string> o = data_parallel_run(dir + "/run", 2);
  o.push_back("critic.model.path=" + broken);
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = run_command(mpirun(3) + verl_train_command(o));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0);
  // One line from the controller: "error: [worker] worker group 'global_pool' rank R (world rank W) failed
  // in 'critic_init_model': <the worker's message>".
  const size_t at = r.err.find("error: [worker] worker group 'global_pool' rank ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  EXPECT_NE(line.find("(world rank "), std::string::npos) << line;
  EXPECT_NE(line.find("failed in 'critic_init_model': "), std::string::npos) << line;
  EXPECT_NE(line.find("has neither model.safetensors"), std::string::npos) << line;
  EXPECT_LT(seconds, 60);
}

TEST(MpiTrain, KilledWorkerEndsTheJobAndThePreviousCheckpointResumes) {
  const std::string dir = make_temp_dir("dist_kill_worker");
  std::vector<std::string> o = data_parallel_run(dir, 2);
  o.push_back("trainer.total_training_steps=40");
  o.push_back("trainer.save_freq=2");
  const std::string log = dir + "/log";
  const std::string tracker = dir + "/latest_checkpointed_iteration.txt";
  const std::string command = mpirun(3) + verl_train_command(o) + " > '" + log + "' 2>&1; echo $? > '" + dir +
                              "/exit_code'";
  std::thread job([&] { run_command(command); });
  // Wait for the step-2 checkpoint, then kill -9 the rank-2 worker (found by its OMPI rank variable and this test's folder on its command line).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!fs::exists(tracker) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(fs::exists(tracker)) << read_file(log);
  const auto killed_at = std::chrono::steady_clock::now();
  CommandResult kill = run_command(
      "for p in $(pgrep -x verl); do if tr '\\0' '\\n' < /proc/$p/environ | grep -qx 'OMPI_COMM_WORLD_RANK=2' && "
      "tr '\\0' '\\n' < /proc/$p/cmdline | grep -q 'dist_kill_worker'; then kill -9 $p; echo killed $p; fi; done");
  job.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_NE(kill.out.find("killed"), std::string::npos) << kill.out << kill.err;
  EXPECT_NE(read_file(dir + "/exit_code"), "0\n");
  EXPECT_LT(seconds, 60);
  const std::string text = read_file(log);
  EXPECT_NE(text.find("rank 2"), std::string::npos) << text;
  // The controller's line names the phase it was in (mpirun's message names the rank).
  EXPECT_NE(text.find("error: [distributed] the job was stopped (SIGTERM from mpirun"), std::string::npos) << text;
  // The kill can fall inside a worker call (the line names it) or between two (controller-side work).
  EXPECT_TRUE(text.find("while the controller waited for worker group 'global_pool' to answer '") !=
                  std::string::npos ||
              text.find("while the controller waited for no worker call") != std::string::npos)
      << text;
  std::printf("[ killed rank ] job ended %.1f s after kill -9 of rank 2\n", seconds);

  // The last complete checkpoint is intact: a rerun resumes from it and finishes.
  const std::string step = read_file(tracker);
  std::vector<std::string> resume = data_parallel_run(dir, 2);
  resume.push_back("trainer.total_training_steps=" + std::to_string(std::stoi(step) + 1));
  CommandResult again = run_command(mpirun(3) + verl_train_command(resume));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("global_step_" + std::to_string(std::stoi(step))), std::string::npos) << again.err;
}

}  // namespace
}  // namespace verl::test
