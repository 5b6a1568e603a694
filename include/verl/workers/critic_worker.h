// verl's CriticWorker (fsdp_workers.py): one rank of the critic worker group. Methods (verl names, dispatch):
//   init_model       ONE_TO_ALL        loads critic.model.path with the value head `score` (a folder without
//                                      score.weight, i.e. an LM, gets a fresh head seeded from data.seed, or 0),
//                                      optimizer + LR schedule from critic.optim (total steps: the
//                                      trainer's, meta {"total_training_steps"}; else critic.optim's)
//   compute_values   DP_COMPUTE_PROTO  -> values [b, R] (* response_mask)
//   update_critic    DP_COMPUTE_PROTO  -> empty batch, meta {"metrics": {critic/vf_loss, critic/vf_clipfrac,
//                                      critic/vpred_mean, critic/grad_norm, critic/lr: [values]}}; critic/lr is
//                                      the LR this update used; the scheduler then steps once
//   save_checkpoint  ONE_TO_ALL        meta {"local_path", "global_step"}: the folder of checkpoint_files.h,
//                                      written atomically; critic.checkpoint.save_contents picks the parts
//   load_checkpoint  ONE_TO_ALL        meta {"local_path", "del_local_after_load"}: exact resume
// With LoRA (critic.model.lora_rank > 0 or lora_adapter_path, model/value_lora.h) the decoder projections carry
// adapters, the base is frozen, the value head trains whole (PEFT's TOKEN_CLS modules_to_save, as verl); the optimizer
// state and the checkpoint's model file hold those only, hf_model is the merged value model.
// Batch sizes are normalized in the constructor (spec §4.1): ppo_mini_batch_size * rollout.n / world_size.
// Training with world size > 1 needs a gradient all-reduce between ranks, which the in-process transport
// does not provide: update_critic and checkpoints then fail with an error saying so.
#pragma once

#include <memory>
#include <string>

#include "verl/config/ppo_config.h"
#include "verl/single_controller/worker.h"
#include "verl/workers/state_offload.h"
#include "verl/workers/dp_critic.h"
#include "verl/workers/optimizer.h"

namespace verl::workers {

// The critic section's per-rank sizes after verl's normalization; errors name the config key.
DPCriticConfig normalize_critic_config(const config::PPOConfig& config, int world_size);

class CriticWorker : public single_controller::Worker {
 public:
  CriticWorker(const single_controller::WorkerContext& context, std::shared_ptr<const config::PPOConfig> config);

  protocol::DataProto init_model(const protocol::DataProto& input);
  protocol::DataProto compute_values(const protocol::DataProto& data);
  protocol::DataProto update_critic(const protocol::DataProto& data);
  protocol::DataProto save_checkpoint(const protocol::DataProto& input);
  protocol::DataProto load_checkpoint(const protocol::DataProto& input);

  const DPCriticConfig& critic_config() const { return critic_config_; }
  // After init_model.
  model::CausalLM& module();
  LRScheduler& lr_scheduler();
  torch::optim::Optimizer& optimizer();

 private:
  // The key that names the ranks per data-parallel rank in errors (Ulysses, pipeline, context or tensor parallel
  // size).
  std::string model_parallel_key() const;
  // The ranks of one megatron model copy (TP x PP x CP), which get the same rows; 1 under fsdp.
  int64_t copy_size() const { return tp_size_ * pp_size_ * cp_size_; }
  void require_initialized(const char* method) const;
  void require_gradient_sync(const char* what) const;
  uint64_t value_head_seed() const;

  std::shared_ptr<const config::PPOConfig> config_;
  DPCriticConfig critic_config_;
  int64_t tp_size_ = 1;  // tensor-parallel ranks per pipeline stage (megatron), 1 under fsdp
  int64_t pp_size_ = 1;  // pipeline stages per model copy (megatron), 1 under fsdp
  int64_t cp_size_ = 1;  // context-parallel ranks per model copy (megatron), 1 under fsdp
  int64_t sp_size_ = 1;  // Ulysses sequence-parallel ranks per data-parallel rank (critic.ulysses_sequence_parallel_size)
  std::string model_path_;
  std::string tokenizer_path_;
  std::unique_ptr<model::CausalLM> module_;
  bool lora_ = false;  // adapters on the decoder projections, base frozen (model/value_lora.h)
  std::shared_ptr<model::FullyShardedModel> fully_sharded_;  // ZeRO-3 (fsdp_config.reshard_after_forward)
  OffloadPolicy offload_;  // where the parameters and optimizer state rest between phases (workers/state_offload.h)
  std::vector<torch::Tensor> state() const;  // the parameters, or the ZeRO-3 shards
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LRScheduler> lr_scheduler_;
  std::unique_ptr<DataParallelPPOCritic> critic_;
};

single_controller::WorkerFactory critic_worker_factory(std::shared_ptr<const config::PPOConfig> config);

}  // namespace verl::workers
