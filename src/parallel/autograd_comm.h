#pragma once
// Private to src/parallel: how the custom autograd functions of tensor_parallel.cpp, ulysses.cpp and
// context_parallel.cpp keep their communicator between forward and backward, and the gather they share.

#include <cstdint>

#include <torch/torch.h>

#include "verl/parallel/comm.h"

namespace verl::parallel::detail {

// The communicator rides in the autograd context as an address: the caller's shared_ptr keeps it alive for as
// long as the graph (the group outlives every forward and backward that uses it).
inline void save_comm(torch::autograd::AutogradContext* ctx, Comm* comm) {
  ctx->saved_data["comm"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(comm));
}

inline Comm& saved_comm(torch::autograd::AutogradContext* ctx) {
  return *reinterpret_cast<Comm*>(static_cast<intptr_t>(ctx->saved_data["comm"].toInt()));
}

// Every rank's x concatenated along `dim`, in rank order (the forward of a gather along a sequence).
inline torch::Tensor all_gather_along(const torch::Tensor& x, int64_t dim, Comm& comm) {
  return comm.all_gather(x.movedim(dim, 0).contiguous()).movedim(0, dim).contiguous();
}

}  // namespace verl::parallel::detail
