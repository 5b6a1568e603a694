// Weight sync for a separate Rollout role (actor_rollout_ref.hybrid_engine=false; verl's one_step_off_policy
// sync_rollout_weights): after each actor update, actor rank 0 broadcasts every parameter to the rollout
// ranks over the weight-sync communicator (WorkerContext::weight_sync: rank 0 is the actor, ranks 1.. the
// rollout ranks), in 25 MiB buckets; under LoRA only the adapters after the first sync (the base is frozen).
//
//   broadcast_weights(*context().weight_sync, actor_module_);   // the same call on the sender and receivers
#pragma once

#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

// Which parameters a sync sends: all of them, or only the LoRA adapters (model/lora.h) once the frozen base
// has been sent (verl syncs only the adapters to its rollout engine after the base is loaded).
enum class WeightSyncScope { Everything, AdaptersOnly };

// Rank 0 of `comm` sends `module`'s parameters (those of `scope`); every other rank copies them into its own
// `module`. The parameter lists are compared first (names, shapes, dtypes): a rollout model that does not match
// the actor's is an error on every rank, before any weight moves.
void broadcast_weights(parallel::Comm& comm, model::CausalLM& module,
                       WeightSyncScope scope = WeightSyncScope::Everything);

}  // namespace verl::workers
