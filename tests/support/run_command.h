// Test helper: run a shell command, capture stdout and stderr separately, return the exit code.
#pragma once

#include <string>

namespace verl::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& command);

// A fresh empty folder under the build tree for one test.
std::string make_temp_dir(const std::string& name);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);

// The built `verl` binary.
inline std::string verl_binary() { return VERL_BINARY_PATH; }

}  // namespace verl::test
