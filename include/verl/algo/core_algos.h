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
// Same result computed with scatter/index_add instead of a loop over groups.
AdvantageReturn compute_grpo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index,
                                                          double epsilon = 1e-6,
                                                          bool norm_adv_by_std_in_grpo = true);
AdvantageReturn compute_rloo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index);
AdvantageReturn compute_rloo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index);
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
};
struct AdvantageOptions {
  double gamma = 1.0;                  // algorithm.gamma
  double lam = 1.0;                    // algorithm.lam
  bool norm_adv_by_std_in_grpo = true; // algorithm.norm_adv_by_std_in_grpo
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
  double clip_ratio_c = 3.0;              // dual-clip bound, must be > 1
  AggLossOptions agg;                     // loss_scale_factor etc. passed on to agg_loss

  static PolicyLossConfig from_actor_config(const config::ActorConfig& actor);
};

// pg_loss is a scalar with autograd history; metrics use verl's keys actor/pg_clipfrac, actor/ppo_kl,
// actor/pg_clipfrac_lower.
struct PolicyLossOutput {
  Tensor pg_loss;
  std::map<std::string, double> metrics;
};

// rollout_is_weights: (B, R) or an undefined Tensor for none.
using PolicyLossFn = std::function<PolicyLossOutput(
    const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages, const Tensor& response_mask,
    const std::string& loss_agg_mode, const PolicyLossConfig& config, const Tensor& rollout_is_weights)>;

// vanilla: PPO clip (clip_ratio_low / high) with dual clip (clip_ratio_c).
// gspo: sequence-level ratio; always aggregated "seq-mean-token-mean" whatever loss_agg_mode says (as
//   verl); pg_clipfrac_lower is 0 (no dual clip).
// gpg: -logp * A; no ratio, every metric is 0 (as verl).
// cispo: -sg(clip(ratio)) * A * logp; pg_clipfrac = ratio outside the band, pg_clipfrac_lower = below it.
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
