// Test helper for runs compared metric by metric: which metrics measure wall time (they differ between two runs of
// the same training; every other metric must be bitwise equal).
#pragma once

#include <string>

namespace verl::test {

inline bool is_wall_time_metric(const std::string& key) {
  return key.rfind("timing_", 0) == 0 || key == "perf/time_per_step" || key == "perf/throughput" ||
         key.rfind("perf/mfu", 0) == 0;
}

}  // namespace verl::test
