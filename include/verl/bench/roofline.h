// The machine's roofline inputs, measured with the same LibTorch calls the model uses: fp32 GEMM FLOP/s
// (torch::mm on square matrices, all intra-op threads; the peak is the best of a few sizes) and memory
// bandwidth (STREAM-style copy b = a and triad a = b + s c over arrays far larger than the caches). Each
// point reports the best of several short timing windows, so background load lowers it less, and the
// process CPU time next to the wall time of that window (cpu/wall = 2.0: two busy cores). On a CUDA device
// the same kernels run there (cuBLAS GEMMs, device-memory copy and triad), each window ending in a device
// synchronisation; bf16 GEMMs are always measured there, as bf16 is what a GPU rollout and update run in.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::bench {

struct MachineInfo {
  std::string cpu_model;        // /proc/cpuinfo "model name"
  int cores = 0;                // online hardware threads
  int threads = 0;              // LibTorch intra-op threads in use
  std::string libtorch;         // LibTorch version
  std::string blas;             // the BLAS inside LibTorch (MKL's version string for the PyPI wheel)
  std::string cpu_kernels;      // LibTorch's vectorised CPU kernels in use: AVX512, AVX2, DEFAULT
  double load_average_1m = 0;   // getloadavg() when the measurement started
  std::string omp_wait_policy;  // $OMP_WAIT_POLICY (empty: libgomp's default, spin then sleep)
  std::string hint;             // a one-line suggestion when the setup is known to be slow, else empty
  std::string accelerator;      // the CUDA device measured ("NVIDIA H100 80GB HBM3, 79.6 GiB"), empty on the CPU
};
MachineInfo machine_info();

struct GemmPoint {
  std::string dtype = "fp32";  // "fp32" | "bf16"
  int64_t n = 0;
  double flops_per_s = 0;
  double cpu_per_wall = 0;
};

struct BandwidthPoint {
  std::string kernel;  // "copy" | "triad"
  double bytes_per_s = 0;
  double cpu_per_wall = 0;
};

struct Roofline {
  std::string device = "cpu";  // where the points were measured: cpu | cuda:N
  MachineInfo machine;
  std::vector<GemmPoint> gemm;
  double gemm_peak_flops = 0;       // max over the fp32 points: the bound every fp32 phase is measured against
  double bf16_gemm_peak_flops = 0;  // max over the bf16 points (0 when not measured)
  std::vector<BandwidthPoint> memory;
  double bandwidth_bytes_per_s = 0;  // max over memory
};

struct RooflineOptions {
  std::vector<int64_t> gemm_sizes = {256, 512, 1024, 2048};
  int64_t stream_elements = int64_t{1} << 25;  // fp32 elements per array (128 MiB)
  double seconds_per_point = 0.6;              // split into windows; the best window counts
  bool memory = true;                          // false: GEMM only (quick peak before a bench)
  bool bf16 = false;                           // also bf16 GEMMs (AVX512_BF16 / AMX where the CPU has them); always on CUDA
  std::string device = "cpu";                  // cpu | cuda | cuda:N
};

// The defaults for a CUDA device: GEMMs of 2048..8192 and 1 GiB arrays, sizes at which an H100 reaches its peaks.
RooflineOptions cuda_roofline_defaults(RooflineOptions options);

Roofline measure_roofline(const RooflineOptions& options);

nlohmann::json to_json(const MachineInfo& info);
nlohmann::json to_json(const Roofline& roofline);
// The human-readable report (machine line, one row per point, peak and bandwidth).
std::string format_roofline(const Roofline& roofline);

}  // namespace verl::bench
