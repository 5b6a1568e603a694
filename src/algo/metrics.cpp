#include "verl/algo/metrics.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "verl/algo/core_algos.h"
#include "verl/common/error.h"
#include "verl/common/numpy_random.h"
#include "verl/common/strings.h"

namespace verl::algo {

namespace {

using torch::Tensor;

Tensor to_cpu_double(const Tensor& t) { return t.detach().to(torch::kCPU, torch::kDouble); }

void add_mean_max_min(MetricMap& out, const std::string& prefix, const Tensor& x) {
  out[prefix + "/mean"] = x.mean().item<double>();
  out[prefix + "/max"] = x.max().item<double>();
  out[prefix + "/min"] = x.min().item<double>();
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Population standard deviation (numpy's np.std, ddof = 0).
double std_of(const std::vector<double>& v) {
  const double mu = mean_of(v);
  double sq = 0;
  for (double x : v) sq += (x - mu) * (x - mu);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

// (mean, std) over n_bootstrap resamples of size subset_size of reduce(resample indices).
template <typename Reduce>
std::pair<double, double> bootstrap_metric(size_t data_size, size_t subset_size, Reduce reduce, uint32_t seed,
                                           int n_bootstrap = 1000) {
  NumpyLegacyRandom rng(seed);
  std::vector<double> results;
  results.reserve(n_bootstrap);
  std::vector<size_t> idx(subset_size);
  for (int b = 0; b < n_bootstrap; ++b) {
    for (auto& i : idx) i = rng.randint_below(data_size);
    results.push_back(reduce(idx));
  }
  return {mean_of(results), std_of(results)};
}

// Majority vote: the value of the first sample carrying the most frequent prediction (ties: the
// prediction seen first).
double majority_value(const std::vector<size_t>& idx, const std::vector<double>& vals,
                      const std::vector<InfoValue>& preds) {
  std::vector<std::pair<InfoValue, std::vector<double>>> votes;
  for (size_t i : idx) {
    auto it = std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == preds[i]; });
    if (it == votes.end()) {
      votes.push_back({preds[i], {vals[i]}});
    } else {
      it->second.push_back(vals[i]);
    }
  }
  size_t best = 0;
  for (size_t k = 1; k < votes.size(); ++k) {
    if (votes[k].second.size() > votes[best].second.size()) best = k;
  }
  return votes[best].second.front();
}

}  // namespace

MetricMap compute_data_metrics(const DataMetricsInputs& batch, bool use_critic) {
  VERL_CHECK(batch.response_mask.defined() && batch.response_mask.dim() == 2, "metrics",
             "compute_data_metrics: response_mask must be (B, R)");
  VERL_CHECK(batch.attention_mask.defined() && batch.attention_mask.dim() == 2 &&
                 batch.attention_mask.size(1) >= batch.response_mask.size(1),
             "metrics", "compute_data_metrics: attention_mask must be (B, P + R)");
  const int64_t R = batch.response_mask.size(1);
  const int64_t P = batch.attention_mask.size(1) - R;
  Tensor attention = to_cpu_double(batch.attention_mask);
  Tensor prompt_length = attention.slice(1, 0, P).sum(-1);
  Tensor response_length = attention.slice(1, P).sum(-1);
  Tensor response_mask = batch.response_mask.detach().to(torch::kCPU).to(torch::kBool);

  Tensor aborted = response_length == 0;
  Tensor non_aborted = aborted.logical_not();
  VERL_CHECK(non_aborted.any().item<bool>(), "metrics",
             "compute_data_metrics: every response has length 0 (all aborted)");

  MetricMap out;
  add_mean_max_min(out, "critic/score", to_cpu_double(batch.token_level_scores).sum(-1).index({non_aborted}));
  add_mean_max_min(out, "critic/rewards", to_cpu_double(batch.token_level_rewards).sum(-1).index({non_aborted}));
  Tensor valid_adv = torch::masked_select(to_cpu_double(batch.advantages), response_mask);
  Tensor valid_returns = torch::masked_select(to_cpu_double(batch.returns), response_mask);
  add_mean_max_min(out, "critic/advantages", valid_adv);
  add_mean_max_min(out, "critic/returns", valid_returns);
  if (use_critic) {
    VERL_CHECK(batch.values.defined(), "metrics", "compute_data_metrics: use_critic needs values");
    Tensor valid_values = torch::masked_select(to_cpu_double(batch.values), response_mask);
    add_mean_max_min(out, "critic/values", valid_values);
    const double diff_var = torch::var(valid_returns - valid_values).item<double>();
    const double return_var = torch::var(valid_returns).item<double>();
    out["critic/vf_explained_var"] = 1.0 - diff_var / (return_var + 1e-5);
  }
  add_mean_max_min(out, "response_length", response_length);
  out["response_length/clip_ratio"] = (response_length == static_cast<double>(R)).to(torch::kDouble).mean().item<double>();
  Tensor kept = response_length.index({non_aborted});
  add_mean_max_min(out, "response_length_non_aborted", kept);
  out["response_length_non_aborted/clip_ratio"] = (kept == static_cast<double>(R)).to(torch::kDouble).mean().item<double>();
  out["response/aborted_ratio"] = aborted.to(torch::kDouble).mean().item<double>();
  add_mean_max_min(out, "prompt_length", prompt_length);
  out["prompt_length/clip_ratio"] = (prompt_length == static_cast<double>(P)).to(torch::kDouble).mean().item<double>();
  return out;
}

MetricMap compute_timing_metrics(const Tensor& attention_mask, int64_t response_length, const MetricMap& timing_raw) {
  VERL_CHECK(attention_mask.dim() == 2 && attention_mask.size(1) >= response_length, "metrics",
             "compute_timing_metrics: attention_mask must be (B, P + R) with R = ", response_length);
  Tensor attention = to_cpu_double(attention_mask);
  const int64_t P = attention.size(1) - response_length;
  const double prompt_tokens = attention.slice(1, 0, P).sum().item<double>();
  const double response_tokens = attention.slice(1, P).sum().item<double>();
  const double overall_tokens = prompt_tokens + response_tokens;
  const std::map<std::string, double> tokens_of_section = {
      {"gen", response_tokens},          {"ref", overall_tokens},           {"values", overall_tokens},
      {"adv", overall_tokens},           {"update_critic", overall_tokens}, {"update_actor", overall_tokens}};
  MetricMap out;
  for (const auto& [name, seconds] : timing_raw) {
    out["timing_s/" + name] = seconds;
    auto it = tokens_of_section.find(name);
    if (it != tokens_of_section.end()) out["timing_per_token_ms/" + name] = seconds * 1000.0 / it->second;
  }
  return out;
}

MetricMap compute_throughput_metrics(const std::vector<int64_t>& global_token_num, const MetricMap& timing_raw,
                                     int64_t n_gpus) {
  auto step = timing_raw.find("step");
  VERL_CHECK(step != timing_raw.end(), "metrics", "compute_throughput_metrics: timing_raw has no 'step' entry");
  VERL_CHECK(n_gpus > 0, "metrics", "compute_throughput_metrics: n_gpus must be > 0, got ", n_gpus);
  double total = 0;
  for (int64_t n : global_token_num) total += static_cast<double>(n);
  return {{"perf/total_num_tokens", total},
          {"perf/time_per_step", step->second},
          {"perf/throughput", total / (step->second * static_cast<double>(n_gpus))}};
}

MetricMap compute_variance_proxy_metrics(const VarianceProxyInputs& in) {
  MetricMap out;
  if (!in.sum_pi_squared.defined()) return out;
  VERL_CHECK(in.old_log_probs.defined() && in.advantages.defined() && in.response_mask.defined(), "metrics",
             "the variance proxy needs old_log_probs, advantages and response_mask besides sum_pi_squared");
  VERL_CHECK(in.sum_pi_squared.sizes() == in.old_log_probs.sizes() &&
                 in.advantages.sizes() == in.old_log_probs.sizes() &&
                 in.response_mask.sizes() == in.old_log_probs.sizes(),
             "metrics", "variance proxy: sum_pi_squared ", in.sum_pi_squared.sizes(), ", old_log_probs ",
             in.old_log_probs.sizes(), ", advantages ", in.advantages.sizes(), " and response_mask ",
             in.response_mask.sizes(), " must have one shape");
  const Tensor mask = in.response_mask.to(in.advantages.dtype());
  Tensor w_per_token = 1 - 2 * torch::exp(in.old_log_probs) + in.sum_pi_squared;
  const bool with_is = in.rollout_is_weights.defined();
  if (with_is) w_per_token = w_per_token * in.rollout_is_weights.pow(2);
  const Tensor advantages = masked_mean(in.advantages, mask, -1);
  const Tensor w = masked_sum(w_per_token, mask, -1);

  Tensor total_power;
  if (with_is) {
    const Tensor rho = masked_mean(in.rollout_is_weights, mask, -1);
    // W before the IS scaling, the weights clamped away from zero.
    const Tensor w_original =
        torch::clamp(masked_sum(w_per_token / torch::clamp(in.rollout_is_weights.pow(2), 1e-10), mask, -1), 0.0);
    total_power = (rho.pow(2) * advantages.pow(2) * w_original).mean();
  } else {
    total_power = (advantages.pow(2) * torch::clamp(w, 0.0)).mean();
  }
  const double proxy2 = total_power.item<double>();
  double proxy1 = 0.0, proxy3 = 0.0;
  if (in.gradient_norm.has_value()) {
    proxy1 = *in.gradient_norm * *in.gradient_norm;
    const int64_t batch = advantages.size(0);
    if (batch > 1) {
      // verl: (1 / (N - 1)) * (proxy2 - proxy1) with proxy2 a 0-d tensor and proxy1 a float, so in its dtype.
      const Tensor noise = (1.0 / static_cast<double>(batch - 1)) * (total_power - proxy1);
      proxy3 = std::max(0.0, noise.item<double>());
    }
  }
  out["variance_proxy/proxy1_signal_strength"] = proxy1;
  out["variance_proxy/proxy2_total_power"] = proxy2;
  out["variance_proxy/proxy3_pure_noise"] = proxy3;
  out["variance_proxy/expected_a_squared"] = advantages.pow(2).mean().item<double>();
  out["variance_proxy/expected_w"] = w.mean().item<double>();
  return out;
}

MetricMap compute_reward_component_metrics(const std::string& prefix, const std::vector<double>& values) {
  MetricMap out;
  if (values.empty()) return out;
  const Tensor x = torch::tensor(values, torch::kDouble).to(torch::kFloat32);
  out[prefix + "/mean"] = x.mean().item<double>();
  out[prefix + "/std"] = x.std(/*unbiased=*/false).item<double>();
  out[prefix + "/max"] = x.max().item<double>();
  out[prefix + "/min"] = x.min().item<double>();
  return out;
}

MetricMap reduce_metrics(const std::map<std::string, std::vector<double>>& metrics) {
  MetricMap out;
  for (const auto& [key, values] : metrics) {
    VERL_CHECK(!values.empty(), "metrics", "reduce_metrics: metric '", key, "' has no values");
    if (key.find("max") != std::string::npos) {
      out[key] = *std::max_element(values.begin(), values.end());
    } else if (key.find("min") != std::string::npos) {
      out[key] = *std::min_element(values.begin(), values.end());
    } else {
      out[key] = mean_of(values);
    }
  }
  return out;
}

ValidationMetrics process_validation_metrics(const std::vector<std::string>& data_sources,
                                             const std::vector<std::string>& sample_uids,
                                             const std::map<std::string, std::vector<InfoValue>>& infos_dict,
                                             uint32_t seed) {
  const size_t n_samples = data_sources.size();
  VERL_CHECK(sample_uids.size() == n_samples, "metrics", "process_validation_metrics: ", sample_uids.size(),
             " uids for ", n_samples, " samples");
  for (const auto& [name, vals] : infos_dict) {
    VERL_CHECK(vals.size() == n_samples, "metrics", "process_validation_metrics: variable '", name, "' has ",
               vals.size(), " values for ", n_samples, " samples");
  }
  // data_source -> uid -> sample rows, in order of appearance.
  std::map<std::string, std::vector<std::pair<std::string, std::vector<size_t>>>> groups;
  for (size_t i = 0; i < n_samples; ++i) {
    auto& uids = groups[data_sources[i]];
    auto it = std::find_if(uids.begin(), uids.end(), [&](const auto& u) { return u.first == sample_uids[i]; });
    if (it == uids.end()) {
      uids.push_back({sample_uids[i], {i}});
    } else {
      it->second.push_back(i);
    }
  }
  const auto pred_it = infos_dict.find("pred");
  // data_source -> var -> metric -> per-uid values
  std::map<std::string, std::map<std::string, std::map<std::string, std::vector<double>>>> per_uid;
  for (const auto& [source, uids] : groups) {
    for (const auto& [uid, rows] : uids) {
      for (const auto& [var, all_vals] : infos_dict) {
        if (std::holds_alternative<std::string>(all_vals[rows.front()])) continue;
        std::vector<double> vals;
        for (size_t r : rows) {
          VERL_CHECK(std::holds_alternative<double>(all_vals[r]), "metrics", "process_validation_metrics: variable '",
                     var, "' mixes numbers and strings");
          vals.push_back(std::get<double>(all_vals[r]));
        }
        auto& metric = per_uid[source][var];
        const size_t n_resps = vals.size();
        metric[str_cat("mean@", n_resps)].push_back(mean_of(vals));
        if (n_resps < 2) continue;
        metric[str_cat("std@", n_resps)].push_back(std_of(vals));
        std::vector<size_t> ns;
        for (size_t n = 2; n < n_resps; n *= 2) ns.push_back(n);
        ns.push_back(n_resps);
        std::vector<InfoValue> preds;
        if (pred_it != infos_dict.end()) {
          for (size_t r : rows) preds.push_back(pred_it->second[r]);
        }
        for (size_t n : ns) {
          auto best = bootstrap_metric(n_resps, n, [&](const std::vector<size_t>& idx) {
            double m = vals[idx[0]];
            for (size_t i : idx) m = std::max(m, vals[i]);
            return m;
          }, seed);
          auto worst = bootstrap_metric(n_resps, n, [&](const std::vector<size_t>& idx) {
            double m = vals[idx[0]];
            for (size_t i : idx) m = std::min(m, vals[i]);
            return m;
          }, seed);
          metric[str_cat("best@", n, "/mean")].push_back(best.first);
          metric[str_cat("best@", n, "/std")].push_back(best.second);
          metric[str_cat("worst@", n, "/mean")].push_back(worst.first);
          metric[str_cat("worst@", n, "/std")].push_back(worst.second);
          if (!preds.empty()) {
            auto maj = bootstrap_metric(n_resps, n, [&](const std::vector<size_t>& idx) {
              return majority_value(idx, vals, preds);
            }, seed);
            metric[str_cat("maj@", n, "/mean")].push_back(maj.first);
            metric[str_cat("maj@", n, "/std")].push_back(maj.second);
          }
        }
      }
    }
  }
  ValidationMetrics out;
  for (const auto& [source, vars] : per_uid) {
    for (const auto& [var, metrics] : vars) {
      for (const auto& [name, uid_vals] : metrics) out[source][var][name] = mean_of(uid_vals);
    }
  }
  return out;
}

MetricMap flatten_validation_metrics(const ValidationMetrics& metrics) {
  MetricMap out;
  for (const auto& [source, vars] : metrics) {
    const std::string core_var = vars.count("acc") ? "acc" : "reward";
    for (const auto& [var, metric2val] : vars) {
      int64_t n_max = 0;
      for (const auto& [name, value] : metric2val) {
        const std::string after_at = name.substr(name.rfind('@') + 1);
        n_max = std::max<int64_t>(n_max, std::stoll(after_at.substr(0, after_at.find('/'))));
      }
      const std::string at_max = str_cat("@", n_max);
      for (const auto& [name, value] : metric2val) {
        const bool core = var == core_var &&
                          (starts_with(name, "mean") || starts_with(name, "maj") || starts_with(name, "best")) &&
                          name.find(at_max) != std::string::npos;
        out[str_cat(core ? "val-core/" : "val-aux/", source, "/", var, "/", name)] = value;
      }
    }
  }
  return out;
}

}  // namespace verl::algo
