// Rollout correction (verl/trainer/ppo/rollout_corr_helper.py): importance-sampling weights and rejection
// masks for the gap between the rollout engine's log-probs (pi_rollout) and the training policy's (pi_old),
// with verl's "rollout_corr/..." metrics. Pure functions; the equations are in src/algo/rollout_corr.cpp.
//
// Shapes: B = number of responses, R = response length. log-probs (B, R) in float32 or float64; the
// response mask (B, R) of any dtype (verl.cpp's is int64, like verl's). Every operation follows verl's
// tensor ops and PyTorch's type promotion, so float32 inputs give verl's float32 numbers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace verl::algo {

using torch::Tensor;

// verl's SAFETY_BOUND: log-ratios are clamped to [-20, 20] before exponentiation.
constexpr double kRolloutCorrSafetyBound = 20.0;

// rollout_is_threshold: "U" (TIS: weights clamped to U) or "L_U" (IcePop: weights outside [L, U] zeroed).
// A YAML number arrives as its text ("2.0"). Throws on a malformed, non-positive or inverted bound.
struct RolloutIsThreshold {
  double upper = 2.0;
  std::optional<double> lower;  // set: IcePop
};
RolloutIsThreshold parse_rollout_is_threshold(const std::string& spec);

// rollout_rs: comma-separated options (duplicates dropped, order kept) from rollout_rs_option_names();
// rollout_rs_threshold: one entry shared by all options or one per option. k1 options take "L_U" ratio
// bounds (a single "U" means L = 1/U); k2/k3 options take one positive upper bound.
struct RolloutRsOption {
  std::string name;             // e.g. "seq_mean_k1"
  std::optional<double> lower;  // k1 options only (a ratio bound)
  double upper = 0;
};
std::vector<RolloutRsOption> parse_rollout_rs(const std::string& rollout_rs, const std::string& rollout_rs_threshold);
const std::vector<std::string>& rollout_rs_option_names();
const std::vector<std::string>& rollout_is_level_names();  // token, sequence

using RolloutCorrMetrics = std::map<std::string, double>;

struct RolloutIsOutput {
  Tensor weights;  // (B, R), 0 on padding, detached
  RolloutCorrMetrics metrics;  // rollout_is_* (no "rollout_corr/" prefix)
};
// log_ratio = log pi_train - log pi_rollout, (B, R). level: "token" | "sequence".
RolloutIsOutput compute_rollout_correction_weights(const Tensor& log_ratio, const Tensor& response_mask,
                                                   const std::string& rollout_is = "token",
                                                   const std::string& rollout_is_threshold = "2.0",
                                                   bool rollout_is_batch_normalize = false);

struct RolloutRsOutput {
  Tensor response_mask;  // the input mask with rejected tokens set to 0 (same dtype)
  RolloutCorrMetrics metrics;  // rollout_rs_* (no prefix)
};
RolloutRsOutput compute_rollout_rejection_mask(const Tensor& log_ratio, const Tensor& response_mask,
                                               const std::string& rollout_rs,
                                               const std::string& rollout_rs_threshold);

// Off-policy diagnostics (no prefix): training_ppl, training_log_ppl, kl, k3_kl, rollout_ppl, rollout_log_ppl,
// log_ppl_diff, log_ppl_abs_diff, log_ppl_diff_max, log_ppl_diff_min, ppl_ratio, chi2_token, chi2_seq.
RolloutCorrMetrics compute_offpolicy_metrics(const Tensor& old_log_prob, const Tensor& rollout_log_prob,
                                             const Tensor& response_mask);

// algorithm.rollout_correction as the functions take it (unset optionals: the feature is off).
struct RolloutCorrectionOptions {
  std::optional<std::string> rollout_is;  // token | sequence
  std::string rollout_is_threshold = "2.0";
  bool rollout_is_batch_normalize = false;
  std::optional<std::string> rollout_rs;
  std::optional<std::string> rollout_rs_threshold;
};

struct RolloutCorrectionOutput {
  Tensor rollout_is_weights;  // undefined when rollout_is is unset
  Tensor response_mask;       // with rejection applied (a copy of the input without rollout_rs)
  RolloutCorrMetrics metrics;  // every key with the "rollout_corr/" prefix
};
// verl's compute_rollout_correction_and_rejection_mask: IS weights, rejection, off-policy metrics.
RolloutCorrectionOutput compute_rollout_correction_and_rejection_mask(const Tensor& old_log_prob,
                                                                      const Tensor& rollout_log_prob,
                                                                      const Tensor& response_mask,
                                                                      const RolloutCorrectionOptions& options);

// Checks a configuration the way the functions above would (thresholds parsed, names known) without tensors,
// so a bad config fails before any weights load. `prefix` names the config section in the message.
void validate_rollout_correction(const RolloutCorrectionOptions& options, const std::string& prefix);

}  // namespace verl::algo
