// FLOPs and bytes of the decoder passes, for throughput and roofline bounds. Counting rules (stated once,
// used by every bench):
//   * a matmul of [m, k] x [k, n] is 2 m k n FLOPs; norms, rotary, activations and softmax are not counted;
//   * linear layers: q/k/v/o and gate/up/down of every layer, per token;
//   * LM head (lm_head or the tied embedding): only at the positions where logits are computed;
//   * attention: QK^T and PV over the keys each query sees as computed here (the full padded key range, as
//     verl's flops counter counts seqlen^2): 4 * layers * heads * head_dim per (query, key) pair;
//   * backward = 2 x forward (so a training step is 3 x forward); gradient-checkpointing recomputation is
//     not counted (model FLOPs, as MFU is usually defined);
//   * bytes of a decode step: every matmul weight read once, the KV cache read over the context and the
//     new token's K/V written (activations are small and not counted).
#pragma once

#include <cstdint>

#include "verl/model/hf_config.h"

namespace verl::bench {

// Parameters of the linear layers of the trunk (weights only; of an MoE layer, the router and the
// num_experts_per_tok experts one token runs), and of the LM head.
double trunk_matmul_params(const model::HFConfig& c);
double lm_head_params(const model::HFConfig& c);
// All parameters (embedding, trunk incl. biases and norms, untied LM head).
double total_params(const model::HFConfig& c);

double trunk_flops_per_token(const model::HFConfig& c);
double lm_head_flops_per_token(const model::HFConfig& c);
// QK^T + PV for `queries` queries that each attend over `keys` keys (one sequence).
double attention_flops(const model::HFConfig& c, double queries, double keys);

// Prefill of `batch` prompts of `prompt` tokens each, logits at the last position only.
double prefill_flops(const model::HFConfig& c, int64_t batch, int64_t prompt);
// Decode steps after a prefill of `prompt` tokens: step s (0-based) feeds one token per row with a context
// of prompt + s + 1 keys and computes logits for it. Sum over `steps` steps.
double decode_flops(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t steps);
double decode_bytes(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t steps, int64_t dtype_bytes = 4);

// One forward over [batch, prompt + response] with the LM head (or value head) at the `response` positions
// (verl's compute_log_prob / compute_values).
double sequence_forward_flops(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t response,
                              bool lm_head = true);

// A roofline bound: the time a pass needs at least, given the machine's GEMM FLOP/s and memory bandwidth.
struct RooflineBound {
  double compute_seconds = 0;  // flops / peak
  double memory_seconds = 0;   // bytes / bandwidth
  double seconds() const { return compute_seconds > memory_seconds ? compute_seconds : memory_seconds; }
  const char* limit() const { return compute_seconds >= memory_seconds ? "compute" : "memory"; }
};
RooflineBound roofline_bound(double flops, double bytes, double peak_flops, double bandwidth_bytes);

}  // namespace verl::bench
