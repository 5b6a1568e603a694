#include "support/run_command.h"

#include <sys/wait.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace verl::test {

CommandResult run_command(const std::string& command) {
  const std::string dir = make_temp_dir("run_command");
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  const std::string full = command + " > '" + out_path + "' 2> '" + err_path + "' < /dev/null";
  int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

std::string make_temp_dir(const std::string& name) {
  static int counter = 0;
  std::filesystem::path path = std::filesystem::path(VERL_TEST_TMP_ROOT) /
                               (name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << text;
}

}  // namespace verl::test
