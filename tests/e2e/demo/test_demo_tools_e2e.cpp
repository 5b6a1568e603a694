// `verl demo --tools`: the arithmetic_tool task ("12*34+5=") with the calculator tool of examples/multi_turn, SFT
// warm start mixing tool transcripts (85%) and direct answers, then GRPO with the multi-turn rollout (hermes tool
// calls, two assistant turns). The tool is learned: tool calls per sample (verl's tool_call_counts/mean), the
// training score and the sampled held-out accuracy all rise.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

// Measured on the 2-core Intel Xeon development VM (AVX-512), seed 2, one thread, two other builds on the cores:
// SFT stops at step 900 (tool-path accuracy 0.945), GRPO 30 steps (196 s), 522 s in all; tool calls per sample
// 0.898 -> 0.997 and training score 0.598 -> 0.693 (first / last three steps), sampled val 0.63 -> 0.685. With the
// actor's LR at 1e-12 (nothing learned): 0.879 -> 0.869 and 0.593 -> 0.602, both checks fail.
// SFT is deterministic for a given machine, thread count and seed (its warm-up is 40 steps whatever the step
// limit); another CPU's BLAS rounds differently and may stop SFT at another step: the demo trains until the
// tool-path accuracy reaches 0.9 (up to 4000 steps), and the RL checks below leave room for that.
constexpr int kSteps = 30;                  // the demo's default
// Mean of the last 3 steps over the first 3. The start depends on the SFT trajectory (85% of its answers call the
// tool; sampled 0.898 here), so the tool-call check leaves room for a start near 0.95.
constexpr double kMinToolCallGain = 0.02;
constexpr double kMinScoreGain = 0.02;      // the same for the training score (sampled accuracy)

double first_value(const trainer::MetricHistory& history, const std::string& key) {
  auto it = history.find(key);
  return it == history.end() || it->second.empty() ? -1 : it->second.begin()->second;
}

double last_value(const trainer::MetricHistory& history, const std::string& key) {
  auto it = history.find(key);
  return it == history.end() || it->second.empty() ? -1 : it->second.rbegin()->second;
}

// Mean of the first (or last) `n` logged values of `key`.
double mean_of(const trainer::MetricHistory& history, const std::string& key, size_t n, bool last) {
  const auto& series = history.at(key);
  std::vector<double> values;
  for (const auto& [step, value] : series) values.push_back(value);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += last ? values[values.size() - 1 - i] : values[i];
  return sum / static_cast<double>(n);
}

TEST(DemoToolsE2E, GrpoWithACalculatorToolRaisesToolUseAndAccuracy) {
  const std::string out = make_temp_dir("e2e_demo_tools");
  CommandResult demo = run_command(verl_binary() + " demo --tools --out '" + out + "' --seed 2");
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  std::smatch m;
  static const std::regex pattern(
      R"(demo: val_accuracy_before=([0-9.]+) val_accuracy_after=([0-9.]+) run_dir=(\S+) tool_calls_first=([-0-9.]+) tool_calls_last=([-0-9.]+))");
  ASSERT_TRUE(std::regex_search(demo.out, m, pattern)) << demo.out;
  const double before = std::stod(m[1]), after = std::stod(m[2]);
  EXPECT_EQ(m[3].str(), out + "/runs/arithmetic_tool_grpo");

  // The numbers are the trainer's: validation at step 0 and the last step, rollout metrics of every step.
  const trainer::MetricHistory history = trainer::read_metrics_jsonl(m[3].str() + "/metrics.jsonl");
  EXPECT_NEAR(first_value(history, "val-core/arithmetic/acc/mean@1"), before, 5e-4);
  EXPECT_NEAR(last_value(history, "val-core/arithmetic/acc/mean@1"), after, 5e-4);
  EXPECT_NEAR(first_value(history, "tool_call_counts/mean"), std::stod(m[4]), 5e-4);
  EXPECT_NEAR(last_value(history, "tool_call_counts/mean"), std::stod(m[5]), 5e-4);
  for (const char* key : {"tool_call_counts/mean", "critic/score/mean", "num_turns/mean"}) {
    ASSERT_TRUE(history.count(key)) << key;
    ASSERT_EQ(history.at(key).size(), static_cast<size_t>(kSteps)) << key;
  }
  // Three steps on each side (768 conversations): one step's 256 are noisy at these rates.
  const double calls_first = mean_of(history, "tool_call_counts/mean", 3, false);
  const double calls_last = mean_of(history, "tool_call_counts/mean", 3, true);
  const double score_first = mean_of(history, "critic/score/mean", 3, false);
  const double score_last = mean_of(history, "critic/score/mean", 3, true);
  std::cout << "[e2e] demo --tools: tool calls per sample " << calls_first << " -> " << calls_last
            << ", training score " << score_first << " -> " << score_last << ", sampled val accuracy " << before
            << " -> " << after << " after " << kSteps << " steps\n";
  EXPECT_GT(calls_last - calls_first, kMinToolCallGain) << demo.err;
  EXPECT_GT(score_last - score_first, kMinScoreGain) << demo.err;
  // The sampled validation (200 conversations) is reported, not asserted: at these rates its noise (0.035 per
  // point) is about half of the rise measured on the development VM (0.63 -> 0.705 after 20 steps).
  // A tool call makes a conversation of 4 turns counted as verl counts them (user, assistant, tool, assistant);
  // direct answers 2.
  EXPECT_GT(mean_of(history, "num_turns/mean", 3, true), mean_of(history, "num_turns/mean", 3, false));
}

}  // namespace
}  // namespace verl::test
