// verl's further policy losses (verl/trainer/ppo/core_algos.py). Notation: lp = log_prob, old = old_log_prob,
// A = advantages, m = response_mask, w = rollout_is_weights (multiplied into the per-token loss when given),
// eps_lo / eps_hi = clip_ratio_low / high (falling back to clip_ratio), mean_m = masked_mean over m.
#include "verl/algo/policy_losses.h"

#include <algorithm>
#include <functional>

#include "policy_loss_support.h"
#include "verl/common/error.h"

namespace verl::algo {

namespace {

using detail::apply_is_weights_keep_grad;
using detail::as_dtype_of;
using detail::clamped_ratio_and_ppo_kl;
using detail::clip_range;
using detail::ClipRange;
using detail::metric;

void check_inputs(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages,
                  const Tensor& response_mask, const Tensor& rollout_is_weights) {
  for (const Tensor* t : {&old_log_prob, &advantages, &response_mask}) {
    VERL_CHECK(t->sizes() == log_prob.sizes(), "algo", "policy loss inputs must share log_prob's shape ",
               log_prob.sizes(), ", got ", t->sizes());
  }
  VERL_CHECK(!rollout_is_weights.defined() || rollout_is_weights.sizes() == log_prob.sizes(), "algo",
             "rollout_is_weights has shape ", rollout_is_weights.sizes(), "; expected ", log_prob.sizes());
  VERL_CHECK(log_prob.dim() == 2, "algo", "log_prob must be (B, R), got shape ", log_prob.sizes());
}

// The DPPO loss shared by both trust regions: ratio, ppo_kl = clamped_ratio_and_ppo_kl; valid = the trust region's
// boolean mask (given eps) as ratio's dtype, detached; L = -A sg(min(ratio, c)) lp valid [* w];
// pg_clipfrac = mean_m(1 - valid); pg_clipfrac_lower = mean_m([ratio > c] valid).
PolicyLossOutput dppo_loss(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& A, const Tensor& m,
                           const std::string& loss_agg_mode, const PolicyLossConfig& config, const Tensor& w,
                           const std::function<Tensor(const ClipRange&)>& trust_region) {
  check_inputs(old_log_prob, log_prob, A, m, w);
  const ClipRange eps = clip_range(config);
  auto [ratio, ppo_kl] = clamped_ratio_and_ppo_kl(old_log_prob, log_prob, m);
  Tensor valid = as_dtype_of(trust_region(eps), ratio).detach();
  const double c = config.clip_ratio_c;
  Tensor truncated = torch::clamp_max(ratio, c).detach();
  Tensor pg_losses = apply_is_weights_keep_grad(-A * truncated * log_prob * valid, w);
  Tensor pg_loss = agg_loss(pg_losses, m, loss_agg_mode, config.agg);
  Tensor clipfrac = masked_mean(1.0 - valid, m);
  Tensor clipfrac_lower = masked_mean(as_dtype_of(ratio > c, ratio) * valid, m);
  return {pg_loss,
          {{"actor/pg_clipfrac", metric(clipfrac)},
           {"actor/ppo_kl", metric(ppo_kl)},
           {"actor/pg_clipfrac_lower", metric(clipfrac_lower)}}};
}

}  // namespace

// SAPO: ratio = exp(clamp(lp - old, -20, 20)); tau = tau_pos where A > 0, else tau_neg;
//   gate = sigmoid(tau (ratio - 1)) * 4 / tau;  L = -gate A [* w];
//   pg_loss = agg_loss(L, m, "seq-mean-token-mean") whatever loss_agg_mode says (as verl);
//   ppo_kl = mean_m(old - lp); pg_clipfrac = pg_clipfrac_lower = 0.
PolicyLossOutput compute_policy_loss_sapo(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages,
                                          const Tensor& response_mask, const std::string&,
                                          const PolicyLossConfig& config, const Tensor& rollout_is_weights) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const Tensor& A = advantages;
  auto [ratio, ppo_kl] = clamped_ratio_and_ppo_kl(old_log_prob, log_prob, response_mask);
  Tensor tau = torch::where(A > 0, torch::scalar_tensor(config.tau_pos, A.options()),
                            torch::scalar_tensor(config.tau_neg, A.options()));
  Tensor gates = torch::sigmoid(tau * (ratio - 1.0)) * (4.0 / tau);
  Tensor pg_losses = apply_is_weights_keep_grad(-gates * A, rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, "seq-mean-token-mean", config.agg);
  return {pg_loss, {{"actor/pg_clipfrac", 0.0}, {"actor/ppo_kl", metric(ppo_kl)}, {"actor/pg_clipfrac_lower", 0.0}}};
}

// GMPO (geo_mean): d = lp - old (unclamped); sgn = sign(A); d_c = clamp(d, -eps_lo, eps_hi);
//   d* = sgn min(sgn d, sgn d_c);  ratio_i = exp(sum_t d* m / (|y_i| + 1e-8));  a_i = sum_t A m / (|y_i| + 1e-8);
//   L_i = -a_i ratio_i [* exp(sum_t log(w + 1e-10) m / (|y_i| + 1e-8))];  pg_loss = mean_i L_i (over all B rows,
//   loss_agg_mode unused, as verl);  pg_clipfrac = mean_m([d != d_c] [A > 0]); pg_clipfrac_lower = ... [A < 0].
PolicyLossOutput compute_policy_loss_geo_mean(const Tensor& old_log_prob, const Tensor& log_prob,
                                              const Tensor& advantages, const Tensor& response_mask,
                                              const std::string&, const PolicyLossConfig& config,
                                              const Tensor& rollout_is_weights) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const ClipRange eps = clip_range(config);
  const Tensor& A = advantages;
  Tensor m = as_dtype_of(response_mask, log_prob);
  Tensor d = log_prob - old_log_prob;
  Tensor ppo_kl = masked_mean(-d, m);
  Tensor sgn = torch::sign(A);
  Tensor d_clamped = torch::clamp(d, -eps.low, eps.high);
  Tensor d_min = sgn * torch::minimum(sgn * d, sgn * d_clamped);
  Tensor lengths = m.sum(-1) + 1e-8;
  Tensor ratio = torch::exp((d_min * m).sum(-1) / lengths);
  Tensor seq_adv = (A * m).sum(-1) / lengths;
  Tensor pg_losses = -seq_adv * ratio;
  if (rollout_is_weights.defined()) {
    pg_losses = pg_losses * torch::exp((torch::log(rollout_is_weights + 1e-10) * m).sum(-1) / lengths);
  }
  Tensor pg_loss = pg_losses.mean();
  Tensor clipped = torch::ne(d, d_clamped);
  Tensor clipfrac = masked_mean(as_dtype_of(clipped & (A > 0), d), m);
  Tensor clipfrac_lower = masked_mean(as_dtype_of(clipped & (A < 0), d), m);
  return {pg_loss,
          {{"actor/pg_clipfrac", metric(clipfrac)},
           {"actor/ppo_kl", metric(ppo_kl)},
           {"actor/pg_clipfrac_lower", metric(clipfrac_lower)}}};
}

// DPPO-Binary-TV: p = exp(lp), q = exp(old); valid = (p - q <= eps_hi) where A > 0, (p - q >= -eps_lo) elsewhere
// (clip_ratio* are total-variation thresholds here); then dppo_loss above with c = clip_ratio_c.
PolicyLossOutput compute_policy_loss_dppo_tv(const Tensor& old_log_prob, const Tensor& log_prob,
                                             const Tensor& advantages, const Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const Tensor& rollout_is_weights) {
  return dppo_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights,
                   [&](const ClipRange& eps) {
                     Tensor diff = torch::exp(log_prob) - torch::exp(old_log_prob);
                     return torch::where(advantages > 0, diff <= eps.high, diff >= -eps.low);
                   });
}

// DPPO-Binary-KL: p = exp(lp), q = exp(old); kl = q (old - lp) + (1 - q) log((1 - q + 1e-8) / (1 - p + 1e-8));
// valid = (kl <= eps_hi or p <= q) where A > 0, (kl <= eps_lo or p >= q) elsewhere; then dppo_loss.
PolicyLossOutput compute_policy_loss_dppo_kl(const Tensor& old_log_prob, const Tensor& log_prob,
                                             const Tensor& advantages, const Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const Tensor& rollout_is_weights) {
  return dppo_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights,
                   [&](const ClipRange& eps) {
                     Tensor p = torch::exp(log_prob), q = torch::exp(old_log_prob);
                     Tensor binary_kl =
                         q * (old_log_prob - log_prob) + (1 - q) * torch::log((1.0 - q + 1e-8) / (1.0 - p + 1e-8));
                     Tensor valid_pos = (binary_kl <= eps.high) | (p <= q);
                     Tensor valid_neg = (binary_kl <= eps.low) | (p >= q);
                     return torch::where(advantages > 0, valid_pos, valid_neg);
                   });
}

// DRO: L = -(lp A - beta/2 (lp - old)^2) [* w], beta = policy_loss.dro_beta > 0; metrics: ppo_kl only.
PolicyLossOutput compute_policy_loss_dro(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages,
                                         const Tensor& response_mask, const std::string& loss_agg_mode,
                                         const PolicyLossConfig& config, const Tensor& rollout_is_weights) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  VERL_CHECK(config.dro_beta && *config.dro_beta > 0, "algo",
             "policy_loss.dro_beta must be a positive value when using DRO (loss_mode=dro)");
  const double beta = *config.dro_beta;
  Tensor log_ratio = log_prob - old_log_prob;
  Tensor pg_losses =
      apply_is_weights_keep_grad(-(log_prob * advantages - 0.5 * beta * log_ratio.square()), rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  return {pg_loss, {{"actor/ppo_kl", metric(masked_mean(-log_ratio, response_mask))}}};
}

// Clip-Cov: ratio = exp(lp - old) (unclamped); L1 = -A ratio, L2 = -A clamp(ratio, 1 - eps_lo, 1 + eps_hi);
//   cov = (A - mean_m A)(lp - mean_m lp); candidates: m > 0, not already clipped (L2 > L1), lb < cov < ub;
//   n = max(floor(clip_cov_ratio * sum m), 1) candidates drawn by torch's randperm (the default generator, as
//   verl) get corr = 0 (their gradient is dropped);  L = max(L1, L2) corr [* w];
//   pg_clipfrac = mean_m[corr == 0]; ppo_kl = mean_m(old - lp).
PolicyLossOutput compute_policy_loss_clip_cov(const Tensor& old_log_prob, const Tensor& log_prob,
                                              const Tensor& advantages, const Tensor& response_mask,
                                              const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                              const Tensor& rollout_is_weights) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  VERL_CHECK(config.clip_cov_ratio > 0, "algo", "policy_loss.clip_cov_ratio must be > 0, got ",
             config.clip_cov_ratio);
  const ClipRange eps = clip_range(config);
  const Tensor& A = advantages;
  Tensor d = log_prob - old_log_prob;
  Tensor ratio = torch::exp(d);
  Tensor ppo_kl = masked_mean(-d, response_mask);
  Tensor losses1 = -A * ratio;
  Tensor losses2 = -A * torch::clamp(ratio, 1.0 - eps.low, 1.0 + eps.high);
  Tensor valid = response_mask > 0;
  Tensor corr = torch::ones_like(A);
  {
    torch::NoGradGuard no_grad;
    Tensor clipped = (losses2 > losses1) & valid;
    Tensor cov = (A - masked_mean(A, response_mask)) * (log_prob.detach() - masked_mean(log_prob.detach(), response_mask));
    cov = cov.masked_fill(~valid, -INFINITY).masked_fill(clipped, -INFINITY);
    const double tokens = as_dtype_of(response_mask, A).sum().item<double>();
    const int64_t clip_num = std::max<int64_t>(static_cast<int64_t>(config.clip_cov_ratio * tokens), 1);
    Tensor candidates = torch::nonzero((cov < config.clip_cov_ub) & (cov > config.clip_cov_lb) & valid);
    const int64_t n = candidates.size(0);
    if (n > 0) {
      Tensor perm = torch::randperm(n, torch::TensorOptions().dtype(torch::kInt64));
      candidates = candidates.index_select(0, perm.narrow(0, 0, std::min(clip_num, n)).to(candidates.device()));
      corr.index_put_({candidates.select(1, 0), candidates.select(1, 1)}, 0.0);
    }
  }
  Tensor clipfrac = masked_mean(as_dtype_of(corr == 0, A), response_mask);
  Tensor pg_losses = apply_is_weights_keep_grad(torch::maximum(losses1, losses2) * corr, rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  return {pg_loss, {{"actor/pg_clipfrac", metric(clipfrac)}, {"actor/ppo_kl", metric(ppo_kl)}}};
}

// KL-Cov: d = lp - old; ratio = exp(d); over the N valid tokens cov = (A - mean A)(lp - mean lp) (plain means
//   over the valid tokens); the top max(1, floor(N kl_cov_ratio)) tokens by cov get L = -A ratio + ppo_kl_coef |d|,
//   the others L = -A ratio;  [* w];  metrics: ppo_kl = mean_m |d| (verl reports the absolute value).
PolicyLossOutput compute_policy_loss_kl_cov(const Tensor& old_log_prob, const Tensor& log_prob,
                                            const Tensor& advantages, const Tensor& response_mask,
                                            const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                            const Tensor& rollout_is_weights) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  VERL_CHECK(config.kl_cov_ratio > 0, "algo", "policy_loss.kl_cov_ratio must be > 0, got ", config.kl_cov_ratio);
  const Tensor& A = advantages;
  Tensor d = log_prob - old_log_prob;
  Tensor abs_kl = d.abs();
  Tensor ratio = torch::exp(d);
  Tensor ppo_kl_abs = masked_mean(abs_kl, response_mask);
  Tensor losses = -A * ratio;
  Tensor losses_kl = -A * ratio + config.ppo_kl_coef * abs_kl;
  Tensor selected = torch::zeros({A.numel()}, torch::TensorOptions().dtype(torch::kBool).device(A.device()));
  {
    torch::NoGradGuard no_grad;
    Tensor valid = response_mask > 0;
    Tensor valid_idx = torch::nonzero(valid.reshape(-1)).squeeze(-1);
    const int64_t n = valid_idx.numel();
    if (n > 0) {
      Tensor adv_v = A.detach().masked_select(valid), lp_v = log_prob.detach().masked_select(valid);
      Tensor cov = (adv_v - adv_v.mean()) * (lp_v - lp_v.mean());
      const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * config.kl_cov_ratio));
      Tensor top = std::get<1>(torch::topk(cov, k, -1, /*largest=*/true));
      selected.index_fill_(0, valid_idx.index_select(0, top), true);
    }
  }
  Tensor pg_losses =
      apply_is_weights_keep_grad(torch::where(selected.view(A.sizes()), losses_kl, losses), rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  return {pg_loss, {{"actor/ppo_kl", metric(ppo_kl_abs)}}};
}

// Bypass mode: old = pi_rollout. Under no_grad, rollout correction of the current policy against the rollout
//   (compute_rollout_correction_and_rejection_mask(lp, old, m, policy_loss.rollout_correction)) gives IS weights
//   w' and the rejection mask m'; then
//   loss_type ppo_clip:  vanilla(old, lp, A, m') (no IS weights: the ratio is the correction);
//   loss_type reinforce: L = -A lp [* w'], pg_loss = agg_loss(L, m'), ppo_kl = mean_m'(old - lp);
//   plus the rollout_corr/ metrics.
PolicyLossOutput compute_policy_loss_bypass_mode(const Tensor& old_log_prob, const Tensor& log_prob,
                                                 const Tensor& advantages, const Tensor& response_mask,
                                                 const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                                 const Tensor&) {
  check_inputs(old_log_prob, log_prob, advantages, response_mask, Tensor());
  VERL_CHECK(config.rollout_correction.has_value(), "algo",
             "policy_loss.loss_mode=bypass_mode needs the rollout correction config (verl sets it with "
             "algorithm.rollout_correction.bypass_mode=true)");
  RolloutCorrectionOutput rc;
  {
    torch::NoGradGuard no_grad;
    rc = compute_rollout_correction_and_rejection_mask(log_prob.detach(), old_log_prob, response_mask,
                                                       *config.rollout_correction);
  }
  PolicyLossOutput out;
  if (config.bypass_loss_type == "reinforce") {
    Tensor pg_losses = apply_is_weights_keep_grad(-advantages * log_prob, rc.rollout_is_weights);
    out.pg_loss = agg_loss(pg_losses, rc.response_mask, loss_agg_mode, config.agg);
    out.metrics["actor/ppo_kl"] = metric(masked_mean(-(log_prob - old_log_prob), rc.response_mask));
  } else {
    VERL_CHECK(config.bypass_loss_type == "ppo_clip", "algo", "rollout_correction.loss_type must be ppo_clip or "
               "reinforce, got '", config.bypass_loss_type, "'");
    out = compute_policy_loss_vanilla(old_log_prob, log_prob, advantages, rc.response_mask, loss_agg_mode, config);
  }
  out.metrics.insert(rc.metrics.begin(), rc.metrics.end());
  return out;
}

}  // namespace verl::algo
