// Test helper for the config tests: the built-in defaults with key=value overrides applied, and the one-line
// error such a config gives ("" when it loads).
#pragma once

#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/config/config_loader.h"

namespace verl::test {

inline config::LoadedConfig load_with_overrides(std::vector<std::string> overrides) {
  config::ConfigArgs args;
  args.overrides = std::move(overrides);
  return config::load_config(args);
}

inline std::string config_error_of(std::vector<std::string> overrides) {
  try {
    load_with_overrides(std::move(overrides));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace verl::test
