// Shared helpers for the algo unit tests: float64 inputs, masks, and gradient checks.
#pragma once

#include <functional>

#include <torch/torch.h>

#include "support/tensor_compare.h"

namespace verl::algo::test {

inline torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

// (B, R) right-padded mask with the given lengths.
inline torch::Tensor mask_from_lengths(const std::vector<int64_t>& lengths, int64_t R) {
  torch::Tensor m = torch::zeros({static_cast<int64_t>(lengths.size()), R}, f64());
  for (size_t i = 0; i < lengths.size(); ++i) m[static_cast<int64_t>(i)].slice(0, 0, lengths[i]).fill_(1.0);
  return m;
}

// Central differences of a scalar function, element by element (float64).
inline torch::Tensor numeric_grad(const std::function<double(const torch::Tensor&)>& f, const torch::Tensor& x,
                                  double h = 1e-6) {
  torch::Tensor g = torch::zeros_like(x);
  torch::Tensor flat_g = g.view(-1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    torch::Tensor xp = x.clone();
    torch::Tensor xm = x.clone();
    xp.view(-1)[i] += h;
    xm.view(-1)[i] -= h;
    flat_g[i] = (f(xp) - f(xm)) / (2 * h);
  }
  return g;
}

// d f / d x by autograd.
inline torch::Tensor autograd_grad(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                                   const torch::Tensor& x) {
  torch::Tensor xv = x.clone().set_requires_grad(true);
  torch::Tensor y = f(xv);
  y.backward();
  return xv.grad();
}

using verl::test::max_abs_diff;

}  // namespace verl::algo::test
