// verl's PPO algorithms as pure LibTorch functions (verl/trainer/ppo/core_algos.py and the helpers of
// verl/utils/torch_functional.py): tensors in, tensors out, no hidden state. Names, arguments and
// defaults follow verl; the equations are in src/algo/core_algos.cpp above each function.
//
// Shapes: B = number of responses, R = response length, V = vocabulary.
// Masks may be bool, integer or floating; they are converted to the dtype of the values they mask.
//
// Groups (GRPO, RLOO, ...): `index` holds one group id per response (verl's `uid`, a uuid string per
// prompt repeated n times). Responses with equal ids form a group; the order of groups does not matter.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/algo_names.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/rollout_corr.h"

namespace verl::config {
struct ActorConfig;
}

namespace verl::algo {

using torch::Tensor;

// ---- helpers (verl/utils/torch_functional.py) -----------------------------------------------------

// Sum over `axis` (all elements when nullopt) of values where mask is set; NaN/inf at masked-out
// positions do not leak into the result.
Tensor masked_sum(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis = std::nullopt);
Tensor masked_mean(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis = std::nullopt);
// Variance over all masked elements; unbiased (N-1) by default. Throws when fewer than 2 elements
// are masked in and unbiased is set (verl raises too).
Tensor masked_var(const Tensor& values, const Tensor& mask, bool unbiased = true);
Tensor masked_whiten(const Tensor& values, const Tensor& mask, bool shift_mean = true);
Tensor clip_by_value(const Tensor& x, const Tensor& tensor_min, const Tensor& tensor_max);
Tensor entropy_from_logits(const Tensor& logits);  // (..., V) -> (...)
// (B, R) ids -> (B, R) mask: 1 up to and including the first id in `eos_token`, 0 after.
Tensor get_response_mask(const Tensor& response_id, const std::vector<int64_t>& eos_token,
                         torch::Dtype dtype = torch::kInt64);
Tensor compute_position_id_with_mask(const Tensor& mask);
// sum_v softmax(logits)_v^2 = exp(logsumexp(2 z) - 2 logsumexp(z)); (..., V) -> (...). The optimal token
// baselines' input (verl's calculate_sum_pi_squared_from_logits).
Tensor sum_pi_squared_from_logits(const Tensor& logits);
// log softmax(logits)[labels] computed in float32 (float64 stays float64); (..., V), (...) -> (...).
Tensor logprobs_from_logits(const Tensor& logits, const Tensor& labels);

// ---- advantage estimators (registry keyed by algorithm.adv_estimator) -------------------------------

// Every estimator returns (advantages, returns), both (B, R).
using AdvantageReturn = std::pair<Tensor, Tensor>;

Tensor group_index_from_uids(const std::vector<std::string>& index);  // (B,) int64, ids by first appearance

AdvantageReturn compute_gae_advantage_return(const Tensor& token_level_rewards, const Tensor& values,
                                             const Tensor& response_mask, double gamma, double lam);
AdvantageReturn compute_grpo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index, double epsilon = 1e-6,
                                               bool norm_adv_by_std_in_grpo = true);
// GRPO by per-group sums (verl's grpo_vectorized): the group mean and std are computed in float32 whatever the
// scores' dtype (verl's group_mean_std), so it equals the loop form to float32 precision only.
AdvantageReturn compute_grpo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index,
                                                          double epsilon = 1e-6,
                                                          bool norm_adv_by_std_in_grpo = true);
AdvantageReturn compute_rloo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index);
// rloo_vectorized differs from rloo for a group of one response: 0 here, the score itself in rloo (as verl).
AdvantageReturn compute_rloo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index);
// Pass@k: only the best response of each group gets an advantage, (max - second max) [/ (std + eps)]; every
// group needs at least 2 responses (an error otherwise, as verl).
AdvantageReturn compute_grpo_passk_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                                     const std::vector<std::string>& index, double epsilon = 1e-6,
                                                     bool norm_adv_by_std_in_grpo = true);
// GDPO: each reward component (B,) normalised by GRPO on its own, summed with weights (1 each when empty),
// then whitened over the batch. No components: the summed token_level_rewards is the one component. Components
// are float32 (verl reads compute_score's values with np.float32).
AdvantageReturn compute_gdpo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index,
                                               const std::vector<Tensor>& reward_components = {},
                                               const std::vector<double>& reward_weights = {},
                                               double epsilon = 1e-6, bool norm_adv_by_std_in_grpo = true);
AdvantageReturn compute_reinforce_plus_plus_outcome_advantage(const Tensor& token_level_rewards,
                                                              const Tensor& response_mask, double gamma);
AdvantageReturn compute_reinforce_plus_plus_baseline_outcome_advantage(const Tensor& token_level_rewards,
                                                                       const Tensor& response_mask,
                                                                       const std::vector<std::string>& index);
AdvantageReturn compute_remax_outcome_advantage(const Tensor& token_level_rewards, const Tensor& reward_baselines,
                                                const Tensor& response_mask);
AdvantageReturn compute_opo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                              const std::vector<std::string>& index);
AdvantageReturn compute_gpg_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                              const std::vector<std::string>& index, double f_norm = 1.0);

// The uniform call used by the registry (verl's compute_advantage picks arguments by name).
struct AdvantageInputs {
  Tensor token_level_rewards;       // (B, R)
  Tensor response_mask;             // (B, R)
  Tensor values;                    // (B, R), gae only
  Tensor reward_baselines;          // (B,), remax only
  std::vector<std::string> index;   // (B,) uid, group-based estimators only
  Tensor old_log_probs;             // (B, R), optimal_token_baseline forms only
  Tensor sum_pi_squared;            // (B, R), optimal_token_baseline forms only (actor.calculate_sum_pi_squared)
  Tensor rollout_is_weights;        // (B, R) or undefined, optimal_token_baseline forms only
  std::vector<Tensor> reward_components;  // gdpo: (B,) per algorithm.gdpo_reward_keys entry
};
struct AdvantageOptions {
  double gamma = 1.0;                  // algorithm.gamma
  double lam = 1.0;                    // algorithm.lam
  bool norm_adv_by_std_in_grpo = true; // algorithm.norm_adv_by_std_in_grpo
  std::vector<double> gdpo_reward_weights;  // algorithm.gdpo_reward_weights (empty: 1 each)
};
using AdvantageEstimatorFn = std::function<AdvantageReturn(const AdvantageInputs&, const AdvantageOptions&)>;

// Throws, listing the valid names, for an unknown estimator.
const AdvantageEstimatorFn& get_adv_estimator_fn(const std::string& name);
AdvantageReturn compute_advantage(const std::string& adv_estimator, const AdvantageInputs& inputs,
                                  const AdvantageOptions& options = {});

// ---- loss aggregation ------------------------------------------------------------------------------

// Optional global statistics (verl's global_batch_info); unset fields are computed from the mask.
struct AggLossOptions {
  double dp_size = 1.0;
  std::optional<double> batch_num_tokens;
  std::optional<double> global_batch_size;
  std::optional<double> loss_scale_factor;
};
// loss_mat, loss_mask: (B, R) -> scalar. Never NaN on an all-masked input (the result is 0 then).
Tensor agg_loss(const Tensor& loss_mat, const Tensor& loss_mask, const std::string& loss_agg_mode,
                const AggLossOptions& options = {});

// ---- policy losses (registry keyed by actor.policy_loss.loss_mode) ---------------------------------

struct PolicyLossConfig {
  double clip_ratio = 0.2;
  std::optional<double> clip_ratio_low;   // falls back to clip_ratio
  std::optional<double> clip_ratio_high;  // falls back to clip_ratio
  double clip_ratio_c = 3.0;              // dual-clip bound, must be > 1 (dppo_*: the truncation of the ratio)
  double tau_pos = 1.0;                   // sapo: gate temperature where A > 0 (actor.tau_pos)
  double tau_neg = 1.05;                  // sapo: gate temperature where A <= 0 (actor.tau_neg)
  double clip_cov_ratio = 0.0002;         // policy_loss.clip_cov_ratio: fraction of tokens clip_cov may clip
  double clip_cov_lb = 1.0;               // policy_loss.clip_cov_lb / clip_cov_ub: the covariance band
  double clip_cov_ub = 5.0;
  double kl_cov_ratio = 0.0002;           // policy_loss.kl_cov_ratio: fraction of tokens kl_cov penalises
  double ppo_kl_coef = 0.1;               // policy_loss.ppo_kl_coef: kl_cov's |log ratio| coefficient
  std::optional<double> dro_beta;         // policy_loss.dro_beta: required (> 0) by dro
  // bypass_mode: algorithm.rollout_correction as verl passes it in policy_loss.rollout_correction (unset: the loss
  // is an error), and its loss_type: "ppo_clip" or "reinforce".
  std::optional<RolloutCorrectionOptions> rollout_correction;
  std::string bypass_loss_type = "ppo_clip";
  AggLossOptions agg;                     // loss_scale_factor etc. passed on to agg_loss

  static PolicyLossConfig from_actor_config(const config::ActorConfig& actor);
};

// pg_loss is a scalar with autograd history; metrics use verl's keys actor/pg_clipfrac, actor/ppo_kl,
// actor/pg_clipfrac_lower, each loss reporting the subset verl's does (gpg none, dro / kl_cov only ppo_kl,
// clip_cov no pg_clipfrac_lower).
struct PolicyLossOutput {
  Tensor pg_loss;
  std::map<std::string, double> metrics;
};

// rollout_is_weights: (B, R) or an undefined Tensor for none.
using PolicyLossFn = std::function<PolicyLossOutput(
    const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages, const Tensor& response_mask,
    const std::string& loss_agg_mode, const PolicyLossConfig& config, const Tensor& rollout_is_weights)>;

// vanilla: PPO clip (clip_ratio_low / high) with dual clip (clip_ratio_c).
// gspo: sequence-level ratio; pg_clipfrac_lower is 0 (no dual clip).
// gpg: -logp * A; no ratio and no metrics (as verl).
// cispo: -sg(clip(ratio)) * A * logp; pg_clipfrac = ratio outside the band, pg_clipfrac_lower is 0 (as verl).
PolicyLossOutput compute_policy_loss_vanilla(const Tensor& old_log_prob, const Tensor& log_prob,
                                             const Tensor& advantages, const Tensor& response_mask,
                                             const std::string& loss_agg_mode = "token-mean",
                                             const PolicyLossConfig& config = {},
                                             const Tensor& rollout_is_weights = {});
PolicyLossOutput compute_policy_loss_gspo(const Tensor& old_log_prob, const Tensor& log_prob,
                                          const Tensor& advantages, const Tensor& response_mask,
                                          const std::string& loss_agg_mode = "seq-mean-token-mean",
                                          const PolicyLossConfig& config = {},
                                          const Tensor& rollout_is_weights = {});
PolicyLossOutput compute_policy_loss_gpg(const Tensor& old_log_prob, const Tensor& log_prob,
                                         const Tensor& advantages, const Tensor& response_mask,
                                         const std::string& loss_agg_mode = "token-mean",
                                         const PolicyLossConfig& config = {},
                                         const Tensor& rollout_is_weights = {});
PolicyLossOutput compute_policy_loss_cispo(const Tensor& old_log_prob, const Tensor& log_prob,
                                           const Tensor& advantages, const Tensor& response_mask,
                                           const std::string& loss_agg_mode = "token-mean",
                                           const PolicyLossConfig& config = {},
                                           const Tensor& rollout_is_weights = {});

// The other registered losses: sapo, geo_mean, dppo_tv, dppo_kl, dro, clip_cov, kl_cov (verl/algo/policy_losses.h).

// Throws, listing the valid names, for an unknown mode.
const PolicyLossFn& get_policy_loss_fn(const std::string& loss_mode);
PolicyLossOutput compute_policy_loss(const std::string& loss_mode, const Tensor& old_log_prob,
                                     const Tensor& log_prob, const Tensor& advantages,
                                     const Tensor& response_mask, const std::string& loss_agg_mode = "token-mean",
                                     const PolicyLossConfig& config = {}, const Tensor& rollout_is_weights = {});

// ---- value loss, entropy, KL -------------------------------------------------------------------------

struct ValueLossOutput {
  Tensor vf_loss;      // scalar, with autograd history
  Tensor vf_clipfrac;  // scalar, detached
};
ValueLossOutput compute_value_loss(const Tensor& vpreds, const Tensor& returns, const Tensor& values,
                                   const Tensor& response_mask, double cliprange_value,
                                   const std::string& loss_agg_mode = "token-mean",
                                   const AggLossOptions& agg = {});

// (B, R, V) logits -> scalar aggregated entropy.
Tensor compute_entropy_loss(const Tensor& logits, const Tensor& response_mask,
                            const std::string& loss_agg_mode = "token-mean");

// Per-token KL estimate (B, R) of kind `kl_penalty`; a "+" suffix keeps the value of the base kind and
// takes the gradient of k2 (straight-through).
Tensor kl_penalty(const Tensor& logprob, const Tensor& ref_logprob, const std::string& kl_penalty);

}  // namespace verl::algo
