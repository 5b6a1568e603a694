// verl's DataParallelPPOCritic (workers/critic/dp_critic.py): the critic's forward and update on one
// data-parallel rank. Sizes here are per rank, already normalized by the worker (spec §4.1).
//
// compute_values: eval mode, no grad, micro-batches of forward_micro_batch_size_per_gpu (or token-budget
//   micro-batches with use_dynamic_bsz, order restored); values[b, t] = value head at position P+t-1,
//   multiplied by response_mask.
// update_critic: ppo_epochs passes over mini-batches of ppo_mini_batch_size rows (contiguous, or with shuffle a new
//   order each pass, as verl 0.9.1's engine: workers/mini_batch_order.h);
//   per mini-batch: zero_grad, micro-batches of ppo_micro_batch_size_per_gpu each backpropagating
//   compute_value_loss * (1 / grad_accum) (dynamic bsz: * rows / ppo_mini_batch_size), then
//   clip_grad_norm(grad_clip) and an optimizer step, skipped when the norm is not finite.
//   Metrics (verl's accumulation): critic/vf_loss one value = sum over every micro-batch of vf_loss * scale
//   (so the sum over mini-batches and epochs of the mini-batch mean); critic/vf_clipfrac and
//   critic/vpred_mean one value per micro-batch; critic/grad_norm one value per mini-batch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"
#include "verl/protocol/data_proto.h"

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
};

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

 private:
  // Value-head outputs for the rows of one micro-batch: [b, R] fp32.
  torch::Tensor forward_micro_batch(const protocol::DataProto& micro);
  int64_t sequence_parallel_size() const;  // the module's Ulysses group (1: whole sequences)
  // Row groups of one mini-batch (fixed micro-batches or the token-budget plan) with their loss scales.
  std::vector<std::pair<protocol::DataProto, double>> update_micro_batches(const protocol::DataProto& mini);

  model::CausalLM module_;
  torch::optim::Optimizer& optimizer_;
  DPCriticConfig config_;
  GradientAllReduce all_reduce_;
  std::shared_ptr<OptimizerShard> shard_;  // ZeRO-1 (workers/gradient_sync.h); null: step every parameter
};

}  // namespace verl::workers
