#include "verl/workers/worker_device.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "verl/common/error.h"
#include "verl/model/mixed_precision.h"
#include "verl/parallel/mpi_comm.h"
#include "verl/runtime/cuda_device.h"

namespace verl::workers {
namespace {

constexpr const char* kWorkerDeviceComponent = "config";

int slot_of(int worker_rank) {
  if (parallel::launched_by_mpi()) {
    if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) return std::max(0, std::atoi(rank) - 1);
    if (const char* rank = std::getenv("PMIX_RANK")) return std::max(0, std::atoi(rank) - 1);
  }
  return worker_rank;
}

}  // namespace

void check_trainer_device(const config::TrainerConfig& trainer) {
  if (trainer.device != "cuda") return;
  const int visible = runtime::cuda_device_count();
  VERL_CHECK(visible > 0, kWorkerDeviceComponent,
             "trainer.device=cuda but LibTorch sees no CUDA device on this machine (no GPU, no driver, or "
             "CUDA_VISIBLE_DEVICES empty); set trainer.device=cpu");
  if (!parallel::launched_by_mpi()) {
    VERL_CHECK(trainer.n_gpus_per_node <= visible, kWorkerDeviceComponent,
               "trainer.n_gpus_per_node=", trainer.n_gpus_per_node, " but only ", visible,
               " CUDA device(s) are visible to this process");
  }
}

torch::Device worker_device(const config::TrainerConfig& trainer, int worker_rank) {
  if (trainer.device != "cuda") return torch::Device(torch::kCPU);
  check_trainer_device(trainer);
  const int visible = runtime::cuda_device_count();
  const int local = static_cast<int>(slot_of(worker_rank) % std::max<int64_t>(1, trainer.n_gpus_per_node));
  VERL_CHECK(local < visible, kWorkerDeviceComponent, "slot ", slot_of(worker_rank), " is local device ", local,
             " of trainer.n_gpus_per_node=", trainer.n_gpus_per_node, ", but only ", visible,
             " CUDA device(s) are visible on this node");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local));
}

torch::ScalarType resolved_precision(const std::optional<std::string>& configured, const torch::Device& device) {
  if (!configured) return device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  return model::parse_precision(*configured, "precision");
}

}  // namespace verl::workers
