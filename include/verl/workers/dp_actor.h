// verl's policy trainer on one rank (verl 0.9.1's engine actor: workers/engine_workers.py with the losses of
// workers/utils/losses.py; spec §4.2-4.4 for the rest).
//   compute_log_prob  eval, no grad, micro-batches of meta micro_batch_size or dynamic batches under
//                     meta max_token_len; log-probs (and entropy) [B,R] fp32 in the input's row order
//   update_policy     mini-batches of ppo_mini_batch_size rows (already normalised: prompts x n / dp),
//                     ppo_epochs passes, micro-batches (or dynamic batches, as many on every data-parallel rank),
//                     each loss taken against the whole mini-batch (workers/global_batch.h), the ratio always
//                     against the batch's old_log_probs, entropy coefficient, KL loss, gradient clipping and a
//                     skipped step on a non-finite norm; verl's metric names and aggregation (workers/update_metrics.h)
#pragma once

#include <torch/torch.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "verl/algo/ppo_loss.h"
#include "verl/config/ppo_config.h"
#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"
#include "verl/protocol/data_proto.h"
#include "verl/workers/global_batch.h"
#include "verl/workers/update_metrics.h"

namespace verl::workers {

class OptimizerShard;

class DataParallelPPOActor {
 public:
  // `config` must hold per-rank sizes (ActorRolloutRefWorker normalises them, spec §4.1). `optimizer` may be
  // null for a log-prob-only actor (ref, rollout); update_policy then errors.
  DataParallelPPOActor(config::ActorConfig config, model::CausalLM model, torch::optim::Optimizer* optimizer);

  // data: input_ids, attention_mask, position_ids, responses; meta_info: temperature, micro_batch_size,
  // use_dynamic_bsz, max_token_len (when dynamic). Returns (log_probs [B,R], entropys [B,R] or undefined),
  // on the CPU. With sum_pi_squared given, it also receives sum_v pi_v^2 [B,R] of the tempered distribution
  // (verl's calculate_sum_pi_squared, the optimal token baselines' input).
  std::pair<torch::Tensor, torch::Tensor> compute_log_prob(const protocol::DataProto& data, bool calculate_entropy,
                                                           torch::Tensor* sum_pi_squared = nullptr);

  // data: responses, response_mask, input_ids, attention_mask, position_ids, old_log_probs, advantages
  // (+ ref_log_prob with use_kl_loss, + teacher_logprobs with config().distillation (algo/distillation_loss.h),
  // + rollout_is_weights when present); meta_info: temperature.
  // Returns verl 0.9.1's metrics as key -> list of numbers, one per mini-batch: actor/pg_loss, actor/loss (+
  // actor/entropy_loss when the entropy is computed, actor/kl_loss with use_kl_loss; with distillation
  // actor/distillation/loss) summed over its micro-batches, so each is the mini-batch's loss; actor/pg_clipfrac,
  // actor/ppo_kl, actor/pg_clipfrac_lower their mean over its micro-batches; actor/grad_norm. actor/kl_coef and the
  // distillation loss's plain metrics one per micro-batch (actor/pg_loss only when the PPO loss is computed).
  nlohmann::json update_policy(const protocol::DataProto& data);

  // Data-parallel gradient averaging across ranks, called after the backward passes of a mini-batch and
  // before clipping (FSDP's reduce-scatter). Unset: this rank is the only one (world size 1).
  std::function<void(const std::vector<torch::Tensor>&)> gradient_all_reduce;
  // ZeRO-1 (workers/gradient_sync.h): this rank steps only its share of the parameters, then the owners
  // broadcast them. Unset: the optimizer steps every parameter.
  std::shared_ptr<OptimizerShard> optimizer_shard;
  // ZeRO-3 (model/fully_sharded_model.h): the model's parameters live in these shards, which the optimizer
  // steps; the root is gathered per micro-batch, the layers as they run. Unset: whole parameters.
  std::shared_ptr<model::FullyShardedModel> fully_sharded;
  // The dtype forwards compute in (fsdp_config.mixed_precision.param_dtype): autocast over the fp32 weights
  // when it is bf16 / fp16 (model/mixed_precision.h); fp32 runs as is.
  torch::ScalarType param_dtype = torch::kFloat32;
  // This rank's place among the data-parallel groups: with actor.shuffle the mini-batch order is drawn from
  // data_loader_seed + it (workers/mini_batch_order.h), as verl 0.9.1's engine seeds each DP rank.
  int64_t data_parallel_rank = 0;
  // The ranks the gradients are averaged over, which each loss's global batch spans (workers/global_batch.h).
  // Default: this rank alone.
  DataParallelGroup data_parallel_group;
  // The worker group's ranks, by which verl divides its MFU (perf/mfu/actor).
  int64_t world_size = 1;

  const config::ActorConfig& config() const { return config_; }
  model::CausalLM& module() { return model_; }

 private:
  // Forward of one micro-batch already on the model's device: (log_probs, entropy) [b,R] fp32; with `top_k`, the
  // query's reads of the distributions too (forward_kl_topk distillation).
  std::pair<torch::Tensor, torch::Tensor> forward_micro_batch(const protocol::DataProto& micro, double temperature,
                                                              bool calculate_entropy,
                                                              torch::Tensor* sum_pi_squared = nullptr,
                                                              const model::TopKQuery& query = {},
                                                              model::TopKLogProbs* top_k = nullptr);
  // Clip, then step or skip (non-finite norm). Returns the norm before clipping.
  double optimizer_step();

  config::ActorConfig config_;
  model::CausalLM model_;
  torch::optim::Optimizer* optimizer_;
  std::vector<torch::Tensor> parameters_;
  std::vector<bool> parameter_is_slice_;  // per parameters_: a tensor-parallel slice (clipping sums them over TP)
  std::vector<bool> parameter_counts_in_norm_;  // per parameters_: false for a pipeline stage's copy of a tied one
};

// One micro-batch's ppo_loss metrics under verl 0.9.1's names and aggregation: the policy loss's own (Mean),
// actor/pg_loss, actor/entropy_loss, actor/kl_loss (Sum: global-batch-normalised), actor/kl_coef (Each).
void add_ppo_loss_metrics(UpdateMetrics& metrics, const algo::PpoLossOutput& ppo, double kl_loss_coef);

// Rows of `data` moved to `device` (tensors only; columns and meta kept).
protocol::DataProto to_device(const protocol::DataProto& data, const torch::Device& device);

}  // namespace verl::workers
