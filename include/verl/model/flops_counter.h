// verl 0.9.1's MFU estimate (verl/utils/flops_counter.py, FlopsCounter and get_device_flops), which its engine
// workers log as perf/mfu/actor, perf/mfu/critic and perf/mfu/actor_infer. Per pass over sequences of lengths s_i
// (tokens T = sum s_i), h hidden, V vocab, L layers, H heads of d dims, K key-value heads, I intermediate:
//   dense (llama, qwen2, qwen3, mistral)  6 T (L (3 h I + h (H d + 2 K d + H d)) + 2 V h)
//   moe (qwen2_moe, qwen3_moe)            the MLP term h (top_k 3 I_moe + num_experts) in place of 3 h I (verl's
//                                         formula: every layer sparse, no shared expert)
//   attention                             + 6 sum(s_i^2) d H L
// a forward and backward; verl divides the MFU of a forward-only pass by 3.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "verl/model/hf_config.h"

namespace verl::model {

// The two sums verl's estimate reads from the sequence lengths.
struct SequenceLengthSums {
  double tokens = 0;          // sum s_i
  double squared_tokens = 0;  // sum s_i^2
  // Of the rows of an attention mask [B, T] (each row's valid tokens).
  static SequenceLengthSums of_attention_mask(const torch::Tensor& attention_mask);
};

// FLOPs of one forward and backward pass.
double estimated_flops(const HFConfig& config, const SequenceLengthSums& sums);

// verl's promised FLOP/s of `device`: 448e9 for any CPU, a CUDA device by the first of verl's names (H100, H200,
// A100, ...) its name contains, infinity for one verl does not list (its MFU is then 0).
double promised_flops(const torch::Device& device);
// The table lookup by device name ("CPU", "NVIDIA H100 80GB HBM3", ...).
double promised_flops_of_device_name(const std::string& name);

// verl's mfu: estimated_flops / seconds / promised_flops / world_size, / 3 for a forward-only pass.
double model_flops_utilization(const HFConfig& config, const SequenceLengthSums& sums, double seconds,
                               const torch::Device& device, int64_t world_size, bool forward_only);

}  // namespace verl::model
