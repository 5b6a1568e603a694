#include "verl/python/user_code.h"

#include <pthread.h>
#include <pybind11/embed.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "verl/common/error.h"
#include "verl/python/interpreter.h"

namespace py = pybind11;

namespace verl::python {

namespace {

// The signal that interrupts a call on the interpreter's main thread: a real-time one, so that user code's own
// SIGALRM timeouts (signal.alarm, common in math verifiers) and MPI's signals stay theirs.
int interrupt_signal() { return SIGRTMIN + 5; }

std::atomic<bool> g_main_call_expired{false};  // set by the watchdog, read by the Python-level handler
// The Python thread id where the interrupt handler is installed: the interpreter's main thread, the only one
// Python runs signal handlers on (0: not installed yet).
unsigned long g_signal_thread = 0;  // read and written with the GIL held
std::once_flag g_exit_guards_installed;

const char* const kExitGuardFile = "<verl.cpp exit guard>";

// os._exit / os.abort as exceptions while this process runs them; a forked child (multiprocessing) still exits.
const char* const kExitGuardSource = R"PY(
import os as _os

def _install(pid=_os.getpid(), real_exit=_os._exit, real_abort=_os.abort):
    def _exit(status):
        if _os.getpid() != pid:
            real_exit(status)
        raise SystemExit(f"os._exit({status}) called by user code; verl.cpp does not let it end the process")
    def abort():
        if _os.getpid() != pid:
            real_abort()
        raise SystemExit("os.abort() called by user code; verl.cpp does not let it end the process")
    _os._exit = _exit
    _os.abort = abort

_install()
)PY";

// Installs the interrupt handler if this is the interpreter's main thread (signal.signal refuses elsewhere);
// true when calls on this thread can be interrupted by the signal.
bool signal_interrupts_this_thread() {
  if (g_signal_thread == 0) {
    py::cpp_function handler([](py::args) {
      if (g_main_call_expired.exchange(false)) {
        PyErr_SetString(PyExc_TimeoutError, "the call ran past its time limit");
        throw py::error_already_set();
      }
    });
    try {
      py::module_::import("signal").attr("signal")(interrupt_signal(), handler);
      g_signal_thread = PyThread_get_thread_ident();
    } catch (py::error_already_set&) {
      return false;  // not the main thread: asynchronous exceptions instead
    }
  }
  return g_signal_thread == PyThread_get_thread_ident();
}

}  // namespace

struct UserCallLimit::State {
  std::string what;
  std::string limit_key;
  double timeout_s = 0;
  bool main_thread = false;
  pthread_t thread{};
  unsigned long python_thread = 0;
  std::atomic<bool> expired{false};
  bool done = false;  // read and written with the GIL held
};

void install_exit_guards() {
  call_once_with_gil(g_exit_guards_installed, [] {
    py::dict scope;
    py::module_ builtins = py::module_::import("builtins");
    scope["__builtins__"] = builtins;
    builtins.attr("exec")(builtins.attr("compile")(kExitGuardSource, kExitGuardFile, "exec"), scope);
  });
}

UserCallLimit::UserCallLimit(double timeout_s, std::string what, std::string limit_key)
    : state_(std::make_shared<State>()) {
  install_exit_guards();
  exit_guard_ = std::make_unique<ExitGuard>(str_cat("[python] user code called exit() during a call of ", what,
                                                    "; the process ends with exit code 1"));
  state_->what = std::move(what);
  state_->limit_key = std::move(limit_key);
  state_->timeout_s = timeout_s;
  if (timeout_s <= 0) return;
  state_->main_thread = signal_interrupts_this_thread();
  state_->thread = pthread_self();
  state_->python_thread = PyThread_get_thread_ident();
  std::shared_ptr<State> state = state_;
  WatchdogAlarm alarm;
  alarm.soft_after_s = timeout_s;
  alarm.on_soft = [state] {
    state->expired = true;
    if (state->main_thread) {
      g_main_call_expired = true;
      pthread_kill(state->thread, interrupt_signal());
      return;
    }
    // Another thread: an asynchronous exception, set with the GIL, which the call holds between bytecodes.
    std::thread([state] {
      PyGILState_STATE gil = PyGILState_Ensure();
      if (!state->done) PyThreadState_SetAsyncExc(state->python_thread, PyExc_TimeoutError);
      PyGILState_Release(gil);
    }).detach();
  };
  alarm.hard_after_s = timeout_s + kUserCodeGraceSeconds;
  alarm.hard_message = str_cat("[python] ", state_->what, " did not return within ", timeout_s, " s (",
                               state_->limit_key, ") and did not stop ", kUserCodeGraceSeconds,
                               " s after TimeoutError was raised in it (caught, or stuck in native code); the "
                               "process ends");
  guard_ = std::make_unique<WatchdogGuard>(std::move(alarm));
}

UserCallLimit::~UserCallLimit() {
  guard_.reset();  // after this the soft action cannot start any more
  state_->done = true;
  if (state_->expired) {
    if (state_->main_thread) g_main_call_expired = false;
    PyThreadState_SetAsyncExc(state_->python_thread, nullptr);  // drop a TimeoutError not yet raised
  }
}

bool UserCallLimit::expired() const { return state_->expired; }

std::string UserCallLimit::timeout_message() const {
  return str_cat(state_->what, " did not return within ", state_->timeout_s, " s (", state_->limit_key, ")");
}

}  // namespace verl::python
