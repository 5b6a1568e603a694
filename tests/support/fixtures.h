// Test helper: where the data-file fixtures live: tests/fixtures in the checkout (each with its licence),
// or $VERL_FIXTURES_DIR when set. A clone is self-contained: nothing outside it is read.
#pragma once

#include <cstdlib>
#include <string>

namespace verl::test {

inline std::string fixtures_dir() {
  const char* env = std::getenv("VERL_FIXTURES_DIR");
  if (env != nullptr && *env != '\0') return env;
  return VERL_SOURCE_DIR_FOR_TESTS "/tests/fixtures";
}

}  // namespace verl::test
