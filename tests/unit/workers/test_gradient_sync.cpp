// ZeRO-1's parameter assignment and step on one rank of a (fake) 2-rank group; the averaging itself is
// checked against 1 rank under mpirun (tests/dist/test_mpi_train.cpp).
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/parallel/comm.h"
#include "verl/workers/gradient_sync.h"

namespace verl::workers {
namespace {

// Rank `rank` of a 2-rank group whose broadcasts deliver nothing from the other rank (the buffer keeps
// this rank's values), so a test sees exactly what the local step changed.
class SilentPeerComm : public parallel::Comm {
 public:
  explicit SilentPeerComm(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::string backend() const override { return "fake"; }
  void all_reduce(torch::Tensor&, parallel::ReduceOp) override { VERL_FAIL("test", "unused"); }
  torch::Tensor all_gather(const torch::Tensor&) override { VERL_FAIL("test", "unused"); }
  torch::Tensor reduce_scatter(const torch::Tensor&, parallel::ReduceOp) override { VERL_FAIL("test", "unused"); }
  void broadcast(torch::Tensor&, int root) override { roots.push_back(root); }
  void barrier() override {}
  std::shared_ptr<Comm> split(int, int) override { VERL_FAIL("test", "unused"); }
  void broadcast_bytes(std::string&, int) override { VERL_FAIL("test", "unused"); }
  std::vector<int> roots;

 private:
  int rank_;
};

std::vector<torch::Tensor> parameters_of_sizes(const std::vector<int64_t>& sizes) {
  std::vector<torch::Tensor> out;
  for (int64_t n : sizes) out.push_back(torch::zeros({n}).requires_grad_(true));
  return out;
}

TEST(OptimizerShard, LargestFirstToTheLeastLoadedRank) {
  // Sizes 3, 10, 5, 7: 10 -> rank 0, 7 -> rank 1, 5 -> rank 1 (7 < 10), 3 -> rank 0 (10 < 12).
  auto params = parameters_of_sizes({3, 10, 5, 7});
  OptimizerShard rank0(std::make_shared<SilentPeerComm>(0), params);
  OptimizerShard rank1(std::make_shared<SilentPeerComm>(1), params);
  EXPECT_EQ(rank0.owner(0), 0);
  EXPECT_EQ(rank0.owner(1), 0);
  EXPECT_EQ(rank0.owner(2), 1);
  EXPECT_EQ(rank0.owner(3), 1);
  EXPECT_EQ(rank0.owned_numel(), 13);
  EXPECT_EQ(rank1.owned_numel(), 12);
}

TEST(OptimizerShard, StepsOnlyOwnedParametersAndKeepsStateOnlyForThem) {
  auto params = parameters_of_sizes({3, 10, 5, 7});
  for (auto& p : params) p.mutable_grad() = torch::ones_like(p);
  auto comm = std::make_shared<SilentPeerComm>(0);
  OptimizerShard shard(comm, params);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(0.5));
  shard.step(adam);
  // Adam's first step moves each stepped element by lr (sign of the gradient): -0.5 here.
  EXPECT_TRUE(torch::allclose(params[0], torch::full({3}, -0.5)));
  EXPECT_TRUE(torch::allclose(params[1], torch::full({10}, -0.5)));
  EXPECT_TRUE(torch::equal(params[2], torch::zeros({5})));  // rank 1's: only its broadcast would change it
  EXPECT_TRUE(torch::equal(params[3], torch::zeros({7})));
  EXPECT_FALSE(params[2].grad().defined());
  EXPECT_EQ(adam.state().size(), 2u);            // moments for the owned parameters only
  EXPECT_EQ(comm->roots, (std::vector<int>{0, 1}));  // one broadcast per owner, in rank order
}

TEST(OptimizerShard, OneRankNeedsNoShardOrAveraging) {
  auto params = parameters_of_sizes({4});
  EXPECT_EQ(optimizer_shard(parallel::single_process_comm(), params, "test"), nullptr);
  EXPECT_EQ(optimizer_shard(nullptr, params, "test"), nullptr);
  EXPECT_EQ(gradient_averager(parallel::single_process_comm()), nullptr);
}

}  // namespace
}  // namespace verl::workers
