#include "verl/workers/dp_critic.h"

#include <chrono>
#include <cmath>

#include "verl/algo/core_algos.h"
#include "verl/common/error.h"
#include "verl/common/stopwatch.h"
#include "verl/model/flops_counter.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/micro_batches.h"
#include "verl/workers/mini_batch_order.h"
#include "verl/workers/optimizer.h"
#include "verl/workers/update_metrics.h"

namespace verl::workers {

namespace {

constexpr const char* kDpCriticComponent = "critic";

// verl's compute_response_mask: the response part of attention_mask (single turn).
torch::Tensor response_mask_of(const protocol::DataProto& data) {
  if (data.has_tensor("response_mask")) return data.tensor("response_mask");
  const int64_t R = data.tensor("responses").size(1);
  const torch::Tensor& attention_mask = data.tensor("attention_mask");
  return attention_mask.narrow(1, attention_mask.size(1) - R, R);
}

void require(const protocol::DataProto& data, const std::vector<std::string>& keys, const char* method) {
  for (const auto& key : keys) {
    VERL_CHECK(
        data.has_tensor(key), kDpCriticComponent, method, ": the batch has no tensor '", key, "' (needs ",
        [&] {
          std::string all;
          for (const auto& k : keys) all += (all.empty() ? "" : ", ") + k;
          return all;
        }(),
        ")");
  }
}

}  // namespace

nlohmann::json metrics_to_json(const MetricLists& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, values] : metrics) out[key] = values;
  return out;
}

DataParallelPPOCritic::DataParallelPPOCritic(model::CausalLM module, torch::optim::Optimizer& optimizer,
                                             DPCriticConfig config, GradientAllReduce all_reduce,
                                             std::shared_ptr<OptimizerShard> shard)
    : module_(std::move(module)),
      optimizer_(optimizer),
      config_(std::move(config)),
      all_reduce_(std::move(all_reduce)),
      shard_(std::move(shard)) {
  VERL_ASSERT(module_->head == model::HeadKind::Value, kDpCriticComponent, "the critic module needs the value head");
  VERL_CHECK(config_.ppo_mini_batch_size > 0, kDpCriticComponent, "normalized ppo_mini_batch_size must be > 0, got ",
             config_.ppo_mini_batch_size);
  if (!config_.use_dynamic_bsz) {
    VERL_CHECK(config_.ppo_micro_batch_size_per_gpu && *config_.ppo_micro_batch_size_per_gpu > 0, kDpCriticComponent,
               "critic.ppo_micro_batch_size_per_gpu must be set when use_dynamic_bsz is false");
    VERL_CHECK(config_.ppo_mini_batch_size % *config_.ppo_micro_batch_size_per_gpu == 0, kDpCriticComponent,
               "normalized ppo_mini_batch_size ", config_.ppo_mini_batch_size,
               " should be divisible by ppo_micro_batch_size_per_gpu ", *config_.ppo_micro_batch_size_per_gpu);
  }
}

// Per rank; under Ulysses a rank holds 1/sp of each sequence, so a micro-batch holds sp times the tokens (verl).
int64_t DataParallelPPOCritic::sequence_parallel_size() const { return module_->model->sequence_parallel.size(); }

torch::Tensor DataParallelPPOCritic::forward_micro_batch(const protocol::DataProto& micro) {
  const int64_t R = micro.tensor("responses").size(1);
  // Batches arrive in host memory; the micro-batch moves to the model's device (a no-op on the CPU).
  const auto device = module_->model->weight_options().device();
  model::AutocastGuard autocast(device, param_dtype);
  return model::response_values(module_, micro.tensor("input_ids").to(device), micro.tensor("attention_mask").to(device),
                                micro.tensor("position_ids").to(device), R);
}

torch::Tensor DataParallelPPOCritic::compute_values(const protocol::DataProto& data) {
  require(data, {"input_ids", "attention_mask", "position_ids", "responses"}, "compute_values");
  const int64_t R = data.tensor("responses").size(1);
  if (data.size() == 0) return torch::zeros({0, R}, torch::kFloat32);
  std::vector<std::string> keys = {"responses", "input_ids", "attention_mask", "position_ids"};
  protocol::DataProto selected = data.select(keys);
  module_->eval();
  torch::NoGradGuard no_grad;
  MicroBatches micro =
      config_.use_dynamic_bsz
          ? dynamic_micro_batches(selected, config_.forward_max_token_len_per_gpu * sequence_parallel_size(),
                                  "critic.forward_max_token_len_per_gpu",
                                  fully_sharded.get())
          : fixed_micro_batches(selected, config_.forward_micro_batch_size_per_gpu.value_or(0),
                                "critic.forward_micro_batch_size_per_gpu");
  std::vector<torch::Tensor> outputs;
  outputs.reserve(micro.parts.size());
  model::RootGathered root(fully_sharded.get());
  for (const auto& part : micro.parts) outputs.push_back(forward_micro_batch(part));
  torch::Tensor values = micro.restore(outputs).to(torch::kCPU);  // the controller's copy lives on the host
  return values * response_mask_of(data).to(values.scalar_type());
}

void add_value_loss_metrics(UpdateMetrics& metrics, const algo::ValueLossOutput& loss, const torch::Tensor& vpreds,
                            const torch::Tensor& response_mask) {
  const double vf_loss = loss.vf_loss.detach().item<double>();
  metrics.add("critic/vf_loss", vf_loss, MetricAggregation::Sum);
  metrics.add("critic/loss", vf_loss, MetricAggregation::Sum);  // the engine's loss: vf_loss alone
  metrics.add("critic/vf_clipfrac", loss.vf_clipfrac.item<double>(), MetricAggregation::Each);
  metrics.add("critic/vpred_mean", algo::masked_mean(vpreds.detach(), response_mask).item<double>(),
              MetricAggregation::Each);
}

std::vector<protocol::DataProto> DataParallelPPOCritic::update_micro_batches(const protocol::DataProto& mini) {
  if (config_.use_dynamic_bsz) {
    return dynamic_micro_batches(mini, config_.ppo_max_token_len_per_gpu * sequence_parallel_size(),
                                 "critic.ppo_max_token_len_per_gpu", fully_sharded.get(), &data_parallel_group)
        .parts;
  }
  return mini.split(*config_.ppo_micro_batch_size_per_gpu);
}

MetricLists DataParallelPPOCritic::update_critic(const protocol::DataProto& data) {
  const std::vector<std::string> keys = {"input_ids", "responses", "response_mask", "attention_mask",
                                         "position_ids", "values", "returns"};
  require(data, keys, "update_critic");
  module_->train();
  std::vector<torch::Tensor> params = module_->parameters();
  protocol::DataProto selected = data.select(keys);
  // Every epoch's mini-batches in the order they run: contiguous, or with critic.shuffle a new order each epoch,
  // drawn as verl 0.9.1's engine draws it.
  const std::vector<std::vector<int64_t>> mini_batches =
      mini_batch_rows(selected.size(), config_.ppo_mini_batch_size, config_.ppo_epochs,
                      {config_.shuffle, config_.data_loader_seed + config_.data_parallel_rank});

  UpdateMetrics metrics;
  for (const auto& mini_rows : mini_batches) {
    const protocol::DataProto mini = take_rows(selected, mini_rows);
    // verl 0.9.1's global_batch_info: each micro-batch's loss is taken against the whole mini-batch on every
    // data-parallel rank, so the micro-batch gradients add up to the mini-batch's.
    const algo::AggLossOptions global = global_batch_info(data_parallel_group, mini.tensor("response_mask"),
                                                          config_.ppo_mini_batch_size, config_.loss_scale_factor);
    const model::SequenceLengthSums lengths =
        global_sequence_lengths(data_parallel_group, mini.tensor("attention_mask"));
    const auto mini_start = std::chrono::steady_clock::now();
    optimizer_.zero_grad();
    for (const protocol::DataProto& micro : update_micro_batches(mini)) {
      model::RootGathered root(fully_sharded.get());
      torch::Tensor vpreds = forward_micro_batch(micro);
      const torch::Tensor response_mask = micro.tensor("response_mask").to(vpreds.device());
      algo::ValueLossOutput loss =
          algo::compute_value_loss(vpreds, micro.tensor("returns").to(vpreds.device(), vpreds.scalar_type()),
                                   micro.tensor("values").to(vpreds.device(), vpreds.scalar_type()), response_mask,
                                   config_.cliprange_value, config_.loss_agg_mode, global);
      loss.vf_loss.backward();
      root.reduce_gradients();
      add_value_loss_metrics(metrics, loss, vpreds, response_mask);
    }
    metrics.end_mini_batch();
    metrics.add_per_mini_batch("critic/grad_norm", optimizer_step(params));
    // verl's perf/mfu/critic: the mini-batch's FLOPs on every rank over this rank's time for it.
    metrics.add_per_mini_batch(
        "perf/mfu/critic",
        model::model_flops_utilization(module_->config, lengths, seconds_since(mini_start),
                                       module_->model->weight_options().device(), world_size, /*forward_only=*/false));
  }
  optimizer_.zero_grad();
  return metrics.lists();
}

double DataParallelPPOCritic::optimizer_step(const std::vector<torch::Tensor>& params) {
  if (fully_sharded && fully_sharded->trains_shards()) {
    return sharded_optimizer_step(*fully_sharded, optimizer_, config_.grad_clip, kDpCriticComponent);
  }
  // The norm is the whole model's: ZeRO-2 assembles it from the gradients' owners, tensor parallelism from
  // the slices.
  model::sum_tied_embedding_gradients(module_);  // a no-op for a value head (its embedding is not tied to it)
  GradientPlacement placement =
      average_gradients(params, shard_.get(), all_reduce_, module_->tp.active() ? module_->tp.comm.get() : nullptr,
                        model::parameter_is_slice(module_));
  add_pipeline_stages(placement, module_, model::parameter_counts_in_norm(module_));
  const double grad_norm = clip_grad_norm(params, config_.grad_clip, placement);
  if (std::isfinite(grad_norm)) {
    if (shard_) {
      shard_->step(optimizer_);
    } else {
      optimizer_.step();
    }
  } else {
    // verl: a non-finite norm skips the step and drops the gradients.
    optimizer_.zero_grad();
  }
  return grad_norm;
}

}  // namespace verl::workers
