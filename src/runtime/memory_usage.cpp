#include "verl/runtime/memory_usage.h"

#include <map>
#include <string>

#include "verl/runtime/cuda_device.h"
#include "verl/runtime/resident_memory.h"

namespace verl::runtime {

DeviceMemoryPeak device_memory_peak(const torch::Device& device) {
  if (device.is_cuda()) {
    const CudaMemoryPeak peak = cuda_memory_peak(device.has_index() ? device.index() : 0);
    return {peak.allocated_bytes, peak.reserved_bytes};
  }
  const int64_t resident = peak_resident_bytes();
  return {resident, resident};
}

int64_t system_memory_used_bytes() {
  const std::map<std::string, int64_t> bytes = proc_kib_fields("/proc/meminfo");
  const auto field = [&](const char* name) {
    const auto it = bytes.find(name);
    return it == bytes.end() ? int64_t{0} : it->second;
  };
  if (!bytes.count("MemTotal") || !bytes.count("MemFree")) return -1;
  const int64_t total = field("MemTotal"), free = field("MemFree");
  // psutil 7: used = total - available. A kernel before 3.14 (no MemAvailable) or one reporting 0 gets free +
  // Cached, the older estimate psutil falls back to without /proc/zoneinfo; above the total (a container) free.
  int64_t available = field("MemAvailable");
  if (available <= 0) available = free + field("Cached");
  if (available > total) available = free;
  return total - available;
}

}  // namespace verl::runtime
