// The columns of a padded batch that some row uses: what the response passes (use_remove_padding) and the
// rollout's prefill keep, so that padding every row shares is never computed.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace verl::model {

struct ColumnRange {
  int64_t begin = 0, end = 0;
};

// [first, last + 1) of the columns where some row of `mask` [B, L] is nonzero; {L, 0} when none is. One host
// synchronisation: the used-column flags come back to the CPU.
inline ColumnRange used_columns(const torch::Tensor& mask) {
  const auto used = (mask != 0).any(0).to(torch::kCPU).contiguous();
  const bool* u = used.data_ptr<bool>();
  const int64_t L = used.size(0);
  ColumnRange r{0, 0};
  while (r.begin < L && !u[r.begin]) ++r.begin;  // L when no column is used
  for (int64_t j = L; j > r.begin; --j) {
    if (u[j - 1]) {
      r.end = j;
      break;
    }
  }
  return r;
}

}  // namespace verl::model
