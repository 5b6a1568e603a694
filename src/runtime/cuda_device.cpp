#include "verl/runtime/cuda_device.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

#include "verl/common/error.h"

namespace verl::runtime {
namespace {

constexpr const char* kCudaDeviceComponent = "cuda";

void check_device_index(int index) {
  const int count = cuda_device_count();
  VERL_CHECK(index >= 0 && index < count, kCudaDeviceComponent, "CUDA device ", index, " is not visible (", count,
             " visible; CUDA_VISIBLE_DEVICES selects them)");
}

}  // namespace

int cuda_device_count() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

CudaDeviceInfo cuda_device_info(int index) {
  check_device_index(index);
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  CudaDeviceInfo info;
  info.index = index;
  info.name = p->name;
  info.total_memory_bytes = static_cast<int64_t>(p->totalGlobalMem);
  info.multiprocessors = p->multiProcessorCount;
  info.major = p->major;
  info.minor = p->minor;
  return info;
}

CudaMemoryPeak cuda_memory_peak(int index) {
  check_device_index(index);
  using c10::CachingDeviceAllocator::StatType;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
  return {stats.allocated_bytes[aggregate].peak, stats.reserved_bytes[aggregate].peak};
}

int64_t cuda_memory_in_use(int index) {
  check_device_index(index);
  using c10::CachingDeviceAllocator::StatType;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)].current;
}

void cuda_reset_memory_peak(int index) {
  check_device_index(index);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

torch::Device parse_device(const std::string& text, const std::string& what) {
  if (text == "cpu") return torch::Device(torch::kCPU);
  VERL_CHECK(text == "cuda" || text.rfind("cuda:", 0) == 0, kCudaDeviceComponent, what,
             ": expected cpu, cuda or cuda:N, got '", text, "'");
  int index = 0;
  if (text.size() > 5) {
    const std::string digits = text.substr(5);
    VERL_CHECK(!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos, kCudaDeviceComponent,
               what, ": expected cuda:N with N a device index, got '", text, "'");
    index = std::stoi(digits);
  }
  const int count = cuda_device_count();
  VERL_CHECK(count > 0, kCudaDeviceComponent, what, "=", text,
             ": no CUDA device is visible on this machine (LibTorch sees none; check the driver and "
             "CUDA_VISIBLE_DEVICES), or use cpu");
  VERL_CHECK(index < count, kCudaDeviceComponent, what, "=", text, ": only ", count, " CUDA device(s) visible");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace verl::runtime
