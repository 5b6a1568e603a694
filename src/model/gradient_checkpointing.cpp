#include "verl/model/gradient_checkpointing.h"

#include <ATen/autocast_mode.h>

#include <cstdint>

#include "verl/model/mixed_precision.h"

namespace verl::model {
namespace {

struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  // grad mode is off inside forward (Function::apply), so no graph is kept for the layer's internals.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& cos,
                               const torch::Tensor& sin, const torch::Tensor& mask_bias, const torch::Tensor* packed,
                               DecoderLayerImpl* layer) {
    // By pointer, not a tensor input: autograd cannot take an undefined tensor (a padded forward's) as one.
    if (packed->defined()) ctx->saved_data["packed"] = *packed;
    ctx->saved_data["layer"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(layer));
    // The recomputation must run in the forward's precision (PyTorch's checkpoint keeps the autocast state too).
    const auto device_type = h.device().type();
    // fp32 stands for "autocast off" (AutocastGuard does nothing for it).
    ctx->saved_data["autocast_dtype"] = static_cast<int64_t>(
        at::autocast::is_autocast_enabled(device_type) ? at::autocast::get_autocast_dtype(device_type) : torch::kFloat32);
    ctx->save_for_backward({h, cos, sin, mask_bias});
    return layer->forward(h, cos, sin, mask_bias, nullptr, 0, *packed);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto* layer = reinterpret_cast<DecoderLayerImpl*>(static_cast<intptr_t>(ctx->saved_data["layer"].toInt()));
    auto saved = ctx->get_saved_variables();
    auto h = saved[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["autocast_dtype"].toInt());
      AutocastGuard autocast(h.device(), dtype);
      const auto packed = ctx->saved_data.find("packed");
      out = layer->forward(h, saved[1], saved[2], saved[3], nullptr, 0,
                           packed == ctx->saved_data.end() ? torch::Tensor() : packed->second.toTensor());
    }
    torch::autograd::backward({out}, {grad_outputs[0]});
    // One gradient per forward argument: h, cos, sin, mask_bias, packed (constants) and the layer (not a tensor).
    return {h.grad(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_layer_forward(DecoderLayer& layer, const torch::Tensor& h, const torch::Tensor& cos,
                                         const torch::Tensor& sin, const torch::Tensor& mask_bias,
                                         const torch::Tensor& packed) {
  if (!h.requires_grad()) return layer->forward(h, cos, sin, mask_bias, nullptr, 0, packed);
  return CheckpointedLayer::apply(h, cos, sin, mask_bias, &packed, layer.get());
}

}  // namespace verl::model
