// GPU smoke test: on a CUDA build with a device, a matmul on the GPU equals the CPU one.
// Skipped cleanly where there is no device (this is the case on the CPU machines CI uses).
#include <gtest/gtest.h>

#include <torch/torch.h>

TEST(CudaSmoke, MatmulMatchesCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(0);
  torch::Tensor a = torch::randn({64, 32}, torch::kFloat64);
  torch::Tensor b = torch::randn({32, 16}, torch::kFloat64);
  torch::Tensor on_gpu = torch::matmul(a.cuda(), b.cuda()).cpu();
  EXPECT_TRUE(torch::allclose(on_gpu, torch::matmul(a, b), 1e-10, 1e-10));
}
