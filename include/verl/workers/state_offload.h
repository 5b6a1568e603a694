// verl's offload keys on a GPU (fsdp_config.param_offload / optimizer_offload, megatron's param_offload /
// grad_offload / optimizer_offload): a role's parameters (or its ZeRO-3 shards), their gradients and its optimizer
// moments rest in pinned host memory between phases and come to the device only for the phase that uses them,
// as verl's load_fsdp_model_to_gpu / offload_fsdp_model_to_cpu and load/offload_fsdp_optimizer do. The tensors
// keep their identity (set_data), so the optimizer and the sharded model still hold them. On the CPU every key is
// a no-op: the state is in host memory already.
//
//   OffloadPolicy policy{device, fsdp.param_offload, fsdp.param_offload, fsdp.optimizer_offload};
//   policy.rest(params, optimizer);                       // after init: into host memory
//   { OnDevice phase(policy, params, optimizer); ... }    // update_actor: in, the update, back out
#pragma once

#include <torch/torch.h>

#include <vector>

namespace verl::workers {

struct OffloadPolicy {
  torch::Device device{torch::kCPU};  // where the phases run
  bool params = false;                // parameters (and their gradients) rest on the host
  bool grads = false;                 // gradients rest on the host (megatron's grad_offload; implied by params)
  bool optimizer = false;             // the optimizer state (moments, buffers) rests on the host
  bool active() const { return device.is_cuda() && (params || grads || optimizer); }

  // Moves the state this policy offloads to pinned host memory (or, with `to_device`, back to `device`);
  // `optimizer` may be null (a frozen ref). Waits for the copies, so the memory is free when it returns.
  void move(const std::vector<torch::Tensor>& parameters, torch::optim::Optimizer* optimizer, bool to_device) const;
  void rest(const std::vector<torch::Tensor>& parameters, torch::optim::Optimizer* optimizer) const {
    if (active()) move(parameters, optimizer, /*to_device=*/false);
  }
};

// One phase on the device: the offloaded state comes in on construction and goes back out on destruction (also
// when the phase throws, so the next phase finds it where it expects).
class OnDevice {
 public:
  OnDevice(const OffloadPolicy& policy, std::vector<torch::Tensor> parameters, torch::optim::Optimizer* optimizer);
  ~OnDevice();
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  OffloadPolicy policy_;
  std::vector<torch::Tensor> parameters_;
  torch::optim::Optimizer* optimizer_;
};

}  // namespace verl::workers
