// console backend: verl's LocalLogger line, `step:N - key:value - ...`.
#include <cmath>
#include <cstdio>
#include <ostream>

#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace {

// Python's format(v, ".3f"): "nan" / "inf" / "-inf" for non-finite values, otherwise C's %.3f (both round
// the exact binary value half-to-even, and both keep the sign of -0.0 and of tiny negatives: "-0.000").
std::string format_3f(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3f", value);
  return buffer;
}

class ConsoleBackend : public TrackingBackend {
 public:
  explicit ConsoleBackend(std::ostream& out) : out_(out) {}
  void log(const Metrics& metrics, int64_t step) override {
    out_ << format_console_line(metrics, step) << "\n";
    out_.flush();
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::string format_console_line(const Metrics& metrics, int64_t step) {
  std::string line = "step:" + std::to_string(step);
  for (const auto& [key, value] : metrics) line += " - " + key + ":" + format_3f(value);
  return line;
}

std::unique_ptr<TrackingBackend> make_console_backend(std::ostream& out) {
  return std::make_unique<ConsoleBackend>(out);
}

}  // namespace verl::trainer
