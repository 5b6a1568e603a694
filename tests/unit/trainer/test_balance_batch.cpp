// balance_batch's reorder and log_seqlen_unbalance metrics, against hand-computed numbers; the uid generator.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "verl/common/error.h"
#include "verl/trainer/balance_batch.h"
#include "verl/trainer/uid_generator.h"

namespace verl::trainer {
namespace {

int64_t identity_workload(int64_t length) { return length; }

TEST(BalanceBatch, SortsEachPartitionAndPutsSmallItemsAtBothEnds) {
  // Lengths 5 2 9 4 7 1 3 8 6 0 ... one partition of 5 and one of 5 given by the partitioner.
  const std::vector<int64_t> seqlens = {5, 2, 9, 4, 7, 1, 3, 8, 6, 10};
  PartitionFn partition = [](const std::vector<int64_t>&, int64_t k, bool equal_size) {
    EXPECT_EQ(k, 2);
    EXPECT_TRUE(equal_size);
    return std::vector<std::vector<int64_t>>{{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}};
  };
  BalancePlan plan = plan_balanced_order(seqlens, 2, partition, identity_workload);
  // Partition 0 by length: rows 6(3) 0(5) 8(6) 4(7) 2(9) -> even positions 6 8 2, odd reversed 4 0.
  // Partition 1: rows 5(1) 1(2) 3(4) 7(8) 9(10) -> 5 3 9, then 7 1.
  EXPECT_EQ(plan.order, (std::vector<int64_t>{6, 8, 2, 4, 0, 5, 3, 9, 7, 1}));
  // Contiguous halves before: 5+2+9+4+7 = 27 and 1+3+8+6+10 = 28; partitions: 30 and 25.
  EXPECT_EQ(plan.metrics.at("global_seqlen/min"), 27);
  EXPECT_EQ(plan.metrics.at("global_seqlen/max"), 28);
  EXPECT_EQ(plan.metrics.at("global_seqlen/minmax_diff"), 1);
  EXPECT_EQ(plan.metrics.at("global_seqlen/balanced_min"), 25);
  EXPECT_EQ(plan.metrics.at("global_seqlen/balanced_max"), 30);
  EXPECT_EQ(plan.metrics.at("global_seqlen/mean"), 27.5);
}

TEST(BalanceBatch, PartitionsSeeVerlWorkloads) {
  std::vector<int64_t> seen;
  PartitionFn partition = [&](const std::vector<int64_t>& workloads, int64_t, bool) {
    seen = workloads;
    return std::vector<std::vector<int64_t>>{{0, 1}};
  };
  plan_balanced_order({3, 100}, 1, partition, [](int64_t l) { return 24576 * l + l * l; });
  EXPECT_EQ(seen, (std::vector<int64_t>{24576 * 3 + 9, 24576 * 100 + 10000}));
}

TEST(BalanceBatch, RowsThatDoNotSplitOverRanksAreAnError) {
  PartitionFn partition = [](const std::vector<int64_t>&, int64_t, bool) {
    return std::vector<std::vector<int64_t>>{};
  };
  EXPECT_THROW(plan_balanced_order({1, 2, 3}, 2, partition, identity_workload), Error);
}

TEST(UidGenerator, Uuid4ShapedSeededAndResumable) {
  UidGenerator a(42), b(42), c(43);
  const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    std::string id = a.next();
    EXPECT_TRUE(std::regex_match(id, uuid4)) << id;
    EXPECT_EQ(id, b.next());
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_NE(UidGenerator(42).next(), c.next());
  const std::string saved = a.state();
  const std::string expected = a.next();
  UidGenerator restored(0);
  restored.load_state(saved);
  EXPECT_EQ(restored.next(), expected);
  EXPECT_THROW(restored.load_state("not a state"), Error);
}

}  // namespace
}  // namespace verl::trainer
