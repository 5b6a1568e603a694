// Runs model-written Python solutions against test cases, for verl's prime_code reward (prime_code.h).
//
// The solutions are Python, so a Python process runs them: python_code_runner.py (embedded in the binary), started
// with the embedded interpreter's installation (python::embedded_python_executable()) as a small server. It forks a
// child in its own session for every check, so a solution that crashes, hangs or exits takes only its check down;
// the server kills a check's session past its timeout + 1 s (verl's global limit) and the check fails as a whole,
// and after every check kills what the check left running in its session. Checks run in a scratch folder of the
// server's, removed when it ends, so files a solution writes do not land among the run's outputs.
// The runner's file documents the rules (verl's, down to its quirks).
//
// A runner serves one check at a time; run_code_check takes an idle one from a process-wide set (starting another
// when all are busy), so that threads check side by side. The servers exit when this process closes their stdin.
#pragma once

#include <sys/types.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::reward {

struct CodeCheck {
  std::string code;        // the solution
  nlohmann::json in_outs;  // {"inputs": [str...], "outputs": [str...], "fn_name"?: str}
  int timeout_s = 5;       // per test and while the module loads; the whole check gets timeout_s + 1
};

struct CodeCheckResult {
  // verl's results as pass / fail: one per test run, in order (a check stops at its first failing test); a solution
  // that does not load has one false; a check killed, crashed or unable to run has a false for every test.
  std::vector<bool> verdicts;
  bool replied = true;  // the check's process answered: it was not killed and did not die first
  bool killed = false;  // past timeout_s + 1
  std::string error;    // why the check failed as a whole ("" when it ran its tests)

  // Every verdict is true (so a check of no tests passes, as in verl).
  bool all_passed() const;
};

class PythonCodeRunner {
 public:
  // Starts the server and waits for it to say it is ready; a one-line error when Python cannot start it.
  PythonCodeRunner();
  ~PythonCodeRunner();
  PythonCodeRunner(const PythonCodeRunner&) = delete;
  PythonCodeRunner& operator=(const PythonCodeRunner&) = delete;

  // One check. A server that dies under it (it should not: checks run in its children) is started again and the
  // check retried once; one that does not answer within timeout_s + 1 s and a margin is an error.
  CodeCheckResult run(const CodeCheck& check);

  pid_t pid() const { return pid_; }

 private:
  void start();
  void stop();
  // The server's next line, or "" when it ended or `seconds` passed (`timed_out` says which).
  std::string read_reply(double seconds, bool& timed_out);

  pid_t pid_ = -1;
  int fd_ = -1;         // a Unix socket: the server's stdin and stdout
  std::string buffer_;  // bytes read past the last whole line
};

// A check on an idle runner of the process-wide set.
CodeCheckResult run_code_check(const CodeCheck& check);

// How many runner servers this process has started, and how many of the set wait for a check (for tests: checks in
// parallel use several).
size_t python_code_runners_started();
size_t python_code_runners_idle();

}  // namespace verl::reward
