#include "verl/workers/dp_actor.h"

#include <chrono>
#include <cmath>
#include <string>

#include "verl/algo/core_algos.h"
#include "verl/algo/distillation_loss.h"
#include "verl/algo/ppo_loss.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/common/strings.h"
#include "verl/model/flops_counter.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/workers/global_batch.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/micro_batches.h"
#include "verl/workers/mini_batch_order.h"
#include "verl/workers/optimizer.h"
#include "verl/workers/seqlen_balancing.h"
#include "verl/workers/update_metrics.h"

namespace verl::workers {
namespace {

constexpr const char* kDpActorComponent = "actor";

double meta_double(const protocol::DataProto& data, const std::string& key) {
  VERL_CHECK(data.meta_info.contains(key) && data.meta_info[key].is_number(), kDpActorComponent, "meta_info['", key,
             "'] (a number) is required");
  return data.meta_info[key].get<double>();
}

// verl 0.9.1's aggregation of the distillation loss's metrics: Metric MIN / MAX for the ranges, MEAN for abs_loss,
// plain numbers (kept per micro-batch) for the rest.
MetricAggregation distillation_metric_aggregation(const std::string& key) {
  if (ends_with(key, "_min")) return MetricAggregation::Min;
  if (ends_with(key, "_max")) return MetricAggregation::Max;
  if (key == "distillation/abs_loss") return MetricAggregation::Mean;
  return MetricAggregation::Each;
}

void require_keys(const protocol::DataProto& data, const std::vector<std::string>& keys, const std::string& what) {
  for (const auto& k : keys) {
    VERL_CHECK(data.has_tensor(k), kDpActorComponent, what, " needs batch key '", k, "'");
  }
}

}  // namespace

void add_ppo_loss_metrics(UpdateMetrics& metrics, const algo::PpoLossOutput& ppo, double kl_loss_coef) {
  for (const auto& [k, v] : ppo.pg_metrics) metrics.add(k, v, MetricAggregation::Mean);
  metrics.add("actor/pg_loss", ppo.pg_loss.item<double>(), MetricAggregation::Sum);
  if (ppo.entropy_loss.defined()) {
    metrics.add("actor/entropy_loss", ppo.entropy_loss.item<double>(), MetricAggregation::Sum);
  }
  if (ppo.kl_loss.defined()) {
    metrics.add("actor/kl_loss", ppo.kl_loss.item<double>(), MetricAggregation::Sum);
    metrics.add("actor/kl_coef", kl_loss_coef, MetricAggregation::Each);
  }
}

protocol::DataProto to_device(const protocol::DataProto& data, const torch::Device& device) {
  protocol::DataProto out;
  for (const auto& [k, v] : data.batch) out.batch[k] = v.to(device);
  out.non_tensor_batch = data.non_tensor_batch;
  out.meta_info = data.meta_info;
  return out;
}

DataParallelPPOActor::DataParallelPPOActor(config::ActorConfig config, model::CausalLM model,
                                           torch::optim::Optimizer* optimizer)
    : config_(std::move(config)), model_(std::move(model)), optimizer_(optimizer) {
  const std::vector<bool> is_slice = model::parameter_is_slice(model_);
  const std::vector<bool> counts = model::parameter_counts_in_norm(model_);
  const std::vector<torch::Tensor> all = model_->parameters();
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].requires_grad()) continue;
    parameters_.push_back(all[i]);
    parameter_is_slice_.push_back(is_slice[i]);
    parameter_counts_in_norm_.push_back(counts[i]);
  }
}

std::pair<torch::Tensor, torch::Tensor> DataParallelPPOActor::forward_micro_batch(
    const protocol::DataProto& micro, double temperature, bool calculate_entropy, torch::Tensor* sum_pi_squared,
    const model::TopKQuery& query, model::TopKLogProbs* top_k) {
  model::AutocastGuard autocast(model_->model->weight_options().device(), param_dtype);
  auto out = model::response_log_probs(model_, micro.tensor("input_ids"), micro.tensor("attention_mask"),
                                       micro.tensor("position_ids"), micro.tensor("responses"), temperature,
                                       calculate_entropy, /*with_sum_pi_squared=*/sum_pi_squared != nullptr, query);
  if (sum_pi_squared != nullptr) *sum_pi_squared = out.sum_pi_squared;
  if (top_k != nullptr) *top_k = out.top_k;
  return {out.log_probs, out.entropy};
}

std::pair<torch::Tensor, torch::Tensor> DataParallelPPOActor::compute_log_prob(const protocol::DataProto& data_in,
                                                                               bool calculate_entropy,
                                                                               torch::Tensor* sum_pi_squared) {
  model_->eval();
  torch::NoGradGuard no_grad;
  const std::vector<std::string> keys = {"responses", "input_ids", "attention_mask", "position_ids"};
  require_keys(data_in, keys, "compute_log_prob");
  const double temperature = meta_double(data_in, "temperature");
  const bool use_dynamic_bsz = data_in.meta_info.value("use_dynamic_bsz", false);
  protocol::DataProto data = data_in.select(keys);
  const auto device = model_->model->weight_options().device();

  std::vector<protocol::DataProto> micro_batches;
  MicroBatchPlan plan;
  if (use_dynamic_bsz) {
    // Per rank; under Ulysses a rank holds 1/sp of each sequence, so a micro-batch holds sp times the tokens (verl).
    const int64_t max_token_len =
        static_cast<int64_t>(meta_double(data_in, "max_token_len")) * model_->model->sequence_parallel.size();
    plan = micro_batch_plan(data.tensor("attention_mask"), max_token_len, fully_sharded.get());
    for (const auto& rows : plan.micro_batches) micro_batches.push_back(data.index(rows));
  } else {
    const int64_t micro = static_cast<int64_t>(meta_double(data_in, "micro_batch_size"));
    VERL_CHECK(micro > 0, kDpActorComponent, "micro_batch_size must be positive, got ", micro);
    micro_batches = data.split(micro);
  }
  std::vector<torch::Tensor> log_probs, entropys, sums_pi_squared;
  model::RootGathered root(fully_sharded.get());
  for (const auto& mb : micro_batches) {
    torch::Tensor spsq;
    auto [lp, ent] = forward_micro_batch(to_device(mb, device), temperature, calculate_entropy,
                                         sum_pi_squared != nullptr ? &spsq : nullptr);
    log_probs.push_back(lp.to(torch::kCPU));
    if (calculate_entropy) entropys.push_back(ent.to(torch::kCPU));
    if (sum_pi_squared != nullptr) sums_pi_squared.push_back(spsq.to(torch::kCPU));
  }
  auto lp = torch::cat(log_probs, 0);
  torch::Tensor ent;
  if (calculate_entropy) ent = torch::cat(entropys, 0);
  if (sum_pi_squared != nullptr) *sum_pi_squared = torch::cat(sums_pi_squared, 0);
  if (use_dynamic_bsz) {
    auto order = torch::tensor(plan.restore_order, torch::kInt64);
    lp = lp.index_select(0, order);
    if (calculate_entropy) ent = ent.index_select(0, order);
    if (sum_pi_squared != nullptr) *sum_pi_squared = sum_pi_squared->index_select(0, order);
  }
  return {lp, ent};
}

double DataParallelPPOActor::optimizer_step() {
  // LoRA on a ZeRO-3 base: the shards are frozen, the whole adapters step as below.
  if (fully_sharded && fully_sharded->trains_shards()) {
    return sharded_optimizer_step(*fully_sharded, *optimizer_, config_.grad_clip, kDpActorComponent);
  }
  // The norm is the whole model's: ZeRO-2 assembles it from the gradients' owners, tensor parallelism from the
  // slices.
  model::sum_tied_embedding_gradients(model_);  // pipeline stages: the first and last stages' copies
  GradientPlacement placement =
      average_gradients(parameters_, optimizer_shard.get(), gradient_all_reduce,
                        model_->tp.active() ? model_->tp.comm.get() : nullptr, parameter_is_slice_);
  add_pipeline_stages(placement, model_, parameter_counts_in_norm_);
  const double grad_norm = clip_grad_norm(parameters_, config_.grad_clip, placement);
  if (!std::isfinite(grad_norm)) {
    VERL_LOG(Warn, kDpActorComponent) << "grad_norm is not finite (" << grad_norm << "); skipping this optimizer step";
    optimizer_->zero_grad();
  } else {
    if (optimizer_shard) {
      optimizer_shard->step(*optimizer_);
    } else {
      optimizer_->step();
    }
  }
  return grad_norm;
}

nlohmann::json DataParallelPPOActor::update_policy(const protocol::DataProto& data_in) {
  VERL_CHECK(optimizer_ != nullptr, kDpActorComponent, "update_policy needs an optimizer (actor role)");
  model_->train();
  const double temperature = meta_double(data_in, "temperature");
  std::vector<std::string> keys = {"responses", "response_mask", "input_ids", "attention_mask",
                                   "position_ids", "old_log_probs", "advantages"};
  if (config_.use_kl_loss) keys.push_back("ref_log_prob");
  // distillation.enabled: the teachers' log-probs (workers/teacher_model_worker.h) feed the distillation loss.
  const config::DistillationLossConfig* distillation = config_.distillation ? &*config_.distillation : nullptr;
  // forward_kl_topk: the teacher's top-k tokens, at which the student's distribution is read too.
  const bool distill_top_k = distillation != nullptr && algo::distillation_uses_top_k(*distillation);
  if (distillation != nullptr) keys.push_back("teacher_logprobs");
  if (distill_top_k) keys.push_back("teacher_ids");
  require_keys(data_in, keys, "update_actor");
  if (data_in.has_tensor("rollout_is_weights")) keys.push_back("rollout_is_weights");
  protocol::DataProto data = data_in.select(keys);
  VERL_CHECK(data.size() > 0, kDpActorComponent, "update_actor got an empty batch");
  const auto device = model_->model->weight_options().device();

  const int64_t mini_size = config_.ppo_mini_batch_size;
  VERL_CHECK(mini_size > 0, kDpActorComponent, "ppo_mini_batch_size per rank must be positive, got ", mini_size);
  // Every epoch's mini-batches in the order they run: contiguous (verl's legacy actor, and verl 0.9.1's engine
  // without actor.shuffle), or with actor.shuffle a new order each epoch, drawn as verl 0.9.1's engine draws it.
  const std::vector<std::vector<int64_t>> mini_batches = mini_batch_rows(
      data.size(), mini_size, config_.ppo_epochs, {config_.shuffle, config_.data_loader_seed + data_parallel_rank});
  const auto loss_cfg = algo::PolicyLossConfig::from_actor_config(config_);
  const bool calculate_entropy = config_.calculate_entropy || config_.entropy_coeff != 0;

  // verl's distillation_ppo_loss: without task rewards or a policy gradient the PPO loss is not computed at all.
  const bool task_loss = distillation == nullptr || algo::distillation_computes_task_loss(*distillation);
  algo::PpoLossOptions ppo_options;
  ppo_options.loss_mode = config_.policy_loss_mode;
  ppo_options.loss_agg_mode = config_.loss_agg_mode;
  ppo_options.policy = loss_cfg;
  ppo_options.entropy_coeff = config_.entropy_coeff;
  ppo_options.use_kl_loss = config_.use_kl_loss;
  ppo_options.kl_loss_coef = config_.kl_loss_coef;
  ppo_options.kl_loss_type = config_.kl_loss_type;
  UpdateMetrics metrics;
  for (const auto& mini_rows : mini_batches) {
    const protocol::DataProto mini = take_rows(data, mini_rows);
    // verl 0.9.1's global_batch_info: every micro-batch's loss is taken against the whole mini-batch on every
    // data-parallel rank (workers/global_batch.h), so the micro-batch gradients add up to the mini-batch's.
    ppo_options.policy.agg =
        global_batch_info(data_parallel_group, mini.tensor("response_mask"), mini_size, config_.loss_scale_factor);
    const model::SequenceLengthSums lengths =
        global_sequence_lengths(data_parallel_group, mini.tensor("attention_mask"));
    const auto mini_start = std::chrono::steady_clock::now();
    std::vector<protocol::DataProto> micro_batches;
    if (config_.use_dynamic_bsz) {
      // Every data-parallel rank runs as many micro-batches (verl's same_micro_num_in_dp).
      auto plan = micro_batch_plan(mini.tensor("attention_mask"),
                                   config_.ppo_max_token_len_per_gpu * model_->model->sequence_parallel.size(),
                                   fully_sharded.get(), &data_parallel_group);
      for (const auto& rows : plan.micro_batches) micro_batches.push_back(mini.index(rows));
    } else {
      VERL_CHECK(config_.ppo_micro_batch_size_per_gpu.has_value(), kDpActorComponent,
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu must be set when use_dynamic_bsz is false");
      micro_batches = mini.split(*config_.ppo_micro_batch_size_per_gpu);
    }
    optimizer_->zero_grad();
    for (const auto& mb_cpu : micro_batches) {
      auto mb = to_device(mb_cpu, device);
      model::RootGathered root(fully_sharded.get());
      const auto& response_mask = mb.tensor("response_mask");
      model::TopKQuery query;
      model::TopKLogProbs student_top_k;
      if (distill_top_k) {
        query.gather_ids = mb.tensor("teacher_ids");
        query.top_k = query.gather_ids.size(2);  // the student's own top-k, for verl's overlap metrics
      }
      auto [log_prob, entropy] = forward_micro_batch(mb, temperature, calculate_entropy, nullptr, query,
                                                     distill_top_k ? &student_top_k : nullptr);
      // verl 0.9.1's engine always reads the batch's old_log_probs (the recomputed ones, or the rollout's in
      // bypass mode); verl <= 0.8's legacy actor took the live log-probs instead with one mini-batch and one epoch.
      const torch::Tensor& old_log_prob = mb.tensor("old_log_probs");
      torch::Tensor is_weights;
      if (mb.has_tensor("rollout_is_weights")) is_weights = mb.tensor("rollout_is_weights");
      torch::Tensor loss;
      if (task_loss) {
        algo::PpoLossInputs in;
        in.log_prob = log_prob;
        in.entropy = calculate_entropy ? entropy : torch::Tensor();
        in.old_log_prob = old_log_prob;
        in.advantages = mb.tensor("advantages");
        in.response_mask = response_mask;
        if (config_.use_kl_loss) in.ref_log_prob = mb.tensor("ref_log_prob");
        in.rollout_is_weights = is_weights;
        const algo::PpoLossOutput ppo = algo::ppo_loss(in, ppo_options);
        loss = ppo.loss;
        add_ppo_loss_metrics(metrics, ppo, config_.kl_loss_coef);
      }
      if (distillation != nullptr) {
        const algo::AggLossOptions& agg = ppo_options.policy.agg;
        const auto distill =
            distill_top_k
                ? algo::distillation_loss_from_tokens(
                      *distillation,
                      algo::forward_kl_topk_token_losses(*distillation, student_top_k.gathered_log_probs,
                                                         student_top_k.top_k_ids, mb.tensor("teacher_logprobs"),
                                                         mb.tensor("teacher_ids"), response_mask),
                      log_prob, old_log_prob, response_mask, config_.loss_agg_mode, agg, is_weights)
                : algo::distillation_loss(*distillation, log_prob, old_log_prob, mb.tensor("teacher_logprobs"),
                                          response_mask, config_.loss_agg_mode, agg, is_weights);
        loss = algo::loss_with_distillation(*distillation, task_loss ? loss : torch::Tensor(), distill.loss);
        metrics.add("actor/distillation/loss", distill.loss.item<double>(), MetricAggregation::Sum);
        for (const auto& [k, v] : distill.metrics) metrics.add("actor/" + k, v, distillation_metric_aggregation(k));
      }
      metrics.add("actor/loss", loss.item<double>(), MetricAggregation::Sum);
      loss.backward();
      root.reduce_gradients();
    }
    metrics.end_mini_batch();
    metrics.add_per_mini_batch("actor/grad_norm", optimizer_step());
    // verl's perf/mfu/actor: the mini-batch's FLOPs on every rank over this rank's time for it.
    metrics.add_per_mini_batch(
        "perf/mfu/actor", model::model_flops_utilization(model_->config, lengths, seconds_since(mini_start), device,
                                                         world_size, /*forward_only=*/false));
  }
  optimizer_->zero_grad();
  return metrics.to_json();
}

}  // namespace verl::workers
