// PF-PPO (verl's core_algos.compute_pf_ppo_reweight_data, algorithm.use_pf_ppo): the batch is resampled, with
// replacement, by weights of the responses' scores, so the update sees high-|score| (pow) or extreme
// (max_min, max_random) responses more often. verl applies it after GAE advantages only.
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

namespace verl::algo {

const std::vector<std::string>& pf_ppo_reweight_method_names();  // pow, max_min, max_random

// scores: (B,) -> sampling weights (B,) before the 1e-8 floor:
//   pow: |s|^weight_pow;  max_min: 1 at the max and the min score, else 0;  max_random: 0.4 at the max, else 0.1
torch::Tensor compute_pf_ppo_weights(const torch::Tensor& scores, const std::string& reweight_method,
                                     double weight_pow);

// token_level_scores: (B, R). Returns B row indices drawn with replacement from clamp(w + 1e-8, min = 1e-8),
// w = compute_pf_ppo_weights(sum_t token_level_scores), with torch.multinomial on `generator` (verl draws from
// the default generator; seeded alike, both draw the same rows).
std::vector<int64_t> pf_ppo_resample_rows(const torch::Tensor& token_level_scores, const std::string& reweight_method,
                                          double weight_pow, torch::Generator generator);

}  // namespace verl::algo
