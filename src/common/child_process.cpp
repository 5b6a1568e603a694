#include "verl/common/child_process.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace verl {

bool send_all(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> take_line(std::string& buffer) {
  const size_t end = buffer.find('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string line = buffer.substr(0, end);
  buffer.erase(0, end + 1);
  return line;
}

void stop_child(pid_t pid, double grace_seconds) {
  if (pid <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace verl
