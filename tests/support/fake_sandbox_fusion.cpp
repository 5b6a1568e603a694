#include "support/fake_sandbox_fusion.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "support/run_command.h"
#include "verl/python/interpreter.h"

namespace verl::test {

namespace {

const std::string kScript = VERL_SOURCE_DIR_FOR_TESTS "/tests/support/fake_sandbox_fusion.py";

}  // namespace

FakeSandboxFusion::FakeSandboxFusion(const std::string& args) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) throw std::runtime_error("fake sandbox: pipe failed");
  const std::string command = "exec '" + python::embedded_python_executable() + "' '" + kScript + "' " + args;
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fake sandbox: fork failed");
  if (pid_ == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  stdin_fd_ = to_child[1];
  // The first line is the URL.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string line;
  char c = 0;
  while (line.empty() || line.back() != '\n') {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd fd{from_child[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&fd, 1, static_cast<int>(left.count())) <= 0 || read(from_child[0], &c, 1) != 1) {
      close(from_child[0]);
      throw std::runtime_error("fake sandbox: no URL from " + command + " (got '" + line + "')");
    }
    line += c;
  }
  close(from_child[0]);
  url_ = line.substr(0, line.size() - 1);
}

FakeSandboxFusion::~FakeSandboxFusion() {
  if (stdin_fd_ >= 0) close(stdin_fd_);  // the service stops when its stdin closes
  if (pid_ <= 0) return;
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::string FakeSandboxFusion::stats() const {
  const std::string stats_url = url_.substr(0, url_.rfind('/')) + "/stats";
  const CommandResult r = run_command("'" + python::embedded_python_executable() +
                                      "' -c 'import sys, urllib.request; "
                                      "print(urllib.request.urlopen(sys.argv[1]).read().decode())' '" +
                                      stats_url + "'");
  if (r.exit_code != 0) throw std::runtime_error("fake sandbox: GET " + stats_url + " failed: " + r.err);
  return r.out;
}

}  // namespace verl::test
