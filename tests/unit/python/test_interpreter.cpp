// The embedded interpreter: values come back, Python exceptions become verl::Error, several threads can
// use it, Debian's python3-jinja2 is importable from it, and its stdout takes non-ASCII text.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "verl/python/interpreter.h"

namespace verl::python {
namespace {

namespace py = pybind11;

TEST(PythonInterpreter, EvaluatesExpressions) {
  EXPECT_EQ(with_gil("test", [] { return py::eval("6 * 7").cast<int>(); }), 42);
}

TEST(PythonInterpreter, ExceptionsBecomeVerlErrors) {
  try {
    with_gil("reward", [] { py::exec("raise ValueError('boom')"); });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.component(), "reward");
    EXPECT_EQ(e.message(), "ValueError: boom");
  }
  // The interpreter is still usable afterwards.
  EXPECT_EQ(with_gil("test", [] { return py::eval("1 + 1").cast<int>(); }), 2);
}

TEST(PythonInterpreter, UsableFromManyThreads) {
  std::atomic<long> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&total, t] {
      for (int i = 0; i < 50; ++i) total += with_gil("test", [&] { return py::eval(std::to_string(t) + " + 1").cast<long>(); });
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(total.load(), 50 * (1 + 2 + 3 + 4));
}

TEST(PythonInterpreter, FindsDebianJinja2) {
  const std::string path = with_gil("test", [] {
    return py::module_::import("jinja2").attr("__file__").cast<std::string>();
  });
  EXPECT_EQ(path.rfind("/usr/lib/python3/dist-packages/", 0), 0u) << path;
}

// As the python command (UTF-8 mode under the C / POSIX locale): a package printing an emoji (swanlab's banner)
// must not raise UnicodeEncodeError, whatever the locale ctest runs under.
TEST(PythonInterpreter, StdoutIsUtf8) {
  if (std::getenv("PYTHONIOENCODING") != nullptr) GTEST_SKIP() << "PYTHONIOENCODING decides";
  const std::string encoding = with_gil("test", [] {
    py::exec("import sys\nsys.stdout.write('stdout: \\U0001f4be \\u4e2d\\n')\nsys.stdout.flush()");
    return py::eval("__import__('sys').stdout.encoding").cast<std::string>();
  });
  EXPECT_EQ(encoding, "utf-8");
}

}  // namespace
}  // namespace verl::python
