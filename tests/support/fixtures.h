// Test helper: where the shared fixtures live: $VERL_FIXTURES_DIR when set, else shared_dir()/fixtures.
#pragma once

#include <cstdlib>
#include <string>

#include "support/shared_dir.h"

namespace verl::test {

inline std::string fixtures_dir() {
  const char* env = std::getenv("VERL_FIXTURES_DIR");
  if (env != nullptr && *env != '\0') return env;
  return shared_dir() + "/fixtures";
}

}  // namespace verl::test
