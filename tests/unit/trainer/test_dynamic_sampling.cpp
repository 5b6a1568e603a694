// DAPO dynamic sampling (verl's recipe/dapo): which groups are kept, the filter metrics, the accumulation over
// generation batches, and verl's error when max_num_gen_batches is spent. Expected values are worked out by hand
// from the recipe's rule (keep a group when np.std of its metric > 0 or it has one response).
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/trainer/dynamic_sampling.h"

namespace verl::trainer {
namespace {

using protocol::DataProto;

// Groups of 2 (uid g<k>), rows in order; scores per row given; token_level_rewards = scores - kl_shift.
DataProto batch_of(const std::string& tag, const std::vector<float>& scores, float kl_shift = 0.0f) {
  const int64_t rows = static_cast<int64_t>(scores.size());
  torch::Tensor token_level_scores = torch::zeros({rows, 3});
  for (int64_t i = 0; i < rows; ++i) token_level_scores[i][2] = scores[static_cast<size_t>(i)];
  torch::Tensor token_level_rewards = token_level_scores.clone();
  token_level_rewards.select(1, 0).fill_(-kl_shift);
  std::vector<nlohmann::json> uids, acc, row_ids;
  for (int64_t i = 0; i < rows; ++i) {
    uids.emplace_back(tag + std::to_string(i / 2));
    acc.emplace_back(scores[static_cast<size_t>(i)] > 0.5f);
    row_ids.emplace_back(tag + "/" + std::to_string(i));
  }
  return DataProto::from_dict({{"token_level_scores", token_level_scores}, {"token_level_rewards", token_level_rewards}},
                              {{"uid", uids}, {"acc", acc}, {"row", row_ids}});
}

std::vector<std::string> dynamic_sampling_rows_of(const DataProto& batch) {
  std::vector<std::string> out;
  for (const auto& row : batch.column("row")) out.push_back(row.get<std::string>());
  return out;
}

TEST(DynamicSampling, KeepsGroupsWhoseMetricVariesAndSingletons) {
  int64_t kept = 0;
  // groups: a {1, 1} uniform, b {0, 1} varies, c {0.3} alone, d {0.2, 0.2} uniform, e {0.1, 0.2} varies
  const std::vector<int64_t> rows =
      kept_group_rows({"a", "a", "b", "b", "c", "d", "d", "e", "e"}, {1, 1, 0, 1, 0.3, 0.2, 0.2, 0.1, 0.2}, kept);
  EXPECT_EQ(rows, (std::vector<int64_t>{2, 3, 4, 7, 8}));
  EXPECT_EQ(kept, 3);
}

TEST(DynamicSampling, MetricValues) {
  DataProto batch = batch_of("g", {1, 0, 0.25, 0.25}, 0.5f);
  EXPECT_EQ(filter_metric_values(batch, "reward"), (std::vector<double>{1, 0, 0.25, 0.25}));
  EXPECT_EQ(filter_metric_values(batch, "seq_reward"), (std::vector<double>{1, 0, 0.25, 0.25}));
  EXPECT_EQ(filter_metric_values(batch, "seq_final_reward"), (std::vector<double>{0.5, -0.5, -0.25, -0.25}));
  EXPECT_EQ(filter_metric_values(batch, "acc"), (std::vector<double>{1, 0, 0, 0}));
  try {
    filter_metric_values(batch, "score");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("available: reward, seq_reward, seq_final_reward, acc, row, uid"),
              std::string::npos)
        << e.what();
  }
}

TEST(DynamicSampling, AccumulatesUntilTrainBatchSizeGroupsThenCuts) {
  config::FilterGroupsConfig config;
  config.enable = true;
  config.metric = "acc";
  DynamicSampler sampler(config, /*train_batch_size=*/3, /*n=*/2);
  // batch 1: groups a0 {1,0} kept, a1 {0,1} kept, a2 {1,1} dropped -> 2 of 3 groups: not yet
  EXPECT_FALSE(sampler.add(batch_of("a", {1, 0, 0, 1, 1, 1})));
  EXPECT_EQ(sampler.num_gen_batches(), 1);
  EXPECT_EQ(sampler.num_prompt_in_batch(), 2);
  // batch 2: b0 {0,0} dropped, b1 {0,1} kept, b2 {1,0} kept -> 4 groups, ready; cut to the first 3 groups
  EXPECT_TRUE(sampler.add(batch_of("b", {0, 0, 0, 1, 1, 0})));
  EXPECT_EQ(sampler.num_gen_batches(), 2);
  DataProto batch = sampler.take();
  EXPECT_EQ(dynamic_sampling_rows_of(batch), (std::vector<std::string>{"a/0", "a/1", "a/2", "a/3", "b/2", "b/3"}));
  EXPECT_EQ(sampler.num_gen_batches(), 0);
  // More groups than needed: cut to train_batch_size x n responses, in order.
  EXPECT_TRUE(sampler.add(batch_of("c", {1, 0, 0, 1, 1, 0, 0, 1})));
  EXPECT_EQ(dynamic_sampling_rows_of(sampler.take()),
            (std::vector<std::string>{"c/0", "c/1", "c/2", "c/3", "c/4", "c/5"}));
}

TEST(DynamicSampling, ErrorsAsVerlWhenMaxNumGenBatchesIsSpent) {
  config::FilterGroupsConfig config;
  config.enable = true;
  config.metric = "seq_reward";
  config.max_num_gen_batches = 2;
  DynamicSampler sampler(config, 2, 2);
  EXPECT_FALSE(sampler.add(batch_of("a", {1, 1, 0, 0})));
  try {
    sampler.add(batch_of("b", {1, 1, 0, 0}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_gen_batches=2 >= max_num_gen_batches=2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set max_num_gen_batches=0 to enable endless trials"), std::string::npos);
  }
  // max_num_gen_batches <= 0: no limit.
  config.max_num_gen_batches = 0;
  DynamicSampler endless(config, 2, 2);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(endless.add(batch_of("e", {1, 1, 0, 0})));
  EXPECT_EQ(endless.num_gen_batches(), 5);
}

}  // namespace
}  // namespace verl::trainer
