// Helpers of the `gpu` tests, defined once for all of them (they compile as one unity batch, where a second
// #define would silently replace the first): skipping where the CUDA devices a test needs are not visible (ctest's
// output shows the reason), and comparing a device tensor with its CPU reference.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "verl/runtime/cuda_device.h"

#define REQUIRE_CUDA_DEVICES(n)                   \
  if (::verl::runtime::cuda_device_count() < (n)) \
  GTEST_SKIP() << "needs " << (n) << " CUDA device(s), " << ::verl::runtime::cuda_device_count() << " visible"

#define REQUIRE_CUDA_DEVICE() \
  if (::verl::runtime::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible"

namespace verl::test {

// |value - reference| / |reference| in fp64 on the CPU (Frobenius norms).
inline double relative_error(const torch::Tensor& value, const torch::Tensor& reference) {
  const auto v = value.to(torch::kCPU, torch::kFloat64), r = reference.to(torch::kCPU, torch::kFloat64);
  return (v - r).norm().item<double>() / std::max(r.norm().item<double>(), 1e-30);
}

}  // namespace verl::test
