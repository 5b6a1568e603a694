#include "verl/workers/state_offload.h"

#include <torch/cuda.h>

#include "verl/common/logging.h"
#include "verl/workers/optimizer.h"

namespace verl::workers {
namespace {

// A copy of `t` on `device` (pinned when it is the host, so the copy back is a DMA); `t` itself when it is there.
torch::Tensor placed(const torch::Tensor& t, const torch::Device& device) {
  if (!t.defined() || t.device() == device) return t;
  if (device.is_cpu()) {
    torch::Tensor host = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(true));
    host.copy_(t, /*non_blocking=*/true);
    return host;
  }
  return t.to(device, /*non_blocking=*/true);
}

}  // namespace

void OffloadPolicy::move(const std::vector<torch::Tensor>& parameters, torch::optim::Optimizer* optimizer,
                         bool to_device) const {
  if (!active()) return;
  const torch::Device target = to_device ? device : torch::Device(torch::kCPU);
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : parameters) {
    if (params && p.numel() > 0) p.set_data(placed(p.data(), target));
    if ((params || grads) && p.grad().defined()) {
      torch::Tensor g = p.grad();
      // set_data on the gradient keeps it the same tensor (the optimizer and gradient hooks may hold it).
      g.set_data(placed(g.data(), target));
    }
  }
  if (optimizer != nullptr && this->optimizer) {
    replace_state_tensors(*optimizer, [&](const torch::Tensor& t) { return placed(t, target); });
  }
  // The copies ran on the current stream; wait for them so the freed device memory and the host copies are final.
  torch::cuda::synchronize(device.index());
}

OnDevice::OnDevice(const OffloadPolicy& policy, std::vector<torch::Tensor> parameters,
                   torch::optim::Optimizer* optimizer)
    : policy_(policy), parameters_(std::move(parameters)), optimizer_(optimizer) {
  policy_.move(parameters_, optimizer_, /*to_device=*/true);
}

OnDevice::~OnDevice() {
  try {
    policy_.move(parameters_, optimizer_, /*to_device=*/false);
  } catch (const std::exception& e) {
    // A destructor must not throw; the next phase's move reports a broken device anyway.
    VERL_LOG(Error, "offload") << "moving state back to host memory failed: " << e.what();
  }
}

}  // namespace verl::workers
