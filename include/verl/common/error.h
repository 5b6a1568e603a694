// Errors: library code throws verl::Error (never exits); main() prints one `error: ...` line.
//
//   VERL_CHECK(cond, "component", "what was wrong ", value, ", expected ...");   // user-facing input errors
//   VERL_ASSERT(cond, "component", "invariant text");                          // internal bugs: adds file:line
//   VERL_FAIL("component", ...);                                                // unconditional error
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace verl {

// Concatenates any streamable values into one string.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

class Error : public std::runtime_error {
 public:
  // component: short tag such as "config" or "parquet"; shown as "[config] message".
  // where: "file:line" for internal failures, empty for input errors (the message names the input).
  Error(std::string component, const std::string& message, std::string where = "");

  const std::string& component() const { return component_; }
  const std::string& message() const { return message_; }
  const std::string& where() const { return where_; }

 private:
  std::string component_;
  std::string message_;
  std::string where_;
};

}  // namespace verl

#define VERL_FAIL(component, ...) throw ::verl::Error((component), ::verl::str_cat(__VA_ARGS__))

#define VERL_CHECK(cond, component, ...) \
  do {                                   \
    if (!(cond)) {                       \
      VERL_FAIL(component, __VA_ARGS__); \
    }                                    \
  } while (0)

#define VERL_ASSERT(cond, component, ...)                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      throw ::verl::Error((component), ::verl::str_cat("internal error: ", __VA_ARGS__,        \
                                                       " (check failed: " #cond ")"),          \
                          ::verl::str_cat(__FILE__, ":", __LINE__));                           \
    }                                                                                          \
  } while (0)
