#include "verl/model/mixed_precision.h"

#include <ATen/autocast_mode.h>

#include "verl/common/error.h"

#include <limits>

namespace verl::model {

torch::ScalarType parse_precision(const std::string& text, const std::string& key) {
  // verl's PrecisionType names (HALF_LIST, FLOAT_LIST, BFLOAT_LIST).
  if (text == "bf16" || text == "bfloat16") return torch::kBFloat16;
  if (text == "fp32" || text == "float32" || text == "32") return torch::kFloat32;
  if (text == "fp16" || text == "float16" || text == "16") return torch::kFloat16;
  VERL_FAIL("config", key, ": expected bf16, fp16 or fp32 (or bfloat16, float16, float32, 16, 32), got '", text, "'");
}

std::string precision_name(torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 ? "bf16" : dtype == torch::kFloat16 ? "fp16" : "fp32";
}

double masked_bias_value(torch::ScalarType dtype) {
  if (dtype == torch::kFloat64) return std::numeric_limits<double>::lowest();
  if (dtype == torch::kBFloat16) return -3.3895313892515355e38;
  if (dtype == torch::kFloat16) return -65504.0;
  return static_cast<double>(std::numeric_limits<float>::lowest());
}

AutocastGuard::AutocastGuard(const torch::Device& device, torch::ScalarType dtype) {
  if (dtype == torch::kFloat32 || dtype == torch::kFloat64) return;
  active_ = true;
  device_type_ = device.type();
  previous_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::set_autocast_dtype(device_type_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // The weight casts are cached while autocast is on; the cache goes when the outermost guard ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, previous_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
}

ScopedParameterCast::ScopedParameterCast(torch::nn::Module& module, torch::ScalarType dtype) {
  for (auto& p : module.parameters()) {
    if (p.scalar_type() == dtype) continue;
    torch::Tensor master = p.data();
    masters_.emplace_back(p, master);
    p.set_data(master.to(dtype));
  }
}

ScopedParameterCast::~ScopedParameterCast() {
  for (auto& [parameter, master] : masters_) parameter.set_data(master);
}

torch::ScalarType compute_dtype(const torch::Device& device, torch::ScalarType dtype) {
  return at::autocast::is_autocast_enabled(device.type()) ? at::autocast::get_autocast_dtype(device.type()) : dtype;
}

}  // namespace verl::model
