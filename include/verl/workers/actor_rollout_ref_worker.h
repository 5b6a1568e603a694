// verl's ActorRolloutRefWorker (verl/workers/fsdp_workers.py) in its role forms:
//   "actor"               policy trainer (update_actor, compute_log_prob, checkpoints)
//   "rollout"             generation only
//   "actor_rollout"       both, sharing one set of parameters (the hybrid engine)
//   "actor_rollout_ref"   both plus a frozen reference copy (compute_ref_log_prob)
//   "ref"                 the frozen reference policy only
// Methods (dispatch mode): init_model (ONE_TO_ALL), generate_sequences, compute_log_prob,
// compute_ref_log_prob, update_actor (DP_COMPUTE_PROTO), save_checkpoint, load_checkpoint,
// sync_rollout_weights (ONE_TO_ALL). The "rollout" role's checkpoint is its sampling RNG only.
// Every method is registered for every role; calling one the role lacks is an error naming the role.
//
// Batch sizes (spec §4.1): ppo_mini_batch_size is in prompts across all ranks and becomes
// ppo_mini_batch_size * rollout.n / dp responses per data-parallel rank; micro sizes are per rank. Checked at
// construction with one-line errors naming the keys.
//
// strategy=megatron (actor.megatron.tensor_model_parallel_size = T > 1): the group's W ranks are W/T data-parallel
// ranks of T tensor-parallel ranks each (workers/parallel_layout.h). The compute methods dispatch ND_COMPUTE_PROTO
// over mesh "actor": the T ranks of a DP rank get the same chunk and TP rank 0 answers. Each rank's model file
// holds its slices; huggingface/ (hf_model) and export_hf_model put them back together.
//
// Ulysses (actor / ref ulysses_sequence_parallel_size = S > 1, fsdp): the W ranks are W/S data-parallel ranks of S
// sequence-parallel ranks each (parallel/ulysses.h), consecutive. compute_log_prob and update_actor dispatch
// ND_COMPUTE_PROTO over mesh "actor" (compute_ref_log_prob over mesh "ref", with the ref's S): the S ranks get the
// same rows and split each sequence; SP rank 0 answers. Gradients are averaged over all W ranks, as without it.
// Generation does not split sequences: generate_sequences stays DP_COMPUTE_PROTO over all W ranks.
//
// fsdp_config.reshard_after_forward=true (ZeRO-3, model/fully_sharded_model.h): each rank keeps 1/N of the actor's
// (and the ref's) parameters; generation, weight broadcast and HF saves gather them whole for their duration.
//
// Checkpoint folder (save_checkpoint meta local_path), published whole (save_rank_folder, checkpoint_files.h):
//   model_world_size_{W}_rank_{r}.safetensors   every parameter of this rank (HF names; ZeRO-3: this rank's runs)
//   optim_world_size_{W}_rank_{r}.pt            optimizer state (workers/optimizer.h)
//   extra_state_world_size_{W}_rank_{r}.json    {"lr_scheduler": {...}, "rng": {"cpu": hex, "rollout": hex},
//                                                "global_step": N}
//   huggingface/                                config.json, generation_config.json, tokenizer files
//                                                (+ model.safetensors when checkpoint.save_contents has hf_model)
// With LoRA (actor_rollout_ref.model.lora_rank > 0, model/lora.h) the model file holds the adapters only, the
// optimizer state is theirs, lora_adapter/ is PEFT's folder naming the base model, hf_model is the merged model,
// and the reference policy is the actor's base with the adapters disabled.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "verl/agent/rollout_trace.h"
#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/single_controller/worker.h"
#include "verl/workers/state_offload.h"
#include "verl/workers/dp_actor.h"
#include "verl/workers/multi_turn_rollout.h"
#include "verl/workers/optimizer.h"

namespace verl::workers {

class ActorRolloutRefWorker : public single_controller::Worker {
 public:
  ActorRolloutRefWorker(const single_controller::WorkerContext& context,
                        std::shared_ptr<const config::PPOConfig> config, std::string role);

  protocol::DataProto init_model(const protocol::DataProto& input);
  protocol::DataProto generate_sequences(const protocol::DataProto& prompts);
  protocol::DataProto compute_log_prob(const protocol::DataProto& data);
  protocol::DataProto compute_ref_log_prob(const protocol::DataProto& data);
  protocol::DataProto update_actor(const protocol::DataProto& data);
  protocol::DataProto save_checkpoint(const protocol::DataProto& input);
  protocol::DataProto load_checkpoint(const protocol::DataProto& input);
  // A separate actor and rollout (roles "actor" and "rollout"): actor rank 0 broadcasts its weights to every
  // rollout rank over WorkerContext::weight_sync (workers/weight_sync.h); called on both groups together.
  protocol::DataProto sync_rollout_weights(const protocol::DataProto& input);

  const std::string& role() const { return role_; }
  bool is_actor() const { return is_actor_; }
  bool is_rollout() const { return is_rollout_; }
  bool is_ref() const { return is_ref_; }
  // The per-rank (normalised) actor section.
  const config::ActorConfig& actor_config() const { return actor_cfg_; }
  // After init_model: the policy (actor/rollout) and the reference model.
  model::CausalLM& actor_module();
  model::CausalLM& ref_module();
  DataParallelPPOActor& actor();
  LRScheduler& lr_scheduler();
  torch::Device device() const { return device_; }

 private:
  // The key that names the ranks per data-parallel rank in errors (Ulysses, pipeline, context or tensor parallel
  // size).
  std::string model_parallel_key() const;
  // The ranks of one megatron model copy (TP x PP x CP), which get the same rows; 1 under fsdp.
  int64_t copy_size() const { return tp_size_ * pp_size_ * cp_size_; }
  void require_initialised(const char* method) const;
  protocol::DataProto save_rollout_state(const protocol::DataProto& input);
  protocol::DataProto load_rollout_state(const protocol::DataProto& input);

  std::shared_ptr<const config::PPOConfig> config_;
  std::string role_;
  bool is_actor_ = false, is_rollout_ = false, is_ref_ = false;
  config::ActorConfig actor_cfg_;
  int64_t tp_size_ = 1;                    // tensor-parallel ranks per pipeline stage (megatron), 1 under fsdp
  int64_t pp_size_ = 1;                    // pipeline stages per model copy (megatron), 1 under fsdp
  int64_t cp_size_ = 1;                    // context-parallel ranks per model copy (megatron), 1 under fsdp
  int64_t sp_size_ = 1, ref_sp_size_ = 1;  // Ulysses sequence-parallel ranks of the actor and of the ref
  // rollout.tensor_model_parallel_size > 1 under fsdp, or unlike the actor's megatron TP: the consecutive ranks
  // generating together on slices of the whole weights; null otherwise.
  std::shared_ptr<parallel::Comm> rollout_tp_group_;
  // megatron with a rollout TP unlike the actor's: generation gathers the whole model (then slices it for
  // rollout_tp_group_, or generates on it whole with rollout TP 1).
  bool rollout_regathers_ = false;
  int dp_rank_ = 0;
  torch::Device device_{torch::kCPU};
  bool initialised_ = false;
  std::shared_ptr<parallel::Comm> weight_sync_on_device_;  // context().weight_sync, over NCCL on a GPU
  bool rollout_base_synced_ = false;  // LoRA: the frozen base went to the rollout; later syncs send the adapters
  // The offload keys (workers/state_offload.h): where the actor's and the ref's state rest between phases.
  OffloadPolicy actor_offload_, ref_offload_;
  std::vector<torch::Tensor> actor_state() const;  // the actor's parameters, or its ZeRO-3 shards
  std::vector<torch::Tensor> ref_state() const;

  model::CausalLM actor_module_{nullptr};
  model::CausalLM ref_module_{nullptr};
  // ZeRO-3 (fsdp_config.reshard_after_forward) of the actor and of the ref; null: whole parameters.
  std::shared_ptr<model::FullyShardedModel> actor_sharded_, ref_sharded_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LRScheduler> lr_scheduler_;
  std::unique_ptr<DataParallelPPOActor> actor_;
  std::unique_ptr<DataParallelPPOActor> ref_policy_;
  std::optional<at::Generator> rollout_generator_;
  std::unique_ptr<MultiTurnRollout> multi_turn_;  // rollout.multi_turn.enable: the tool agent loop
  MultiTurnPart multi_turn_part_ = MultiTurnPart::Drive;  // this rank's part in its model copy's loop
  bool generates_ = true;  // this rank generates (its rows are collected, or it generates with a rank whose are)
  bool leads_generation_ = true;                             // the first rank of its generating group
  std::unique_ptr<agent::RolloutTraceWriter> trace_writer_;  // rollout.trace.backend: verl's rollout traces
};

// role: "actor", "rollout", "actor_rollout", "actor_rollout_ref", "ref"
single_controller::WorkerFactory actor_rollout_ref_worker_factory(std::shared_ptr<const config::PPOConfig> config,
                                                                  std::string role);

// verl's model merger for this layout: an HF model folder (config.json, model.safetensors,
// generation_config.json, tokenizer files) from an actor checkpoint folder (.../global_step_N/actor),
// read from rank 0's weights (fsdp: every rank holds the full parameters; megatron: ranks 0..T-1 hold the slices;
// ZeRO-3: ranks 0..N-1 hold the runs of the flattened parameters). Errors name missing files.
// A LoRA checkpoint (lora_adapter/ beside huggingface/) exports PEFT's adapter folder, or with merge_lora the base
// model (lora_adapter/adapter_config.json's base_model_name_or_path) with the adapters merged.
void export_hf_model(const std::string& checkpoint_actor_dir, const std::string& out_dir, bool merge_lora = false);

}  // namespace verl::workers
