// `verl demo` end to end with the default RL budget, validated only before and after (test_freq = steps): the
// arithmetic data, tokenizer and tiny Qwen2 are made, warm-started by SFT, then GRPO through verl's trainer must
// raise held-out greedy accuracy.
// The example config for PPO then runs with `verl train --config` on the folder the demo made.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

struct DemoLine {
  double before = 0, after = 0;
  std::string run_dir;
};

// The machine-readable last line: "demo: val_accuracy_before=<x> val_accuracy_after=<y> run_dir=<path>".
DemoLine parse_last_line(const std::string& out) {
  std::string text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string last = text.substr(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
  std::smatch m;
  static const std::regex pattern(R"(demo: val_accuracy_before=([0-9.]+) val_accuracy_after=([0-9.]+) run_dir=(\S+))");
  EXPECT_TRUE(std::regex_match(last, m, pattern)) << "last line: " << last;
  DemoLine line;
  if (m.size() == 4) {
    line.before = std::stod(m[1]);
    line.after = std::stod(m[2]);
    line.run_dir = m[3];
  }
  return line;
}

double accuracy_at(const trainer::MetricHistory& history, int64_t step) {
  auto it = history.find("val-core/arithmetic/acc/mean@1");
  if (it == history.end() || !it->second.count(step)) return -1;
  return it->second.at(step);
}

// RL steps in this test (the first 70 of the demo's 110) and the accuracy gain they must give at seed 0.
// Measured on the 2-core development machine (128 prompts x 8 per step from the 0.22 warm start): +0.094
// after 10 steps, +0.106 after 20, +0.124 after 50, +0.146 after 70; validation is noisy from one evaluation to
// the next (500 problems), so the bound leaves room for another CPU's rounding. On a 2-core Intel Xeon (stop 22)
// the same seed gives another trajectory from the SFT warm start on (0.326 before RL) and +0.036 after 70 steps
// (training score 0.18 -> 0.31 by step 20); the binaries before and after that stop's change give bit-identical
// metrics there, so the spread is the CPU's (MKL's kernels), not the code's.
constexpr int kDemoE2ESteps = 70;
constexpr double kDemoE2EMinGain = 0.03;

TEST(DemoE2E, GrpoRaisesHeldOutAccuracyThenThePpoExampleRunsOnTheDemoFolder) {
  const std::string out = make_temp_dir("e2e_demo");
  const int steps = kDemoE2ESteps;
  CommandResult demo = run_command(verl_binary() + " demo --out '" + out + "' --seed 0 trainer.total_training_steps=" +
                                   std::to_string(steps) + " trainer.test_freq=" + std::to_string(steps));
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  const DemoLine line = parse_last_line(demo.out);
  std::cout << "[e2e] demo: accuracy " << line.before << " -> " << line.after << " after " << steps << " steps\n";
  EXPECT_EQ(line.run_dir, out + "/runs/arithmetic_grpo");
  EXPECT_GT(line.after - line.before, kDemoE2EMinGain) << "before " << line.before << ", after " << line.after;

  // The printed numbers are the validations the trainer logged (step 0 and the last step), and the report
  // was written.
  trainer::MetricHistory history = trainer::read_metrics_jsonl(line.run_dir + "/metrics.jsonl");
  EXPECT_NEAR(accuracy_at(history, 0), line.before, 5e-4);
  EXPECT_NEAR(accuracy_at(history, steps), line.after, 5e-4);
  EXPECT_EQ(history.at("critic/score/mean").size(), static_cast<size_t>(steps));
  const std::string report = read_file(line.run_dir + "/report.html");
  EXPECT_NE(report.find("data-metric=\"val-core/arithmetic/acc/mean@1\""), std::string::npos);
  EXPECT_NE(read_file(out + "/arithmetic_grpo.yaml").find("adv_estimator: grpo"), std::string::npos);

  // examples/arithmetic_ppo.yaml with `verl train`, pointed at the demo's data and model: a critic (GAE) runs.
  const std::string ppo_dir = out + "/runs/ppo_check";
  CommandResult ppo = run_command(
      verl_binary() + " train --config '" + std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/examples/arithmetic_ppo.yaml'" +
      " 'data.train_files=[" + out + "/data/train.parquet]' 'data.val_files=[" + out + "/data/test.parquet]'" +
      " actor_rollout_ref.model.path=" + out + "/model critic.model.path=" + out + "/model" +
      " trainer.default_local_dir=" + ppo_dir + " trainer.total_training_steps=2 trainer.val_before_train=false" +
      " 'trainer.logger=[jsonl]'");
  ASSERT_EQ(ppo.exit_code, 0) << ppo.err;
  trainer::MetricHistory ppo_history = trainer::read_metrics_jsonl(ppo_dir + "/metrics.jsonl");
  EXPECT_EQ(ppo_history.at("critic/vf_loss").size(), 2u);
  EXPECT_EQ(ppo_history.at("critic/values/mean").size(), 2u);
}

TEST(DemoE2E, BadArgumentsFailWithOneLine) {
  CommandResult algo = run_command(verl_binary() + " demo --algo rloo");
  EXPECT_EQ(algo.exit_code, 1);
  EXPECT_NE(algo.err.find("--algo expects grpo or ppo, got 'rloo'"), std::string::npos) << algo.err;
  CommandResult key = run_command(verl_binary() + " demo --out " + make_temp_dir("e2e_demo_bad") +
                                  " --max-sft-steps 1 trainer.no_such_key=1");
  EXPECT_EQ(key.exit_code, 1);
  EXPECT_NE(key.err.find("no_such_key"), std::string::npos) << key.err;
  CommandResult prepare = run_command(verl_binary() + " demo --prepare-only trainer.test_freq=1");
  EXPECT_EQ(prepare.exit_code, 1);
  EXPECT_NE(prepare.err.find("--prepare-only runs no RL"), std::string::npos) << prepare.err;
  CommandResult option = run_command(verl_binary() + " demo --nope");
  EXPECT_EQ(option.exit_code, 2);
}

}  // namespace
}  // namespace verl::test
