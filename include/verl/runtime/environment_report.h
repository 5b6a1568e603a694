// What this binary runs on, for `verl --version` / `verl env`: LibTorch (version, where it was loaded from),
// its CPU kernels, BLAS and oneDNN, whether CUDA is compiled in and how many devices are visible, MPI, the
// intra-op threads and the embedded Python. Bug reports and bench records quote it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace verl::runtime {

struct EnvironmentReport {
  std::string verl_version;
  std::string libtorch_version;
  std::string libtorch_path;         // the libtorch_cpu.so actually loaded
  std::string cpu_model;             // /proc/cpuinfo's "model name"
  std::string cpu_kernels;           // LibTorch's CPU capability: DEFAULT, AVX2, AVX512, ...
  std::string blas;                  // e.g. "Intel(R) oneAPI Math Kernel Library Version 2024.2 ..."
  std::string onednn;                // e.g. "Intel(R) MKL-DNN v3.10.2 ..."
  bool cuda_compiled = false;        // LibTorch's CUDA part is present (libtorch_cuda loaded)
  std::string cuda_runtime;          // "13.0", empty when not compiled in
  std::string cudnn;                 // "9.19.0", empty when not compiled in
  int cuda_devices = 0;              // visible devices (respects CUDA_VISIBLE_DEVICES)
  std::string mpi;                   // MPI_Get_library_version's first line
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  std::string python;                // embedded interpreter: version and home it is pinned to

  nlohmann::json to_json() const;
  std::string to_text() const;       // one "key: value" line each
};

// Reads the report from the running process (starts no MPI job, no Python interpreter).
EnvironmentReport read_environment_report();

}  // namespace verl::runtime
