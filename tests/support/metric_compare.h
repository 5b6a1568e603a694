// Test helper for runs compared metric by metric: which metrics measure the machine, its wall time or its memory
// (they differ between two runs of the same training; every other metric must be bitwise equal).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace verl::test {

inline bool is_machine_measured_metric(const std::string& key) {
  return key.rfind("timing_", 0) == 0 || key == "perf/time_per_step" || key == "perf/throughput" ||
         key.rfind("perf/mfu", 0) == 0 || key.rfind("perf/max_memory_", 0) == 0 || key == "perf/cpu_memory_used_gb";
}

// A worker's metrics (key -> values) without the machine-measured ones, for comparing two runs bit for bit.
inline nlohmann::json without_machine_measured_metrics(const nlohmann::json& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (!is_machine_measured_metric(it.key())) out[it.key()] = it.value();
  }
  return out;
}

}  // namespace verl::test
