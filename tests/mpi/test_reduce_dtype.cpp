// fsdp_config.mixed_precision.reduce_dtype (FSDP's MixedPrecision.reduce_dtype) over MPI, on however many ranks
// mpirun started (ctest: 2 and 3): the gradients are reduced in bf16 / fp16 and are fp32 again after. The
// expected values are the closed form of that reduction: each rank's gradient rounded to the reduce dtype,
// summed in rank order in that dtype, divided by the rank count in that dtype. On 2 ranks this is the fp32 mean
// of the bf16-rounded gradients, rounded to bf16 (the division by 2 is exact).
// Use EXPECT_*, not ASSERT_*, before a collective: a rank that returned early would leave the others waiting.
#include <gtest/gtest.h>

#include "mpi/mpi_test_env.h"
#include "verl/parallel/comm.h"
#include "verl/workers/gradient_sync.h"

namespace verl::test {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{3, 5}, {7}, {2, 2, 2}};

// Rank `rank`'s gradient of parameter `k`: fp32 values that bf16 and fp16 cannot hold exactly.
torch::Tensor gradient_of(int rank, size_t k) {
  const auto& shape = kShapes[k];
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  auto x = torch::arange(numel, torch::kFloat32) * 0.37f + static_cast<float>(k);
  return (x.sin() * (1.0f + 0.013f * static_cast<float>(rank)) + 1e-4f * static_cast<float>(rank)).view(shape);
}

std::vector<torch::Tensor> parameters_with_gradients(int rank) {
  std::vector<torch::Tensor> params;
  for (size_t k = 0; k < kShapes.size(); ++k) {
    auto p = torch::zeros(kShapes[k], torch::kFloat32).requires_grad_();
    p.mutable_grad() = gradient_of(rank, k).clone();
    params.push_back(p);
  }
  return params;
}

torch::Tensor expected_mean(int n, size_t k, torch::ScalarType dtype) {
  torch::Tensor acc = gradient_of(0, k).to(dtype);
  for (int q = 1; q < n; ++q) acc = acc + gradient_of(q, k).to(dtype);
  return (acc / n).to(torch::kFloat32);
}

TEST(ReduceDtype, AllReduceInBf16AndFp16IsTheRoundedRankOrderMean) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  auto fp32 = parameters_with_gradients(r);
  workers::gradient_averager(world)(fp32);
  for (auto dtype : {torch::kBFloat16, torch::kFloat16}) {
    auto params = parameters_with_gradients(r);
    workers::gradient_averager(world, dtype)(params);
    double off_fp32 = 0;
    for (size_t k = 0; k < params.size(); ++k) {
      EXPECT_EQ(params[k].grad().scalar_type(), torch::kFloat32);
      EXPECT_TRUE(torch::equal(params[k].grad(), expected_mean(n, k, dtype))) << dtype << " parameter " << k;
      if (n == 2) {
        // The fp32 reduction of the rounded gradients, rounded to the reduce dtype.
        auto rounded = (gradient_of(0, k).to(dtype).to(torch::kFloat32) + gradient_of(1, k).to(dtype).to(torch::kFloat32)) / 2;
        EXPECT_TRUE(torch::equal(params[k].grad(), rounded.to(dtype).to(torch::kFloat32))) << dtype << " parameter " << k;
      }
      off_fp32 = std::max(off_fp32, (params[k].grad() - fp32[k].grad()).abs().max().item<double>());
    }
    // The reduction in the lower precision is not the fp32 one.
    EXPECT_GT(off_fp32, 1e-5) << dtype;
  }
  // fp32: the mean in fp32, rank order.
  for (size_t k = 0; k < fp32.size(); ++k) {
    EXPECT_TRUE(torch::equal(fp32[k].grad(), expected_mean(n, k, torch::kFloat32))) << "parameter " << k;
  }
}

TEST(ReduceDtype, ZeroTwoReduceScatterInBf16GivesTheOwnersTheSameBits) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  auto params = parameters_with_gradients(r);
  workers::OptimizerShard shard(world, params, /*reduces_gradients=*/true, torch::kBFloat16);
  shard.reduce_gradients();
  for (size_t k = 0; k < params.size(); ++k) {
    if (shard.owner(k) != r) {
      EXPECT_FALSE(params[k].grad().defined()) << "parameter " << k;
      continue;
    }
    EXPECT_EQ(params[k].grad().scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(params[k].grad(), expected_mean(n, k, torch::kBFloat16))) << "parameter " << k;
  }
}

}  // namespace
}  // namespace verl::test
