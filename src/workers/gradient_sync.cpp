#include "verl/workers/gradient_sync.h"

#include "verl/parallel/comm.h"

namespace verl::workers {

GradientAverager gradient_averager(std::shared_ptr<parallel::Comm> comm) {
  if (!comm || comm->size() == 1) return nullptr;
  return [comm](const std::vector<torch::Tensor>& parameters) {
    std::vector<torch::Tensor> grads;
    for (const auto& p : parameters) {
      if (!p.requires_grad()) continue;
      // A parameter no loss reached on this rank still joins the collective (as zeros), so every rank
      // passes the same tensors in the same order.
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    parallel::all_reduce_coalesced(*comm, grads, parallel::ReduceOp::Average);
  };
}

}  // namespace verl::workers
