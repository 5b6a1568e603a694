// The groups of Megatron's model-parallel mesh over one worker group of D x P x C x T ranks (data, pipeline,
// context, tensor parallelism): rank = dp_rank * (P * C * T) + stage * (C * T) + cp_rank * T + tp_rank, so the
// P * C * T ranks of one model copy are consecutive (as the TP ranks are without the other two: verl's nd dispatch
// gives them the same rows). Megatron orders them tp-cp-dp-pp, the pipeline outermost; the numbers are the same
// either way, and a checkpoint's rank files (stage s's TP group: ranks [s C T, s C T + T) of data-parallel rank 0)
// are read by this order (workers/actor_rollout_ref_worker.cpp: export_hf_model).
#pragma once

#include <memory>

#include "verl/parallel/comm.h"

namespace verl::parallel {

struct ModelParallelMesh {
  std::shared_ptr<Comm> tp;         // the T ranks holding slices of the same layers
  std::shared_ptr<Comm> cp;         // the C ranks holding the same slice, each a part of every sequence
  std::shared_ptr<Comm> stages;     // the P ranks holding one model copy's stages
  std::shared_ptr<Comm> dp;         // the D ranks holding the same slice of the same part: one per model copy
  std::shared_ptr<Comm> gradients;  // the D x C ranks whose gradients are averaged (Megatron's data-parallel group
                                    // with context parallelism); dp itself when C = 1
  int tp_rank = 0, cp_rank = 0, stage = 0, dp_rank = 0;
};
// Collective on `group`; an error when T x C x P does not divide its ranks.
ModelParallelMesh model_parallel_mesh(const std::shared_ptr<Comm>& group, int tp_size, int cp_size, int pp_size);

}  // namespace verl::parallel
