#include "verl/workers/dp_actor.h"

#include <cmath>
#include <string>

#include "verl/algo/core_algos.h"
#include "verl/algo/distillation_loss.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/micro_batches.h"
#include "verl/workers/mini_batch_order.h"
#include "verl/workers/optimizer.h"
#include "verl/workers/seqlen_balancing.h"

namespace verl::workers {
namespace {

constexpr const char* kDpActorComponent = "actor";

double meta_double(const protocol::DataProto& data, const std::string& key) {
  VERL_CHECK(data.meta_info.contains(key) && data.meta_info[key].is_number(), kDpActorComponent, "meta_info['", key,
             "'] (a number) is required");
  return data.meta_info[key].get<double>();
}

void append(nlohmann::json& metrics, const std::string& key, double value) {
  if (!metrics.contains(key)) metrics[key] = nlohmann::json::array();
  metrics[key].push_back(value);
}

void require_keys(const protocol::DataProto& data, const std::vector<std::string>& keys, const std::string& what) {
  for (const auto& k : keys) {
    VERL_CHECK(data.has_tensor(k), kDpActorComponent, what, " needs batch key '", k, "'");
  }
}

}  // namespace

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
  const bool on_policy = mini_batches.size() == 1;  // one mini-batch, one epoch
  const auto& loss_fn = algo::get_policy_loss_fn(config_.policy_loss_mode);
  const auto loss_cfg = algo::PolicyLossConfig::from_actor_config(config_);
  const bool calculate_entropy = config_.calculate_entropy || config_.entropy_coeff != 0;

  // verl's distillation_ppo_loss: without task rewards or a policy gradient the PPO loss is not computed at all.
  const bool task_loss = distillation == nullptr || algo::distillation_computes_task_loss(*distillation);
  double pg_loss_sum = 0.0, kl_loss_sum = 0.0, distillation_loss_sum = 0.0;
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& mini_rows : mini_batches) {
    const protocol::DataProto mini = take_rows(data, mini_rows);
    std::vector<protocol::DataProto> micro_batches;
    int64_t grad_accum = 1;
    if (config_.use_dynamic_bsz) {
      auto plan = micro_batch_plan(mini.tensor("attention_mask"),
                                   config_.ppo_max_token_len_per_gpu * model_->model->sequence_parallel.size(),
                                   fully_sharded.get());
      for (const auto& rows : plan.micro_batches) micro_batches.push_back(mini.index(rows));
    } else {
      VERL_CHECK(config_.ppo_micro_batch_size_per_gpu.has_value(), kDpActorComponent,
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu must be set when use_dynamic_bsz is false");
      const int64_t micro = *config_.ppo_micro_batch_size_per_gpu;
      grad_accum = mini_size / micro;
      micro_batches = mini.split(micro);
    }
    optimizer_->zero_grad();
    for (const auto& mb_cpu : micro_batches) {
      auto mb = to_device(mb_cpu, device);
      model::RootGathered root(fully_sharded.get());
      const auto& response_mask = mb.tensor("response_mask");
      const auto& advantages = mb.tensor("advantages");
      const double scale = config_.use_dynamic_bsz
                               ? static_cast<double>(response_mask.size(0)) / static_cast<double>(mini_size)
                               : 1.0 / static_cast<double>(grad_accum);
      model::TopKQuery query;
      model::TopKLogProbs student_top_k;
      if (distill_top_k) {
        query.gather_ids = mb.tensor("teacher_ids");
        query.top_k = query.gather_ids.size(2);  // the student's own top-k, for verl's overlap metrics
      }
      auto [log_prob, entropy] = forward_micro_batch(mb, temperature, calculate_entropy, nullptr, query,
                                                     distill_top_k ? &student_top_k : nullptr);
      const auto old_log_prob = on_policy ? log_prob.detach() : mb.tensor("old_log_probs");
      torch::Tensor is_weights;
      if (mb.has_tensor("rollout_is_weights")) is_weights = mb.tensor("rollout_is_weights");
      torch::Tensor policy_loss = torch::zeros({}, log_prob.options());
      nlohmann::json micro_metrics = nlohmann::json::object();
      if (task_loss) {
        auto pg =
            loss_fn(old_log_prob, log_prob, advantages, response_mask, config_.loss_agg_mode, loss_cfg, is_weights);
        policy_loss = pg.pg_loss;
        for (const auto& [k, v] : pg.metrics) micro_metrics[k] = v;
        if (calculate_entropy) {
          auto entropy_agg = algo::agg_loss(entropy, response_mask, config_.loss_agg_mode);
          micro_metrics["actor/entropy"] = entropy_agg.item<double>();
          if (config_.entropy_coeff != 0) policy_loss = policy_loss - entropy_agg * config_.entropy_coeff;
        }
        if (config_.use_kl_loss) {
          auto kld = algo::kl_penalty(log_prob, mb.tensor("ref_log_prob"), config_.kl_loss_type);
          auto kl_loss = algo::agg_loss(kld, response_mask, config_.loss_agg_mode);
          policy_loss = policy_loss + kl_loss * config_.kl_loss_coef;
          kl_loss_sum += kl_loss.item<double>() * scale;
          micro_metrics["actor/kl_coef"] = config_.kl_loss_coef;
        }
        pg_loss_sum += pg.pg_loss.item<double>() * scale;
      }
      if (distillation != nullptr) {
        const auto distill =
            distill_top_k
                ? algo::distillation_loss_from_tokens(
                      *distillation,
                      algo::forward_kl_topk_token_losses(*distillation, student_top_k.gathered_log_probs,
                                                         student_top_k.top_k_ids, mb.tensor("teacher_logprobs"),
                                                         mb.tensor("teacher_ids"), response_mask),
                      log_prob, old_log_prob, response_mask, config_.loss_agg_mode, loss_cfg.agg, is_weights)
                : algo::distillation_loss(*distillation, log_prob, old_log_prob, mb.tensor("teacher_logprobs"),
                                          response_mask, config_.loss_agg_mode, loss_cfg.agg, is_weights);
        policy_loss =
            algo::loss_with_distillation(*distillation, task_loss ? policy_loss : torch::Tensor(), distill.loss);
        distillation_loss_sum += distill.loss.item<double>() * scale;
        for (const auto& [k, v] : distill.metrics) micro_metrics["actor/" + k] = v;
      }
      (policy_loss * scale).backward();
      root.reduce_gradients();
      for (auto it = micro_metrics.begin(); it != micro_metrics.end(); ++it) {
        append(metrics, it.key(), it.value().get<double>());
      }
    }
    append(metrics, "actor/grad_norm", optimizer_step());
  }
  optimizer_->zero_grad();
  if (task_loss) metrics["actor/pg_loss"] = nlohmann::json::array({pg_loss_sum});
  metrics["actor/kl_loss"] = nlohmann::json::array({kl_loss_sum});
  if (distillation != nullptr) metrics["actor/distillation/loss"] = nlohmann::json::array({distillation_loss_sum});
  return metrics;
}

}  // namespace verl::workers
