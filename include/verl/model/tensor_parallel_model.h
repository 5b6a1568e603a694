// The megatron strategy's model side: which HF parameters are split across a tensor-parallel group and along
// which dimension, and the moves between a whole model and one rank's slices.
//
//   split along dim 0 (output rows)   q/k/v_proj.weight and .bias, gate/up_proj.weight and .bias,
//                                     embed_tokens.weight, lm_head.weight (vocabulary rows)
//   split along dim 1 (input columns) o_proj.weight, down_proj.weight
//   whole on every rank               norms, o/down_proj.bias (added once after the sum), score.*
//   LoRA factors follow their base    q/k/v/gate/up: lora_B by rows, lora_A whole;
//                                     o/down: lora_A by columns, lora_B whole (model/lora.h)
//
// Checkpoints stay in HF layout: a TP model is loaded whole and sliced, and gathered whole to be saved.
#pragma once

#include <string>
#include <vector>

#include "verl/model/transformer.h"
#include "verl/model/weights.h"

namespace verl::model {

// The dimension along which `name` is split under tensor parallelism; -1 when every rank holds it whole.
int tensor_parallel_dim(const std::string& name);

// One parameter whole from this rank's slice (collective over `tp` when `name` is split), and this rank's slice
// of a whole one (an error when the group size does not divide its split dimension).
torch::Tensor gather_parameter(const std::string& name, const torch::Tensor& slice, const TensorParallelGroup& tp);
torch::Tensor shard_parameter(const std::string& name, const torch::Tensor& whole, const TensorParallelGroup& tp);

// A model of the same config and head whose parameters are this rank's slices of `whole`'s (same dtype and
// device). Errors name the config field that the group size does not divide.
CausalLM shard_model(CausalLM& whole, const TensorParallelGroup& tp);

// Every parameter whole, in named_parameters() order (collective over model->tp: call on every rank).
NamedTensors gather_full_state(CausalLM& model);
// A whole model holding gather_full_state (collective), with LoRA adapters when `model` has them; `model` itself
// when it is not tensor parallel. A pipeline stage's model gathers its stages first (collective over them too).
CausalLM gather_full_model(CausalLM& model);

// For each parameter (parameters() order): whether this rank holds a slice of it (true) or all of it, the same
// as every other rank (false). Gradient clipping sums the slices' norms over the group and counts the rest once.
std::vector<bool> parameter_is_slice(CausalLM& model);

// The TP ranks of one model copy generate together and must choose the same tokens (they sample from the same
// gathered logits with the same seed); otherwise their batches would drift apart and every later collective
// would pair different rows. Collective over `tp`: an error naming the step when the tokens differ.
void check_same_tokens_on_tensor_parallel_ranks(const torch::Tensor& tokens, parallel::Comm& tp, int64_t step);

}  // namespace verl::model
