// Karmarkar-Karp partitions (hand-traced through verl's algorithm: heap by largest spread, ties by largest
// first set) and dynamic micro-batches with their restore order.
#include <gtest/gtest.h>

#include <numeric>

#include "verl/common/error.h"
#include "verl/workers/seqlen_balancing.h"

namespace verl::workers {
namespace {

using Parts = std::vector<std::vector<int64_t>>;

TEST(SeqlenBalancing, KarmarkarKarpUnequalSizesHandTraced) {
  // 8,7 -> {8}{7}; 6,5 -> {6}{5}; 4 with {8}{7} -> {4,7}{8}; then with {6}{5} -> {4,7,5}=16 {8,6}=14.
  EXPECT_EQ(get_seqlen_balanced_partitions({8, 7, 6, 5, 4}, 2, false), (Parts{{1, 3, 4}, {0, 2}}));
}

TEST(SeqlenBalancing, KarmarkarKarpEqualSizesHandTraced) {
  // Initial states {2}{1}, {4}{3}, {6}{5}; {6}{5}+{4}{3} -> {6,3}{5,4}; {2}{1} + that -> {2,5,4}=11 {1,6,3}=10.
  EXPECT_EQ(get_seqlen_balanced_partitions({1, 2, 3, 4, 5, 6}, 2, true), (Parts{{1, 3, 4}, {0, 2, 5}}));
}

TEST(SeqlenBalancing, PartitionsCoverEveryItemOnce) {
  std::vector<int64_t> lens;
  for (int i = 0; i < 37; ++i) lens.push_back((i * 37 + 11) % 101 + 1);
  for (int64_t k : {1, 2, 5, 37}) {
    auto parts = get_seqlen_balanced_partitions(lens, k, false);
    ASSERT_EQ(static_cast<int64_t>(parts.size()), k);
    std::vector<int> seen(lens.size(), 0);
    for (const auto& p : parts) {
      EXPECT_FALSE(p.empty());
      EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
      for (int64_t i : p) seen[static_cast<size_t>(i)]++;
    }
    for (int s : seen) EXPECT_EQ(s, 1);
  }
  auto eq = get_seqlen_balanced_partitions(std::vector<int64_t>(lens.begin(), lens.begin() + 36), 4, true);
  for (const auto& p : eq) EXPECT_EQ(p.size(), 9u);
}

TEST(SeqlenBalancing, Errors) {
  EXPECT_THROW(get_seqlen_balanced_partitions({1, 2}, 3, false), Error);
  EXPECT_THROW(get_seqlen_balanced_partitions({1, 2, 3}, 2, true), Error);
  EXPECT_THROW(get_seqlen_balanced_partitions({1, 2, 3}, 0, false), Error);
  EXPECT_THROW(rearrange_micro_batches(torch::ones({2, 10}, torch::kInt64), 9), Error);
}

TEST(SeqlenBalancing, WorkloadFormula) {
  EXPECT_EQ(sequence_workload(0), 0);
  EXPECT_EQ(sequence_workload(10), 245860);
}

TEST(SeqlenBalancing, MicroBatchesUnderBudgetAndRestoreOrder) {
  const std::vector<int64_t> lens = {10, 2, 7, 3, 9, 1};
  auto mask = torch::zeros({6, 10}, torch::kInt64);
  for (int64_t i = 0; i < 6; ++i) mask[i].narrow(0, 10 - lens[i], lens[i]).fill_(1);
  // 32 tokens, budget 12: ceil(32/12) = 3 micro-batches.
  auto plan = rearrange_micro_batches(mask, 12);
  ASSERT_EQ(plan.micro_batches.size(), 3u);
  // Sorted heaviest first as [w0, w1, w2], then arranged [w2, w0, w1]: the middle one is the heaviest, the
  // first the lightest.
  auto tokens = [&](const std::vector<int64_t>& mb) {
    int64_t s = 0;
    for (int64_t i : mb) s += lens[static_cast<size_t>(i)];
    return s;
  };
  EXPECT_LE(tokens(plan.micro_batches[0]), tokens(plan.micro_batches[2]));
  EXPECT_GE(tokens(plan.micro_batches[1]), tokens(plan.micro_batches[2]));
  // Concatenating the micro-batches' rows and indexing by restore_order gives the input order.
  std::vector<int64_t> concat;
  for (const auto& mb : plan.micro_batches) concat.insert(concat.end(), mb.begin(), mb.end());
  ASSERT_EQ(plan.restore_order.size(), 6u);
  for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(concat[static_cast<size_t>(plan.restore_order[j])], j);
  // A budget that holds everything gives one micro-batch; a tiny one gives one row each (min(B, ...)).
  EXPECT_EQ(rearrange_micro_batches(mask, 100).micro_batches.size(), 1u);
  EXPECT_EQ(rearrange_micro_batches(mask, 10).micro_batches.size(), 4u);
  EXPECT_EQ(rearrange_micro_batches(mask, 10, 6).micro_batches.size(), 6u);
}

}  // namespace
}  // namespace verl::workers
