// The NCCL communicator (parallel/nccl_comm.h) on CUDA devices: at world size 1 (any GPU) every collective runs
// through NCCL (all-gather, the grouped send / receive of reduce-scatter, broadcast) and gives the identity's
// answers; at world size 2 (a machine with 2 GPUs, one thread rank each) the closed-form answers of the thread
// communicator's tests, and the same bits as the thread communicator on the CPU for random fp32 / bf16 inputs
// (the determinism every Comm promises). Skips without a device, and the 2-rank cases without 2 devices.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_test.h"
#include "verl/common/error.h"
#include "verl/parallel/comm.h"
#include "verl/parallel/nccl_comm.h"
#include "verl/runtime/cuda_device.h"

namespace verl::parallel {
namespace {

torch::Device cuda(int index) { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)); }

TEST(NcclComm, WorldSizeOneRunsEveryCollectiveThroughNccl) {
  REQUIRE_CUDA_DEVICES(1);
  ASSERT_TRUE(nccl_available()) << "a CUDA build must have NCCL";
  auto comm = nccl_comm(single_process_comm(), cuda(0));
  EXPECT_EQ(comm->backend(), "nccl");
  EXPECT_EQ(comm->size(), 1);
  const auto on_gpu = torch::TensorOptions().device(cuda(0));
  torch::Tensor x = torch::randn({5, 3}, on_gpu);
  torch::Tensor original = x.clone();
  comm->all_reduce(x);
  EXPECT_TRUE(torch::equal(x, original));
  comm->all_reduce(x, ReduceOp::Average);
  EXPECT_TRUE(torch::equal(x, original));
  EXPECT_TRUE(torch::equal(comm->all_gather(x), original));
  EXPECT_TRUE(torch::equal(comm->reduce_scatter(x), original));
  torch::Tensor half = x.to(torch::kBFloat16);
  comm->broadcast(half, 0);
  EXPECT_TRUE(torch::equal(half, original.to(torch::kBFloat16)));
  EXPECT_TRUE(comm->all_gather(x).is_cuda());
  // A CPU tensor goes through the host communicator, and comes back on the CPU.
  torch::Tensor host = torch::ones({2});
  comm->all_reduce(host);
  EXPECT_TRUE(host.device().is_cpu());
  auto part = comm->split(0, 0);
  EXPECT_EQ(part->backend(), "nccl");
  torch::Tensor y = torch::arange(4, on_gpu.dtype(torch::kFloat32));
  part->all_reduce(y, ReduceOp::Max);
  EXPECT_TRUE(torch::equal(y.cpu(), torch::arange(4, torch::kFloat32)));
  // One rank: device_comm keeps the host communicator (nothing to move).
  EXPECT_EQ(device_comm(single_process_comm(), cuda(0))->backend(), "single");
}

TEST(NcclComm, NeedsACudaDevice) {
  REQUIRE_CUDA_DEVICES(1);
  try {
    nccl_comm(single_process_comm(), torch::Device(torch::kCPU));
    FAIL() << "an NCCL communicator on the CPU must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device"), std::string::npos) << e.what();
  }
}

// Runs body(comm, device) on two thread ranks, rank r on cuda:r over NCCL.
void on_two_gpus(const std::function<void(Comm&, const torch::Device&)>& body) {
  auto hosts = thread_comms(2, 120.0);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = nccl_comm(hosts[static_cast<size_t>(r)], cuda(r));
        body(*comm, cuda(r));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(NcclComm, TwoRanksGiveTheClosedFormAnswers) {
  REQUIRE_CUDA_DEVICES(2);
  on_two_gpus([](Comm& comm, const torch::Device& device) {
    const int r = comm.rank(), n = 2;
    const auto on = torch::TensorOptions().device(device);
    torch::Tensor t = torch::full({3}, static_cast<double>(r + 1), on.dtype(torch::kFloat64));
    comm.all_reduce(t);
    EXPECT_TRUE(torch::equal(t.cpu(), torch::full({3}, n * (n + 1) / 2.0, torch::kFloat64)));
    torch::Tensor m = torch::tensor({static_cast<int64_t>(r), static_cast<int64_t>(-r)}, on.dtype(torch::kInt64));
    comm.all_reduce(m, ReduceOp::Max);
    EXPECT_EQ(m[0].item<int64_t>(), n - 1);
    EXPECT_EQ(m[1].item<int64_t>(), 0);
    torch::Tensor g = comm.all_gather(torch::full({1, 2}, static_cast<int64_t>(r), on.dtype(torch::kInt64)));
    ASSERT_EQ(g.sizes(), (std::vector<int64_t>{n, 2}));
    for (int q = 0; q < n; ++q) EXPECT_EQ(g[q][1].item<int64_t>(), q);
    torch::Tensor rs = comm.reduce_scatter(torch::arange(n, on.dtype(torch::kFloat32)) * static_cast<float>(r + 1));
    EXPECT_FLOAT_EQ(rs.item<float>(), static_cast<float>(r) * n * (n + 1) / 2.0f);
    torch::Tensor b = torch::full({2, 2}, static_cast<float>(r), on);
    comm.broadcast(b, n - 1);
    EXPECT_TRUE(torch::equal(b.cpu(), torch::full({2, 2}, static_cast<float>(n - 1))));
  });
}

TEST(NcclComm, TwoRanksGiveTheThreadCommunicatorsBitsOnTheCpu) {
  REQUIRE_CUDA_DEVICES(2);
  // Inputs of mixed magnitude, where the summation order shows in the last bits.
  std::vector<torch::Tensor> inputs;
  for (int r = 0; r < 2; ++r) {
    torch::manual_seed(100 + r);
    inputs.push_back(torch::randn({1001}) * torch::pow(10.0, torch::randint(-6, 6, {1001}).to(torch::kFloat32)));
  }
  std::vector<torch::Tensor> on_cpu(2), on_gpu(2), bf16_cpu(2), bf16_gpu(2);
  auto cpu_comms = thread_comms(2, 60.0);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        torch::Tensor t = inputs[static_cast<size_t>(r)].clone();
        cpu_comms[static_cast<size_t>(r)]->all_reduce(t, ReduceOp::Average);
        on_cpu[static_cast<size_t>(r)] = t;
        torch::Tensor h = inputs[static_cast<size_t>(r)].to(torch::kBFloat16);
        cpu_comms[static_cast<size_t>(r)]->all_reduce(h);
        bf16_cpu[static_cast<size_t>(r)] = h;
      });
    }
    for (auto& t : threads) t.join();
  }
  on_two_gpus([&](Comm& comm, const torch::Device& device) {
    const auto r = static_cast<size_t>(comm.rank());
    torch::Tensor t = inputs[r].to(device);
    comm.all_reduce(t, ReduceOp::Average);
    on_gpu[r] = t.cpu();
    torch::Tensor h = inputs[r].to(device, torch::kBFloat16);
    comm.all_reduce(h);
    bf16_gpu[r] = h.cpu();
  });
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(on_gpu[r], on_cpu[r])) << "rank " << r;
    EXPECT_TRUE(torch::equal(bf16_gpu[r], bf16_cpu[r])) << "rank " << r;
  }
  EXPECT_TRUE(torch::equal(on_gpu[0], on_gpu[1]));
}

TEST(NcclComm, ATensorOnAnotherDeviceIsAnError) {
  REQUIRE_CUDA_DEVICES(2);
  auto comm = nccl_comm(single_process_comm(), cuda(0));
  torch::Tensor elsewhere = torch::ones({2}, torch::TensorOptions().device(cuda(1)));
  try {
    comm->all_reduce(elsewhere);
    FAIL() << "a tensor on cuda:1 through cuda:0's communicator must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be on its device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace verl::parallel
