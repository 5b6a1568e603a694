#include "verl/workers/memory_metrics.h"

#include "verl/runtime/memory_usage.h"

namespace verl::workers {

nlohmann::json memory_metrics(const torch::Device& device) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  nlohmann::json metrics = nlohmann::json::object();
  const auto put = [&](const char* key, int64_t bytes) {
    if (bytes >= 0) metrics[key] = nlohmann::json::array({static_cast<double>(bytes) / kGiB});
  };
  const runtime::DeviceMemoryPeak peak = runtime::device_memory_peak(device);
  put("perf/max_memory_allocated_gb", peak.allocated_bytes);
  put("perf/max_memory_reserved_gb", peak.reserved_bytes);
  put("perf/cpu_memory_used_gb", runtime::system_memory_used_bytes());
  return metrics;
}

}  // namespace verl::workers
