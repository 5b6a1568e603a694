#include "verl/python/interpreter.h"

#include <mutex>

namespace verl::python {

namespace {

std::once_flag g_started;
std::string g_start_error;  // set once, under g_started

}  // namespace

void ensure_interpreter() {
  std::call_once(g_started, [] {
    if (Py_IsInitialized()) return;  // embedded in a process that already runs Python
    try {
      pybind11::initialize_interpreter(/*init_signal_handlers=*/false);
    } catch (const std::exception& e) {
      g_start_error = e.what();
      return;
    }
    // Create pybind11's internals now, on this thread: they record this thread's state as its own, so a later
    // gil_scoped_acquire here reuses it instead of making a second state for the same thread (which crashes
    // when released, e.g. when the first use comes from a worker thread).
    pybind11::detail::get_internals();
    // Release the GIL taken by initialization; every use goes through gil_scoped_acquire.
    PyEval_SaveThread();
  });
  VERL_CHECK(g_start_error.empty(), "python", "cannot start the embedded Python interpreter: ", g_start_error);
}

std::string describe_python_error(const pybind11::error_already_set& error) {
  std::string type = "Exception";
  try {
    type = pybind11::str(error.type().attr("__name__")).cast<std::string>();
  } catch (...) {
  }
  std::string message;
  try {
    message = pybind11::str(error.value()).cast<std::string>();
  } catch (...) {
    message = error.what();
  }
  return type + ": " + message;
}

}  // namespace verl::python
