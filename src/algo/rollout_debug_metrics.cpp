// verl's calculate_debug_metrics: with p = exp(old_log_probs), q = exp(rollout_log_probs) on the valid tokens,
// d = |p - q|: max, mean, std (unbiased) of d, and the Pearson correlation of p and q (torch.corrcoef).
#include "verl/algo/rollout_debug_metrics.h"

#include <limits>

namespace verl::algo {

std::map<std::string, double> compute_rollout_probs_diff_metrics(const torch::Tensor& old_log_probs,
                                                                 const torch::Tensor& rollout_log_probs,
                                                                 const torch::Tensor& response_mask) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const torch::Tensor mask = response_mask.to(torch::kBool);
  if (!mask.any().item<bool>()) {
    return {{"training/rollout_probs_diff_valid", 0.0},
            {"training/rollout_probs_diff_max", nan},
            {"training/rollout_probs_diff_mean", nan},
            {"training/rollout_probs_diff_std", nan},
            {"training/rollout_actor_probs_pearson_corr", nan}};
  }
  const torch::Tensor actor_probs = torch::exp(old_log_probs);
  const torch::Tensor rollout_probs = torch::exp(rollout_log_probs);
  const torch::Tensor p = torch::masked_select(actor_probs, mask);
  const torch::Tensor q = torch::masked_select(rollout_probs, mask);
  const double pearson = torch::corrcoef(torch::stack({p, q}, 0))[0][1].item<double>();
  const torch::Tensor diff = torch::masked_select(torch::abs(actor_probs - rollout_probs), mask);
  return {{"training/rollout_probs_diff_valid", 1.0},
          {"training/rollout_probs_diff_max", diff.max().item<double>()},
          {"training/rollout_probs_diff_mean", diff.mean().item<double>()},
          {"training/rollout_probs_diff_std", diff.std().item<double>()},
          {"training/rollout_actor_probs_pearson_corr", pearson}};
}

}  // namespace verl::algo
