// Rollout correction, as verl/trainer/ppo/rollout_corr_helper.py (verl 0.9.1) computes it.
//
// Notation: m = response mask, lr = log pi_train - log pi_rollout (B, R), lr~ = clamp(lr, -20, 20),
// mean_m / sum_m = masked mean / sum (verl_F.masked_mean: sum(v m) / (sum(m) + 1e-8)).
// The ops are written as verl writes them (same order, same PyTorch type promotion: an int64 mask gives
// a float32 count, `.float()` fractions are float32), so the numbers equal verl's in float32 and float64.
#include "verl/algo/rollout_corr.h"

#include <cmath>
#include <limits>
#include <set>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::algo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// verl_F.masked_sum / masked_mean, literally (no dtype conversion of the mask: PyTorch's promotion decides).
Tensor vmasked_sum(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis = std::nullopt) {
  Tensor valid = torch::where(mask.to(torch::kBool), values, 0.0);
  Tensor product = valid * mask;
  return axis ? product.sum(*axis) : product.sum();
}

Tensor vmasked_mean(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis = std::nullopt) {
  Tensor count = axis ? mask.sum(*axis) : mask.sum();
  return vmasked_sum(values, mask, axis) / (count + 1e-8);
}

double item(const Tensor& t) { return t.item<double>(); }

// Python's float() of a threshold string: the whole (trimmed) text must be a number.
double parse_number(const std::string& text, const std::string& what) {
  const std::string s = trim(text);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  VERL_CHECK(!s.empty() && used == s.size(), "rollout_corr", "invalid ", what, " '", text, "': expected a number");
  return value;
}

bool is_k1(const std::string& option) { return ends_with(option, "k1"); }

}  // namespace

const std::vector<std::string>& rollout_rs_option_names() {
  static const std::vector<std::string> names = {"token_k1",    "token_k2",    "token_k3",    "seq_sum_k1",
                                                 "seq_sum_k2",  "seq_sum_k3",  "seq_mean_k1", "seq_mean_k2",
                                                 "seq_mean_k3", "seq_max_k2",  "seq_max_k3"};
  return names;
}

const std::vector<std::string>& rollout_is_level_names() {
  static const std::vector<std::string> names = {"token", "sequence"};
  return names;
}

// "U" -> TIS upper bound U; "L_U" -> IcePop band [L, U]; 0 < L <= U.
RolloutIsThreshold parse_rollout_is_threshold(const std::string& spec) {
  const std::string s = trim(spec);
  VERL_CHECK(!s.empty(), "rollout_corr", "rollout_is_threshold must not be an empty string");
  RolloutIsThreshold out;
  const size_t sep = s.find('_');
  if (sep == std::string::npos) {
    out.upper = parse_number(s, "rollout_is_threshold");
  } else {
    out.lower = parse_number(s.substr(0, sep), "rollout_is_threshold");
    out.upper = parse_number(s.substr(sep + 1), "rollout_is_threshold");
  }
  VERL_CHECK(out.upper > 0, "rollout_corr", "rollout_is_threshold upper bound must be positive, got ", out.upper);
  if (out.lower) {
    VERL_CHECK(*out.lower > 0, "rollout_corr", "rollout_is_threshold lower bound must be positive, got ", *out.lower);
    VERL_CHECK(*out.lower <= out.upper, "rollout_corr", "rollout_is_threshold lower bound must be <= upper bound, got '",
               spec, "'");
  }
  return out;
}

std::vector<RolloutRsOption> parse_rollout_rs(const std::string& rollout_rs, const std::string& rollout_rs_threshold) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& part : split(rollout_rs, ',')) {
    const std::string option = trim(part);
    if (option.empty()) continue;
    bool known = false;
    for (const auto& name : rollout_rs_option_names()) known = known || name == option;
    VERL_CHECK(known, "rollout_corr", "invalid rollout_rs option '", option, "'; expected one of: ",
               join(rollout_rs_option_names(), ", "));
    if (seen.insert(option).second) names.push_back(option);
  }
  VERL_CHECK(!names.empty(), "rollout_corr", "rollout_rs must contain at least one option, got '", rollout_rs, "'");

  std::vector<std::string> specs;
  for (const std::string& part : split(rollout_rs_threshold, ',')) {
    if (!trim(part).empty()) specs.push_back(trim(part));
  }
  VERL_CHECK(!specs.empty(), "rollout_corr", "rollout_rs_threshold must contain at least one threshold value");
  VERL_CHECK(specs.size() == 1 || specs.size() == names.size(), "rollout_corr",
             "rollout_rs_threshold expects either one threshold shared by all options or exactly ", names.size(),
             " thresholds to match the rollout_rs options, got '", rollout_rs_threshold, "'");
  if (specs.size() == 1) specs.assign(names.size(), specs[0]);

  std::vector<RolloutRsOption> options;
  for (size_t i = 0; i < names.size(); ++i) {
    RolloutRsOption option{names[i], std::nullopt, 0};
    const std::string& spec = specs[i];
    const size_t sep = spec.find('_');
    if (is_k1(option.name)) {
      option.upper = parse_number(sep == std::string::npos ? spec : spec.substr(sep + 1), "rollout_rs_threshold");
      option.lower = sep == std::string::npos ? 1.0 / option.upper
                                              : parse_number(spec.substr(0, sep), "rollout_rs_threshold");
      VERL_CHECK(*option.lower > 0 && option.upper > 0, "rollout_corr", "thresholds for option '", option.name,
                 "' must be positive, got '", spec, "'");
      VERL_CHECK(*option.lower <= option.upper, "rollout_corr", "thresholds for option '", option.name,
                 "' must be lower <= upper, got '", spec, "'");
    } else {
      VERL_CHECK(sep == std::string::npos, "rollout_corr", "rollout_rs_threshold for option '", option.name,
                 "' must be a single upper bound without '_', got '", spec, "'");
      option.upper = parse_number(spec, "rollout_rs_threshold");
      VERL_CHECK(option.upper > 0, "rollout_corr", "threshold for option '", option.name, "' must be positive, got '",
                 spec, "'");
    }
    options.push_back(option);
  }
  return options;
}

// ---- importance-sampling weights ---------------------------------------------------------------------

namespace {

// Metrics of the applied weights w and the raw weights w_raw (before TIS / IcePop):
//   token:    mean = mean_m(w); max/min over valid tokens of w; fraction_high/low = mean_m[w_raw > U / < L]
//   sequence: max = exp(min(max_i s_i, 20)), min = exp(min_i s_i) with s_i = sum_m lr (unclamped);
//             fraction_high/low = mean_i[s_i > log U / < log L] (log of a float32 threshold, as verl)
//   std = sqrt(max(0, mean_m(c^2) - mean_m(c)^2)), c = clamp(w, 0, U)   (0 with <= 1 valid token)
//   eff_sample_size = 1 / mean_m((c / (mean_m(c) + 1e-8))^2)
//   seq_*: statistics of the per-sequence means mean_m(w)_i; seq_fraction_high/low from mean_m(w_raw)_i
RolloutCorrMetrics compute_is_metrics(const Tensor& weights, const Tensor& raw_weights, const Tensor& log_ratio_for_metrics,
                                      const Tensor& response_mask, const std::string& rollout_is, double upper,
                                      std::optional<double> lower_in) {
  VERL_CHECK(response_mask.any().item<bool>(), "rollout_corr", "response_mask must contain at least one valid token");
  RolloutCorrMetrics metrics;
  const double lower = lower_in ? *lower_in : 1.0 / upper;
  // torch.log(torch.tensor(x)): a float32 tensor, as Python's default dtype makes it.
  const Tensor log_upper = torch::log(torch::tensor(upper, torch::kFloat32));
  const Tensor log_lower = torch::log(torch::tensor(lower, torch::kFloat32));
  const Tensor mask_bool = response_mask.to(torch::kBool);

  if (rollout_is == "sequence") {
    metrics["rollout_is_max"] = item(torch::exp(torch::clamp_max(log_ratio_for_metrics.max(), kRolloutCorrSafetyBound)));
    metrics["rollout_is_min"] = item(torch::exp(log_ratio_for_metrics.min()));
    metrics["rollout_is_mean"] = item(vmasked_mean(weights, response_mask));
    metrics["rollout_is_ratio_fraction_high"] = item((log_ratio_for_metrics > log_upper).to(torch::kFloat32).mean());
    metrics["rollout_is_ratio_fraction_low"] = item((log_ratio_for_metrics < log_lower).to(torch::kFloat32).mean());
  } else {
    metrics["rollout_is_mean"] = item(vmasked_mean(weights, response_mask));
    metrics["rollout_is_ratio_fraction_high"] =
        item(vmasked_mean((raw_weights > upper).to(torch::kFloat32), response_mask));
    metrics["rollout_is_ratio_fraction_low"] =
        item(vmasked_mean((raw_weights < lower).to(torch::kFloat32), response_mask));
    metrics["rollout_is_max"] = item(weights.masked_fill(~mask_bool, -kInf).max());
    metrics["rollout_is_min"] = item(weights.masked_fill(~mask_bool, kInf).min());
  }

  if (item(response_mask.sum()) > 1) {
    const Tensor clamped = weights.clamp(0.0, upper);
    const Tensor mean_clamped = vmasked_mean(clamped, response_mask);
    const Tensor var = vmasked_mean(clamped.square(), response_mask) - mean_clamped.square();
    metrics["rollout_is_std"] = item(torch::sqrt(torch::clamp_min(var, 0.0)));
  } else {
    metrics["rollout_is_std"] = 0.0;
  }

  const Tensor for_ess = weights.clamp(0.0, upper);
  const Tensor normalized = for_ess / (vmasked_mean(for_ess, response_mask) + 1e-8);
  metrics["rollout_is_eff_sample_size"] = 1.0 / item(vmasked_mean(normalized.square(), response_mask));

  if (weights.dim() > 1) {
    const Tensor seq_mean = vmasked_mean(weights, response_mask, -1);
    metrics["rollout_is_seq_mean"] = item(seq_mean.mean());
    metrics["rollout_is_seq_std"] = seq_mean.numel() > 1 ? item(seq_mean.std()) : 0.0;
    metrics["rollout_is_seq_max"] = item(seq_mean.max());
    metrics["rollout_is_seq_min"] = item(seq_mean.min());
    metrics["rollout_is_seq_max_deviation"] = item((seq_mean - 1.0).abs().max());
    const Tensor raw_seq_mean = vmasked_mean(raw_weights, response_mask, -1);
    metrics["rollout_is_seq_fraction_high"] = item((raw_seq_mean > upper).to(torch::kFloat32).mean());
    metrics["rollout_is_seq_fraction_low"] = item((raw_seq_mean < lower).to(torch::kFloat32).mean());
  }
  return metrics;
}

}  // namespace

// token:    w_raw = exp(lr~) m
// sequence: w_raw = exp(clamp(sum_m lr, -20, 20)) m   (one weight per sequence, on every valid token)
// TIS (threshold "U"):      w = min(w_raw, U)
// IcePop (threshold "L_U"): w = w_raw if L <= w_raw <= U else 0;  metric oob_ratio = mean_m[w_raw outside]
// batch normalize: w /= mean (token: mean_m(w); sequence: mean over sequences with a valid token of
// mean_m(w)_i), when that mean is > 1e-8; metric batch_norm_factor = the mean (1.0 when not applied).
RolloutIsOutput compute_rollout_correction_weights(const Tensor& log_ratio, const Tensor& response_mask,
                                                   const std::string& rollout_is,
                                                   const std::string& rollout_is_threshold,
                                                   bool rollout_is_batch_normalize) {
  VERL_CHECK(rollout_is == "token" || rollout_is == "sequence", "rollout_corr", "invalid rollout_is '", rollout_is,
             "'; expected one of: ", join(rollout_is_level_names(), ", "));
  const RolloutIsThreshold threshold = parse_rollout_is_threshold(rollout_is_threshold);
  const bool icepop = threshold.lower.has_value();

  Tensor log_ratio_for_metrics, raw;
  if (rollout_is == "token") {
    log_ratio_for_metrics = log_ratio;
    raw = torch::exp(torch::clamp(log_ratio, -kRolloutCorrSafetyBound, kRolloutCorrSafetyBound));
  } else {
    const Tensor log_ratio_sum = vmasked_sum(log_ratio, response_mask, -1).unsqueeze(-1);
    log_ratio_for_metrics = log_ratio_sum;
    raw = torch::exp(torch::clamp(log_ratio_sum, -kRolloutCorrSafetyBound, kRolloutCorrSafetyBound))
              .expand_as(log_ratio);
  }
  raw = raw * response_mask;

  Tensor weights;
  if (!icepop) {
    weights = raw.clamp_max(threshold.upper);
  } else {
    const Tensor kept = (raw >= *threshold.lower) & (raw <= threshold.upper);
    weights = torch::where(kept, raw, torch::zeros_like(raw));
  }

  RolloutIsOutput out;
  out.metrics = compute_is_metrics(weights, raw, log_ratio_for_metrics, response_mask, rollout_is, threshold.upper,
                                   threshold.lower);
  if (icepop) {
    const Tensor oob = (raw < *threshold.lower) | (raw > threshold.upper);
    out.metrics["rollout_is_oob_ratio"] = item(vmasked_mean(oob.to(torch::kFloat32), response_mask));
  }
  weights = weights.detach();

  if (rollout_is_batch_normalize) {
    Tensor weights_mean;
    if (rollout_is == "token") {
      weights_mean = vmasked_mean(weights, response_mask);
    } else {
      const Tensor seq_weights = vmasked_mean(weights, response_mask, -1);
      const Tensor seq_mask = (response_mask.sum(-1) > 0).to(weights.scalar_type());
      weights_mean = (seq_weights * seq_mask).sum() / seq_mask.sum().clamp_min(1e-8);
    }
    if (item(weights_mean) > 1e-8) {
      weights = weights / weights_mean;
      out.metrics["rollout_is_batch_norm_factor"] = item(weights_mean);
    } else {
      out.metrics["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  out.weights = weights;
  return out;
}

// ---- rejection sampling ------------------------------------------------------------------------------

namespace {

// verl's compute_rs_metrics for one option; `upper` / `lower` are in the statistic's units (log-ratio for k1).
RolloutCorrMetrics compute_rs_metrics(const std::string& option, const Tensor& statistic, const Tensor& response_mask,
                                      const Tensor& seq_valid_mask, bool sequence_level, const Tensor& per_sequence,
                                      double upper, double lower, bool apply_lower) {
  VERL_CHECK(response_mask.any().item<bool>(), "rollout_corr", "response_mask must contain at least one valid token");
  RolloutCorrMetrics metrics;
  const std::string prefix = "rollout_rs_" + option;
  const Tensor mask_bool = response_mask.to(torch::kBool);

  Tensor seq_values = per_sequence.defined() ? per_sequence : vmasked_mean(statistic, response_mask, -1);
  if (seq_values.dim() > 1) seq_values = seq_values.squeeze(-1);
  const Tensor seq_valid = seq_values.index({seq_valid_mask});

  metrics[prefix + "_mean"] = item(vmasked_mean(statistic, response_mask));
  const bool by_sequence = sequence_level && seq_valid.numel() > 0;
  if (by_sequence) {
    metrics[prefix + "_max"] = item(seq_valid.max());
    metrics[prefix + "_min"] = item(seq_valid.min());
    metrics[prefix + "_fraction_high"] = item((seq_valid > upper).to(torch::kFloat32).mean());
    metrics[prefix + "_fraction_low"] = apply_lower ? item((seq_valid < lower).to(torch::kFloat32).mean()) : 0.0;
  } else {
    metrics[prefix + "_max"] = item(statistic.masked_fill(~mask_bool, -kInf).max());
    metrics[prefix + "_min"] = item(statistic.masked_fill(~mask_bool, kInf).min());
    metrics[prefix + "_fraction_high"] = item(vmasked_mean((statistic > upper).to(torch::kFloat32), response_mask));
    metrics[prefix + "_fraction_low"] =
        apply_lower ? item(vmasked_mean((statistic < lower).to(torch::kFloat32), response_mask)) : 0.0;
  }

  if (item(response_mask.sum()) > 1) {
    const Tensor clamped = statistic.clamp(apply_lower ? lower : 0.0, upper);
    const Tensor mean_clamped = vmasked_mean(clamped, response_mask);
    const Tensor var = vmasked_mean(clamped.square(), response_mask) - mean_clamped.square();
    metrics[prefix + "_std"] = item(torch::sqrt(torch::clamp_min(var, 0.0)));
  } else {
    metrics[prefix + "_std"] = 0.0;
  }

  if (seq_valid.numel() > 0) {
    metrics[prefix + "_seq_mean"] = item(seq_valid.mean());
    metrics[prefix + "_seq_std"] = seq_valid.numel() > 1 ? item(seq_valid.std()) : 0.0;
    metrics[prefix + "_seq_max"] = item(seq_valid.max());
    metrics[prefix + "_seq_min"] = item(seq_valid.min());
    metrics[prefix + "_seq_max_deviation"] = item((seq_valid - 0.0).abs().max());
    metrics[prefix + "_seq_fraction_high"] = item((seq_valid > upper).to(torch::kFloat32).mean());
    if (apply_lower) metrics[prefix + "_seq_fraction_low"] = item((seq_valid < lower).to(torch::kFloat32).mean());
  } else {
    for (const char* key : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation",
                            "_seq_fraction_high", "_seq_fraction_low"}) {
      metrics[prefix + key] = 0.0;
    }
  }
  return metrics;
}

}  // namespace

// Per token: k1 = -lr~, k2 = lr~^2 / 2, k3 = exp(lr~) - 1 - lr~.
// token_kX: keep a token when its statistic passes; seq_sum_kX / seq_mean_kX / seq_max_kX: keep a whole
// sequence when sum_m / mean_m / max over valid tokens (0 if none) passes. k1 passes inside
// [log L, log U]; k2 and k3 pass at <= U. Every option must pass (the masks multiply).
// Metrics per option: rollout_rs_<option>_{mean,max,min,fraction_high,fraction_low,std,seq_*,masked_fraction,
// seq_masked_fraction}; overall rollout_rs_masked_fraction (tokens) and rollout_rs_seq_masked_fraction.
RolloutRsOutput compute_rollout_rejection_mask(const Tensor& log_ratio, const Tensor& response_mask,
                                               const std::string& rollout_rs,
                                               const std::string& rollout_rs_threshold) {
  if (log_ratio.size(0) == 0) return {response_mask, {}};
  const std::vector<RolloutRsOption> options = parse_rollout_rs(rollout_rs, rollout_rs_threshold);

  const Tensor lr = torch::clamp(log_ratio, -kRolloutCorrSafetyBound, kRolloutCorrSafetyBound);
  const Tensor token_k1 = -lr;
  const Tensor token_k2 = 0.5 * lr.pow(2);
  const Tensor token_k3 = torch::exp(lr) - 1.0 - lr;

  const Tensor mask_bool = response_mask.to(torch::kBool);
  const Tensor seq_valid_mask = response_mask.sum(-1) > 0;
  Tensor combined = torch::ones_like(response_mask, log_ratio.options());
  RolloutCorrMetrics metrics;

  auto sequence_max = [&](const Tensor& values) {
    const Tensor neg_inf = torch::tensor(-kInf, values.options());
    const Tensor max_values = std::get<0>(values.masked_fill(~mask_bool, neg_inf).max(-1));
    return torch::where(max_values == neg_inf, torch::zeros_like(max_values), max_values);
  };

  for (const RolloutRsOption& option : options) {
    const bool k1 = is_k1(option.name);
    const double lower_log = k1 ? std::log(*option.lower) : 0.0;
    const double upper_log = k1 ? std::log(option.upper) : 0.0;
    const Tensor& token_stat = k1 ? token_k1 : (ends_with(option.name, "k2") ? token_k2 : token_k3);
    auto passes = [&](const Tensor& stat) {
      return k1 ? (stat >= lower_log) & (stat <= upper_log) : stat <= option.upper;
    };

    const bool token_level = starts_with(option.name, "token_");
    Tensor per_token_stat, per_sequence_stat, token_keep;
    if (token_level) {
      per_token_stat = token_stat;
      token_keep = passes(token_stat);
    } else {
      Tensor seq_stat;
      if (starts_with(option.name, "seq_sum_")) {
        seq_stat = vmasked_sum(token_stat, response_mask, -1);
      } else if (starts_with(option.name, "seq_mean_")) {
        seq_stat = vmasked_mean(token_stat, response_mask, -1);
      } else {
        seq_stat = sequence_max(token_stat);
      }
      per_sequence_stat = seq_stat;
      token_keep = passes(seq_stat).unsqueeze(-1).expand_as(mask_bool);
      per_token_stat = seq_stat.unsqueeze(-1).expand_as(response_mask);
    }

    const Tensor token_keep_mask = token_keep.to(log_ratio.scalar_type());
    combined = combined * token_keep_mask;
    const Tensor seq_keep = (~((~token_keep) & mask_bool)).all(-1);

    RolloutCorrMetrics option_metrics =
        compute_rs_metrics(option.name, per_token_stat, response_mask, seq_valid_mask, !token_level, per_sequence_stat,
                           k1 ? upper_log : option.upper, k1 ? lower_log : 0.0, k1);
    metrics.insert(option_metrics.begin(), option_metrics.end());

    const std::string prefix = "rollout_rs_" + option.name;
    metrics[prefix + "_masked_fraction"] = item(vmasked_mean(1 - token_keep_mask, response_mask));
    const Tensor seq_valid_float = seq_valid_mask.to(torch::kFloat32);
    if (item(seq_valid_float.sum()) > 0) {
      const Tensor seq_keep_float = seq_keep.to(log_ratio.scalar_type());
      metrics[prefix + "_seq_masked_fraction"] =
          item(((1.0 - seq_keep_float) * seq_valid_float).sum() / seq_valid_float.sum());
    } else {
      metrics[prefix + "_seq_masked_fraction"] = 0.0;
    }
  }

  metrics["rollout_rs_masked_fraction"] = item(vmasked_mean(1 - combined, response_mask));
  const Tensor final_keep = (combined > 0.5) & mask_bool;
  metrics["rollout_rs_seq_masked_fraction"] = item(((~final_keep) & mask_bool).any(-1).to(torch::kFloat32).mean());
  return {(response_mask * combined).to(response_mask.scalar_type()), metrics};
}

// ---- off-policy diagnostics --------------------------------------------------------------------------

// With l_t = log pi_train, q_t = log pi_rollout, per sequence L_i = mean_m(l)_i, Q_i = mean_m(q)_i:
//   training_ppl = mean_i exp(-L_i), training_log_ppl = mean_i(-L_i) (rollout_* likewise with Q)
//   kl = mean_m(q - l), k3_kl = mean_m(exp(lr) - lr - 1)
//   log_ppl_diff = mean_i(Q_i - L_i) (also abs mean, max, min), ppl_ratio = mean_i exp(Q_i - L_i)
//   chi2_token = mean_m(exp(lr~)^2) - 1, chi2_seq = mean_i exp(2 clamp(sum_m lr, -20, 20)) - 1
RolloutCorrMetrics compute_offpolicy_metrics(const Tensor& old_log_prob, const Tensor& rollout_log_prob,
                                             const Tensor& response_mask) {
  VERL_CHECK(response_mask.any().item<bool>(), "rollout_corr", "response_mask must contain at least one valid token");
  RolloutCorrMetrics metrics;
  const Tensor mean_log_prob_training = vmasked_mean(old_log_prob, response_mask, -1);
  metrics["training_ppl"] = item(torch::exp(-mean_log_prob_training).mean());
  metrics["training_log_ppl"] = item((-mean_log_prob_training).mean());

  metrics["kl"] = item(vmasked_mean(rollout_log_prob - old_log_prob, response_mask));
  const Tensor log_ratio = old_log_prob - rollout_log_prob;
  metrics["k3_kl"] = item(vmasked_mean(torch::exp(log_ratio) - log_ratio - 1, response_mask));

  const Tensor mean_log_prob_rollout = vmasked_mean(rollout_log_prob, response_mask, -1);
  metrics["rollout_ppl"] = item(torch::exp(-mean_log_prob_rollout).mean());
  metrics["rollout_log_ppl"] = item((-mean_log_prob_rollout).mean());

  const Tensor log_ppl_diff = mean_log_prob_rollout - mean_log_prob_training;
  metrics["log_ppl_diff"] = item(log_ppl_diff.mean());
  metrics["log_ppl_abs_diff"] = item(log_ppl_diff.abs().mean());
  metrics["log_ppl_diff_max"] = item(log_ppl_diff.max());
  metrics["log_ppl_diff_min"] = item(log_ppl_diff.min());
  metrics["ppl_ratio"] = item(torch::exp(log_ppl_diff).mean());

  const Tensor rho_token = torch::exp(torch::clamp(log_ratio, -kRolloutCorrSafetyBound, kRolloutCorrSafetyBound));
  metrics["chi2_token"] = item(vmasked_mean(rho_token.square(), response_mask) - 1.0);
  const Tensor log_ratio_sum = vmasked_sum(log_ratio, response_mask, -1);
  const Tensor rho_squared_seq =
      torch::exp(2.0 * torch::clamp(log_ratio_sum, -kRolloutCorrSafetyBound, kRolloutCorrSafetyBound));
  metrics["chi2_seq"] = item(rho_squared_seq.mean() - 1.0);
  return metrics;
}

RolloutCorrectionOutput compute_rollout_correction_and_rejection_mask(const Tensor& old_log_prob,
                                                                      const Tensor& rollout_log_prob,
                                                                      const Tensor& response_mask,
                                                                      const RolloutCorrectionOptions& options) {
  VERL_CHECK(response_mask.any().item<bool>(), "rollout_corr", "response_mask must contain at least one valid token");
  VERL_CHECK(old_log_prob.sizes() == rollout_log_prob.sizes(), "rollout_corr", "old_log_prob shape ",
             old_log_prob.sizes(), " does not match rollout_log_prob shape ", rollout_log_prob.sizes());
  VERL_CHECK(old_log_prob.sizes() == response_mask.sizes(), "rollout_corr", "log_prob shape ", old_log_prob.sizes(),
             " does not match response_mask shape ", response_mask.sizes());

  const Tensor log_ratio = old_log_prob - rollout_log_prob;
  RolloutCorrMetrics metrics;
  RolloutCorrectionOutput out;
  if (options.rollout_is) {
    RolloutIsOutput is = compute_rollout_correction_weights(log_ratio, response_mask, *options.rollout_is,
                                                            options.rollout_is_threshold,
                                                            options.rollout_is_batch_normalize);
    out.rollout_is_weights = is.weights;
    metrics.insert(is.metrics.begin(), is.metrics.end());
  }
  out.response_mask = response_mask.clone();
  if (options.rollout_rs) {
    VERL_CHECK(options.rollout_rs_threshold.has_value(), "rollout_corr",
               "rollout_rs_threshold must be set when rollout_rs is enabled (rollout_rs=", *options.rollout_rs, ")");
    RolloutRsOutput rs =
        compute_rollout_rejection_mask(log_ratio, response_mask, *options.rollout_rs, *options.rollout_rs_threshold);
    out.response_mask = rs.response_mask;
    metrics.insert(rs.metrics.begin(), rs.metrics.end());
  }
  RolloutCorrMetrics offpolicy = compute_offpolicy_metrics(old_log_prob, rollout_log_prob, response_mask);
  metrics.insert(offpolicy.begin(), offpolicy.end());
  for (const auto& [key, value] : metrics) out.metrics["rollout_corr/" + key] = value;
  return out;
}

void validate_rollout_correction(const RolloutCorrectionOptions& options, const std::string& prefix) {
  try {
    if (options.rollout_is) {
      VERL_CHECK(*options.rollout_is == "token" || *options.rollout_is == "sequence", "rollout_corr",
                 "invalid rollout_is '", *options.rollout_is, "'; expected null or one of: ",
                 join(rollout_is_level_names(), ", "));
      parse_rollout_is_threshold(options.rollout_is_threshold);
    }
    if (options.rollout_rs) {
      VERL_CHECK(options.rollout_rs_threshold.has_value(), "rollout_corr",
                 "rollout_rs_threshold must be set when rollout_rs is enabled");
      parse_rollout_rs(*options.rollout_rs, *options.rollout_rs_threshold);
    }
  } catch (const Error& e) {
    VERL_FAIL("config", prefix, ": ", e.what());
  }
}

}  // namespace verl::algo
