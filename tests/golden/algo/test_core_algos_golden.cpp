// core_algos and metrics against tests/golden/algo/core_algos_golden.json, produced by
// gen_core_algos_golden.py: an independent PyTorch/numpy implementation of the spec's formulas on
// seeded random inputs (float64). Every estimator, policy loss (value, metrics, gradient), value loss,
// KL kind (value and gradient), aggregation mode, helper and metric is compared; a failure prints the
// case name, the max abs diff and the first values side by side.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "verl/algo/core_algos.h"
#include "verl/algo/metrics.h"

namespace verl::algo {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

const json& golden() {
  static const json data = [] {
    const std::string path = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/algo/core_algos_golden.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path + "; run tests/golden/algo/gen_core_algos_golden.py");
    return json::parse(in);
  }();
  return data;
}

void flatten_into(const json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& e : j) flatten_into(e, out);
  } else {
    out.push_back(j.get<double>());
  }
}

torch::Tensor tensor_of(const json& j) {
  std::vector<int64_t> shape;
  const json* cur = &j;
  while (cur->is_array()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  std::vector<double> flat;
  flatten_into(j, flat);
  return torch::tensor(flat, torch::kDouble).view(shape);
}

double abs_tol() { return golden().at("tolerance").at("abs").get<double>(); }
double rel_tol() { return golden().at("tolerance").at("rel").get<double>(); }

// |actual - expected| <= abs + rel * |expected| elementwise; on failure: name, max abs diff, first values.
void expect_close(const std::string& name, const torch::Tensor& actual, const torch::Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << name;
  torch::Tensor a = actual.detach().to(torch::kDouble);
  torch::Tensor diff = (a - expected).abs();
  const bool ok = (diff <= abs_tol() + rel_tol() * expected.abs()).all().item<bool>();
  if (!ok) {
    std::ostringstream first;
    first.precision(17);
    torch::Tensor fa = a.reshape(-1), fe = expected.reshape(-1);
    for (int64_t i = 0; i < std::min<int64_t>(6, fa.numel()); ++i) {
      first << "  [" << i << "] got " << fa[i].item<double>() << " want " << fe[i].item<double>() << "\n";
    }
    ADD_FAILURE() << name << ": max abs diff " << diff.max().item<double>() << "\n" << first.str();
  }
}

void expect_close(const std::string& name, double actual, double expected) {
  expect_close(name, torch::tensor({actual}, torch::kDouble), torch::tensor({expected}, torch::kDouble));
}

torch::Tensor input(const char* key) { return tensor_of(golden().at("inputs").at(key)); }

TEST(CoreAlgosGolden, FormatVersion) {
  EXPECT_EQ(golden().at("format_version").get<int>(), kFormatVersion);
}

TEST(CoreAlgosGolden, AdvantageEstimators) {
  AdvantageInputs in;
  in.token_level_rewards = input("token_level_rewards");
  in.response_mask = input("response_mask");
  in.values = input("values");
  in.reward_baselines = input("reward_baselines");
  in.index = golden().at("inputs").at("index").get<std::vector<std::string>>();
  std::set<std::string> covered;
  for (const auto& c : golden().at("advantage")) {
    const std::string name = "advantage/" + c.at("name").get<std::string>();
    AdvantageOptions opt{c.at("gamma").get<double>(), c.at("lam").get<double>(),
                         c.at("norm_adv_by_std_in_grpo").get<bool>()};
    auto [adv, ret] = compute_advantage(c.at("estimator").get<std::string>(), in, opt);
    expect_close(name + "/advantages", adv, tensor_of(c.at("advantages")));
    expect_close(name + "/returns", ret, tensor_of(c.at("returns")));
    covered.insert(c.at("estimator").get<std::string>());
  }
  EXPECT_EQ(covered.size(), adv_estimator_names().size());
}

TEST(CoreAlgosGolden, PolicyLosses) {
  torch::Tensor old_lp = input("old_log_prob"), lp = input("log_prob"), adv = input("advantages");
  torch::Tensor m = input("response_mask"), w = input("rollout_is_weights");
  int cases = 0;
  for (const auto& c : golden().at("policy_loss")) {
    const std::string mode = c.at("mode"), agg = c.at("loss_agg_mode");
    const bool with_w = c.at("rollout_is_weights").get<bool>();
    const std::string name = "policy_loss/" + mode + "/" + agg + (with_w ? "/is_weights" : "");
    PolicyLossConfig cfg;
    cfg.clip_ratio_low = c.at("clip_ratio_low").get<double>();
    cfg.clip_ratio_high = c.at("clip_ratio_high").get<double>();
    cfg.clip_ratio_c = c.at("clip_ratio_c").get<double>();
    torch::Tensor x = lp.clone().set_requires_grad(true);
    PolicyLossOutput out = compute_policy_loss(mode, old_lp, x, adv, m, agg, cfg, with_w ? w : torch::Tensor());
    out.pg_loss.backward();
    expect_close(name + "/pg_loss", out.pg_loss.item<double>(), c.at("pg_loss").get<double>());
    expect_close(name + "/grad_log_prob", x.grad(), tensor_of(c.at("grad_log_prob")));
    for (const auto& [key, value] : c.at("metrics").items()) {
      ASSERT_EQ(out.metrics.count(key), 1u) << name << " lacks metric " << key;
      expect_close(name + "/" + key, out.metrics.at(key), value.get<double>());
    }
    ++cases;
  }
  EXPECT_EQ(cases, 32);
}

TEST(CoreAlgosGolden, ValueLoss) {
  torch::Tensor vpreds = input("vpreds"), returns = input("returns"), values = input("values");
  torch::Tensor m = input("response_mask");
  for (const auto& c : golden().at("value_loss")) {
    const std::string agg = c.at("loss_agg_mode");
    torch::Tensor x = vpreds.clone().set_requires_grad(true);
    ValueLossOutput out = compute_value_loss(x, returns, values, m, c.at("cliprange_value").get<double>(), agg);
    out.vf_loss.backward();
    expect_close("value_loss/" + agg + "/vf_loss", out.vf_loss.item<double>(), c.at("vf_loss").get<double>());
    expect_close("value_loss/" + agg + "/vf_clipfrac", out.vf_clipfrac.item<double>(),
                 c.at("vf_clipfrac").get<double>());
    expect_close("value_loss/" + agg + "/grad_vpreds", x.grad(), tensor_of(c.at("grad_vpreds")));
  }
}

TEST(CoreAlgosGolden, KlPenalty) {
  torch::Tensor lp = input("log_prob"), ref = input("ref_log_prob"), w = input("kl_weights");
  int cases = 0;
  for (const auto& c : golden().at("kl_penalty")) {
    const std::string kind = c.at("kind");
    torch::Tensor x = lp.clone().set_requires_grad(true);
    torch::Tensor value = kl_penalty(x, ref, kind);
    (value * w).sum().backward();
    expect_close("kl_penalty/" + kind + "/value", value, tensor_of(c.at("value")));
    expect_close("kl_penalty/" + kind + "/grad", x.grad(), tensor_of(c.at("grad_weighted_sum")));
    ++cases;
  }
  EXPECT_EQ(cases, static_cast<int>(kl_penalty_names().size()));
}

TEST(CoreAlgosGolden, AggLoss) {
  torch::Tensor loss_mat = input("loss_mat"), m = input("response_mask");
  for (const auto& c : golden().at("agg_loss")) {
    const std::string mode = c.at("mode");
    AggLossOptions o;
    const json& opts = c.at("options");
    if (opts.contains("dp_size")) o.dp_size = opts.at("dp_size").get<double>();
    if (opts.contains("batch_num_tokens")) o.batch_num_tokens = opts.at("batch_num_tokens").get<double>();
    if (opts.contains("global_batch_size")) o.global_batch_size = opts.at("global_batch_size").get<double>();
    if (opts.contains("loss_scale_factor")) o.loss_scale_factor = opts.at("loss_scale_factor").get<double>();
    expect_close("agg_loss/" + mode + (opts.empty() ? "" : "/with_options"), agg_loss(loss_mat, m, mode, o).item<double>(),
                 c.at("value").get<double>());
  }
}

TEST(CoreAlgosGolden, Helpers) {
  const json& h = golden().at("helpers");
  torch::Tensor loss_mat = input("loss_mat"), m = input("response_mask"), logits = input("logits");
  torch::Tensor labels = input("labels").to(torch::kInt64);
  expect_close("masked_mean", masked_mean(loss_mat, m).item<double>(), h.at("masked_mean").get<double>());
  expect_close("masked_mean_rows", masked_mean(loss_mat, m, -1), tensor_of(h.at("masked_mean_rows")));
  expect_close("masked_var", masked_var(loss_mat, m).item<double>(), h.at("masked_var").get<double>());
  expect_close("masked_whiten", masked_whiten(loss_mat, m), tensor_of(h.at("masked_whiten")));
  expect_close("entropy_from_logits", entropy_from_logits(logits), tensor_of(h.at("entropy_from_logits")));
  expect_close("logprobs_from_logits", logprobs_from_logits(logits, labels), tensor_of(h.at("logprobs_from_logits")));
  torch::Tensor ids = tensor_of(h.at("response_ids")).to(torch::kInt64);
  auto eos = h.at("eos_token").get<std::vector<int64_t>>();
  expect_close("get_response_mask", get_response_mask(ids, eos), tensor_of(h.at("response_mask_from_eos")));
  expect_close("compute_position_id_with_mask", compute_position_id_with_mask(m), tensor_of(h.at("position_ids")));
}

void expect_metric_maps_equal(const std::string& name, const MetricMap& actual, const json& expected) {
  for (const auto& [key, value] : expected.items()) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      ADD_FAILURE() << name << ": missing " << key;
      continue;
    }
    expect_close(name + "/" + key, it->second, value.get<double>());
  }
  for (const auto& [key, value] : actual) EXPECT_TRUE(expected.contains(key)) << name << ": unexpected " << key;
}

std::map<std::string, std::vector<InfoValue>> infos_of(const json& j) {
  std::map<std::string, std::vector<InfoValue>> infos;
  for (const auto& [var, vals] : j.items()) {
    for (const auto& v : vals) {
      if (v.is_string()) {
        infos[var].push_back(v.get<std::string>());
      } else {
        infos[var].push_back(v.get<double>());
      }
    }
  }
  return infos;
}

// The bootstrap (best@n, worst@n, maj@n) reproduces numpy's legacy RNG, so these match exactly.
TEST(CoreAlgosGolden, ValidationMetrics) {
  for (const char* section : {"validation", "validation_no_pred"}) {
    const json& v = golden().at(section);
    ValidationMetrics metrics = process_validation_metrics(v.at("data_sources").get<std::vector<std::string>>(),
                                                           v.at("uids").get<std::vector<std::string>>(),
                                                           infos_of(v.at("infos")));
    expect_metric_maps_equal(section, flatten_validation_metrics(metrics), v.at("metrics"));
  }
}

TEST(CoreAlgosGolden, DataMetrics) {
  const json& d = golden().at("data_metrics");
  DataMetricsInputs b;
  b.attention_mask = tensor_of(d.at("attention_mask"));
  b.response_mask = input("response_mask");
  b.token_level_scores = tensor_of(d.at("token_level_scores"));
  b.token_level_rewards = tensor_of(d.at("token_level_rewards"));
  b.advantages = input("advantages");
  b.returns = input("returns");
  b.values = input("values");
  expect_metric_maps_equal("data_metrics", compute_data_metrics(b, true), d.at("metrics"));
}

}  // namespace
}  // namespace verl::algo
