#include "verl/common/stopwatch.h"

#include <ctime>

namespace verl {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void Stopwatch::restart() {
  wall_start_ = std::chrono::steady_clock::now();
  cpu_start_ = process_cpu_seconds();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Stopwatch::wall_seconds() const { return seconds_since(wall_start_); }

double Stopwatch::cpu_seconds() const { return process_cpu_seconds() - cpu_start_; }

}  // namespace verl
