// perf/cpu_memory_used_gb (runtime/memory_usage.h) against psutil.virtual_memory().used, which verl logs, run live
// by tests/oracle/memory_usage_oracle.py in .venv/test. The machine's memory moves while the two read it (ctest runs
// other tests beside this one), so psutil's figure must fall between two of ours taken either side of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/runtime/memory_usage.h"

namespace verl::test {
namespace {

const std::string kMemoryUsageOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/memory_usage_oracle.py";

TEST(MemoryUsageOracle, CpuMemoryUsedIsPsutils) {
  constexpr int64_t kSlack = 64ll << 20;  // what the interpreter's start-up alone may add or free
  int64_t low = 0, high = 0, psutil_used = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int64_t before = runtime::system_memory_used_bytes();
    const CommandResult r = run_command(test_python() + kMemoryUsageOracle);
    const int64_t after = runtime::system_memory_used_bytes();
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
    ASSERT_GT(before, 0);
    psutil_used = std::stoll(r.out);
    low = std::min(before, after) - kSlack;
    high = std::max(before, after) + kSlack;
    if (psutil_used >= low && psutil_used <= high) break;
  }
  EXPECT_GE(psutil_used, low);
  EXPECT_LE(psutil_used, high);
}

}  // namespace
}  // namespace verl::test
