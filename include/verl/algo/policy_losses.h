// The policy losses of verl's registry beyond vanilla / gspo / gpg / cispo (those are in core_algos.h): sapo,
// geo_mean, dppo_tv, dppo_kl, dro, clip_cov, kl_cov, bypass_mode. Same signature as every registered loss (PolicyLossFn);
// the equations sit above each definition in src/algo/policy_losses.cpp. Shapes: (B, R) everywhere.
#pragma once

#include "verl/algo/core_algos.h"

namespace verl::algo {

#define VERL_POLICY_LOSS(name)                                                                                     \
  PolicyLossOutput name(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages,               \
                        const Tensor& response_mask, const std::string& loss_agg_mode, const PolicyLossConfig& config, \
                        const Tensor& rollout_is_weights)

VERL_POLICY_LOSS(compute_policy_loss_sapo);      // soft gate instead of a clip; always seq-mean-token-mean
VERL_POLICY_LOSS(compute_policy_loss_geo_mean);  // GMPO: geometric mean of clipped token ratios per sequence
VERL_POLICY_LOSS(compute_policy_loss_dppo_tv);   // DPPO, binary total-variation trust region
VERL_POLICY_LOSS(compute_policy_loss_dppo_kl);   // DPPO, binary KL trust region
VERL_POLICY_LOSS(compute_policy_loss_dro);       // DRO: -logp A + beta/2 (logp - old)^2
VERL_POLICY_LOSS(compute_policy_loss_clip_cov);  // Clip-Cov: drops the gradient of sampled high-covariance tokens
VERL_POLICY_LOSS(compute_policy_loss_kl_cov);    // KL-Cov: |log ratio| penalty on the top-covariance tokens
// Bypass mode (old_log_prob = the rollout's log-probs): rollout correction between the current policy and the
// rollout, then PPO-clip or REINFORCE on the corrected mask; rollout_is_weights is ignored (as verl).
VERL_POLICY_LOSS(compute_policy_loss_bypass_mode);

#undef VERL_POLICY_LOSS

}  // namespace verl::algo
