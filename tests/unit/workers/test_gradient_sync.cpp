// ZeRO-1's parameter assignment and step on one rank of a (fake) 2-rank group; ZeRO-2's gradient reduction and
// clip norm on 2 and 3 thread ranks against the all-reduce; the averaging itself is checked against 1 rank under
// mpirun (tests/dist/test_mpi_train.cpp).
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <functional>
#include <thread>

#include "support/thread_ranks.h"
#include "verl/common/error.h"
#include "verl/parallel/comm.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/optimizer.h"

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

// Each rank's gradients: seeded by rank, one parameter left without a gradient (no loss reached it), and one
// large enough (7M elements) to fill a 25 MiB bucket on its own.
std::vector<torch::Tensor> ranked_parameters(int rank) {
  auto params = parameters_of_sizes({3, 10, 7'000'000, 5, 7, 1});
  // A generator of its own: the ranks are threads, and the global one would interleave their draws.
  auto gen = at::detail::createCPUGenerator(100 + rank);
  for (size_t i = 0; i < params.size(); ++i) {
    if (i != 3) params[i].mutable_grad() = at::randn(params[i].sizes(), gen);
  }
  return params;
}

class ZeroTwo : public ::testing::TestWithParam<int> {};

TEST_P(ZeroTwo, OwnersGetTheAllReducesBitsAndTheSameClipNorm) {
  const int size = GetParam();
  test::on_thread_ranks(size, [&](const std::shared_ptr<parallel::Comm>& comm) {
    // Reference: the all-reduce average, then the ordinary clip over every gradient.
    auto reference = ranked_parameters(comm->rank());
    gradient_averager(comm)(reference);
    const double reference_norm = clip_grad_norm(reference, 1.0);

    auto params = ranked_parameters(comm->rank());
    auto shard = optimizer_shard(comm, params, "test", comm);
    ASSERT_TRUE(shard->reduces_gradients());
    shard->reduce_gradients();
    GradientPlacement placement;
    placement.owners = &shard->comm();
    const double norm = clip_grad_norm(params, 1.0, placement);
    EXPECT_EQ(norm, reference_norm);
    int64_t held = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      if (shard->owner(i) == comm->rank()) {
        ASSERT_TRUE(params[i].grad().defined()) << i;
        EXPECT_TRUE(torch::equal(params[i].grad(), reference[i].grad())) << i;
        held += params[i].numel();
      } else {
        EXPECT_FALSE(params[i].grad().defined()) << i;  // released
      }
    }
    EXPECT_EQ(held, shard->owned_numel());
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ZeroTwo, ::testing::Values(2, 3));

TEST(OptimizerShard, ShardsGradientsOnlyOverTheWholeDataParallelGroup) {
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    auto params = parameters_of_sizes({4, 4});
    EXPECT_TRUE(optimizer_shard(comm, params, "test", comm)->reduces_gradients());
    EXPECT_FALSE(optimizer_shard(comm, params, "test")->reduces_gradients());  // HSDP: averaged over more ranks
  });
}

}  // namespace
}  // namespace verl::workers
