#include "verl/workers/parallel_layout.h"

#include "verl/common/error.h"
#include "verl/parallel/model_parallel_mesh.h"
#include "verl/parallel/nccl_comm.h"

namespace verl::workers {

int64_t data_parallel_size(int64_t world_size, int64_t tp_size, const std::string& key) {
  VERL_CHECK(tp_size >= 1 && world_size % tp_size == 0, "config", key, "=", tp_size, " must divide the worker group's ",
             world_size, " ranks");
  return world_size / tp_size;
}

single_controller::MeshRankInfo tensor_parallel_mesh_info(int rank, int64_t tp_size) {
  // As parallel::model_parallel_mesh splits: a copy's ranks consecutive.
  return single_controller::MeshRankInfo{static_cast<int>(rank / tp_size), rank % tp_size == 0};
}

ParallelLayout make_parallel_layout(const single_controller::WorkerContext& context, int64_t tp_size, int64_t pp_size,
                                    int64_t cp_size, const std::string& key, const torch::Device& device) {
  const int64_t copy_size = tp_size * pp_size * cp_size;
  data_parallel_size(context.world_size, copy_size, key);
  ParallelLayout layout;
  std::shared_ptr<parallel::Comm> group = parallel::device_comm(context.comm, device);
  if (copy_size == 1) {
    layout.dp = group;
    layout.dp_rank = context.rank;
    return layout;
  }
  VERL_CHECK(context.comm != nullptr, "worker", key, "=", copy_size,
             " needs a communicator between the worker group's ", context.world_size,
             " ranks, which the in-process transport does not provide; launch with mpirun (docs/distributed.md)");
  auto mesh = parallel::model_parallel_mesh(group, static_cast<int>(tp_size), static_cast<int>(cp_size),
                                            static_cast<int>(pp_size));
  layout.tp = model::TensorParallelGroup{mesh.tp};
  if (pp_size > 1) layout.stages = mesh.stages;
  if (cp_size > 1) layout.cp = mesh.cp;
  layout.dp = mesh.gradients;
  layout.dp_rank = mesh.dp_rank;
  layout.collects = mesh.tp_rank == 0 && mesh.cp_rank == 0 && mesh.stage == 0;
  return layout;
}

}  // namespace verl::workers
