#include "verl/common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>

#include "verl/common/error.h"
#include "verl/common/stopwatch.h"

namespace verl {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buffer[32];
  if (seconds < 60) {
    std::snprintf(buffer, sizeof(buffer), "%.1fs", seconds);
  } else {
    int64_t total = static_cast<int64_t>(std::llround(seconds));
    int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
    if (h > 0) {
      std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm%02llds", static_cast<long long>(h),
                    static_cast<long long>(m), static_cast<long long>(s));
    } else {
      std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(m), static_cast<long long>(s));
    }
  }
  return buffer;
}

std::string format_rate(double per_second) {
  if (!std::isfinite(per_second)) return "?";
  char buffer[32];
  double a = std::fabs(per_second);
  if (a < 1000) {
    std::snprintf(buffer, sizeof(buffer), a < 10 ? "%.2f" : (a < 100 ? "%.1f" : "%.0f"), per_second);
  } else {
    const char* suffix = "k";
    double v = per_second / 1e3;
    if (a >= 1e9) {
      v = per_second / 1e9;
      suffix = "G";
    } else if (a >= 1e6) {
      v = per_second / 1e6;
      suffix = "M";
    }
    double av = std::fabs(v);
    std::snprintf(buffer, sizeof(buffer), av < 10 ? "%.2f%s" : (av < 100 ? "%.1f%s" : "%.0f%s"), v, suffix);
  }
  return buffer;
}

namespace {

std::string rates(int64_t done, double units, const std::string& units_name, double elapsed_s) {
  double secs = elapsed_s > 0 ? elapsed_s : NAN;
  std::string text = format_rate(done / secs) + " it/s";
  if (!units_name.empty()) text += ", " + format_rate(units / secs) + " " + units_name + "/s";
  return text;
}

}  // namespace

std::string format_progress_line(const std::string& label, int64_t done, int64_t total, double units,
                                 const std::string& units_name, double elapsed_s, int bar_width) {
  std::string line = label + " ";
  double secs = elapsed_s > 0 ? elapsed_s : NAN;
  if (total > 0) {
    double fraction = std::min(1.0, std::max(0.0, static_cast<double>(done) / static_cast<double>(total)));
    int filled = static_cast<int>(fraction * bar_width);
    line += "[" + std::string(filled, '#') + std::string(bar_width - filled, ' ') + "] ";
    line += str_cat(done, "/", total, " ", static_cast<int>(fraction * 100), "%");
  } else {
    line += str_cat(done);
  }
  line += " | " + (units_name.empty() ? format_rate(done / secs) + " it/s" : format_rate(units / secs) + " " +
                                                                                   units_name + "/s");
  line += " | " + format_duration(elapsed_s);
  if (total > 0) {
    double eta = done > 0 ? elapsed_s * static_cast<double>(total - done) / static_cast<double>(done) : NAN;
    line += " ETA " + format_duration(eta);
  }
  return line;
}

std::string format_progress_summary(const std::string& label, int64_t done, int64_t total, double units,
                                    const std::string& units_name, double elapsed_s) {
  std::string count = total > 0 ? str_cat(done, "/", total) : str_cat(done);
  return str_cat(label, ": ", count, " in ", format_duration(elapsed_s), " (",
                 rates(done, units, units_name, elapsed_s), ")");
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::string units_name, Mode mode, std::ostream* out)
    : label_(std::move(label)),
      total_(total),
      units_name_(std::move(units_name)),
      mode_(mode),
      out_(out ? out : &std::cerr),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (mode_ == Mode::Auto) mode_ = ::isatty(STDERR_FILENO) && out == nullptr ? Mode::Live : Mode::Summary;
  if (mode_ == Mode::Live) draw();
}

ProgressBar::~ProgressBar() {
  try {
    if (std::uncaught_exceptions() > 0 && !finished_) {
      // Unwinding from an error: no summary line, so the error stays the one line the user reads; a live bar
      // only ends its line so the error starts on a fresh one.
      finished_ = true;
      if (mode_ == Mode::Live) {
        *out_ << "\n";
        out_->flush();
      }
      return;
    }
    finish();
  } catch (...) {
  }
}

double ProgressBar::elapsed() const { return seconds_since(start_); }

void ProgressBar::draw() {
  *out_ << "\r" << format_progress_line(label_, done_, total_, units_, units_name_, elapsed()) << "\x1b[K";
  out_->flush();
  last_draw_ = std::chrono::steady_clock::now();
}

void ProgressBar::advance(int64_t items, double units) {
  done_ += items;
  units_ += units;
  if (mode_ != Mode::Live) return;
  auto now = std::chrono::steady_clock::now();
  bool complete = total_ > 0 && done_ >= total_;
  if (complete || now - last_draw_ >= std::chrono::milliseconds(100)) draw();
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (mode_ == Mode::Live) {
    draw();
    *out_ << "\n";
    out_->flush();
  } else if (mode_ == Mode::Summary) {
    *out_ << format_progress_summary(label_, done_, total_, units_, units_name_, elapsed()) << "\n";
    out_->flush();
  }
}

}  // namespace verl
