#include "verl/algo/distillation_loss.h"

#include "verl/common/error.h"

namespace verl::algo {

DistillationLossOutput distillation_loss(const config::DistillationLossConfig& config, const torch::Tensor& log_prob,
                                         const torch::Tensor& old_log_prob, const torch::Tensor& teacher_log_prob,
                                         const torch::Tensor& response_mask, const std::string& loss_agg_mode,
                                         const AggLossOptions& agg, const torch::Tensor& rollout_is_weights) {
  VERL_CHECK(teacher_log_prob.sizes() == log_prob.sizes() && response_mask.sizes() == log_prob.sizes(), "algo",
             "distillation_loss: teacher_logprobs ", teacher_log_prob.sizes(), ", log_probs ", log_prob.sizes(),
             " and response_mask ", response_mask.sizes(), " must have one shape");
  DistillationLossOutput out;
  torch::Tensor losses = kl_penalty(log_prob, teacher_log_prob.to(log_prob.dtype()), config.loss_mode);
  const torch::Tensor valid = response_mask.to(torch::kBool);
  // verl measures these before the clamp; a micro-batch without a response token has none (verl's min() raises).
  const torch::Tensor on_response = losses.detach().masked_select(valid);
  if (on_response.numel() > 0) {
    out.metrics["distillation/abs_loss"] = on_response.abs().mean().item<double>();
    out.metrics["distillation/loss_min"] = on_response.min().item<double>();
    out.metrics["distillation/loss_max"] = on_response.max().item<double>();
  }
  if (config.loss_max_clamp) losses = losses.clamp(-*config.loss_max_clamp, *config.loss_max_clamp);

  if (config.use_policy_gradient) {
    PolicyLossConfig pg;
    pg.clip_ratio = config.clip_ratio;
    pg.clip_ratio_low = config.clip_ratio_low;
    pg.clip_ratio_high = config.clip_ratio_high;
    pg.agg = agg;
    const PolicyLossOutput result = get_policy_loss_fn(config.policy_loss_mode)(
        old_log_prob, log_prob, -losses.detach(), response_mask, loss_agg_mode, pg, rollout_is_weights);
    out.loss = result.pg_loss;
    for (const auto& [key, value] : result.metrics) {
      const std::string prefix = "actor/";
      const std::string name = key.rfind(prefix, 0) == 0 ? key.substr(prefix.size()) : key;
      out.metrics["distillation/" + name] = value;
    }
  } else {
    out.loss = agg_loss(losses, response_mask, loss_agg_mode, agg);
  }
  return out;
}

bool distillation_computes_task_loss(const config::DistillationLossConfig& config) {
  return config.use_task_rewards || config.use_policy_gradient;
}

torch::Tensor loss_with_distillation(const config::DistillationLossConfig& config, const torch::Tensor& task_loss,
                                     const torch::Tensor& distillation_loss) {
  if (!config.use_task_rewards || !task_loss.defined()) return distillation_loss;
  return task_loss + distillation_loss * config.distillation_loss_coef;
}

}  // namespace verl::algo
