// Test helper for the config tests: the built-in defaults with key=value overrides applied, the one-line
// error such a config gives ("" when it loads), and what loading it writes to stderr (its warnings).
#pragma once

#include <gtest/gtest.h>

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

// stderr while the config loads (an error propagates, the capture released).
inline std::string stderr_of_load(const std::vector<std::string>& overrides) {
  testing::internal::CaptureStderr();
  try {
    load_with_overrides(overrides);
  } catch (...) {
    testing::internal::GetCapturedStderr();
    throw;
  }
  return testing::internal::GetCapturedStderr();
}

}  // namespace verl::test
