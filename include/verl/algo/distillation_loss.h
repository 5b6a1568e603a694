// verl 0.9.1's on-policy distillation loss (verl/trainer/distillation/losses.py, distillation_loss with the
// single-sample estimators): per response token, kl_penalty(student, teacher, loss_mode) estimates the reverse KL
// from the student to the teacher on the student's own sample; then either
//   use_policy_gradient  its negation (detached) is the advantage of a vanilla PPO loss with the distillation
//                        section's clip ratios (Thinking Machines' on-policy distillation), or
//   otherwise            it is aggregated with loss_agg_mode and back-propagated as a supervised loss.
// The per-token loss is clamped to [-loss_max_clamp, loss_max_clamp] first (after its range is measured).
// loss_mode=forward_kl_topk (verl/trainer/distillation/fsdp/losses.py) replaces the estimator by the forward KL
// from the teacher's top-k distribution: sum over the teacher's k tokens of p_t (log p_t - log q_s), the student's
// log-probs read at the teacher's tokens (model/top_k_log_probs.h), both clamped below at log_prob_min_clamp, the
// result at least 0 (the truncated distributions do not sum to 1).
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

#include "verl/algo/core_algos.h"
#include "verl/config/ppo_config.h"

namespace verl::algo {

struct DistillationLossOutput {
  torch::Tensor loss;  // scalar with autograd history
  // verl's keys before the actor's prefix: distillation/abs_loss, distillation/loss_min, distillation/loss_max and,
  // with use_policy_gradient, distillation/pg_clipfrac, distillation/ppo_kl, distillation/pg_clipfrac_lower.
  std::map<std::string, double> metrics;
};

// The single-sample estimators (not forward_kl_topk). All [B, R]: the student's log-probs (with autograd), the old ones
// (the PPO ratio's denominator), the teacher's, the response mask; rollout_is_weights undefined for none. `agg` carries
// the actor's loss_scale_factor.
DistillationLossOutput distillation_loss(const config::DistillationLossConfig& config, const torch::Tensor& log_prob,
                                         const torch::Tensor& old_log_prob, const torch::Tensor& teacher_log_prob,
                                         const torch::Tensor& response_mask, const std::string& loss_agg_mode,
                                         const AggLossOptions& agg = {},
                                         const torch::Tensor& rollout_is_weights = torch::Tensor());

// The per-token losses [B,R] before the clamp and the shared tail above, and the loss-specific metrics.
struct DistillationTokenLosses {
  torch::Tensor losses;
  std::map<std::string, double> metrics;
};

// forward_kl_topk's per-token losses. All [B,R,K]: the student's log-probs at the teacher's top-k tokens (with
// autograd), the student's own top-k token ids, the teacher's top-k log-probs and ids (padding: any ids, log-probs
// 0). Metrics: distillation/{student,teacher}_mass{,_min,_max}, distillation/overlap_ratio (the share of the
// teacher's top-k in the student's), distillation/overlap_token_advantage (-p_t (log p_t - log q_s) averaged over
// the overlapping tokens of each position, then over the positions with any).
DistillationTokenLosses forward_kl_topk_token_losses(const config::DistillationLossConfig& config,
                                                     const torch::Tensor& student_top_k_log_probs,
                                                     const torch::Tensor& student_top_k_ids,
                                                     const torch::Tensor& teacher_top_k_log_probs,
                                                     const torch::Tensor& teacher_top_k_ids,
                                                     const torch::Tensor& response_mask);

// The shared tail of every loss mode: the range metrics, loss_max_clamp, then the policy gradient on the negated
// losses or their aggregation (arguments as distillation_loss's).
DistillationLossOutput distillation_loss_from_tokens(const config::DistillationLossConfig& config,
                                                     DistillationTokenLosses token_losses,
                                                     const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
                                                     const torch::Tensor& response_mask,
                                                     const std::string& loss_agg_mode, const AggLossOptions& agg = {},
                                                     const torch::Tensor& rollout_is_weights = torch::Tensor());

// verl's DistillationLossSettings.use_topk: the loss reads the teacher's top-k distribution (teacher_logprobs and
// teacher_ids [B, R, k]) rather than one log-prob per response token.
bool distillation_uses_top_k(const config::DistillationLossConfig& config);

// verl's distillation_ppo_loss around the two losses: whether the task's PPO loss (policy loss, entropy bonus, KL
// loss) is computed at all, and the actor's loss from it (undefined when it is not) and the distillation loss.
// Without task rewards the PPO loss is dropped (it only reports, in policy-gradient mode) and the distillation loss
// counts once; with them it is added times distillation_loss_coef.
bool distillation_computes_task_loss(const config::DistillationLossConfig& config);
torch::Tensor loss_with_distillation(const config::DistillationLossConfig& config, const torch::Tensor& task_loss,
                                     const torch::Tensor& distillation_loss);

}  // namespace verl::algo
