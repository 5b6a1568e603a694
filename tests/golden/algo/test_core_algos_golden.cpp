// core_algos and metrics against tests/golden/algo/core_algos_golden.json, produced by
// gen_core_algos_golden.py CALLING verl 0.9.1's own functions (core_algos.py, metric_utils.py) on seeded random
// inputs, in float64 and in float32. Every estimator, policy loss (value, metrics, gradient w.r.t. log_prob), value
// loss, KL kind (value and gradient), aggregation mode, helper and metric is compared, and verl's registries must
// be covered by verl.cpp's; a failure prints the case name, the max abs diff and the first values side by side.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "support/golden_json.h"
#include "verl/algo/core_algos.h"
#include "verl/algo/kl_controller.h"
#include "verl/algo/metrics.h"
#include "verl/common/error.h"

namespace verl::algo {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 2;

using test::flatten_into;
using test::tensor_of;

const json& golden() {
  static const json data =
      test::read_golden_json("tests/golden/algo/core_algos_golden.json", "tests/golden/algo/gen_core_algos_golden.py");
  return data;
}

// One test body runs over both dtypes the generator called verl in; the tolerance table is in the JSON
// (float64: 1e-9; float32: 1e-6 relative).
struct DtypeCase {
  const char* section;
  torch::Dtype dtype;
};
const std::vector<DtypeCase>& dtype_cases() {
  static const std::vector<DtypeCase> cases = {{"float64", torch::kDouble}, {"float32", torch::kFloat}};
  return cases;
}

struct Tolerance {
  double abs;
  double rel;
};
Tolerance tolerance(const std::string& section) {
  const json& t = golden().at("tolerance").at(section);
  return {t.at("abs").get<double>(), t.at("rel").get<double>()};
}

// |actual - expected| <= abs + rel * |expected| elementwise; on failure: name, max abs diff, first values.
void expect_close(const std::string& name, const torch::Tensor& actual, const torch::Tensor& expected,
                  Tolerance tol = tolerance("float64")) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << name;
  torch::Tensor a = actual.detach().to(torch::kDouble);
  torch::Tensor e = expected.to(torch::kDouble);
  torch::Tensor diff = (a - e).abs();
  const bool ok = (diff <= tol.abs + tol.rel * e.abs()).all().item<bool>();
  if (!ok) {
    std::ostringstream first;
    first.precision(17);
    torch::Tensor worst = diff.reshape(-1).argmax();
    torch::Tensor fa = a.reshape(-1), fe = e.reshape(-1);
    for (int64_t i = 0; i < std::min<int64_t>(6, fa.numel()); ++i) {
      first << "  [" << i << "] got " << fa[i].item<double>() << " want " << fe[i].item<double>() << "\n";
    }
    const int64_t w = worst.item<int64_t>();
    first << "  worst [" << w << "] got " << fa[w].item<double>() << " want " << fe[w].item<double>() << "\n";
    ADD_FAILURE() << name << ": max abs diff " << diff.max().item<double>() << "\n" << first.str();
  }
}

void expect_close(const std::string& name, double actual, double expected, Tolerance tol = tolerance("float64")) {
  expect_close(name, torch::tensor({actual}, torch::kDouble), torch::tensor({expected}, torch::kDouble), tol);
}

torch::Tensor input(const char* key, torch::Dtype dtype = torch::kDouble) {
  return tensor_of(golden().at("inputs").at(key), dtype);
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(CoreAlgosGolden, FormatVersion) {
  EXPECT_EQ(golden().at("format_version").get<int>(), kFormatVersion);
  EXPECT_EQ(golden().at("verl_version").get<std::string>(), "0.9.1");
}

// Every name in verl's registries (ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY, agg_loss's modes) is registered
// in verl.cpp under the same name, and the goldens exercise each of verl.cpp's names.
TEST(CoreAlgosGolden, RegistriesCoverVerl) {
  const json& reg = golden().at("registries");
  auto ours = [](std::vector<std::string> names) { return std::set<std::string>(names.begin(), names.end()); };
  const auto est = ours(adv_estimator_names()), losses = ours(policy_loss_mode_names()), agg = ours(loss_agg_mode_names());
  for (const auto& name : reg.at("adv_estimators")) EXPECT_TRUE(est.count(name)) << "adv_estimator " << name;
  for (const auto& name : reg.at("policy_losses")) {
    EXPECT_TRUE(losses.count(name)) << "policy_loss.loss_mode " << name;
  }
  for (const auto& name : reg.at("loss_agg_modes")) EXPECT_TRUE(agg.count(name)) << "loss_agg_mode " << name;
  EXPECT_EQ(sorted(adv_estimator_names()), reg.at("adv_estimators").get<std::vector<std::string>>());
}

AdvantageInputs advantage_inputs(const json& sec, torch::Dtype dt, const json& c) {
  AdvantageInputs in;
  in.token_level_rewards = input("token_level_rewards", dt);
  in.response_mask = input("response_mask", dt);
  in.values = input("values", dt);
  in.reward_baselines = input("reward_baselines", dt);
  in.index = golden().at("inputs").at("index").get<std::vector<std::string>>();
  in.old_log_probs = input("old_log_prob", dt);
  in.sum_pi_squared = tensor_of(sec.at("sum_pi_squared"), dt);
  const json& o = c.at("options");
  if (o.value("rollout_is_weights", false)) in.rollout_is_weights = input("rollout_is_weights", dt);
  if (o.contains("gdpo_reward_keys")) {
    for (const auto& key : o.at("gdpo_reward_keys")) {
      in.reward_components.push_back(input(("gdpo_" + key.get<std::string>()).c_str(), torch::kDouble));
    }
  }
  if (o.contains("rows")) {  // a case on a subset of the rows (grpo_passk: groups of two or more)
    auto rows = o.at("rows").get<std::vector<int64_t>>();
    torch::Tensor idx = torch::tensor(rows, torch::kInt64);
    for (torch::Tensor* t : {&in.token_level_rewards, &in.response_mask, &in.values, &in.old_log_probs,
                             &in.sum_pi_squared}) {
      *t = t->index_select(0, idx);
    }
    in.reward_baselines = in.reward_baselines.index_select(0, idx);
    std::vector<std::string> index;
    for (int64_t r : rows) index.push_back(in.index[r]);
    in.index = index;
  }
  return in;
}

TEST(CoreAlgosGolden, AdvantageEstimators) {
  for (const auto& [section, dt] : dtype_cases()) {
    const json& sec = golden().at(section);
    const Tolerance tol = tolerance(section);
    std::set<std::string> covered;
    for (const auto& c : sec.at("advantage")) {
      const std::string name = std::string(section) + "/advantage/" + c.at("name").get<std::string>();
      const json& o = c.at("options");
      AdvantageOptions opt;
      opt.gamma = o.value("gamma", 1.0);
      opt.lam = o.value("lam", 1.0);
      opt.norm_adv_by_std_in_grpo = o.value("norm_adv_by_std_in_grpo", true);
      if (o.contains("gdpo_reward_weights") && !o.at("gdpo_reward_weights").is_null()) {
        opt.gdpo_reward_weights = o.at("gdpo_reward_weights").get<std::vector<double>>();
      }
      auto [adv, ret] = compute_advantage(c.at("estimator").get<std::string>(), advantage_inputs(sec, dt, c), opt);
      expect_close(name + "/advantages", adv, tensor_of(c.at("advantages")), tol);
      expect_close(name + "/returns", ret, tensor_of(c.at("returns")), tol);
      covered.insert(c.at("estimator").get<std::string>());
    }
    EXPECT_EQ(covered.size(), adv_estimator_names().size()) << section;
  }
}

// rloo and rloo_vectorized differ on a group of ONE response (verl's choice, kept): rloo keeps the score,
// rloo_vectorized gives 0. The golden input has such a group (uid g2); both verl (the JSON) and verl.cpp show it.
TEST(CoreAlgosGolden, RlooVectorizedZeroesSingletons) {
  const auto index = golden().at("inputs").at("index").get<std::vector<std::string>>();
  const int64_t single = std::find(index.begin(), index.end(), "g2") - index.begin();
  ASSERT_EQ(std::count(index.begin(), index.end(), "g2"), 1);
  AdvantageInputs in;
  in.token_level_rewards = input("token_level_rewards");
  in.response_mask = input("response_mask");
  in.index = index;
  ASSERT_GT(in.response_mask[single].sum().item<double>(), 0.0);
  torch::Tensor rloo = compute_advantage("rloo", in).first, vec = compute_advantage("rloo_vectorized", in).first;
  EXPECT_GT(rloo[single].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(vec[single].abs().sum().item<double>(), 0.0);
  for (const auto& c : golden().at("float64").at("advantage")) {
    if (c.at("name") == "rloo_vectorized") EXPECT_EQ(tensor_of(c.at("advantages"))[single].abs().sum().item<double>(), 0.0);
    if (c.at("name") == "rloo") EXPECT_GT(tensor_of(c.at("advantages"))[single].abs().sum().item<double>(), 0.0);
  }
}

PolicyLossConfig loss_config(const json& c) {
  const json& a = golden().at("actor_config");
  PolicyLossConfig cfg;
  cfg.clip_ratio = a.at("clip_ratio").get<double>();
  cfg.clip_ratio_low = a.at("clip_ratio_low").get<double>();
  cfg.clip_ratio_high = a.at("clip_ratio_high").get<double>();
  cfg.clip_ratio_c = a.at("clip_ratio_c").get<double>();
  cfg.tau_pos = a.at("tau_pos").get<double>();
  cfg.tau_neg = a.at("tau_neg").get<double>();
  if (c.contains("dro_beta")) cfg.dro_beta = c.at("dro_beta").get<double>();
  if (c.contains("clip_cov_ratio")) cfg.clip_cov_ratio = c.at("clip_cov_ratio").get<double>();
  if (c.contains("clip_cov_lb")) cfg.clip_cov_lb = c.at("clip_cov_lb").get<double>();
  if (c.contains("clip_cov_ub")) cfg.clip_cov_ub = c.at("clip_cov_ub").get<double>();
  if (c.contains("kl_cov_ratio")) cfg.kl_cov_ratio = c.at("kl_cov_ratio").get<double>();
  if (c.contains("ppo_kl_coef")) cfg.ppo_kl_coef = c.at("ppo_kl_coef").get<double>();
  if (c.contains("rollout_correction")) {
    const json& rc = c.at("rollout_correction");
    RolloutCorrectionOptions o;
    auto optional_string = [&](const char* key) -> std::optional<std::string> {
      if (!rc.contains(key) || rc.at(key).is_null()) return std::nullopt;
      return rc.at(key).get<std::string>();
    };
    o.rollout_is = optional_string("rollout_is");
    o.rollout_is_threshold = rc.at("rollout_is_threshold").get<std::string>();
    o.rollout_is_batch_normalize = rc.value("rollout_is_batch_normalize", false);
    o.rollout_rs = optional_string("rollout_rs");
    o.rollout_rs_threshold = optional_string("rollout_rs_threshold");
    cfg.rollout_correction = o;
    cfg.bypass_loss_type = rc.at("loss_type").get<std::string>();
  }
  return cfg;
}

// Value, metrics (the same key set as verl's) and the gradient w.r.t. log_prob of every registered loss.
TEST(CoreAlgosGolden, PolicyLosses) {
  for (const auto& [section, dt] : dtype_cases()) {
    const Tolerance tol = tolerance(section);
    torch::Tensor old_lp = input("old_log_prob", dt), lp = input("log_prob", dt);
    torch::Tensor m = input("response_mask", dt), w = input("rollout_is_weights", dt);
    std::set<std::string> covered;
    for (const auto& c : golden().at(section).at("policy_loss")) {
      const std::string mode = c.at("mode"), agg = c.at("loss_agg_mode");
      const bool with_w = c.at("rollout_is_weights").get<bool>();
      const std::string adv_key = c.value("advantages_input", std::string("advantages"));
      torch::Tensor adv = input(adv_key.c_str(), dt);
      std::ostringstream name;
      name << section << "/policy_loss/" << mode << "/" << agg << (with_w ? "/is_weights" : "");
      if (c.contains("clip_cov_ratio")) name << "/ratio=" << c.at("clip_cov_ratio").get<double>();
      if (c.contains("kl_cov_ratio")) name << "/ratio=" << c.at("kl_cov_ratio").get<double>();
      if (c.contains("rollout_correction")) name << "/" << c.at("rollout_correction").dump();
      torch::Tensor x = lp.clone().set_requires_grad(true);
      if (c.contains("seed")) torch::manual_seed(c.at("seed").get<uint64_t>());  // clip_cov's randperm
      PolicyLossOutput out =
          compute_policy_loss(mode, old_lp, x, adv, m, agg, loss_config(c), with_w ? w : torch::Tensor());
      out.pg_loss.backward();
      EXPECT_EQ(out.pg_loss.scalar_type(), dt) << name.str();
      expect_close(name.str() + "/pg_loss", out.pg_loss.item<double>(), c.at("pg_loss").get<double>(), tol);
      expect_close(name.str() + "/grad_log_prob", x.grad(), tensor_of(c.at("grad_log_prob")), tol);
      for (const auto& [key, value] : c.at("metrics").items()) {
        ASSERT_EQ(out.metrics.count(key), 1u) << name.str() << " lacks metric " << key;
        expect_close(name.str() + "/" + key, out.metrics.at(key), value.get<double>(), tol);
      }
      EXPECT_EQ(out.metrics.size(), c.at("metrics").size()) << name.str() << ": verl reports other metrics";
      covered.insert(mode);
    }
    for (const auto& mode : policy_loss_mode_names()) {
      EXPECT_TRUE(covered.count(mode)) << section << ": no golden case for " << mode;
    }
  }
}

TEST(CoreAlgosGolden, ValueLoss) {
  for (const auto& [section, dt] : dtype_cases()) {
    const Tolerance tol = tolerance(section);
    torch::Tensor vpreds = input("vpreds", dt), returns = input("returns", dt), values = input("values", dt);
    torch::Tensor m = input("response_mask", dt);
    for (const auto& c : golden().at(section).at("value_loss")) {
      const std::string agg = c.at("loss_agg_mode");
      const std::string name = std::string(section) + "/value_loss/" + agg;
      torch::Tensor x = vpreds.clone().set_requires_grad(true);
      ValueLossOutput out = compute_value_loss(x, returns, values, m, c.at("cliprange_value").get<double>(), agg);
      out.vf_loss.backward();
      expect_close(name + "/vf_loss", out.vf_loss.item<double>(), c.at("vf_loss").get<double>(), tol);
      expect_close(name + "/vf_clipfrac", out.vf_clipfrac.item<double>(), c.at("vf_clipfrac").get<double>(), tol);
      expect_close(name + "/grad_vpreds", x.grad(), tensor_of(c.at("grad_vpreds")), tol);
    }
  }
}

// Value and gradient of every KL kind. verl 0.9.1 computes the "+" kinds (straight-through k2); should a verl
// version raise for one ("verl_raises"), the test pins verl.cpp's documented meaning instead: the value of the base
// kind, the gradient of k2 (docs/config.md).
TEST(CoreAlgosGolden, KlPenalty) {
  for (const auto& [section, dt] : dtype_cases()) {
    const Tolerance tol = tolerance(section);
    torch::Tensor lp = input("log_prob", dt), ref = input("ref_log_prob", dt), w = input("kl_weights", dt);
    int cases = 0;
    for (const auto& c : golden().at(section).at("kl_penalty")) {
      const std::string kind = c.at("kind");
      const std::string name = std::string(section) + "/kl_penalty/" + kind;
      torch::Tensor x = lp.clone().set_requires_grad(true);
      torch::Tensor value = kl_penalty(x, ref, kind);
      (value * w).sum().backward();
      if (c.contains("verl_raises")) {
        ASSERT_EQ(kind.back(), '+') << name << ": verl raises for a base kind";
        const std::string base = kind.substr(0, kind.size() - 1);
        expect_close(name + "/value (base kind; verl raises)", value, kl_penalty(lp, ref, base), tol);
        expect_close(name + "/grad (k2; verl raises)", x.grad(), (lp - ref) * w, tol);
      } else {
        expect_close(name + "/value", value, tensor_of(c.at("value")), tol);
        expect_close(name + "/grad", x.grad(), tensor_of(c.at("grad_weighted_sum")), tol);
      }
      ++cases;
    }
    EXPECT_EQ(cases, static_cast<int>(kl_penalty_names().size())) << section;
  }
}

TEST(CoreAlgosGolden, AggLoss) {
  for (const auto& [section, dt] : dtype_cases()) {
    const Tolerance tol = tolerance(section);
    torch::Tensor loss_mat = input("loss_mat", dt), m = input("response_mask", dt);
    for (const auto& c : golden().at(section).at("agg_loss")) {
      const std::string mode = c.at("mode");
      AggLossOptions o;
      const json& opts = c.at("options");
      if (opts.contains("dp_size")) o.dp_size = opts.at("dp_size").get<double>();
      if (opts.contains("batch_num_tokens")) o.batch_num_tokens = opts.at("batch_num_tokens").get<double>();
      if (opts.contains("global_batch_size")) o.global_batch_size = opts.at("global_batch_size").get<double>();
      if (opts.contains("loss_scale_factor")) o.loss_scale_factor = opts.at("loss_scale_factor").get<double>();
      expect_close(std::string(section) + "/agg_loss/" + mode + (opts.empty() ? "" : "/with_options"),
                   agg_loss(loss_mat, m, mode, o).item<double>(), c.at("value").get<double>(), tol);
    }
  }
}

TEST(CoreAlgosGolden, Helpers) {
  for (const auto& [section, dt] : dtype_cases()) {
    const Tolerance tol = tolerance(section);
    const std::string s = std::string(section) + "/";
    const json& h = golden().at(section).at("helpers");
    torch::Tensor loss_mat = input("loss_mat", dt), m = input("response_mask", dt), logits = input("logits", dt);
    torch::Tensor labels = input("labels").to(torch::kInt64);
    expect_close(s + "masked_mean", masked_mean(loss_mat, m).item<double>(), h.at("masked_mean").get<double>(), tol);
    expect_close(s + "masked_mean_rows", masked_mean(loss_mat, m, -1), tensor_of(h.at("masked_mean_rows")), tol);
    expect_close(s + "masked_var", masked_var(loss_mat, m).item<double>(), h.at("masked_var").get<double>(), tol);
    expect_close(s + "masked_whiten", masked_whiten(loss_mat, m), tensor_of(h.at("masked_whiten")), tol);
    expect_close(s + "entropy_from_logits", entropy_from_logits(logits), tensor_of(h.at("entropy_from_logits")), tol);
    expect_close(s + "logprobs_from_logits", logprobs_from_logits(logits, labels),
                 tensor_of(h.at("logprobs_from_logits")), tol);
    expect_close(s + "sum_pi_squared_from_logits", sum_pi_squared_from_logits(logits),
                 tensor_of(h.at("sum_pi_squared_from_logits")), tol);
    torch::Tensor ids = tensor_of(h.at("response_ids")).to(torch::kInt64);
    auto eos = h.at("eos_token").get<std::vector<int64_t>>();
    expect_close(s + "get_response_mask", get_response_mask(ids, eos), tensor_of(h.at("response_mask_from_eos")));
    expect_close(s + "compute_position_id_with_mask", compute_position_id_with_mask(m),
                 tensor_of(h.at("position_ids")));
  }
}

// The coefficient after each update of verl's AdaptiveKLController on the same KL sequence.
TEST(CoreAlgosGolden, AdaptiveKlController) {
  const json& k = golden().at("adaptive_kl_controller");
  AdaptiveKLController ctrl(k.at("init_kl_coef").get<double>(), k.at("target_kl").get<double>(),
                            k.at("horizon").get<int64_t>());
  const auto kls = k.at("current_kl").get<std::vector<double>>();
  const auto values = k.at("values").get<std::vector<double>>();
  ASSERT_EQ(kls.size(), values.size());
  for (size_t i = 0; i < kls.size(); ++i) {
    ctrl.update(kls[i], k.at("n_steps").get<int64_t>());
    expect_close("adaptive_kl_controller/" + std::to_string(i), ctrl.value(), values[i]);
  }
}

void expect_metric_maps_equal(const std::string& name, const MetricMap& actual, const json& expected,
                              Tolerance tol = tolerance("float64")) {
  for (const auto& [key, value] : expected.items()) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      ADD_FAILURE() << name << ": missing " << key;
      continue;
    }
    expect_close(name + "/" + key, it->second, value.get<double>(), tol);
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
  // verl's compute_data_metrics takes the prompt / response lengths as float32 whatever the inputs' dtype.
  expect_metric_maps_equal("data_metrics", compute_data_metrics(b, true), d.at("metrics"), tolerance("float32"));
}

// verl 0.9.1's compute_variance_proxy_metrics over the shared inputs, with and without IS weights and a grad norm,
// in float64 and float32; GDPO's per-component metrics as its trainer computes them.
TEST(CoreAlgosGolden, VarianceProxyAndGdpoComponentMetrics) {
  const json& v = golden().at("variance_proxy");
  ASSERT_EQ(v.at("cases").size(), 8u);
  for (const json& c : v.at("cases")) {
    const std::string dtype_name = c.at("dtype").get<std::string>();
    const torch::Dtype dtype = dtype_name == "float64" ? torch::kDouble : torch::kFloat;
    VarianceProxyInputs in;
    in.sum_pi_squared = tensor_of(v.at("sum_pi_squared"), dtype);
    in.old_log_probs = input("old_log_prob", dtype);
    in.advantages = input("advantages", dtype);
    in.response_mask = input("response_mask", dtype);
    if (c.at("with_is").get<bool>()) in.rollout_is_weights = input("rollout_is_weights", dtype);
    if (!c.at("gradient_norm").is_null()) in.gradient_norm = c.at("gradient_norm").get<double>();
    const std::string name = str_cat("variance_proxy ", dtype_name, c.at("with_is").get<bool>() ? " IS" : "",
                                     in.gradient_norm ? " grad_norm" : "");
    expect_metric_maps_equal(name, compute_variance_proxy_metrics(in), c.at("metrics"), tolerance(dtype_name));
  }
  EXPECT_TRUE(compute_variance_proxy_metrics({}).empty());  // no sum_pi_squared: nothing, as in verl
  for (const auto& [key, expected] : v.at("gdpo_components").items()) {
    const MetricMap got =
        compute_reward_component_metrics("gdpo/" + key, expected.at("values").get<std::vector<double>>());
    for (const char* stat : {"mean", "std", "max", "min"}) {
      expect_close("gdpo/" + key + "/" + stat, got.at("gdpo/" + key + "/" + stat), expected.at(stat).get<double>(),
                   tolerance("float32"));
    }
  }
}

}  // namespace
}  // namespace verl::algo
