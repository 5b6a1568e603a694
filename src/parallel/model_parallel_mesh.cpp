#include "verl/parallel/model_parallel_mesh.h"

#include "verl/common/error.h"

namespace verl::parallel {

ModelParallelMesh model_parallel_mesh(const std::shared_ptr<Comm>& group, int tp_size, int cp_size, int pp_size) {
  constexpr const char* kComponent = "model_parallel_mesh";
  VERL_CHECK(group != nullptr, kComponent, "model parallelism needs a communicator");
  const int world = group->size();
  VERL_CHECK(tp_size >= 1 && cp_size >= 1 && pp_size >= 1 && world % (tp_size * cp_size * pp_size) == 0, kComponent,
             "tensor_model_parallel_size ", tp_size, " x context_parallel_size ", cp_size,
             " x pipeline_model_parallel_size ", pp_size, " must divide the worker group's ", world, " ranks");
  const int rank = group->rank();
  const int copy = tp_size * cp_size * pp_size;
  ModelParallelMesh mesh;
  mesh.tp_rank = rank % tp_size;
  mesh.cp_rank = (rank / tp_size) % cp_size;
  mesh.stage = (rank / (tp_size * cp_size)) % pp_size;
  mesh.dp_rank = rank / copy;
  // Colours: the coordinates the group's ranks share; keys: the coordinate along it.
  mesh.tp = group->split(rank / tp_size, mesh.tp_rank);
  mesh.cp = group->split((mesh.dp_rank * pp_size + mesh.stage) * tp_size + mesh.tp_rank, mesh.cp_rank);
  mesh.stages = group->split((mesh.dp_rank * cp_size + mesh.cp_rank) * tp_size + mesh.tp_rank, mesh.stage);
  mesh.dp = group->split((mesh.stage * cp_size + mesh.cp_rank) * tp_size + mesh.tp_rank, mesh.dp_rank);
  mesh.gradients =
      cp_size == 1 ? mesh.dp : group->split(mesh.stage * tp_size + mesh.tp_rank, mesh.dp_rank * cp_size + mesh.cp_rank);
  return mesh;
}

}  // namespace verl::parallel
