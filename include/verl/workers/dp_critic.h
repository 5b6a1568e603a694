// verl's critic on one data-parallel rank (verl 0.9.1's engine TrainingWorker with workers/utils/losses.py's
// value_loss). Sizes here are per rank, already normalized by the worker (spec §4.1).
//
// compute_values: eval mode, no grad, micro-batches of forward_micro_batch_size_per_gpu (or token-budget
//   micro-batches with use_dynamic_bsz, order restored); values[b, t] = value head at position P+t-1,
//   multiplied by response_mask.
// update_critic: ppo_epochs passes over mini-batches of ppo_mini_batch_size rows (contiguous, or with shuffle a new
//   order each pass, as verl 0.9.1's engine: workers/mini_batch_order.h);
//   per mini-batch: zero_grad, micro-batches of ppo_micro_batch_size_per_gpu (or token budgets, as many on every
//   data-parallel rank) each backpropagating compute_value_loss taken against the whole mini-batch
//   (workers/global_batch.h), then clip_grad_norm(grad_clip) and an optimizer step, skipped when the norm is not
//   finite.
//   Metrics (verl 0.9.1's aggregation, workers/update_metrics.h): critic/vf_loss and critic/loss one value per
//   mini-batch (the sum over its micro-batches: the mini-batch's loss); critic/vf_clipfrac and critic/vpred_mean
//   one value per micro-batch; critic/grad_norm and perf/mfu/critic (model/flops_counter.h) one value per mini-batch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "verl/algo/core_algos.h"
#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"
#include "verl/protocol/data_proto.h"
#include "verl/workers/global_batch.h"
#include "verl/workers/update_metrics.h"

namespace verl::workers {

class OptimizerShard;

// Key -> values, verl's dict of lists (meta_info["metrics"]).
using MetricLists = std::map<std::string, std::vector<double>>;
nlohmann::json metrics_to_json(const MetricLists& metrics);

struct DPCriticConfig {
  int64_t ppo_mini_batch_size = 0;                         // responses per rank per optimizer step
  std::optional<int64_t> ppo_micro_batch_size_per_gpu;     // update micro-batch (fixed bsz)
  std::optional<int64_t> forward_micro_batch_size_per_gpu; // compute_values micro-batch (fixed bsz)
  bool use_dynamic_bsz = false;
  int64_t ppo_max_token_len_per_gpu = 32768;
  int64_t forward_max_token_len_per_gpu = 32768;
  int64_t ppo_epochs = 1;
  // verl 0.9.1's mini-batch order (workers/mini_batch_order.h): shuffled per epoch from data_loader_seed + the
  // data-parallel rank when shuffle is set, else contiguous.
  bool shuffle = false;
  int64_t data_loader_seed = 42;
  int64_t data_parallel_rank = 0;
  double grad_clip = 1.0;
  double cliprange_value = 0.5;
  std::string loss_agg_mode = "token-mean";
  std::optional<double> loss_scale_factor;  // critic.loss_scale_factor: seq-mean-token-sum-norm's divisor
};

// One micro-batch's value_loss metrics under verl 0.9.1's names and aggregation: critic/vf_loss and critic/loss
// (Sum: global-batch-normalised), critic/vf_clipfrac and critic/vpred_mean (Each: plain numbers in verl).
void add_value_loss_metrics(UpdateMetrics& metrics, const algo::ValueLossOutput& loss, const torch::Tensor& vpreds,
                            const torch::Tensor& response_mask);

// Averages gradients across data-parallel ranks before clipping (FSDP's reduce); unset for one rank.
using GradientAllReduce = std::function<void(const std::vector<torch::Tensor>& parameters)>;

class DataParallelPPOCritic {
 public:
  // `module` must have the value head; `optimizer` holds the module's parameters and outlives this object.
  DataParallelPPOCritic(model::CausalLM module, torch::optim::Optimizer& optimizer, DPCriticConfig config,
                        GradientAllReduce all_reduce = nullptr, std::shared_ptr<OptimizerShard> shard = nullptr);

  // Needs input_ids, attention_mask, position_ids [b, P+R] and responses [b, R]; response_mask [b, R] when
  // present (else attention_mask[:, -R:], verl's compute_response_mask). Returns values [b, R] fp32.
  torch::Tensor compute_values(const protocol::DataProto& data);

  // Needs input_ids, attention_mask, position_ids, responses, response_mask, values, returns.
  MetricLists update_critic(const protocol::DataProto& data);

  const DPCriticConfig& config() const { return config_; }

  // ZeRO-3 (model/fully_sharded_model.h): the module's parameters live in these shards, which the optimizer
  // steps (it was built over them). Unset: whole parameters.
  std::shared_ptr<model::FullyShardedModel> fully_sharded;
  // The dtype forwards compute in (critic.model.fsdp_config.mixed_precision.param_dtype), as the actor's.
  torch::ScalarType param_dtype = torch::kFloat32;
  // The ranks the gradients are averaged over, which each loss's global batch spans (workers/global_batch.h).
  // Default: this rank alone.
  DataParallelGroup data_parallel_group;
  // The worker group's ranks, by which verl divides its MFU (perf/mfu/critic).
  int64_t world_size = 1;

 private:
  // Value-head outputs for the rows of one micro-batch: [b, R] fp32.
  torch::Tensor forward_micro_batch(const protocol::DataProto& micro);
  int64_t sequence_parallel_size() const;  // the module's Ulysses group (1: whole sequences)
  // Row groups of one mini-batch: fixed micro-batches or the token-budget plan (as many on every data-parallel rank).
  std::vector<protocol::DataProto> update_micro_batches(const protocol::DataProto& mini);
  // Clip, then step or skip (non-finite norm). Returns the norm before clipping.
  double optimizer_step(const std::vector<torch::Tensor>& params);

  model::CausalLM module_;
  torch::optim::Optimizer& optimizer_;
  DPCriticConfig config_;
  GradientAllReduce all_reduce_;
  std::shared_ptr<OptimizerShard> shard_;  // ZeRO-1 (workers/gradient_sync.h); null: step every parameter
};

}  // namespace verl::workers
