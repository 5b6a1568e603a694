// Test helpers: how far apart two tensors are, measured in fp64 whatever their dtype.
#pragma once

#include <torch/torch.h>

namespace verl::test {

// max |a - b|
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// max |a - b| / max |b|
inline double max_relative(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

}  // namespace verl::test
