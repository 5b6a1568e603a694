// A progress bar for long phases (generation, updates): count, rate and ETA.
//
//   ProgressBar bar("generate", /*total=*/batch, "tok");
//   bar.advance(1, tokens_in_this_sequence);   // items done, units (tokens) done
//   bar.finish();
//
// Mode::Auto draws a live bar on stderr when stderr is a terminal (isatty), redrawn at most 10 times a
// second, and otherwise prints nothing until finish(), which prints one summary line. Tests pass an explicit
// mode and stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace verl {

// "12.3s", "4m05s", "1h02m03s"; "?" for a negative or non-finite value.
std::string format_duration(double seconds);
// "987", "12.3k", "4.56M" (three significant digits above 1000).
std::string format_rate(double per_second);

// The live line, without the leading '\r': "label [#####     ] 12/40 30% | 1.23k tok/s | 00:04<00:09".
// total <= 0 means unknown: no bar and no ETA. units_name empty: the rate is items/s.
std::string format_progress_line(const std::string& label, int64_t done, int64_t total, double units,
                                 const std::string& units_name, double elapsed_s, int bar_width = 20);
// The one-line summary: "label: 40/40 in 12.3s (3.25 it/s, 1.23k tok/s)".
std::string format_progress_summary(const std::string& label, int64_t done, int64_t total, double units,
                                    const std::string& units_name, double elapsed_s);

class ProgressBar {
 public:
  enum class Mode { Auto, Live, Summary, Silent };

  ProgressBar(std::string label, int64_t total, std::string units_name = "", Mode mode = Mode::Auto,
              std::ostream* out = nullptr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(int64_t items, double units = 0.0);
  // Ends the live line (or prints the summary line). Idempotent; the destructor calls it.
  void finish();

  bool live() const { return mode_ == Mode::Live; }
  int64_t done() const { return done_; }
  double units() const { return units_; }

 private:
  double elapsed() const;
  void draw();

  std::string label_;
  int64_t total_;
  std::string units_name_;
  Mode mode_;
  std::ostream* out_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t done_ = 0;
  double units_ = 0.0;
  bool finished_ = false;
};

}  // namespace verl
