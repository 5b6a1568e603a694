// Deadlines for work that may never return: user code (reward functions), a rank waiting on a peer. One
// watchdog thread per process watches every armed deadline; when one passes it first runs the soft action (ask
// the work to stop: raise TimeoutError in Python, say), and when the work is still running `hard_after_s` later
// it ends the process with one line on stderr, so a job never hangs silently.
//
//   WatchdogGuard guard({.soft_after_s = 300, .on_soft = [&] { interrupt(); }, .hard_after_s = 310,
//                        .hard_message = "[reward] compute_score from 'r.py' did not return within 300 s"});
//   run_user_code();   // the guard disarms on scope exit, whatever happens
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace verl {

struct WatchdogAlarm {
  double soft_after_s = 0;             // <= 0: no soft action
  std::function<void()> on_soft;       // runs on the watchdog thread: must not block
  double hard_after_s = 0;             // <= 0: never end the process
  std::string hard_message;            // the line printed (after "error: ") before the process ends
  int exit_code = 1;
};

class WatchdogGuard {
 public:
  explicit WatchdogGuard(WatchdogAlarm alarm);
  ~WatchdogGuard();
  WatchdogGuard(const WatchdogGuard&) = delete;
  WatchdogGuard& operator=(const WatchdogGuard&) = delete;

 private:
  uint64_t id_ = 0;
};

// While one is alive, exit() called from anywhere in the process (user code in a plugin, say) ends it with
// exit code 1 and "error: <message>" instead of the code asked for: a reward function calling exit(0) must not
// look like a successful run.
class ExitGuard {
 public:
  explicit ExitGuard(std::string message);
  ~ExitGuard();
  ExitGuard(const ExitGuard&) = delete;
  ExitGuard& operator=(const ExitGuard&) = delete;
};

// Writes "error: <message>" and a newline to stderr with one write(2), then _exit(exit_code): no destructor,
// no atexit handler, no lock (safe from the watchdog thread while other threads are stuck).
[[noreturn]] void end_process_now(const std::string& message, int exit_code);

}  // namespace verl
