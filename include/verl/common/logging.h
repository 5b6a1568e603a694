// Logging with levels and [component] tags, to stderr:  "[I] [trainer] step 3 done".
// A per-process prefix (the MPI rank, set by the distributed layer) goes in front when set.
//
//   VERL_LOG(Info, "trainer") << "loaded " << n << " rows";
#pragma once

#include <optional>
#include <sstream>
#include <string>

namespace verl {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

// Parses "debug" / "info" / "warn" / "error" / "off" (case-insensitive); nullopt otherwise.
std::optional<LogLevel> parse_log_level(const std::string& name);

void set_log_level(LogLevel level);
LogLevel log_level();
bool log_enabled(LogLevel level);

// Text put before every line, e.g. "rank 3"; empty for none.
void set_log_prefix(const std::string& prefix);

// Reads VERL_LOG_LEVEL from the environment (an invalid value is an error naming it).
void init_logging_from_env();

void log_line(LogLevel level, const char* component, const std::string& text);

// Collects one line and emits it on destruction.
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* component) : level_(level), component_(component) {}
  ~LogMessage() { log_line(level_, component_, stream_.str()); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  template <typename T>
  LogMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  const char* component_;
  std::ostringstream stream_;
};

}  // namespace verl

#define VERL_LOG(level, component)                             \
  if (!::verl::log_enabled(::verl::LogLevel::level)) {         \
  } else                                                       \
    ::verl::LogMessage(::verl::LogLevel::level, (component))
