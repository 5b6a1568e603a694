// Wall-clock and process CPU time together: on a shared machine the ratio cpu / wall says how much of the
// machine a measurement actually got (2.0 = two busy cores, 0.5 = half of one).
//
//   Stopwatch watch;
//   ... work ...
//   double wall = watch.wall_seconds(), cpu = watch.cpu_seconds();
#pragma once

#include <chrono>

namespace verl {

// CPU time of this process (all threads), in seconds.
double process_cpu_seconds();
// Wall-clock seconds from `start` to now.
double seconds_since(std::chrono::steady_clock::time_point start);

class Stopwatch {
 public:
  Stopwatch() { restart(); }
  void restart();
  double wall_seconds() const;
  double cpu_seconds() const;

 private:
  std::chrono::steady_clock::time_point wall_start_;
  double cpu_start_ = 0.0;
};

}  // namespace verl
