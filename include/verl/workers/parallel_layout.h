// How one worker group's ranks divide between data, pipeline, context and tensor parallelism (the strategy's mesh):
//   fsdp      every rank is a data-parallel rank holding the whole model
//   megatron  DP x PP x CP x TP, the PP x CP x TP ranks of one model copy consecutive
//             (parallel/model_parallel_mesh.h); they hold slices and stages of one copy (and parts of each
//             sequence), get the same batch chunk, and the copy's first rank answers for them (verl's nd dispatch:
//             the worker reports its place under a mesh name, the controller chunks by it)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "verl/model/transformer.h"
#include "verl/single_controller/worker.h"

namespace verl::workers {

struct ParallelLayout {
  model::TensorParallelGroup tp;          // inactive under fsdp
  std::shared_ptr<parallel::Comm> stages;  // the pipeline stages of this rank's model copy; null with one stage
  std::shared_ptr<parallel::Comm> cp;      // the context-parallel ranks splitting each sequence; null with one
  // Gradient averaging / optimizer sharding (the DP x CP ranks holding the same parameters); null with no
  // communicator.
  std::shared_ptr<parallel::Comm> dp;
  int dp_rank = 0;
  bool collects = true;                   // this rank's outputs are the ones gathered (TP rank 0)
};

// Data-parallel ranks of a group of `world_size` with `tp_size` ranks per copy (TP x PP under megatron); an error
// naming `key` when it does not divide.
int64_t data_parallel_size(int64_t world_size, int64_t tp_size, const std::string& key);

// This rank's place under nd dispatch: dp rank = rank / tp_size, collecting when it is the copy's first rank
// (`tp_size`: the ranks of one model copy, TP x PP under megatron). Known before any communicator exists, so a
// worker registers it in its constructor.
single_controller::MeshRankInfo tensor_parallel_mesh_info(int rank, int64_t tp_size);

// Collective over the group's communicator when tp_size x pp_size x cp_size > 1 (the split); the whole group
// otherwise. On a CUDA `device` the group's collectives run over NCCL (parallel::device_comm, collective too), so
// gradients, shards, TP activations, the stages' hidden states and the CP ranks' keys and values never leave the
// GPU. A model-parallel group without a communicator is an error naming `key` (the in-process transport has none:
// launch with mpirun).
ParallelLayout make_parallel_layout(const single_controller::WorkerContext& context, int64_t tp_size, int64_t pp_size,
                                    int64_t cp_size, const std::string& key, const torch::Device& device);

}  // namespace verl::workers
