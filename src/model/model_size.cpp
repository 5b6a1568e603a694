#include "verl/model/model_size.h"

#include <unistd.h>

#include <iomanip>

#include "verl/common/error.h"

namespace verl::model {

double parameter_count(const HFConfig& c) {
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double V = static_cast<double>(c.vocab_size), L = static_cast<double>(c.num_hidden_layers);
  const double q = static_cast<double>(c.num_attention_heads) * static_cast<double>(c.head_dim);
  const double kv = static_cast<double>(c.num_key_value_heads) * static_cast<double>(c.head_dim);
  double layer = H * q + 2 * H * kv + q * H + 3 * H * I + 2 * H;  // q, k, v, o, gate, up, down, two norms
  if (c.qkv_bias()) layer += q + 2 * kv;
  if (c.o_bias()) layer += H;
  if (c.mlp_bias) layer += 2 * I + H;
  if (c.qk_norm()) layer += 2 * static_cast<double>(c.head_dim);
  return L * layer + V * H * (c.tie_word_embeddings ? 1 : 2) + H;  // + the final norm
}

void check_model_fits_in_memory(const HFConfig& config, const std::string& source) {
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  if (page <= 0 || pages <= 0) return;  // unknown: nothing to compare against
  const double ram = page * pages;
  const double need = 4.0 * parameter_count(config);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  VERL_CHECK(need <= ram, "hf_config", source, ": the model needs ", std::fixed, std::setprecision(1), need / kGiB,
             " GiB for its fp32 weights (num_hidden_layers=", config.num_hidden_layers,
             ", hidden_size=", config.hidden_size, ", intermediate_size=", config.intermediate_size,
             ", vocab_size=", config.vocab_size, ") but this machine has ", ram / kGiB,
             " GiB of memory (limit: physical RAM)");
}

}  // namespace verl::model
