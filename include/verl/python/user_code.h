// Calling user-supplied Python code (reward functions) so that it cannot hang or end the process:
//  - a time limit per call: when it passes, TimeoutError is raised inside the call (on the interpreter's main
//    thread through a signal, which also cuts a time.sleep short; on other threads as an asynchronous
//    exception); code that swallows it or sits in native code that never returns to the interpreter is ended
//    with the process, with one line on stderr, `kUserCodeGraceSeconds` later;
//  - os._exit() and os.abort() raise SystemExit in this process (a forked child still exits), and sys.exit()
//    is an exception like any other, so user code cannot end the process silently; a C exit() during a call
//    ends the process with exit code 1 and a line naming the call.
//
//   pybind11::gil_scoped_acquire gil;
//   verl::python::UserCallLimit limit(300, "reward function 'f' from 'r.py'", "custom_reward_function.timeout");
//   try { result = f(); } catch (pybind11::error_already_set&) { if (limit.expired()) ...timeout... }
#pragma once

#include <memory>
#include <string>

#include "verl/common/watchdog.h"

namespace verl::python {

// Seconds between the TimeoutError and ending the process, for code that does not stop.
constexpr double kUserCodeGraceSeconds = 5.0;

// Replaces os._exit / os.abort in the embedded interpreter (once; call with the GIL held).
void install_exit_guards();

// A time limit around one call of user code, made and destroyed with the GIL held on the calling thread.
// timeout_s <= 0: no limit (the exit guards still apply).
class UserCallLimit {
 public:
  UserCallLimit(double timeout_s, std::string what, std::string limit_key);
  ~UserCallLimit();
  UserCallLimit(const UserCallLimit&) = delete;
  UserCallLimit& operator=(const UserCallLimit&) = delete;

  // True once the limit passed (the call was asked to stop); check it when the call raised or returned.
  bool expired() const;
  // "reward function 'f' from 'r.py' did not return within 300 s (custom_reward_function.timeout)"
  std::string timeout_message() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::unique_ptr<WatchdogGuard> guard_;
  std::unique_ptr<ExitGuard> exit_guard_;
};

}  // namespace verl::python
