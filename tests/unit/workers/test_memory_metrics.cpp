// verl's memory metrics of an update on the CPU: the process's peak resident memory stands for the device's peaks
// (it is a peak: freeing does not lower it) and the machine's used memory lies within its total.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "verl/runtime/resident_memory.h"
#include "verl/workers/memory_metrics.h"

namespace verl::test {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(MemoryMetrics, CpuPeaksAreThePeakResidentMemoryAndStayAfterAFree) {
  runtime::reset_peak_resident();  // earlier tests in this process may have set a higher peak
  const double before = runtime::peak_resident_bytes() / kGiB;
  {
    torch::Tensor big = torch::ones({96ll << 20}, torch::kFloat32);  // 384 MiB, every page touched
    ASSERT_EQ(big.sum().item<double>(), static_cast<double>(96ll << 20));
  }
  const auto metrics = workers::memory_metrics(torch::Device(torch::kCPU));
  for (const char* key : {"perf/max_memory_allocated_gb", "perf/max_memory_reserved_gb", "perf/cpu_memory_used_gb"}) {
    ASSERT_TRUE(metrics.contains(key)) << key;
    ASSERT_EQ(metrics[key].size(), 1u) << key;
  }
  const double allocated = metrics["perf/max_memory_allocated_gb"][0].get<double>();
  EXPECT_GE(allocated, before + 0.3);  // the freed tensor still counts: a peak, not the resident memory now
  EXPECT_DOUBLE_EQ(metrics["perf/max_memory_reserved_gb"][0].get<double>(), allocated);
  const double used = metrics["perf/cpu_memory_used_gb"][0].get<double>();
  EXPECT_GT(used, 0.0);
  EXPECT_LE(used, runtime::proc_kib_fields("/proc/meminfo").at("MemTotal") / kGiB);
}

}  // namespace
}  // namespace verl::test
