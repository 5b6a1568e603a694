#include "verl/algo/distillation_loss.h"

#include <limits>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::algo {

namespace {

struct MaskedStats {
  int64_t count = 0;  // positions where `valid`; the other numbers mean nothing without any
  double mean = 0, min = 0, max = 0;
};

// Each tensor's count, mean, min and max over the `valid` positions, reduced on its device and copied to the host
// once for all of them (masked_select and item() would each wait for the device).
std::vector<MaskedStats> masked_stats(const std::vector<torch::Tensor>& values, const torch::Tensor& valid) {
  torch::NoGradGuard no_grad;
  const torch::Tensor mask = valid.to(torch::kBool);
  const torch::Tensor count = mask.sum().to(torch::kFloat64);
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& v : values) {
    const torch::Tensor x = v.detach().to(torch::kFloat64);
    const double inf = std::numeric_limits<double>::infinity();
    parts.push_back(count);
    parts.push_back(x.masked_fill(~mask, 0).sum() / count.clamp_min(1));
    parts.push_back(x.masked_fill(~mask, inf).min());
    parts.push_back(x.masked_fill(~mask, -inf).max());
  }
  const torch::Tensor host = torch::stack(parts).cpu();
  const double* h = host.data_ptr<double>();
  std::vector<MaskedStats> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.push_back({static_cast<int64_t>(h[4 * i]), h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]});
  }
  return out;
}

}  // namespace

DistillationLossOutput distillation_loss(const config::DistillationLossConfig& config, const torch::Tensor& log_prob,
                                         const torch::Tensor& old_log_prob, const torch::Tensor& teacher_log_prob,
                                         const torch::Tensor& response_mask, const std::string& loss_agg_mode,
                                         const AggLossOptions& agg, const torch::Tensor& rollout_is_weights) {
  VERL_CHECK(!distillation_uses_top_k(config), "algo",
             "distillation_loss: forward_kl_topk reads the teacher's top-k distribution, not one log-prob per token "
             "(forward_kl_topk_token_losses)");
  VERL_CHECK(teacher_log_prob.sizes() == log_prob.sizes() && response_mask.sizes() == log_prob.sizes(), "algo",
             "distillation_loss: teacher_logprobs ", teacher_log_prob.sizes(), ", log_probs ", log_prob.sizes(),
             " and response_mask ", response_mask.sizes(), " must have one shape");
  DistillationTokenLosses token_losses;
  token_losses.losses = kl_penalty(log_prob, teacher_log_prob.to(log_prob.dtype()), config.loss_mode);
  // k1 can be negative: verl logs the mean absolute loss too.
  const MaskedStats abs_loss = masked_stats({token_losses.losses.abs()}, response_mask)[0];
  if (abs_loss.count > 0) token_losses.metrics["distillation/abs_loss"] = abs_loss.mean;
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
  VERL_CHECK(config.topk > 0, "algo", "forward_kl_topk needs distillation.distillation_loss.topk > 0");
  // The probability mass each side puts on the teacher's top-k, before the clamp.
  const torch::Tensor student_mass = log_q.detach().exp().sum(-1), teacher_mass = log_p.exp().sum(-1);
  if (config.log_prob_min_clamp) {
    log_q = log_q.clamp_min(*config.log_prob_min_clamp);
    log_p = log_p.clamp_min(*config.log_prob_min_clamp);
  }
  const torch::Tensor token_kl = log_p.exp() * (log_p - log_q);  // [B, R, K]
  // How much of the teacher's top-k the student's own top-k holds ("Rethinking On-Policy Distillation of Large
  // Language Models", arXiv:2604.13016), as verl logs it: the share of the k tokens, and the mean of
  // -p_t (log p_t - log q_s) over the shared tokens, over the positions that share any (0 where none does).
  torch::Tensor overlap_count, overlap_advantage, overlapping;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor overlap =
        (teacher_top_k_ids.to(log_q.device()).unsqueeze(-1) == student_top_k_ids.to(log_q.device()).unsqueeze(-2))
            .any(-1);  // [B, R, K]
    overlap_count = overlap.sum(-1).to(torch::kFloat64);
    overlapping = overlap_count > 0;
    // 0 where no token is shared, so its mean over the response tokens divided by the share of positions that
    // share any is the mean over those positions.
    overlap_advantage = (-token_kl.detach() * overlap).sum(-1) / overlap_count.clamp_min(1);
  }
  const std::vector<MaskedStats> stats =
      masked_stats({student_mass, teacher_mass, overlap_count, overlap_advantage, overlapping}, valid);
  if (stats[0].count > 0) {
    for (const auto& [name, mass] : {std::pair{"student", stats[0]}, std::pair{"teacher", stats[1]}}) {
      const std::string key = str_cat("distillation/", name, "_mass");
      out.metrics[key] = mass.mean;
      out.metrics[key + "_min"] = mass.min;
      out.metrics[key + "_max"] = mass.max;
    }
    out.metrics["distillation/overlap_ratio"] = stats[2].mean / static_cast<double>(config.topk);
    out.metrics["distillation/overlap_token_advantage"] = stats[4].mean > 0 ? stats[3].mean / stats[4].mean : 0.0;
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
  const MaskedStats range = masked_stats({losses}, response_mask)[0];
  if (range.count > 0) {
    out.metrics["distillation/loss_min"] = range.min;
    out.metrics["distillation/loss_max"] = range.max;
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
      const std::string name = starts_with(key, prefix) ? key.substr(prefix.size()) : key;
      out.metrics["distillation/" + name] = value;
    }
  } else {
    out.loss = agg_loss(losses, response_mask, loss_agg_mode, agg);
  }
  return out;
}

bool distillation_uses_top_k(const config::DistillationLossConfig& config) {
  return config.loss_mode == "forward_kl_topk";
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
