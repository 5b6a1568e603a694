#include "verl/common/logging.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "verl/common/error.h"

namespace verl {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::mutex g_mutex;  // one line at a time from any thread
std::string g_prefix;

const char* level_letter(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "D";
    case LogLevel::Info: return "I";
    case LogLevel::Warn: return "W";
    case LogLevel::Error: return "E";
    default: return "?";
  }
}
}  // namespace

std::optional<LogLevel> parse_log_level(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "info") return LogLevel::Info;
  if (lower == "warn" || lower == "warning") return LogLevel::Warn;
  if (lower == "error") return LogLevel::Error;
  if (lower == "off") return LogLevel::Off;
  return std::nullopt;
}

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void set_log_prefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_prefix = prefix;
}

void init_logging_from_env() {
  const char* env = std::getenv("VERL_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return;
  auto level = parse_log_level(env);
  VERL_CHECK(level.has_value(), "logging", "VERL_LOG_LEVEL='", env,
             "' is not a log level; expected one of debug, info, warn, error, off");
  set_log_level(*level);
}

void log_line(LogLevel level, const char* component, const std::string& text) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // One write per line: ranks of an MPI job share the terminal, and pieces written apart interleave.
  std::string line;
  if (!g_prefix.empty()) line += "(" + g_prefix + ") ";
  line += std::string("[") + level_letter(level) + "] [" + component + "] " + text + "\n";
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cerr.flush();
}

}  // namespace verl
