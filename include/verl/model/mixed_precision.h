// FSDP's mixed precision as verl sets it (fsdp_config.mixed_precision: param_dtype bf16, reduce_dtype fp32,
// buffer_dtype fp32), done with LibTorch's autocast: the master weights, gradients and AdamW state stay fp32;
// inside a forward the matmuls and attention run in param_dtype from per-op casts of the weights, while norms,
// softmax and log-softmax keep fp32 (autocast's fp32 list). Backward replays the casts recorded in the graph.
// verl gets the same arithmetic from FSDP's bf16 parameter copies; gradients reach the fp32 masters in fp32.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <utility>
#include <vector>

#include <optional>
#include <string>

namespace verl::model {

// "bf16" / "bfloat16" / "fp32" / "float32" (and fp16 / float16) -> the dtype; anything else is an error naming
// `key`.
torch::ScalarType parse_precision(const std::string& text, const std::string& key);

// Autocast to `dtype` on `device` for the guard's lifetime; nothing when dtype is fp32. Nests and restores the
// previous state (autocast state is per thread).
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, torch::ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  torch::ScalarType previous_dtype_ = torch::kFloat32;
};

// verl's hybrid engine hands the rollout (vLLM) the actor's weights in rollout.dtype. Here, for the guard's
// lifetime, every parameter of `module` holds a copy of its value in `dtype`; the fp32 masters are set back,
// untouched, when the guard ends (the optimizer keeps referring to the same parameter tensors). The copies
// exist only during generation, so they never sit next to the training activations. No-op when the
// parameters already have that dtype. Use under NoGradGuard.
class ScopedParameterCast {
 public:
  ScopedParameterCast(torch::nn::Module& module, torch::ScalarType dtype);
  ~ScopedParameterCast();
  ScopedParameterCast(const ScopedParameterCast&) = delete;
  ScopedParameterCast& operator=(const ScopedParameterCast&) = delete;

 private:
  std::vector<std::pair<torch::Tensor, torch::Tensor>> masters_;  // (parameter, its original data)
};

// The short name of a precision ("bf16", "fp16", "fp32"), as the config keeps it.
std::string precision_name(torch::ScalarType dtype);

// The additive attention bias of a masked position in `dtype`: its most negative finite value (fp32's lowest
// would become -inf in bf16, and a fully masked left-padding row NaN).
double masked_bias_value(torch::ScalarType dtype);

// The dtype a masked attention bias must be representable in: autocast's dtype when autocast is on for the
// device (the bias is cast there), else `dtype`.
torch::ScalarType compute_dtype(const torch::Device& device, torch::ScalarType dtype);

}  // namespace verl::model
