#include "verl/cli/option_values.h"

#include <stdexcept>

#include "verl/common/error.h"

namespace verl::cli {

int64_t parse_int_option(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::logic_error&) {
  }
  VERL_FAIL("cli", option, " expects an integer, got '", text, "'");
}

double parse_number_option(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::logic_error&) {
  }
  VERL_FAIL("cli", option, " expects a number, got '", text, "'");
}

int64_t parse_count_option(const std::string& option, const std::string& text) {
  const int64_t v = parse_int_option(option, text);
  VERL_CHECK(v >= 0, "cli", option, " expects a non-negative integer, got '", text, "'");
  return v;
}

}  // namespace verl::cli
