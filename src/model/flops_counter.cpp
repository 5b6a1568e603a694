#include "verl/model/flops_counter.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "verl/runtime/cuda_device.h"

namespace verl::model {

SequenceLengthSums SequenceLengthSums::of_attention_mask(const torch::Tensor& attention_mask) {
  const torch::Tensor lengths = attention_mask.to(torch::kFloat64).sum(-1);
  return {lengths.sum().item<double>(), lengths.square().sum().item<double>()};
}

double estimated_flops(const HFConfig& c, const SequenceLengthSums& sums) {
  const double h = static_cast<double>(c.hidden_size);
  const double d = static_cast<double>(c.head_dim);
  const double heads = static_cast<double>(c.num_attention_heads);
  const double kv_heads = static_cast<double>(c.num_key_value_heads);
  const double layers = static_cast<double>(c.num_hidden_layers);
  const double mlp = c.moe.enabled ? h * static_cast<double>(c.moe.num_experts_per_tok) *
                                             static_cast<double>(c.moe.moe_intermediate_size) * 3.0 +
                                         h * static_cast<double>(c.moe.num_experts)
                                   : h * static_cast<double>(c.intermediate_size) * 3.0;
  const double attention_linear = h * (heads * d + 2.0 * kv_heads * d + heads * d);
  const double embedding_and_head = static_cast<double>(c.vocab_size) * h * 2.0;
  const double dense = (mlp + attention_linear) * layers + embedding_and_head;
  return 6.0 * dense * sums.tokens + 6.0 * sums.squared_tokens * d * heads * layers;
}

double promised_flops_of_device_name(const std::string& name) {
  // verl's _DEVICE_FLOPS, tried as verl does: in reverse lexicographic order of the names, the first one the
  // device's name contains.
  std::vector<std::pair<std::string, double>> table = {
      {"CPU", 448e9},           {"GB200", 2.5e15},   {"B200", 2.25e15},  {"MI300X", 1307e12},     {"MI350X", 2300e12},
      {"MI355X", 2500e12},      {"H100", 989e12},    {"H800", 989e12},   {"H200", 989e12},        {"A100", 312e12},
      {"A800", 312e12},         {"L40S", 362.05e12}, {"L40", 181.05e12}, {"A40", 149.7e12},       {"L20", 119.5e12},
      {"H20", 148e12},          {"910B", 354e12},    {"A2G3", 354e12},   {"Ascend950DT", 432e12}, {"Ascend910", 354e12},
      {"RTX 3070 Ti", 21.75e12}};
  std::sort(table.begin(), table.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [key, flops] : table) {
    if (name.find(key) != std::string::npos) return flops;
  }
  return std::numeric_limits<double>::infinity();
}

double promised_flops(const torch::Device& device) {
  if (device.is_cpu()) return promised_flops_of_device_name("CPU");
  if (!device.is_cuda()) return std::numeric_limits<double>::infinity();
  return promised_flops_of_device_name(runtime::cuda_device_info(device.has_index() ? device.index() : 0).name);
}

double model_flops_utilization(const HFConfig& config, const SequenceLengthSums& sums, double seconds,
                               const torch::Device& device, int64_t world_size, bool forward_only) {
  if (seconds <= 0 || world_size <= 0) return 0.0;
  const double mfu = estimated_flops(config, sums) / seconds / promised_flops(device) / static_cast<double>(world_size);
  return forward_only ? mfu / 3.0 : mfu;
}

}  // namespace verl::model
