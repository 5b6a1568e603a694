#include "verl/bench/roofline.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "verl/bench/bench_report.h"
#include "verl/common/error.h"
#include "verl/common/stopwatch.h"
#include "verl/runtime/cuda_device.h"
#include "verl/runtime/environment_report.h"

namespace verl::bench {
namespace {

constexpr int kWindows = 5;

struct WindowResult {
  double units_per_s = 0;  // work units (FLOPs, bytes) per wall second in the best window
  double cpu_per_wall = 0;
};

// Runs `step` (doing `units` of work) in kWindows windows of at least seconds / kWindows each; keeps the best.
// On a CUDA device the steps queue asynchronously: each window waits for the device before it is read.
WindowResult best_window(const std::function<void()>& step, double units, double seconds, const torch::Device& device) {
  step();  // warm-up: first-touch pages, thread pool start, BLAS buffers, cuBLAS handles
  runtime::synchronize(device);
  WindowResult best;
  const double window = seconds / kWindows;
  for (int w = 0; w < kWindows; ++w) {
    Stopwatch watch;
    int64_t iterations = 0;
    do {
      step();
      ++iterations;
      if (device.is_cuda() && iterations % 8 == 0) runtime::synchronize(device);  // keep the queue short
    } while (watch.wall_seconds() < window);
    runtime::synchronize(device);
    const double wall = watch.wall_seconds(), cpu = watch.cpu_seconds();
    const double rate = units * static_cast<double>(iterations) / wall;
    if (rate > best.units_per_s) best = {rate, cpu / wall};
  }
  return best;
}

}  // namespace

MachineInfo machine_info() {
  const runtime::EnvironmentReport env = runtime::read_environment_report();
  MachineInfo info;
  info.cpu_model = env.cpu_model;
  info.cores = static_cast<int>(std::thread::hardware_concurrency());
  info.threads = torch::get_num_threads();
  info.libtorch = env.libtorch_version;
  info.blas = env.blas;
  info.cpu_kernels = env.cpu_kernels;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) info.load_average_1m = load[0];
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) info.omp_wait_policy = policy;
  // LibTorch picks its vectorised CPU kernels by CPU; ATEN_CPU_CAPABILITY overrides the choice.
  if (const char* forced = std::getenv("ATEN_CPU_CAPABILITY")) {
    info.hint = std::string("ATEN_CPU_CAPABILITY=") + forced + " overrides LibTorch's choice of CPU kernels (" +
                env.cpu_kernels + " in use)";
  }
  return info;
}

Roofline measure_roofline(const RooflineOptions& o) {
  VERL_CHECK(!o.gemm_sizes.empty(), "bench", "roofline needs at least one GEMM size");
  VERL_CHECK(o.seconds_per_point > 0, "bench", "seconds per point must be positive");
  torch::NoGradGuard no_grad;
  const torch::Device device = runtime::parse_device(o.device, "--device");
  Roofline r;
  r.device = device.str();
  r.machine = machine_info();
  if (device.is_cuda()) {
    const auto info = runtime::cuda_device_info(device.index());
    r.machine.accelerator = info.name + ", " + format_si(static_cast<double>(info.total_memory_bytes), "B") + ", " +
                            std::to_string(info.multiprocessors) + " SMs, sm_" + std::to_string(info.major) +
                            std::to_string(info.minor);
  }
  auto gen = at::detail::createCPUGenerator(0);
  std::vector<torch::ScalarType> dtypes = {torch::kFloat32};
  if (o.bf16 || device.is_cuda()) dtypes.push_back(torch::kBFloat16);
  for (auto dtype : dtypes) {
    const bool bf16 = dtype == torch::kBFloat16;
    for (int64_t n : o.gemm_sizes) {
      VERL_CHECK(n > 0, "bench", "GEMM size must be positive, got ", n);
      auto a = torch::randn({n, n}, gen).to(device, dtype), b = torch::randn({n, n}, gen).to(device, dtype);
      auto c = torch::empty({n, n}, torch::TensorOptions().dtype(dtype).device(device));
      const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
      auto w = best_window([&] { torch::mm_out(c, a, b); }, flops, o.seconds_per_point, device);
      r.gemm.push_back({bf16 ? "bf16" : "fp32", n, w.units_per_s, w.cpu_per_wall});
      double& peak = bf16 ? r.bf16_gemm_peak_flops : r.gemm_peak_flops;
      peak = std::max(peak, w.units_per_s);
    }
  }
  if (o.memory) {
    VERL_CHECK(o.stream_elements > 0, "bench", "stream array size must be positive");
    const int64_t n = o.stream_elements;
    const auto opts = torch::TensorOptions().device(device);
    auto a = torch::ones({n}, opts), b = torch::full({n}, 2.0, opts), c = torch::full({n}, 0.5, opts);
    const double bytes = 4.0 * static_cast<double>(n);
    auto copy = best_window([&] { b.copy_(a); }, 2 * bytes, o.seconds_per_point, device);  // read a, write b
    r.memory.push_back({"copy", copy.units_per_s, copy.cpu_per_wall});
    auto triad = best_window([&] { torch::add_out(a, b, c, 3.0); }, 3 * bytes, o.seconds_per_point, device);
    r.memory.push_back({"triad", triad.units_per_s, triad.cpu_per_wall});
    for (const auto& p : r.memory) r.bandwidth_bytes_per_s = std::max(r.bandwidth_bytes_per_s, p.bytes_per_s);
  }
  return r;
}

RooflineOptions cuda_roofline_defaults(RooflineOptions o) {
  o.gemm_sizes = {2048, 4096, 8192};
  o.stream_elements = int64_t{1} << 28;  // 1 GiB per array: far beyond the 50-60 MB L2
  o.bf16 = true;
  return o;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"cpu_model", m.cpu_model},     {"cores", m.cores},       {"accelerator", m.accelerator},
          {"threads", m.threads},         {"libtorch", m.libtorch},
          {"blas", m.blas},               {"cpu_kernels", m.cpu_kernels},
          {"load_average_1m", m.load_average_1m}, {"omp_wait_policy", m.omp_wait_policy}};
}

nlohmann::json to_json(const Roofline& r) {
  nlohmann::json gemm = nlohmann::json::array(), memory = nlohmann::json::array();
  for (const auto& g : r.gemm) {
    gemm.push_back({{"dtype", g.dtype}, {"n", g.n}, {"flops_per_s", g.flops_per_s}, {"cpu_per_wall", g.cpu_per_wall}});
  }
  for (const auto& m : r.memory) {
    memory.push_back({{"kernel", m.kernel}, {"bytes_per_s", m.bytes_per_s}, {"cpu_per_wall", m.cpu_per_wall}});
  }
  return {{"device", r.device},
          {"machine", to_json(r.machine)},
          {"gemm", gemm},
          {"gemm_peak_flops", r.gemm_peak_flops},
          {"bf16_gemm_peak_flops", r.bf16_gemm_peak_flops},
          {"memory", memory},
          {"bandwidth_bytes_per_s", r.bandwidth_bytes_per_s}};
}

std::string format_roofline(const Roofline& r) {
  std::ostringstream out;
  const auto& m = r.machine;
  out << "machine: " << m.cpu_model << ", " << m.cores << " cores, " << m.threads << " intra-op threads, load average "
      << format_number(m.load_average_1m) << "\n"
      << "LibTorch " << m.libtorch << " (CPU kernels " << m.cpu_kernels << "), BLAS: " << m.blas
      << ", OMP_WAIT_POLICY=" << (m.omp_wait_policy.empty() ? "(unset)" : m.omp_wait_policy) << "\n";
  if (!m.hint.empty()) out << "hint: " << m.hint << "\n";
  if (!m.accelerator.empty()) out << "device: " << r.device << " (" << m.accelerator << ")\n";
  std::vector<std::vector<std::string>> rows = {{"kernel", "size", "rate", "cpu/wall"}};
  for (const auto& g : r.gemm) {
    rows.push_back({g.dtype + " GEMM", std::to_string(g.n) + "^3", format_si(g.flops_per_s, "FLOP/s"),
                    format_number(g.cpu_per_wall)});
  }
  for (const auto& p : r.memory) {
    rows.push_back({p.kernel, "", format_si(p.bytes_per_s, "B/s"), format_number(p.cpu_per_wall)});
  }
  out << format_table(rows);
  out << "GEMM peak: " << format_si(r.gemm_peak_flops, "FLOP/s");
  if (r.bf16_gemm_peak_flops > 0) out << "   bf16 GEMM peak: " << format_si(r.bf16_gemm_peak_flops, "FLOP/s");
  if (!r.memory.empty()) out << "   memory bandwidth: " << format_si(r.bandwidth_bytes_per_s, "B/s");
  out << "\n";
  return out.str();
}

}  // namespace verl::bench
