// Rollout correction and PF-PPO against tests/golden/algo/rollout_corr_golden.json, produced by
// gen_rollout_corr_golden.py calling verl 0.9.1's own functions (rollout_corr_helper.py,
// core_algos.compute_pf_ppo_reweight_data) in float64 and float32. Weights, rejection masks and every metric
// (the same key set as verl's) are compared with |got - want| <= tol (|want| + 1e-3), tol 1e-9 (float64) /
// 1e-6 (float32); configurations verl rejects must throw; PF-PPO draws the same rows as verl from a generator
// with the same seed, and its weights match verl's measured sampling frequencies.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "support/golden_json.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/rollout_corr.h"
#include "verl/algo/rollout_debug_metrics.h"
#include "verl/common/error.h"

namespace verl::algo {
namespace {

using nlohmann::json;

constexpr int kRolloutCorrFormatVersion = 1;

using test::flatten_into;
using test::tensor_of;

const json& rollout_corr_golden() {
  static const json data = test::read_golden_json("tests/golden/algo/rollout_corr_golden.json",
                                                  "tests/golden/algo/gen_rollout_corr_golden.py");
  return data;
}

struct Case {
  std::string dtype_name;
  torch::ScalarType dtype;
  double tol;
  torch::Tensor old_log_prob, rollout_log_prob, response_mask;
  const json& cases() const { return rollout_corr_golden().at("by_dtype").at(dtype_name); }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& [name, dtype] : {std::pair<std::string, torch::ScalarType>{"float64", torch::kFloat64},
                                    {"float32", torch::kFloat32}}) {
    const json& in = rollout_corr_golden().at("inputs");
    out.push_back({name, dtype, rollout_corr_golden().at("tolerance").at(name).get<double>(),
                   tensor_of(in.at("old_log_prob"), dtype), tensor_of(in.at("rollout_log_prob"), dtype),
                   tensor_of(in.at("response_mask"), torch::kInt64)});
  }
  return out;
}

bool close(double got, double want, double tol) {
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol * (std::abs(want) + 1e-3);
}

void expect_tensor(const std::string& name, const torch::Tensor& got, const json& want_json, double tol) {
  const torch::Tensor want = tensor_of(want_json, torch::kDouble);
  ASSERT_EQ(got.sizes(), want.sizes()) << name;
  const torch::Tensor g = got.detach().to(torch::kDouble).reshape(-1), w = want.reshape(-1);
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double gi = g[i].item<double>(), wi = w[i].item<double>();
    if (!close(gi, wi, tol)) {
      std::ostringstream first;
      first.precision(17);
      for (int64_t k = 0; k < std::min<int64_t>(6, g.numel()); ++k) {
        first << "  [" << k << "] got " << g[k].item<double>() << " want " << w[k].item<double>() << "\n";
      }
      ADD_FAILURE() << name << ": element " << i << " got " << gi << " want " << wi << ", max abs diff "
                    << (g - w).abs().max().item<double>() << "\n" << first.str();
      return;
    }
  }
}

void expect_metrics(const std::string& name, const std::map<std::string, double>& got, const json& want, double tol) {
  std::set<std::string> got_keys, want_keys;
  for (const auto& [key, value] : got) got_keys.insert(key);
  for (auto it = want.begin(); it != want.end(); ++it) want_keys.insert(it.key());
  EXPECT_EQ(got_keys, want_keys) << name << ": metric keys differ from verl's";
  for (auto it = want.begin(); it != want.end(); ++it) {
    auto found = got.find(it.key());
    if (found == got.end()) continue;
    EXPECT_TRUE(close(found->second, it.value().get<double>(), tol))
        << name << " " << it.key() << ": got " << found->second << " want " << it.value().get<double>();
  }
}

TEST(RolloutCorrGolden, FormatAndVersion) {
  EXPECT_EQ(rollout_corr_golden().at("format_version").get<int>(), kRolloutCorrFormatVersion);
  EXPECT_EQ(rollout_corr_golden().at("verl_version").get<std::string>(), "0.9.1");
}

TEST(RolloutCorrGolden, ImportanceSamplingWeights) {
  for (const Case& c : all_cases()) {
    const torch::Tensor log_ratio = c.old_log_prob - c.rollout_log_prob;
    for (const json& is : c.cases().at("is")) {
      const std::string name = c.dtype_name + " is " + is.at("rollout_is").get<std::string>() + " " +
                               is.at("rollout_is_threshold").get<std::string>() +
                               (is.at("batch_normalize").get<bool>() ? " normalized" : "");
      RolloutIsOutput out = compute_rollout_correction_weights(
          log_ratio, c.response_mask, is.at("rollout_is").get<std::string>(),
          is.at("rollout_is_threshold").get<std::string>(), is.at("batch_normalize").get<bool>());
      EXPECT_EQ(out.weights.scalar_type(), c.dtype) << name;
      expect_tensor(name + " weights", out.weights, is.at("weights"), c.tol);
      expect_metrics(name, out.metrics, is.at("metrics"), c.tol);
    }
  }
}

TEST(RolloutCorrGolden, RejectionMasks) {
  for (const Case& c : all_cases()) {
    const torch::Tensor log_ratio = c.old_log_prob - c.rollout_log_prob;
    for (const json& rs : c.cases().at("rs")) {
      const std::string name = c.dtype_name + " rs '" + rs.at("rollout_rs").get<std::string>() + "' " +
                               rs.at("rollout_rs_threshold").get<std::string>();
      RolloutRsOutput out = compute_rollout_rejection_mask(log_ratio, c.response_mask,
                                                           rs.at("rollout_rs").get<std::string>(),
                                                           rs.at("rollout_rs_threshold").get<std::string>());
      EXPECT_EQ(out.response_mask.scalar_type(), torch::kInt64) << name;
      expect_tensor(name + " mask", out.response_mask, rs.at("response_mask"), 0.0);
      expect_metrics(name, out.metrics, rs.at("metrics"), c.tol);
    }
  }
}

TEST(RolloutCorrGolden, OffPolicyMetrics) {
  for (const Case& c : all_cases()) {
    expect_metrics(c.dtype_name + " offpolicy", compute_offpolicy_metrics(c.old_log_prob, c.rollout_log_prob, c.response_mask),
                   c.cases().at("offpolicy"), c.tol);
  }
}

std::optional<std::string> optional_string(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

TEST(RolloutCorrGolden, Pipeline) {
  for (const Case& c : all_cases()) {
    int index = 0;
    for (const json& p : c.cases().at("pipeline")) {
      const std::string name = c.dtype_name + " pipeline " + std::to_string(index++);
      const json& o = p.at("options");
      RolloutCorrectionOptions options;
      options.rollout_is = optional_string(o.at("rollout_is"));
      options.rollout_is_threshold = o.at("rollout_is_threshold").get<std::string>();
      options.rollout_is_batch_normalize = o.at("rollout_is_batch_normalize").get<bool>();
      options.rollout_rs = optional_string(o.at("rollout_rs"));
      options.rollout_rs_threshold = optional_string(o.at("rollout_rs_threshold"));
      RolloutCorrectionOutput out =
          compute_rollout_correction_and_rejection_mask(c.old_log_prob, c.rollout_log_prob, c.response_mask, options);
      EXPECT_EQ(out.rollout_is_weights.defined(), p.contains("rollout_is_weights")) << name;
      if (p.contains("rollout_is_weights")) {
        expect_tensor(name + " weights", out.rollout_is_weights, p.at("rollout_is_weights"), c.tol);
      }
      expect_tensor(name + " mask", out.response_mask, p.at("response_mask"), 0.0);
      expect_metrics(name, out.metrics, p.at("metrics"), c.tol);
    }
  }
}

// verl's calculate_debug_metrics; null in the JSON is verl's NaN (one valid token: std and correlation; none).
TEST(RolloutCorrGolden, RolloutProbsDiffMetrics) {
  for (const Case& c : all_cases()) {
    for (const json& d : c.cases().at("debug")) {
      const std::map<std::string, double> got = compute_rollout_probs_diff_metrics(
          c.old_log_prob, c.rollout_log_prob, tensor_of(d.at("response_mask"), torch::kInt64));
      const json& want = d.at("metrics");
      ASSERT_EQ(got.size(), want.size()) << c.dtype_name;
      for (auto it = want.begin(); it != want.end(); ++it) {
        ASSERT_TRUE(got.count(it.key())) << it.key();
        const double value = got.at(it.key());
        if (it.value().is_null()) {
          EXPECT_TRUE(std::isnan(value)) << c.dtype_name << " " << it.key() << ": got " << value << " want NaN";
        } else {
          EXPECT_TRUE(close(value, it.value().get<double>(), c.tol))
              << c.dtype_name << " " << it.key() << ": got " << value << " want " << it.value().get<double>();
        }
      }
    }
  }
}

TEST(RolloutCorrGolden, RejectsWhatVerlRejects) {
  const json& rejected = rollout_corr_golden().at("rejected");
  for (const json& spec : rejected.at("rollout_is_threshold")) {
    EXPECT_THROW(parse_rollout_is_threshold(spec.get<std::string>()), Error) << spec;
    RolloutCorrectionOptions options;
    options.rollout_is = "token";
    options.rollout_is_threshold = spec.get<std::string>();
    EXPECT_THROW(validate_rollout_correction(options, "algorithm.rollout_correction"), Error) << spec;
  }
  for (const json& rs : rejected.at("rollout_rs")) {
    RolloutCorrectionOptions options;
    options.rollout_rs = rs[0].get<std::string>();
    options.rollout_rs_threshold = rs[1].get<std::string>();
    EXPECT_THROW(validate_rollout_correction(options, "algorithm.rollout_correction"), Error) << rs;
  }
}

TEST(PfPpoGolden, SameRowsAsVerlFromTheSameSeed) {
  const json& pf = rollout_corr_golden().at("pf_ppo");
  const torch::Tensor scores = tensor_of(pf.at("token_level_scores"), torch::kFloat32);
  for (const json& c : pf.at("cases")) {
    torch::Generator generator = at::detail::createCPUGenerator(c.at("seed").get<uint64_t>());
    std::vector<int64_t> rows = pf_ppo_resample_rows(scores, c.at("reweight_method").get<std::string>(),
                                                     c.at("weight_pow").get<double>(), generator);
    EXPECT_EQ(rows, c.at("rows").get<std::vector<int64_t>>()) << c.at("reweight_method") << " seed " << c.at("seed");
  }
}

// The sampling distribution: verl's measured frequency of each row within 5 standard errors of
// verl.cpp's normalized weight (rows verl never drew must have a weight of ~1e-8).
TEST(PfPpoGolden, WeightsMatchVerlsSamplingFrequencies) {
  const json& pf = rollout_corr_golden().at("pf_ppo");
  const torch::Tensor scores = tensor_of(pf.at("token_level_scores"), torch::kFloat32).sum(-1);
  for (const json& f : pf.at("frequencies")) {
    const std::string method = f.at("reweight_method").get<std::string>();
    torch::Tensor w = torch::clamp_min(compute_pf_ppo_weights(scores, method, f.at("weight_pow").get<double>()) + 1e-8,
                                       1e-8).to(torch::kDouble);
    w = w / w.sum();
    const double draws = f.at("draws").get<double>();
    const auto counts = f.at("counts").get<std::vector<double>>();
    ASSERT_EQ(static_cast<int64_t>(counts.size()), w.numel());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double p = w[i].item<double>();
      const double freq = counts[static_cast<size_t>(i)] / draws;
      EXPECT_LE(std::abs(freq - p), 5 * std::sqrt(p * (1 - p) / draws) + 1e-6)
          << method << " row " << i << ": verl drew it " << freq << " of the time, weight " << p;
    }
  }
}

TEST(PfPpo, UnknownMethodListsTheValidOnes) {
  try {
    compute_pf_ppo_weights(torch::ones({3}), "softmax", 2.0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pow, max_min, max_random"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace verl::algo
