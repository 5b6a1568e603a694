// Weight sync for a separate Rollout role (actor_rollout_ref.hybrid_engine=false; verl's one_step_off_policy
// sync_rollout_weights): after each actor update, actor rank 0 broadcasts every parameter to the rollout
// ranks over the weight-sync communicator (WorkerContext::weight_sync: rank 0 is the actor, ranks 1.. the
// rollout ranks), in 25 MiB buckets.
//
//   broadcast_weights(*context().weight_sync, actor_module_);   // the same call on the sender and receivers
#pragma once

#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

// Rank 0 of `comm` sends `module`'s parameters; every other rank copies them into its own `module`. The
// parameter lists are compared first (names, shapes, dtypes): a rollout model that does not match the
// actor's is an error on every rank, before any weight moves.
void broadcast_weights(parallel::Comm& comm, model::CausalLM& module);

}  // namespace verl::workers
