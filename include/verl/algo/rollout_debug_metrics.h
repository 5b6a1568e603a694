// verl's calculate_debug_metrics (verl/utils/debug/metrics.py): how far the rollout engine's token
// probabilities are from the actor's, logged by the trainer after the old log-probs whenever the rollout
// returned rollout_log_probs. Keys: training/rollout_probs_diff_{valid,max,mean,std} (|p_actor - p_rollout| over
// the valid response tokens) and training/rollout_actor_probs_pearson_corr.
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

namespace verl::algo {

// old_log_probs, rollout_log_probs, response_mask: (B, R). No valid token: valid = 0 and NaN elsewhere.
std::map<std::string, double> compute_rollout_probs_diff_metrics(const torch::Tensor& old_log_probs,
                                                                 const torch::Tensor& rollout_log_probs,
                                                                 const torch::Tensor& response_mask);

}  // namespace verl::algo
