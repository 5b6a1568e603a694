// Collectives with closed-form answers, on however many ranks mpirun started (ctest runs 2 and 3).
// Use EXPECT_*, not ASSERT_*, before a collective: a rank that returned early would leave the others waiting.
#include <gtest/gtest.h>

#include "mpi/mpi_test_env.h"
#include "verl/common/error.h"
#include "verl/parallel/comm.h"

namespace verl::test {
namespace {

using parallel::ReduceOp;

TEST(MpiComm, RankAndSizeMatchTheLauncher) {
  auto world = mpi_world();
  EXPECT_EQ(world->backend(), "mpi");
  EXPECT_EQ(world->size(), mpi_session()->world_size());
  EXPECT_EQ(world->rank(), mpi_session()->world_rank());
  EXPECT_GE(mpi_session()->local_size(), 1);
  EXPECT_LT(mpi_session()->local_rank(), mpi_session()->local_size());
}

TEST(MpiComm, AllReduceSumOfRanksIsTheTriangularNumber) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  // Every rank fills its rank: the sum is n(n-1)/2 everywhere; 7 elements, not divisible by most n.
  torch::Tensor t = torch::full({7}, static_cast<double>(r), torch::kFloat64);
  world->all_reduce(t);
  EXPECT_TRUE(torch::equal(t, torch::full({7}, n * (n - 1) / 2.0, torch::kFloat64)));
  // Integers and a 2-D shape; element (i, j) of rank r is r * 10 + i * 3 + j.
  torch::Tensor m = torch::arange(6, torch::kInt64).view({2, 3}) + r * 10;
  world->all_reduce(m);
  torch::Tensor expected = torch::arange(6, torch::kInt64).view({2, 3}) * n + 10 * n * (n - 1) / 2;
  EXPECT_TRUE(torch::equal(m, expected)) << m;
}

TEST(MpiComm, AllReduceAverageAndMax) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  torch::Tensor t = torch::full({5}, static_cast<float>(r + 1));
  world->all_reduce(t, ReduceOp::Average);
  EXPECT_TRUE(torch::allclose(t, torch::full({5}, (n + 1) / 2.0f)));
  torch::Tensor m = torch::tensor({static_cast<float>(r), static_cast<float>(-r)});
  world->all_reduce(m, ReduceOp::Max);
  EXPECT_EQ(m[0].item<float>(), static_cast<float>(n - 1));
  EXPECT_EQ(m[1].item<float>(), 0.0f);
}

TEST(MpiComm, AllReduceIsBitwiseTheSameOnEveryRankAndInRankOrder) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  // Values whose float sum depends on the order: every rank must hold the rank-order sum.
  auto value_of = [](int rank) { return torch::tensor({1e8f, 1.0f, -1e8f}) * (rank % 2 == 0 ? 1.0f : 0.5f) + rank * 1e-3f; };
  torch::Tensor t = value_of(r);
  world->all_reduce(t);
  torch::Tensor expected = value_of(0).clone();
  for (int q = 1; q < n; ++q) expected.add_(value_of(q));
  EXPECT_TRUE(torch::equal(t, expected)) << t << " vs " << expected;
}

TEST(MpiComm, AllGatherConcatenatesInRankOrder) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  torch::Tensor mine = torch::full({2, 3}, static_cast<int64_t>(r), torch::kInt64);
  torch::Tensor all = world->all_gather(mine);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{2 * n, 3}));
  for (int q = 0; q < n; ++q) EXPECT_TRUE(torch::equal(all.narrow(0, 2 * q, 2), torch::full({2, 3}, q, torch::kInt64)));
}

TEST(MpiComm, ReduceScatterGivesEachRankItsSummedChunk) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  // Rank r holds [0, 1, ..., 2n-1] + r; chunk c (2 rows) summed over ranks: n * [2c, 2c+1] + n(n-1)/2.
  torch::Tensor t = torch::arange(2 * n, torch::kFloat64) + r;
  torch::Tensor mine = world->reduce_scatter(t);
  torch::Tensor expected = torch::tensor({2.0 * r, 2.0 * r + 1}, torch::kFloat64) * n + n * (n - 1) / 2.0;
  EXPECT_TRUE(torch::equal(mine, expected)) << mine;
  if (n > 1) EXPECT_THROW(world->reduce_scatter(torch::zeros({2 * n + 1})), Error);  // local check, no collective
}

TEST(MpiComm, BroadcastFromEveryRoot) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  for (int root = 0; root < n; ++root) {
    torch::Tensor t = torch::full({4}, static_cast<float>(r * 100 + root));
    world->broadcast(t, root);
    EXPECT_TRUE(torch::equal(t, torch::full({4}, static_cast<float>(root * 100 + root))));
    std::string bytes = r == root ? std::string("from ") + std::to_string(root) + std::string(1, '\0') + "x" : "";
    world->broadcast_bytes(bytes, root);
    EXPECT_EQ(bytes, std::string("from ") + std::to_string(root) + std::string(1, '\0') + "x");
  }
}

TEST(MpiComm, SplitFormsSubgroupsOrderedByKey) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  // Even and odd ranks; key = -rank reverses the order inside each group.
  auto part = world->split(r % 2, -r);
  const int members = (n - r % 2 + 1) / 2;
  EXPECT_EQ(part->size(), members);
  int higher_in_group = 0;
  for (int q = r + 2; q < n; q += 2) ++higher_in_group;
  EXPECT_EQ(part->rank(), higher_in_group);
  torch::Tensor t = torch::tensor({static_cast<int64_t>(r)});
  part->all_reduce(t);
  int64_t expected = 0;
  for (int q = r % 2; q < n; q += 2) expected += q;
  EXPECT_EQ(t.item<int64_t>(), expected);
}

TEST(MpiComm, CoalescedAllReduceOfMixedShapesAndDtypes) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  std::vector<torch::Tensor> tensors = {torch::full({3, 2}, static_cast<float>(r)), torch::full({5}, 1.0),
                                        torch::full({1}, static_cast<float>(r * r)), torch::full({2, 2, 2}, 2.0f)};
  // A 16-byte bucket forces several buckets; the float tensors and the double tensor never share one.
  parallel::all_reduce_coalesced(*world, tensors, ReduceOp::Sum, 16);
  int64_t squares = 0;
  for (int q = 0; q < n; ++q) squares += q * q;
  EXPECT_TRUE(torch::equal(tensors[0], torch::full({3, 2}, n * (n - 1) / 2.0f)));
  EXPECT_TRUE(torch::equal(tensors[1], torch::full({5}, static_cast<double>(n))));
  EXPECT_TRUE(torch::equal(tensors[2], torch::full({1}, static_cast<float>(squares))));
  EXPECT_TRUE(torch::equal(tensors[3], torch::full({2, 2, 2}, 2.0f * n)));
}

TEST(SingleProcessComm, EveryCollectiveIsTheIdentity) {
  auto single = parallel::single_process_comm();
  EXPECT_EQ(single->size(), 1);
  torch::Tensor t = torch::tensor({1.5f, -2.0f});
  single->all_reduce(t);
  EXPECT_TRUE(torch::equal(t, torch::tensor({1.5f, -2.0f})));
  EXPECT_TRUE(torch::equal(single->all_gather(t), t));
  EXPECT_TRUE(torch::equal(single->reduce_scatter(t), t));
  EXPECT_THROW(single->broadcast(t, 1), Error);
}

}  // namespace
}  // namespace verl::test
