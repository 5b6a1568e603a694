// parallel::model_parallel_mesh: the groups of a worker group of D x P x C x T thread ranks, named by their members
// (each rank's number gathered over each group, in the group's rank order) against the layout the header states:
// rank = dp * (P C T) + stage * (C T) + cp * T + tp. DP 3 x TP 2 (the tensor-parallel-only layout), and
// DP 2 x PP 2 x CP 2 x TP 2 with its DP x CP gradient group.
#include <gtest/gtest.h>

#include <vector>

#include "support/thread_ranks.h"
#include "verl/parallel/model_parallel_mesh.h"

namespace verl::parallel {
namespace {

std::vector<int> members(Comm& group, int rank) {
  const torch::Tensor all = group.all_gather(torch::full({1}, static_cast<double>(rank), torch::kFloat64));
  std::vector<int> out;
  for (int64_t i = 0; i < all.size(0); ++i) out.push_back(static_cast<int>(all[i].item<double>()));
  return out;
}

// The ranks r' = rank_of(i) for i = 0..count-1.
template <typename F>
std::vector<int> expected(int count, F rank_of) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(rank_of(i));
  return out;
}

void expect_mesh(int D, int P, int C, int T) {
  test::on_thread_ranks(D * P * C * T, [&](const std::shared_ptr<Comm>& group) {
    const auto mesh = model_parallel_mesh(group, T, C, P);
    const int r = group->rank();
    const int tp = r % T, cp = (r / T) % C, stage = (r / (T * C)) % P, dp = r / (T * C * P);
    EXPECT_EQ(mesh.tp_rank, tp);
    EXPECT_EQ(mesh.cp_rank, cp);
    EXPECT_EQ(mesh.stage, stage);
    EXPECT_EQ(mesh.dp_rank, dp);
    const auto rank_at = [&](int d, int s, int c, int t) { return ((d * P + s) * C + c) * T + t; };
    EXPECT_EQ(members(*mesh.tp, r), expected(T, [&](int i) { return rank_at(dp, stage, cp, i); }));
    EXPECT_EQ(members(*mesh.cp, r), expected(C, [&](int i) { return rank_at(dp, stage, i, tp); }));
    EXPECT_EQ(members(*mesh.stages, r), expected(P, [&](int i) { return rank_at(dp, i, cp, tp); }));
    EXPECT_EQ(members(*mesh.dp, r), expected(D, [&](int i) { return rank_at(i, stage, cp, tp); }));
    // Gradients: every (dp, cp) holding this (stage, tp) slice, dp outer.
    EXPECT_EQ(members(*mesh.gradients, r), expected(D * C, [&](int i) { return rank_at(i / C, stage, i % C, tp); }));
  });
}

TEST(ModelParallelMesh, DataTimesTensorParallelPutsTensorParallelRanksNextToEachOther) { expect_mesh(3, 1, 1, 2); }

TEST(ModelParallelMesh, EveryGroupOfDataPipelineContextAndTensorParallelHoldsTheStatedRanks) {
  expect_mesh(2, 2, 2, 2);
}

TEST(ModelParallelMesh, SizesThatDoNotDivideTheGroupAreAnError) {
  test::on_thread_ranks(2, [](const std::shared_ptr<Comm>& group) {
    EXPECT_THROW(model_parallel_mesh(group, 3, 1, 1), std::exception);
    EXPECT_THROW(model_parallel_mesh(group, 1, 2, 2), std::exception);
  });
}

}  // namespace
}  // namespace verl::parallel
