// Test helper for runs compared metric by metric: which metrics measure wall time (they differ between two runs of
// the same training; every other metric must be bitwise equal).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace verl::test {

inline bool is_wall_time_metric(const std::string& key) {
  return key.rfind("timing_", 0) == 0 || key == "perf/time_per_step" || key == "perf/throughput" ||
         key.rfind("perf/mfu", 0) == 0;
}

// A worker's metrics (key -> values) without the wall-time ones, for comparing two runs bit for bit.
inline nlohmann::json without_wall_time_metrics(const nlohmann::json& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (!is_wall_time_metric(it.key())) out[it.key()] = it.value();
  }
  return out;
}

}  // namespace verl::test
