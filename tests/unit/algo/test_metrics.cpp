// Trainer metrics with verl's names, checked against hand-computed numbers.
#include <gtest/gtest.h>

#include "verl/algo/metrics.h"
#include "verl/common/error.h"

namespace verl::algo {
namespace {

torch::Tensor t2(std::vector<double> v, int64_t rows) {
  return torch::tensor(v, torch::kDouble).view({rows, -1});
}

DataMetricsInputs small_batch() {
  // P = 2, R = 3. Row 0: prompt 1, response 3 (clipped); row 1: prompt 2, response 1; row 2: aborted.
  DataMetricsInputs b;
  b.attention_mask = t2({0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0}, 3);
  b.response_mask = b.attention_mask.slice(1, 2);
  b.token_level_scores = t2({0, 0, 1, 0.5, 0, 0, 0, 0, 0}, 3);
  b.token_level_rewards = b.token_level_scores - 0.1 * b.response_mask;
  b.advantages = t2({1, 2, 3, 4, 9, 9, 9, 9, 9}, 3);
  b.returns = t2({1, 1, 1, 2, 9, 9, 9, 9, 9}, 3);
  b.values = t2({0.5, 1, 1.5, 1, 9, 9, 9, 9, 9}, 3);
  return b;
}

TEST(Metrics, DataMetricsByHand) {
  MetricMap m = compute_data_metrics(small_batch());
  EXPECT_NEAR(m.at("critic/score/mean"), 0.75, 1e-12);
  EXPECT_NEAR(m.at("critic/score/max"), 1.0, 1e-12);
  EXPECT_NEAR(m.at("critic/score/min"), 0.5, 1e-12);
  EXPECT_NEAR(m.at("critic/rewards/mean"), 0.55, 1e-12);
  EXPECT_NEAR(m.at("critic/advantages/mean"), 2.5, 1e-12);
  EXPECT_NEAR(m.at("critic/advantages/max"), 4.0, 1e-12);
  EXPECT_NEAR(m.at("critic/advantages/min"), 1.0, 1e-12);
  EXPECT_NEAR(m.at("critic/returns/mean"), 1.25, 1e-12);
  EXPECT_NEAR(m.at("critic/values/max"), 1.5, 1e-12);
  // Var(returns - values) = 1.25 / 3, Var(returns) = 0.75 / 3 (unbiased)
  EXPECT_NEAR(m.at("critic/vf_explained_var"), 1.0 - (1.25 / 3) / (0.25 + 1e-5), 1e-12);
  EXPECT_NEAR(m.at("response_length/mean"), 4.0 / 3, 1e-12);
  EXPECT_NEAR(m.at("response_length/max"), 3.0, 1e-12);
  EXPECT_NEAR(m.at("response_length/min"), 0.0, 1e-12);
  EXPECT_NEAR(m.at("response_length/clip_ratio"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(m.at("response_length_non_aborted/mean"), 2.0, 1e-12);
  EXPECT_NEAR(m.at("response_length_non_aborted/clip_ratio"), 0.5, 1e-12);
  EXPECT_NEAR(m.at("response/aborted_ratio"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(m.at("prompt_length/mean"), 5.0 / 3, 1e-12);
  EXPECT_NEAR(m.at("prompt_length/min"), 1.0, 1e-12);
  EXPECT_NEAR(m.at("prompt_length/clip_ratio"), 2.0 / 3, 1e-12);
  EXPECT_EQ(m.size(), 29u);  // verl's keys without num_turns
  MetricMap no_critic = compute_data_metrics(small_batch(), false);
  EXPECT_EQ(no_critic.count("critic/values/mean"), 0u);
  EXPECT_EQ(no_critic.count("critic/vf_explained_var"), 0u);
}

TEST(Metrics, AllAbortedIsAnError) {
  DataMetricsInputs b = small_batch();
  b.attention_mask.slice(1, 2).zero_();
  b.response_mask = b.attention_mask.slice(1, 2);
  EXPECT_THROW(compute_data_metrics(b), Error);
}

TEST(Metrics, TimingAndThroughput) {
  torch::Tensor attention = small_batch().attention_mask;  // 5 prompt tokens, 4 response tokens
  MetricMap t = compute_timing_metrics(attention, 3, {{"gen", 2.0}, {"ref", 1.0}, {"step", 5.0}});
  EXPECT_DOUBLE_EQ(t.at("timing_s/gen"), 2.0);
  EXPECT_DOUBLE_EQ(t.at("timing_s/step"), 5.0);
  EXPECT_NEAR(t.at("timing_per_token_ms/gen"), 2000.0 / 4, 1e-12);
  EXPECT_NEAR(t.at("timing_per_token_ms/ref"), 1000.0 / 9, 1e-12);
  EXPECT_EQ(t.count("timing_per_token_ms/step"), 0u);
  MetricMap p = compute_throughput_metrics({10, 20, 30}, {{"step", 2.0}}, 3);
  EXPECT_DOUBLE_EQ(p.at("perf/total_num_tokens"), 60.0);
  EXPECT_DOUBLE_EQ(p.at("perf/time_per_step"), 2.0);
  EXPECT_DOUBLE_EQ(p.at("perf/throughput"), 10.0);
  EXPECT_THROW(compute_throughput_metrics({1}, {{"gen", 1.0}}, 1), Error);
}

TEST(Metrics, ReduceMetrics) {
  MetricMap r = reduce_metrics({{"actor/pg_loss", {1, 2, 6}}, {"critic/score/max", {1, 5, 2}},
                                {"global_seqlen/min", {3, -1}}, {"x/minmax_diff", {1, 3}}});
  EXPECT_DOUBLE_EQ(r.at("actor/pg_loss"), 3.0);
  EXPECT_DOUBLE_EQ(r.at("critic/score/max"), 5.0);
  EXPECT_DOUBLE_EQ(r.at("global_seqlen/min"), -1.0);
  EXPECT_DOUBLE_EQ(r.at("x/minmax_diff"), 3.0);  // "max" is checked first, as in verl
  EXPECT_THROW(reduce_metrics({{"a", {}}}), Error);
}

TEST(Metrics, ValidationMeanStdAndKeys) {
  // One data source, two prompts with 4 responses each; "acc" is the core variable.
  std::vector<std::string> sources(8, "openai/gsm8k");
  std::vector<std::string> uids = {"p", "p", "p", "p", "q", "q", "q", "q"};
  std::map<std::string, std::vector<InfoValue>> infos;
  infos["acc"] = {1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0};
  infos["reward"] = {2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0};
  infos["pred"] = {std::string("7"), std::string("8"), std::string("7"), std::string("9"),
                   std::string("1"), std::string("1"), std::string("1"), std::string("1")};
  ValidationMetrics v = process_validation_metrics(sources, uids, infos);
  const auto& acc = v.at("openai/gsm8k").at("acc");
  EXPECT_DOUBLE_EQ(acc.at("mean@4"), (0.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(acc.at("std@4"), (0.5 + 0.0) / 2);
  // Constant groups: every resample gives the same value.
  const auto& reward = v.at("openai/gsm8k").at("reward");
  EXPECT_DOUBLE_EQ(reward.at("best@4/mean"), 1.0);
  EXPECT_DOUBLE_EQ(reward.at("worst@2/mean"), 1.0);
  EXPECT_DOUBLE_EQ(reward.at("best@2/std"), 0.0);
  EXPECT_EQ(v.at("openai/gsm8k").count("pred"), 0u);  // strings are not scored
  ASSERT_EQ(acc.count("maj@4/mean"), 1u);
  // bootstrap best@n is between the mean and the max, worst@n between the min and the mean
  EXPECT_GT(acc.at("best@2/mean"), 0.75);
  EXPECT_LT(acc.at("worst@2/mean"), 0.75);

  MetricMap flat = flatten_validation_metrics(v);
  EXPECT_EQ(flat.count("val-core/openai/gsm8k/acc/mean@4"), 1u);
  EXPECT_EQ(flat.count("val-core/openai/gsm8k/acc/best@4/mean"), 1u);
  EXPECT_EQ(flat.count("val-core/openai/gsm8k/acc/maj@4/std"), 1u);
  EXPECT_EQ(flat.count("val-aux/openai/gsm8k/acc/std@4"), 1u);
  EXPECT_EQ(flat.count("val-aux/openai/gsm8k/acc/worst@4/mean"), 1u);
  EXPECT_EQ(flat.count("val-aux/openai/gsm8k/acc/best@2/mean"), 1u);
  EXPECT_EQ(flat.count("val-aux/openai/gsm8k/reward/mean@4"), 1u);
  for (const auto& [k, val] : flat) EXPECT_TRUE(k.rfind("val-core/", 0) == 0 || k.rfind("val-aux/", 0) == 0) << k;
}

TEST(Metrics, ValidationSingleResponse) {
  ValidationMetrics v = process_validation_metrics({"ds", "ds"}, {"a", "b"}, {{"reward", {1.0, 0.0}}});
  EXPECT_EQ(v.at("ds").at("reward").size(), 1u);
  EXPECT_DOUBLE_EQ(v.at("ds").at("reward").at("mean@1"), 0.5);
  MetricMap flat = flatten_validation_metrics(v);
  EXPECT_DOUBLE_EQ(flat.at("val-core/ds/reward/mean@1"), 0.5);
}

TEST(Metrics, ValidationLengthMismatchIsAnError) {
  EXPECT_THROW(process_validation_metrics({"ds", "ds"}, {"a"}, {}), Error);
  EXPECT_THROW(process_validation_metrics({"ds"}, {"a"}, {{"reward", {1.0, 2.0}}}), Error);
}

}  // namespace
}  // namespace verl::algo
