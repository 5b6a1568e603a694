// Crash consistency of `verl train` (issue 25), one CPU process on the tiny digit-completion setup:
//   - a step's metrics line survives a kill between its checkpoint commit and the line (data.json keeps it);
//   - SIGKILL at random moments over several restarts, saves included, ends bit-identical to the uninterrupted
//     run: every checkpoint tensor file, the dataloader state, and every metric that does not measure time,
//     with exactly one metrics.jsonl line per step and no temporary left behind. Without the actor's
//     torch::manual_seed(fsdp_config.seed) (perturbed) the extra state's rng.cpu differed and this test failed.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "support/digit_completion_setup.h"
#include "support/metric_compare.h"
#include "support/run_command.h"
#include "verl/common/atomic_file.h"
#include "verl/trainer/tracking.h"

extern char** environ;

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const DigitCompletionSetup& crash_consistency_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_crash_setup"), 8);
  return instance;
}

std::vector<std::string> overrides(const std::string& run_dir, const std::vector<std::string>& more) {
  std::vector<std::string> o = crash_consistency_setup().base_overrides(run_dir);
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

// Steps of the metrics.jsonl lines, in file order.
std::vector<int64_t> logged_steps(const std::string& run_dir) {
  std::vector<int64_t> steps;
  std::istringstream lines(read_file(run_dir + "/metrics.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const size_t at = line.find("\"step\":");
    if (at != std::string::npos) steps.push_back(std::stoll(line.substr(at + 7)));
  }
  return steps;
}

// Every non-timing metric of `expected` at `step` equals `got`'s, bitwise; returns how many were compared.
int compare_step(const trainer::MetricHistory& expected, const trainer::MetricHistory& got, int64_t step) {
  int compared = 0;
  for (const auto& [key, by_step] : expected) {
    if (is_machine_measured_metric(key) || !by_step.count(step)) continue;
    const auto it = got.find(key);
    EXPECT_TRUE(it != got.end() && it->second.count(step)) << key << " missing at step " << step;
    if (it == got.end() || !it->second.count(step)) continue;
    const double a = by_step.at(step), b = it->second.at(step);
    EXPECT_TRUE(a == b || (a != a && b != b)) << key << " step " << step << ": " << a << " vs " << b;
    ++compared;
  }
  return compared;
}

TEST(CrashConsistencyE2E, StepLineSurvivesAKillBetweenCheckpointAndLog) {
  const std::vector<std::string> run = {"trainer.total_training_steps=4", "trainer.save_freq=2"};
  const std::string straight_dir = make_temp_dir("e2e_crash_line_straight");
  TrainRun straight = run_verl_train(overrides(straight_dir, run), straight_dir);
  ASSERT_EQ(straight.result.exit_code, 0) << straight.result.err;

  // The state a kill leaves right after step 2's checkpoint commit: tracker at 2, step 2's line not written.
  const std::string dir = make_temp_dir("e2e_crash_line_killed");
  fs::copy(straight_dir, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove_all(dir + "/global_step_4");
  write_file(dir + "/latest_checkpointed_iteration.txt", "2");
  std::istringstream lines(read_file(straight_dir + "/metrics.jsonl"));
  std::string line, kept;
  while (std::getline(lines, line)) {
    if (line.find("\"step\":1,") != std::string::npos) kept += line + "\n";
  }
  write_file(dir + "/metrics.jsonl", kept);

  TrainRun resumed = run_verl_train(overrides(dir, run), dir);
  ASSERT_EQ(resumed.result.exit_code, 0) << resumed.result.err;
  EXPECT_EQ(logged_steps(dir), (std::vector<int64_t>{1, 2, 3, 4}));  // no hole, no repeat
  int compared = 0;
  for (int64_t step = 1; step <= 4; ++step) compared += compare_step(straight.history, resumed.history, step);
  EXPECT_GT(compared, 80);
}

// One `verl train` as a child process (exec'd by sh, so the pid is verl's).
pid_t spawn_train(const std::vector<std::string>& o, const std::string& log) {
  const std::string command = "exec " + verl_train_command(o) + " >> '" + log + "' 2>&1";
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ), 0);
  return pid;
}

bool has_temporary(const std::string& dir) {
  std::error_code ec;  // entries come and go while the run writes
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (is_stale_temp_name(it->path().filename().string())) return true;
  }
  return false;
}

// A checkpoint's files by relative path, except data.json (it keeps the step's timings) and the optimizer
// archives: LibTorch keys their state by tensor address, so equal states differ in bytes between processes
// (they are compared by training one more step from each checkpoint).
std::map<std::string, std::string> checkpoint_files(const std::string& step_dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(step_dir)) {
    const std::string name = entry.path().filename().string();
    const bool optimizer = name.rfind("optim_", 0) == 0;
    if (!entry.is_regular_file() || name == "data.json" || optimizer) continue;
    // extra_state's rng.cpu included: the actor seeds LibTorch's global CPU generator from fsdp_config.seed.
    files[fs::relative(entry.path(), step_dir).string()] = read_file(entry.path().string());
  }
  return files;
}

TEST(CrashConsistencyE2E, RandomKillsOverRestartsEndBitIdentical) {
  const int steps = 6;
  const std::vector<std::string> run = {"trainer.total_training_steps=" + std::to_string(steps),
                                        "trainer.save_freq=1", "actor_rollout_ref.rollout.n=2"};
  const std::string straight_dir = make_temp_dir("e2e_crash_random_straight");
  const auto start = std::chrono::steady_clock::now();
  TrainRun straight = run_verl_train(overrides(straight_dir, run), straight_dir);
  ASSERT_EQ(straight.result.exit_code, 0) << straight.result.err;
  const double run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::mt19937 random(25);
  const int max_kills = 8, min_kills = 3;
  std::string dir, log;
  int kills = 0, kills_with_write_in_flight = 0, starts = 0, exit_code = -1;
  // A run that finishes before min_kills kills (a resumed run is shorter than the kill window, more so when the
  // machine is loaded) starts the sequence over in a fresh folder with a narrower window.
  for (int attempt = 0; attempt < 3 && kills < min_kills; ++attempt) {
  dir = make_temp_dir("e2e_crash_random_killed_" + std::to_string(attempt));
  log = dir + "/log";
  // Kill moments spread over part of a run (start-up, steps, saves), so most starts are cut short.
  std::uniform_real_distribution<double> delay(0.1, std::max(0.3, run_seconds / (2 << attempt)));
  kills = kills_with_write_in_flight = starts = 0;
  exit_code = -1;
  while (exit_code != 0) {
    ASSERT_LT(starts, max_kills + 2) << read_file(log);
    const pid_t pid = spawn_train(overrides(dir, run), log);
    ++starts;
    const auto kill_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(delay(random));
    int status = 0;
    bool exited = false;
    while (!exited && (kills >= max_kills || std::chrono::steady_clock::now() < kill_at)) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // Every other kill waits for a write in flight (a staged checkpoint folder or a temporary file) first.
    const auto save_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!exited && kills < max_kills && kills % 2 == 1 && !has_temporary(dir) &&
           std::chrono::steady_clock::now() < save_deadline) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
    }
    if (exited) {
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ASSERT_EQ(exit_code, 0) << read_file(log);
      continue;
    }
    ::kill(pid, SIGKILL);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ++kills;
    kills_with_write_in_flight += has_temporary(dir);
  }
  }
  const int resumes = starts - 1;
  EXPECT_FALSE(has_temporary(dir));  // the next start removed what the kills left

  // Bit-identical: every tensor file of the final checkpoint, the dataloader state, the metrics.
  const auto expected_files = checkpoint_files(straight_dir + "/global_step_" + std::to_string(steps));
  const auto got_files = checkpoint_files(dir + "/global_step_" + std::to_string(steps));
  ASSERT_EQ(expected_files.size(), got_files.size());
  int identical_files = 0;
  for (const auto& [name, bytes] : expected_files) {
    const auto it = got_files.find(name);
    ASSERT_NE(it, got_files.end()) << name;
    EXPECT_TRUE(it->second == bytes) << name << " differs";
    identical_files += it->second == bytes;
  }
  const auto state = [&](const std::string& root) {
    nlohmann::json s = nlohmann::json::parse(read_file(root + "/global_step_" + std::to_string(steps) + "/data.json"));
    return nlohmann::json{{"dataloader", s["dataloader"]}, {"uid_generator", s["uid_generator"]}};
  };
  EXPECT_EQ(state(straight_dir), state(dir));
  const trainer::MetricHistory history = trainer::read_metrics_jsonl(dir + "/metrics.jsonl");
  std::vector<int64_t> every_step;
  int compared = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    every_step.push_back(step);
    compared += compare_step(straight.history, history, step);
  }
  EXPECT_EQ(logged_steps(dir), every_step);  // one line per step: no hole, no repeat

  // The optimizer state too: one more step from each final checkpoint gives the same weights.
  std::vector<std::string> one_more = run;
  one_more[0] = "trainer.total_training_steps=" + std::to_string(steps + 1);
  for (const std::string& root : {straight_dir, dir}) {
    TrainRun more = run_verl_train(overrides(root, one_more), root);
    ASSERT_EQ(more.result.exit_code, 0) << more.result.err;
  }
  const auto expected_next = checkpoint_files(straight_dir + "/global_step_" + std::to_string(steps + 1));
  const auto got_next = checkpoint_files(dir + "/global_step_" + std::to_string(steps + 1));
  for (const auto& [name, bytes] : expected_next) {
    if (name.find("model_world_size") == std::string::npos || name.find(".crc32c") != std::string::npos) continue;
    ASSERT_TRUE(got_next.count(name)) << name;
    EXPECT_TRUE(got_next.at(name) == bytes) << name << " differs one step after the final checkpoint";
    identical_files += got_next.at(name) == bytes;
  }
  const bool identical = !::testing::Test::HasFailure();
  std::printf("[ kill test ] %d kills (%d with a write in flight), %d resumes; %d checkpoint files (the final "
              "checkpoint's, and the models one step later) and %d metric values compared: %s\n",
              kills, kills_with_write_in_flight, resumes, identical_files, compared,
              identical ? "bit-identical" : "DIFFERENT");
  EXPECT_GE(kills, min_kills);
}

}  // namespace
}  // namespace verl::test
