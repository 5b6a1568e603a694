#include "verl/python/interpreter.h"

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace verl::python {

namespace {

std::once_flag g_started;
std::string g_start_error;  // set once, under g_started

}  // namespace

void call_once_with_gil(std::once_flag& flag, const std::function<void()>& init) {
  pybind11::gil_scoped_release released;
  std::call_once(flag, [&] {
    pybind11::gil_scoped_acquire gil;
    init();
  });
}

void ensure_interpreter() {
  std::call_once(g_started, [] {
    if (Py_IsInitialized()) return;  // embedded in a process that already runs Python
    try {
      // Pinned to the installation the binary was built against (its interpreter and sys.base_prefix):
      // left to itself, CPython takes the first python3 on PATH as its executable and derives its prefix and
      // site-packages from it, so an activated venv, pyenv or conda there hides this installation's packages
      // (jinja2). PYTHONPATH still applies, so a user's reward modules can be found.
      PyConfig config;
      PyConfig_InitIsolatedConfig(&config);
      config.isolated = 0;
      config.use_environment = 1;
      config.install_signal_handlers = 0;
      // stdout / stderr in UTF-8, as the python command has them: it runs in UTF-8 mode under the C / POSIX
      // locale (PEP 538 / 540), where this isolated configuration would leave them ASCII, and a package's
      // non-ASCII output (swanlab's emoji banner, a reward function's print) would raise UnicodeEncodeError.
      // PYTHONIOENCODING still decides when set.
      if (std::getenv("PYTHONIOENCODING") == nullptr) {
        const PyStatus status = PyConfig_SetString(&config, &config.stdio_encoding, L"utf-8");
        if (PyStatus_Exception(status)) {
          PyConfig_Clear(&config);
          throw std::runtime_error(status.err_msg != nullptr ? status.err_msg : "cannot configure Python's stdio");
        }
      }
      for (auto [field, value] : {std::pair<wchar_t**, const char*>{&config.program_name, VERL_EMBEDDED_PYTHON_EXECUTABLE},
                                  {&config.home, VERL_EMBEDDED_PYTHON_HOME}}) {
        const PyStatus status = PyConfig_SetBytesString(&config, field, value);
        if (PyStatus_Exception(status)) {
          PyConfig_Clear(&config);
          throw std::runtime_error(status.err_msg != nullptr ? status.err_msg : "cannot configure the Python path");
        }
      }
      pybind11::initialize_interpreter(&config);  // clears config
    } catch (const std::exception& e) {
      g_start_error = e.what();
      return;
    }
    // Create pybind11's internals now, on this thread: they record this thread's state as its own, so a later
    // gil_scoped_acquire here reuses it instead of making a second state for the same thread (which crashes
    // when released, e.g. when the first use comes from a worker thread).
    pybind11::detail::get_internals();
    // VERL_PYTHON_SITE_PACKAGES: site-packages folders (':'-separated, e.g. a venv's) put in front of sys.path
    // with site.addsitedir, so their .pth files apply too (PYTHONPATH ignores those).
    if (const char* dirs = std::getenv("VERL_PYTHON_SITE_PACKAGES"); dirs != nullptr && *dirs != '\0') {
      try {
        pybind11::exec(R"PY(
import os, site, sys
before = list(sys.path)
for d in os.environ["VERL_PYTHON_SITE_PACKAGES"].split(":"):
    if d:
        site.addsitedir(os.path.expanduser(d))
sys.path[:] = [p for p in sys.path if p not in before] + before
)PY");
      } catch (const pybind11::error_already_set& error) {
        g_start_error = "VERL_PYTHON_SITE_PACKAGES: " + describe_python_error(error);
      }
    }
    // Release the GIL taken by initialization; every use goes through gil_scoped_acquire.
    PyEval_SaveThread();
  });
  VERL_CHECK(g_start_error.empty(), "python", "cannot start the embedded Python interpreter: ", g_start_error);
}

std::string embedded_python_description() { return std::string(PY_VERSION) + " at " + VERL_EMBEDDED_PYTHON_HOME; }

std::string embedded_python_executable() { return VERL_EMBEDDED_PYTHON_EXECUTABLE; }

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
