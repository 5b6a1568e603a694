#include "verl/runtime/environment_report.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <mpi.h>
#include <torch/version.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "verl/python/interpreter.h"

namespace verl::runtime {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

// LibTorch's vectorised CPU kernel level as its build report states it ("CPU capability usage: AVX512").
std::string cpu_kernels_in_use() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const auto begin = at + key.size();
  return config.substr(begin, config.find('\n', begin) - begin);
}

// The shared object a LibTorch symbol was resolved from: the LibTorch that is really loaded.
std::string libtorch_location() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::show_config), &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  return realpath(info.dli_fname, resolved) != nullptr ? resolved : info.dli_fname;
}

// CUDA runtime 13000 -> "13.0" (1000 * major + 10 * minor); cuDNN 91900 -> "9.19.0" (10000 * major + 100 * minor
// + patch).
std::string cuda_runtime_version(long number) {
  return std::to_string(number / 1000) + "." + std::to_string((number % 1000) / 10);
}
std::string cudnn_version(long number) {
  return std::to_string(number / 10000) + "." + std::to_string((number % 10000) / 100) + "." +
         std::to_string(number % 100);
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string version(text, static_cast<size_t>(length));
  const auto end = version.find_first_of(",\n");
  return version.substr(0, end);
}

}  // namespace

EnvironmentReport read_environment_report() {
  EnvironmentReport report;
  report.verl_version = VERL_VERSION;
  report.libtorch_version = TORCH_VERSION;
  report.libtorch_path = libtorch_location();
  report.cpu_model = cpu_model_name();
  report.cpu_kernels = cpu_kernels_in_use();
  report.blas = at::get_mkl_version();
  if (report.blas.empty()) report.blas = "not MKL (see at::show_config)";
  report.onednn = at::get_mkldnn_version();
  const auto& cuda = at::detail::getCUDAHooks();
  report.cuda_compiled = cuda.hasCUDART();
  if (report.cuda_compiled) {
    report.cuda_runtime = cuda_runtime_version(cuda.versionCUDART());
    report.cudnn = cuda.compiledWithCuDNN() ? cudnn_version(cuda.versionCuDNN()) : "";
    report.cuda_devices = cuda.getNumGPUs();
  }
  report.mpi = mpi_library_version();
  report.intra_op_threads = at::get_num_threads();
  report.inter_op_threads = at::get_num_interop_threads();
  report.python = python::embedded_python_description();
  return report;
}

nlohmann::json EnvironmentReport::to_json() const {
  return {{"verl", verl_version},         {"libtorch", libtorch_version},
          {"libtorch_path", libtorch_path}, {"cpu", cpu_model},
          {"cpu_kernels", cpu_kernels},   {"blas", blas},
          {"onednn", onednn},             {"cuda_compiled", cuda_compiled},
          {"cuda_runtime", cuda_runtime}, {"cudnn", cudnn},
          {"cuda_devices", cuda_devices}, {"mpi", mpi},
          {"intra_op_threads", intra_op_threads}, {"inter_op_threads", inter_op_threads},
          {"python", python}};
}

std::string EnvironmentReport::to_text() const {
  std::ostringstream out;
  out << "verl.cpp " << verl_version << "\n"
      << "LibTorch: " << libtorch_version << " (" << libtorch_path << ")\n"
      << "CPU: " << cpu_model << "; LibTorch CPU kernels: " << cpu_kernels << "\n"
      << "BLAS: " << blas << "\n"
      << "oneDNN: " << (onednn.empty() ? "not built in" : onednn) << "\n";
  if (cuda_compiled) {
    out << "CUDA: compiled in (runtime " << cuda_runtime << (cudnn.empty() ? "" : ", cuDNN " + cudnn)
        << "); devices visible: " << cuda_devices << "\n";
  } else {
    out << "CUDA: not compiled in\n";
  }
  out << "MPI: " << mpi << "\n"
      << "threads: intra-op " << intra_op_threads << ", inter-op " << inter_op_threads << "\n"
      << "embedded Python: " << python << "\n";
  return out.str();
}

}  // namespace verl::runtime
