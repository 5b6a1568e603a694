// verl's trainer metrics (verl/trainer/ppo/metric_utils.py, verl/utils/metric, ray_trainer._validate),
// with verl's key names. Plain inputs (tensors, maps); results are std::map<std::string, double>.
// Shapes: B responses, P prompt length, R response length.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <torch/torch.h>

namespace verl::algo {

using MetricMap = std::map<std::string, double>;

struct DataMetricsInputs {
  torch::Tensor token_level_scores;   // (B, R)
  torch::Tensor token_level_rewards;  // (B, R)
  torch::Tensor advantages;           // (B, R)
  torch::Tensor returns;              // (B, R)
  torch::Tensor values;               // (B, R), read only when use_critic
  torch::Tensor response_mask;        // (B, R)
  torch::Tensor attention_mask;       // (B, P + R); lengths come from here, as in verl
};

// critic/score/{mean,max,min} and critic/rewards/* (per-sequence sums, responses of length 0
// excluded), critic/advantages/*, critic/returns/* (masked tokens), with use_critic critic/values/* and
// critic/vf_explained_var = 1 - Var(returns - values) / (Var(returns) + 1e-5); response_length/*,
// response_length_non_aborted/*, response/aborted_ratio, prompt_length/* (clip_ratio = fraction at the
// maximum length). Throws when every response has length 0 (verl raises too).
MetricMap compute_data_metrics(const DataMetricsInputs& batch, bool use_critic = true);

// timing_s/{name} for every entry; timing_per_token_ms/{name} = t * 1000 / tokens for gen (response
// tokens) and ref, values, adv, update_critic, update_actor (prompt + response tokens).
MetricMap compute_timing_metrics(const torch::Tensor& attention_mask, int64_t response_length,
                                 const MetricMap& timing_raw);

// perf/total_num_tokens = sum(global_token_num), perf/time_per_step = timing_raw["step"],
// perf/throughput = total / (time * n_gpus).  (verl spells it compute_throughout_metrics.)
MetricMap compute_throughput_metrics(const std::vector<int64_t>& global_token_num, const MetricMap& timing_raw,
                                     int64_t n_gpus);

// verl 0.9.1's compute_variance_proxy_metrics (its gradient-variance monitor), for batches that carry
// sum_pi_squared (actor.calculate_sum_pi_squared): with W = sum over response tokens of 1 - 2 pi_t + sum_v pi_v^2
// (pi_t = exp(old_log_probs), scaled by rollout_is_weights^2 when present) and A the sequence-mean advantage,
// variance_proxy/proxy1_signal_strength = grad_norm^2 (0 without one), proxy2_total_power = E[A^2 max(W, 0)]
// (with IS weights E[rho^2 A^2 W_orig], rho their sequence mean), proxy3_pure_noise = max(0, (proxy2 - proxy1) /
// (B - 1)) (0 without a grad norm or for one sequence), expected_a_squared = E[A^2], expected_w = E[W]. Computed
// in the inputs' dtype, as verl's tensors.
struct VarianceProxyInputs {
  torch::Tensor sum_pi_squared;         // (B, R)
  torch::Tensor old_log_probs;          // (B, R)
  torch::Tensor advantages;             // (B, R)
  torch::Tensor response_mask;          // (B, R)
  torch::Tensor rollout_is_weights;     // (B, R) or undefined
  std::optional<double> gradient_norm;  // the step's actor/grad_norm
};
MetricMap compute_variance_proxy_metrics(const VarianceProxyInputs& in);

// GDPO's per-component reward metrics (verl 0.9.1's trainer, adv_estimator=gdpo): prefix/{mean,std,max,min} of
// the values as float32, std the population one (numpy's).
MetricMap compute_reward_component_metrics(const std::string& prefix, const std::vector<double>& values);

// Mean of each list, except keys containing "max" (max) or "min" (min). Empty lists are an error.
MetricMap reduce_metrics(const std::map<std::string, std::vector<double>>& metrics);

// A per-sample validation value: numbers are scored, strings (e.g. "pred") are only used for voting.
using InfoValue = std::variant<double, std::string>;
// data_source -> variable -> metric -> value
using ValidationMetrics = std::map<std::string, std::map<std::string, std::map<std::string, double>>>;

// Groups samples by (data_source, uid); for every numeric variable: mean@N, std@N (population), and for
// n in {2, 4, 8, ..., N}: best@n/{mean,std}, worst@n/{mean,std} over 1000 bootstrap resamples, plus
// maj@n/{mean,std} when a "pred" variable exists; each metric is averaged over uids.
// The bootstrap draws indices exactly as numpy's legacy np.random.seed(seed); np.random.choice(N, n)
// (MT19937 with masked rejection sampling), so the numbers match verl's for the same inputs.
ValidationMetrics process_validation_metrics(const std::vector<std::string>& data_sources,
                                             const std::vector<std::string>& sample_uids,
                                             const std::map<std::string, std::vector<InfoValue>>& infos_dict,
                                             uint32_t seed = 42);

// The trainer's keys: val-core/{data_source}/{var}/{metric} for the core variable ("acc" if present,
// else "reward") and metrics mean/maj/best at the largest n; everything else val-aux/...
MetricMap flatten_validation_metrics(const ValidationMetrics& metrics);

}  // namespace verl::algo
