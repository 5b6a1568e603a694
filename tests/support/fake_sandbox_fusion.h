// Test helper: tests/support/fake_sandbox_fusion.py (a small SandboxFusion service that runs the Python it is sent
// and acts out the real service's failures) as a child process for one test's lifetime.
#pragma once

#include <sys/types.h>

#include <string>

namespace verl::test {

class FakeSandboxFusion {
 public:
  // `args`: the script's options, e.g. "--log /tmp/x.jsonl --memory-limit-mb 512". Fails the test (throws) when
  // the service does not print its URL within 30 s.
  explicit FakeSandboxFusion(const std::string& args = "");
  ~FakeSandboxFusion();
  FakeSandboxFusion(const FakeSandboxFusion&) = delete;
  FakeSandboxFusion& operator=(const FakeSandboxFusion&) = delete;

  // http://127.0.0.1:PORT/run_code
  const std::string& url() const { return url_; }
  // GET /stats: {"requests": n, "max_in_flight": n}, as JSON text.
  std::string stats() const;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string url_;
};

}  // namespace verl::test
