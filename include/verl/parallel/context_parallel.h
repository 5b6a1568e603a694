// Context parallelism (Megatron's context_parallel_size) over a Comm: the C ranks of one group get the same rows
// and each runs the model on its 1/C of every sequence (cut as Ulysses cuts it: parallel/ulysses.h's
// slice_sequence, padded to a multiple of C). Attention, which needs the whole sequence, gathers every rank's keys
// and values and attends with this rank's queries only (Transformer Engine's all-gather variant of context
// parallelism: no head needs to divide C, unlike Ulysses; each rank holds the whole sequence's K/V for one layer
// at a time). Everything else is per token.
//
//   gather_context(x, dim)   every rank's part concatenated along dim, in rank order; backward: the sum over the
//                            ranks of the gradient of this rank's part (a reduce-scatter: the exact adjoint, since
//                            every rank's queries read every rank's keys)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "verl/parallel/comm.h"

namespace verl::parallel {

torch::Tensor gather_context(const torch::Tensor& x, int64_t dim, const std::shared_ptr<Comm>& comm);

}  // namespace verl::parallel
