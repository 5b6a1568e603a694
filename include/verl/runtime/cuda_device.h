// What verl.cpp asks of a CUDA device beyond LibTorch's C++ frontend: its name and memory, the caching
// allocator's peaks (the benches' "peak GPU memory"), and a synchronisation point so host timers measure the
// device's work rather than the kernel launches. Every function is safe to call on a machine without a GPU
// (the queries fail with a one-line error; synchronize() is a no-op for CPU devices).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace verl::runtime {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int64_t total_memory_bytes = 0;  // as the driver reports it
  int multiprocessors = 0;
  int major = 0, minor = 0;        // compute capability
};

// The visible CUDA devices (CUDA_VISIBLE_DEVICES respected); 0 without a GPU or driver.
int cuda_device_count();

CudaDeviceInfo cuda_device_info(int index);

// The caching allocator's high-water marks since the last reset: bytes in tensors, and bytes reserved from the
// driver (what nvidia-smi shows, less the CUDA context).
struct CudaMemoryPeak {
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
};
CudaMemoryPeak cuda_memory_peak(int index);
void cuda_reset_memory_peak(int index);
// Bytes in live tensors on device `index` now (the caching allocator's current allocated_bytes).
int64_t cuda_memory_in_use(int index);

// Waits for the work queued on `device` (its current stream); nothing for a CPU device.
void synchronize(const torch::Device& device);

// "cuda" / "cuda:N" / "cpu" -> a device, checked against what this machine has: a CUDA device that is not
// visible is a one-line error naming `what` (the option or key that asked for it).
torch::Device parse_device(const std::string& text, const std::string& what);

}  // namespace verl::runtime
