#include "verl/bench/model_flops.h"

#include "verl/model/model_size.h"

namespace verl::bench {

double trunk_matmul_params(const model::HFConfig& c) {
  const double H = static_cast<double>(c.hidden_size), D = static_cast<double>(c.head_dim);
  const double q = static_cast<double>(c.num_attention_heads) * D, kv = static_cast<double>(c.num_key_value_heads) * D;
  const double attn = H * q + 2 * H * kv + q * H;
  double total = 0;
  // An MoE layer counts what one token multiplies by: the router and its num_experts_per_tok experts.
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    total += attn + (c.layer_is_sparse(layer) ? model::mlp_parameter_count(c, layer, true)
                                              : 3 * H * static_cast<double>(c.intermediate_size));
  }
  return total;
}

double lm_head_params(const model::HFConfig& c) {
  return static_cast<double>(c.hidden_size) * static_cast<double>(c.vocab_size);
}

double total_params(const model::HFConfig& c) {
  const double H = static_cast<double>(c.hidden_size), D = static_cast<double>(c.head_dim);
  const double q = static_cast<double>(c.num_attention_heads) * D, kv = static_cast<double>(c.num_key_value_heads) * D;
  double per_layer = 2 * H;  // two RMSNorm weights
  if (c.qkv_bias()) per_layer += q + 2 * kv;
  if (c.o_bias()) per_layer += H;
  if (c.qk_norm()) per_layer += 2 * D;
  const double attn = H * q + 2 * H * kv + q * H;
  double total = static_cast<double>(c.num_hidden_layers) * (attn + per_layer) + H;  // + final norm
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) total += model::mlp_parameter_count(c, layer, false);
  total += lm_head_params(c);                                     // embedding
  if (!c.tie_word_embeddings) total += lm_head_params(c);         // separate lm_head
  return total;
}

double trunk_flops_per_token(const model::HFConfig& c) { return 2 * trunk_matmul_params(c); }
double lm_head_flops_per_token(const model::HFConfig& c) { return 2 * lm_head_params(c); }

double attention_flops(const model::HFConfig& c, double queries, double keys) {
  return 4.0 * static_cast<double>(c.num_hidden_layers) * static_cast<double>(c.num_attention_heads) *
         static_cast<double>(c.head_dim) * queries * keys;
}

double prefill_flops(const model::HFConfig& c, int64_t batch, int64_t prompt) {
  const double B = static_cast<double>(batch), P = static_cast<double>(prompt);
  return B * (P * trunk_flops_per_token(c) + lm_head_flops_per_token(c) + attention_flops(c, P, P));
}

double decode_flops(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t steps) {
  const double B = static_cast<double>(batch);
  double flops = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const double keys = static_cast<double>(prompt + s + 1);
    flops += B * (trunk_flops_per_token(c) + lm_head_flops_per_token(c) + attention_flops(c, 1, keys));
  }
  return flops;
}

double decode_bytes(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t steps, int64_t dtype_bytes) {
  const double weights = (trunk_matmul_params(c) + lm_head_params(c)) * static_cast<double>(dtype_bytes);
  // K and V of one position, all layers.
  const double kv_per_position = 2.0 * static_cast<double>(c.num_hidden_layers * c.num_key_value_heads * c.head_dim) *
                                 static_cast<double>(dtype_bytes);
  double bytes = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const double keys = static_cast<double>(prompt + s + 1);
    bytes += weights + static_cast<double>(batch) * kv_per_position * (keys + 1);  // read context, write new
  }
  return bytes;
}

double sequence_forward_flops(const model::HFConfig& c, int64_t batch, int64_t prompt, int64_t response,
                              bool lm_head) {
  const double B = static_cast<double>(batch), L = static_cast<double>(prompt + response);
  const double head = lm_head ? lm_head_flops_per_token(c) : 2.0 * static_cast<double>(c.hidden_size);
  return B * (L * trunk_flops_per_token(c) + static_cast<double>(response) * head + attention_flops(c, L, L));
}

RooflineBound roofline_bound(double flops, double bytes, double peak_flops, double bandwidth_bytes) {
  RooflineBound b;
  b.compute_seconds = peak_flops > 0 ? flops / peak_flops : 0;
  b.memory_seconds = bandwidth_bytes > 0 ? bytes / bandwidth_bytes : 0;
  return b;
}

}  // namespace verl::bench
