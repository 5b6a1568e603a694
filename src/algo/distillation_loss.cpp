#include "verl/algo/distillation_loss.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::algo {

DistillationLossOutput distillation_loss(const config::DistillationLossConfig& config, const torch::Tensor& log_prob,
                                         const torch::Tensor& old_log_prob, const torch::Tensor& teacher_log_prob,
                                         const torch::Tensor& response_mask, const std::string& loss_agg_mode,
                                         const AggLossOptions& agg, const torch::Tensor& rollout_is_weights) {
  VERL_CHECK(config.loss_mode != "forward_kl_topk", "algo",
             "distillation_loss: forward_kl_topk reads the teacher's top-k distribution, not one log-prob per token "
             "(forward_kl_topk_token_losses)");
  VERL_CHECK(teacher_log_prob.sizes() == log_prob.sizes() && response_mask.sizes() == log_prob.sizes(), "algo",
             "distillation_loss: teacher_logprobs ", teacher_log_prob.sizes(), ", log_probs ", log_prob.sizes(),
             " and response_mask ", response_mask.sizes(), " must have one shape");
  DistillationTokenLosses token_losses;
  token_losses.losses = kl_penalty(log_prob, teacher_log_prob.to(log_prob.dtype()), config.loss_mode);
  // k1 can be negative: verl logs the mean absolute loss too.
  const torch::Tensor on_response = token_losses.losses.detach().masked_select(response_mask.to(torch::kBool));
  if (on_response.numel() > 0) token_losses.metrics["distillation/abs_loss"] = on_response.abs().mean().item<double>();
  return distillation_loss_from_tokens(config, std::move(token_losses), log_prob, old_log_prob, response_mask,
                                       loss_agg_mode, agg, rollout_is_weights);
}

DistillationTokenLosses forward_kl_topk_token_losses(const config::DistillationLossConfig& config,
                                                     const torch::Tensor& student_top_k_log_probs,
                                                     const torch::Tensor& student_top_k_ids,
                                                     const torch::Tensor& teacher_top_k_log_probs,
                                                     const torch::Tensor& teacher_top_k_ids,
                                                     const torch::Tensor& response_mask) {
  const auto shape = teacher_top_k_log_probs.sizes();
  VERL_CHECK(shape.size() == 3 && student_top_k_log_probs.sizes() == shape && teacher_top_k_ids.sizes() == shape &&
                 student_top_k_ids.sizes() == shape && response_mask.sizes() == shape.slice(0, 2),
             "algo", "forward_kl_topk: the teacher's top-k log-probs ", shape, " and ids ", teacher_top_k_ids.sizes(),
             ", the student's ", student_top_k_log_probs.sizes(), " and ids ", student_top_k_ids.sizes(),
             " must all be [B, R, K] over the response_mask ", response_mask.sizes());
  DistillationTokenLosses out;
  torch::Tensor log_q = student_top_k_log_probs.to(torch::kFloat32);
  torch::Tensor log_p = teacher_top_k_log_probs.to(log_q.device()).to(torch::kFloat32);
  const torch::Tensor valid = response_mask.to(torch::kBool);
  {
    torch::NoGradGuard no_grad;
    // The probability mass each side puts on the teacher's top-k, before the clamp.
    const torch::Tensor student_mass = log_q.detach().exp().sum(-1).masked_select(valid);
    const torch::Tensor teacher_mass = log_p.exp().sum(-1).masked_select(valid);
    if (student_mass.numel() > 0) {
      for (const auto& [name, mass] : {std::pair{"student", student_mass}, std::pair{"teacher", teacher_mass}}) {
        const std::string key = str_cat("distillation/", name, "_mass");
        out.metrics[key] = mass.mean().item<double>();
        out.metrics[key + "_min"] = mass.min().item<double>();
        out.metrics[key + "_max"] = mass.max().item<double>();
      }
    }
  }
  if (config.log_prob_min_clamp) {
    log_q = log_q.clamp_min(*config.log_prob_min_clamp);
    log_p = log_p.clamp_min(*config.log_prob_min_clamp);
  }
  const torch::Tensor token_kl = log_p.exp() * (log_p - log_q);  // [B, R, K]
  {
    // How much of the teacher's top-k the student's own top-k holds ("Rethinking On-Policy Distillation of Large
    // Language Models", arXiv:2604.13016), as verl logs it.
    torch::NoGradGuard no_grad;
    const torch::Tensor teacher_ids = teacher_top_k_ids.to(log_q.device());
    const torch::Tensor overlap =
        (teacher_ids.unsqueeze(-1) == student_top_k_ids.to(log_q.device()).unsqueeze(-2)).any(-1);  // [B, R, K]
    const torch::Tensor count = overlap.sum(-1);
    const torch::Tensor advantage_sum = (-token_kl.detach() * overlap).sum(-1);
    const torch::Tensor advantage =
        torch::where(count > 0, advantage_sum / count.clamp_min(1), torch::zeros_like(advantage_sum));
    const torch::Tensor valid_count = count.masked_select(valid);
    if (valid_count.numel() > 0) {
      VERL_CHECK(config.topk > 0, "algo", "forward_kl_topk needs distillation.distillation_loss.topk > 0");
      out.metrics["distillation/overlap_ratio"] =
          valid_count.to(torch::kFloat32).mean().item<double>() / static_cast<double>(config.topk);
      const torch::Tensor overlapping = valid & (count > 0);
      out.metrics["distillation/overlap_token_advantage"] =
          overlapping.any().item<bool>() ? advantage.masked_select(overlapping).mean().item<double>() : 0.0;
    }
  }
  // Truncated to the top-k, the two distributions do not sum to 1: the divergence can be negative.
  out.losses = token_kl.sum(-1).clamp_min(0.0);
  return out;
}

DistillationLossOutput distillation_loss_from_tokens(const config::DistillationLossConfig& config,
                                                     DistillationTokenLosses token_losses,
                                                     const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
                                                     const torch::Tensor& response_mask,
                                                     const std::string& loss_agg_mode, const AggLossOptions& agg,
                                                     const torch::Tensor& rollout_is_weights) {
  DistillationLossOutput out;
  out.metrics = std::move(token_losses.metrics);
  torch::Tensor losses = token_losses.losses;
  // verl measures the range before the clamp; a micro-batch without a response token has none (verl's min() raises).
  const torch::Tensor on_response = losses.detach().masked_select(response_mask.to(torch::kBool));
  if (on_response.numel() > 0) {
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
