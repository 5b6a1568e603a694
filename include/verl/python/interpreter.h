// The process-wide embedded CPython interpreter (pybind11::embed): started once on first use, from any
// thread, and kept until the process exits (never finalized, so no Python object outlives it). Between
// calls the GIL is released; `with_gil` takes it, runs the callable, and turns a Python exception into
// verl::Error. Used by chat templates (Jinja2), Python reward functions and the wandb / mlflow / swanlab loggers.
// Packages: those of the Python installation the binary was built against, PYTHONPATH, and the site-packages
// folders named in VERL_PYTHON_SITE_PACKAGES (':'-separated, put first, .pth files applied), e.g.
// VERL_PYTHON_SITE_PACKAGES=.venv/test/lib/python3.11/site-packages for a venv of the same Python version.
//
//   std::string text = verl::python::with_gil("chat_template", [&] {
//     return pybind11::module_::import("jinja2").attr("__version__").cast<std::string>();
//   });
#pragma once

#include <pybind11/embed.h>

#include <functional>
#include <mutex>
#include <string>

#include "verl/common/error.h"

namespace verl::python {

// Starts the interpreter if it is not running; throws verl::Error when it cannot start.
void ensure_interpreter();

// "3.11.2 at /usr": the embedded interpreter's version and the installation it is pinned to (does not start it).
std::string embedded_python_description();

// The python command of that installation (e.g. /usr/bin/python3), for work that runs in child processes.
std::string embedded_python_executable();

// "ExceptionType: message" for the Python error being handled (call with the GIL held).
std::string describe_python_error(const pybind11::error_already_set& error);

// Runs `init` once per process; call with the GIL held. Python code can give up the GIL midway (an import reading a
// file, the interpreter's periodic thread switch), so another thread must not wait for it while holding the GIL, as
// it would in a function-local static's guard or in std::call_once: that wait deadlocks. Here the wait is without
// the GIL. An `init` that throws leaves the flag unset (the next call tries again).
void call_once_with_gil(std::once_flag& flag, const std::function<void()>& init);

template <typename F>
auto with_gil(const std::string& component, F&& fn) -> decltype(fn()) {
  ensure_interpreter();
  pybind11::gil_scoped_acquire gil;
  try {
    return fn();
  } catch (pybind11::error_already_set& error) {
    throw ::verl::Error(component, describe_python_error(error));
  } catch (const pybind11::cast_error& error) {
    throw ::verl::Error(component, std::string("Python value of an unexpected type: ") + error.what());
  }
}

}  // namespace verl::python
