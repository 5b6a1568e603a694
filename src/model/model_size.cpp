#include "verl/model/model_size.h"

#include <unistd.h>

#include <iomanip>

#include "verl/common/error.h"

namespace verl::model {

double mlp_parameter_count(const HFConfig& c, int64_t layer, bool active_only) {
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  if (!c.layer_is_sparse(layer)) return 3 * H * I + (c.mlp_bias ? 2 * I + H : 0);
  const auto& m = c.moe;
  const double experts = static_cast<double>(active_only ? m.num_experts_per_tok : m.num_experts);
  const double shared = static_cast<double>(m.shared_expert_intermediate_size);
  return H * static_cast<double>(m.num_experts) + experts * 3 * H * static_cast<double>(m.moe_intermediate_size) +
         (shared > 0 ? 3 * H * shared + H : 0);
}

double parameter_count(const HFConfig& c) {
  const double H = static_cast<double>(c.hidden_size), V = static_cast<double>(c.vocab_size);
  const double q = static_cast<double>(c.num_attention_heads) * static_cast<double>(c.head_dim);
  const double kv = static_cast<double>(c.num_key_value_heads) * static_cast<double>(c.head_dim);
  double attention = H * q + 2 * H * kv + q * H + 2 * H;  // q, k, v, o, two norms
  if (c.qkv_bias()) attention += q + 2 * kv;
  if (c.o_bias()) attention += H;
  if (c.qk_norm()) attention += 2 * static_cast<double>(c.head_dim);
  double total = V * H * (c.tie_word_embeddings ? 1 : 2) + H;  // embeddings (and head), the final norm
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer)
    total += attention + mlp_parameter_count(c, layer, false);
  return total;
}

void check_model_fits_in_memory(const HFConfig& config, const std::string& source) {
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  if (page <= 0 || pages <= 0) return;  // unknown: nothing to compare against
  const double ram = page * pages;
  const double need = 4.0 * parameter_count(config);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const std::string experts = config.moe.enabled
                                  ? ", num_experts=" + std::to_string(config.moe.num_experts) +
                                        ", moe_intermediate_size=" + std::to_string(config.moe.moe_intermediate_size)
                                  : "";
  VERL_CHECK(need <= ram, "hf_config", source, ": the model needs ", std::fixed, std::setprecision(1), need / kGiB,
             " GiB for its fp32 weights (num_hidden_layers=", config.num_hidden_layers,
             ", hidden_size=", config.hidden_size, ", intermediate_size=", config.intermediate_size, experts,
             ", vocab_size=", config.vocab_size, ") but this machine has ", ram / kGiB,
             " GiB of memory (limit: physical RAM)");
}

}  // namespace verl::model
