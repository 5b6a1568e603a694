// Data-parallel gradient averaging (the fsdp strategy's reduce): after the backward passes of a mini-batch,
// every rank of the worker group holds the mean of the ranks' gradients, so the replicas take the same
// optimizer step. Bucketed (one collective per 25 MiB, not per tensor) and deterministic (parallel/comm.h).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace verl::parallel {
class Comm;
}

namespace verl::workers {

using GradientAverager = std::function<void(const std::vector<torch::Tensor>& parameters)>;

// nullptr when the group has one rank (nothing to average) or no communicator.
GradientAverager gradient_averager(std::shared_ptr<parallel::Comm> comm);

}  // namespace verl::workers
