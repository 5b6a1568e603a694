// Test helper: where the shared fixtures live. CI clones the repository with shared/ beside it
// (VERL_SOURCE_DIR/../shared/fixtures); VERL_FIXTURES_DIR overrides that for other layouts.
#pragma once

#include <cstdlib>
#include <string>

namespace verl::test {

inline std::string fixtures_dir() {
  const char* env = std::getenv("VERL_FIXTURES_DIR");
  if (env != nullptr && *env != '\0') return env;
  return VERL_SOURCE_DIR_FOR_TESTS "/../shared/fixtures";
}

}  // namespace verl::test
