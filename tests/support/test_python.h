// The test-only Python: .venv/test (scripts/install-deps.sh --test), which has numpy and PyYAML and sees
// .venv/libtorch's torch. Reference scripts that need them run under it; `make test` always installs it, so a
// test that needs it fails (never skips) when it is missing.
#pragma once

#include <string>

#include "run_command.h"

namespace verl::test {

// Path of the interpreter followed by a space, ready to prefix a script: test_python() + "script.py args".
inline std::string test_python() { return std::string(VERL_TEST_PYTHON) + " "; }

inline const char* test_python_missing_hint() {
  return VERL_TEST_PYTHON " cannot import what the reference needs: run scripts/install-deps.sh --test";
}

// Whether the test Python imports `module` (e.g. "torch").
inline bool test_python_imports(const std::string& module) {
  return run_command(test_python() + "-c 'import " + module + "'").exit_code == 0;
}

}  // namespace verl::test
