// verl 0.9.1's on-policy distillation loss (verl/trainer/distillation/losses.py, distillation_loss with the
// single-sample estimators): per response token, kl_penalty(student, teacher, loss_mode) estimates the reverse KL
// from the student to the teacher on the student's own sample; then either
//   use_policy_gradient  its negation (detached) is the advantage of a vanilla PPO loss with the distillation
//                        section's clip ratios (Thinking Machines' on-policy distillation), or
//   otherwise            it is aggregated with loss_agg_mode and back-propagated as a supervised loss.
// The per-token loss is clamped to [-loss_max_clamp, loss_max_clamp] first (after its range is measured).
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

// All [B, R]: the student's log-probs (with autograd), the old ones (the PPO ratio's denominator), the teacher's,
// the response mask; rollout_is_weights undefined for none. `agg` carries the actor's loss_scale_factor.
DistillationLossOutput distillation_loss(const config::DistillationLossConfig& config, const torch::Tensor& log_prob,
                                         const torch::Tensor& old_log_prob, const torch::Tensor& teacher_log_prob,
                                         const torch::Tensor& response_mask, const std::string& loss_agg_mode,
                                         const AggLossOptions& agg = {},
                                         const torch::Tensor& rollout_is_weights = torch::Tensor());

// verl's distillation_ppo_loss around the two losses: whether the task's PPO loss (policy loss, entropy bonus, KL
// loss) is computed at all, and the actor's loss from it (undefined when it is not) and the distillation loss.
// Without task rewards the PPO loss is dropped (it only reports, in policy-gradient mode) and the distillation loss
// counts once; with them it is added times distillation_loss_coef.
bool distillation_computes_task_loss(const config::DistillationLossConfig& config);
torch::Tensor loss_with_distillation(const config::DistillationLossConfig& config, const torch::Tensor& task_loss,
                                     const torch::Tensor& distillation_loss);

}  // namespace verl::algo
