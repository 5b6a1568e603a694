// verl's Optimal Token Baseline advantage estimators (optimal_token_baseline, tir_optimal_token_baseline): a
// per-token baseline per prompt group, weighted by the cumulative path variance of each response. Equations in
// src/algo/optimal_token_baseline.cpp. Shapes: B responses, R response length; all tensors (B, R).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace verl::algo {

// Returns (advantages, returns = reward-to-go). old_log_probs: the actor's log-probs of the sampled tokens;
// sum_pi_squared: sum_v pi_v^2 at each position (the actor's calculate_sum_pi_squared); rollout_is_weights may be
// undefined. handle_zero_tail: the part of a group's single longest response past the second longest gets
// baseline 0.
std::pair<torch::Tensor, torch::Tensor> compute_optimal_token_baseline_advantage(
    const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask,
    const std::vector<std::string>& index, const torch::Tensor& old_log_probs, const torch::Tensor& sum_pi_squared,
    const torch::Tensor& rollout_is_weights = {}, bool handle_zero_tail = true, double epsilon = 1e-8);

// The multi-turn form: each response's valid tokens are squeezed together first (masked holes between turns
// removed), so the k-th valid token of one response meets the k-th valid token of the others.
std::pair<torch::Tensor, torch::Tensor> compute_multi_turn_optimal_token_baseline_advantage(
    const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask,
    const std::vector<std::string>& index, const torch::Tensor& old_log_probs, const torch::Tensor& sum_pi_squared,
    const torch::Tensor& rollout_is_weights = {}, bool handle_zero_tail = true, double epsilon = 1e-8);

}  // namespace verl::algo
