// Gradient checkpointing of decoder layers (HF's gradient_checkpointing_enable, verl's
// model.enable_gradient_checkpointing): a custom autograd Function runs the layer without keeping its
// activations and recomputes it in backward, like torch.utils.checkpoint's reentrant variant.
#pragma once

#include <torch/torch.h>

#include "verl/model/transformer.h"

namespace verl::model {

// layer->forward(h, cos, sin, mask_bias, no cache, packed) with only the layer's input kept for backward. The
// backward pass recomputes the layer with grad enabled and back-propagates through it, accumulating the
// layer's parameter gradients into .grad; the result equals the plain forward's gradients. When `h` does
// not require grad this is the plain forward (the graph would otherwise lose the parameters).
// The layer must outlive the autograd graph (it is held by its model).
torch::Tensor checkpointed_layer_forward(DecoderLayer& layer, const torch::Tensor& h, const torch::Tensor& cos,
                                         const torch::Tensor& sin, const torch::Tensor& mask_bias,
                                         const torch::Tensor& packed = {});

}  // namespace verl::model
