// Memory figures as verl logs them after an update (perf/max_memory_allocated_gb, perf/max_memory_reserved_gb,
// perf/cpu_memory_used_gb): the device's high-water marks and the machine's used memory.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace verl::runtime {

// The device's peaks since the process started (verl never resets them): on CUDA the caching allocator's bytes
// in tensors and bytes reserved from the driver; on the CPU, which has no caching allocator to ask, both are the
// process's peak resident memory (VmHWM), the host's nearest equivalent. -1 where it cannot be read.
struct DeviceMemoryPeak {
  int64_t allocated_bytes = -1;
  int64_t reserved_bytes = -1;
};
DeviceMemoryPeak device_memory_peak(const torch::Device& device);

// The machine's used memory as psutil 7's virtual_memory().used computes it from /proc/meminfo (MemTotal less
// MemAvailable); -1 where /proc/meminfo cannot be read.
int64_t system_memory_used_bytes();

}  // namespace verl::runtime
