// Internal helpers shared by core_algos.cpp and policy_losses.cpp (the policy losses in both files), kept in one place.
#pragma once

#include <utility>

#include "verl/algo/core_algos.h"

namespace verl::algo::detail {

// The clip band (eps_lo, eps_hi): clip_ratio_low / clip_ratio_high, each falling back to clip_ratio.
struct ClipRange {
  double low;
  double high;
};

inline ClipRange clip_range(const PolicyLossConfig& c) {
  return {c.clip_ratio_low.value_or(c.clip_ratio), c.clip_ratio_high.value_or(c.clip_ratio)};
}

// A scalar tensor as a double metric value.
inline double metric(const Tensor& t) { return t.detach().item<double>(); }

// A mask (or boolean tensor) converted to the dtype of `like`.
inline Tensor as_dtype_of(const Tensor& mask, const Tensor& like) { return mask.to(like.scalar_type()); }

// losses * sg(rollout_is_weights) when the weights are given (no gradient flows into the weights).
inline Tensor apply_is_weights(const Tensor& losses, const Tensor& rollout_is_weights) {
  return rollout_is_weights.defined() ? losses * rollout_is_weights.detach() : losses;
}

// losses * rollout_is_weights when the weights are given, NOT detached (a gradient flows into weights that
// require one); what the losses of policy_losses.cpp have always done.
inline Tensor apply_is_weights_keep_grad(const Tensor& losses, const Tensor& rollout_is_weights) {
  return rollout_is_weights.defined() ? losses * rollout_is_weights : losses;
}

// ratio = exp(clamp(lp - old, -20, 20)) and ppo_kl = masked_mean(-(clamped lp - old), m).
inline std::pair<Tensor, Tensor> clamped_ratio_and_ppo_kl(const Tensor& old_log_prob, const Tensor& log_prob,
                                                          const Tensor& response_mask) {
  Tensor neg_approx_kl = torch::clamp(log_prob - old_log_prob, -20.0, 20.0);
  return {torch::exp(neg_approx_kl), masked_mean(-neg_approx_kl, response_mask)};
}

}  // namespace verl::algo::detail
