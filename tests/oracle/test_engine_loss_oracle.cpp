// The actor's and critic's micro-batch losses (algo::ppo_loss, algo::compute_value_loss with workers/global_batch.h's
// global batch info) and their metrics (workers/update_metrics.h) against verl 0.9.1's own ppo_loss and value_loss
// (verl/workers/utils/losses.py), run live by tests/oracle/engine_loss_oracle.py in .venv/test as its engine calls
// them: two or three data-parallel ranks with different token counts, uneven micro-batches, rows with no response
// tokens, every loss_agg_mode, several policy losses, entropy and KL terms, rollout IS weights. Compared: each
// micro-batch's loss and metrics, each rank's gradients of the log-probs, entropies and values (summed over its
// micro-batches), and the mini-batch's metrics as the trainer logs them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/algo/ppo_loss.h"
#include "verl/workers/dp_actor.h"
#include "verl/workers/dp_critic.h"
#include "verl/workers/update_metrics.h"

namespace verl::test {
namespace {

using nlohmann::json;

const std::string kEngineLossOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/engine_loss_oracle.py";
constexpr int64_t kPromptLength = 3;
constexpr int64_t kResponseLength = 6;

torch::Tensor engine_tensor_from_json(const json& rows) {
  std::vector<double> flat;
  for (const auto& row : rows) {
    for (const auto& v : row) flat.push_back(v.get<double>());
  }
  return torch::tensor(flat, torch::kFloat64).reshape({static_cast<int64_t>(rows.size()), -1});
}

json engine_tensor_to_json(const torch::Tensor& t) {
  json rows = json::array();
  for (int64_t i = 0; i < t.size(0); ++i) {
    json row = json::array();
    for (int64_t j = 0; j < t.size(1); ++j) row.push_back(t[i][j].item<double>());
    rows.push_back(row);
  }
  return rows;
}

// One rank's rows: response lengths (one row of length 0), its mask (a hole inside one response, as a tool turn
// leaves), the tensors both kinds of loss read, and micro-batches of uneven sizes.
json engine_loss_rank(int64_t rows, const std::vector<std::vector<int64_t>>& micro_batches, bool with_is_weights) {
  std::vector<int64_t> lengths;
  torch::Tensor mask = torch::zeros({rows, kResponseLength}, torch::kFloat64);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t length = i == 1 ? 0 : torch::randint(1, kResponseLength + 1, {1}).item<int64_t>();
    lengths.push_back(length);
    mask[i].narrow(0, 0, length).fill_(1.0);
  }
  if (lengths[0] > 2) mask[0][1] = 0.0;
  auto opts = torch::kFloat64;
  torch::Tensor old_log_prob = -torch::rand({rows, kResponseLength}, opts) * 3.0;
  json rank = {
      {"response_length", lengths},
      {"response_mask", engine_tensor_to_json(mask)},
      {"old_log_prob", engine_tensor_to_json(old_log_prob)},
      // ratios spread over both clip bounds
      {"log_prob", engine_tensor_to_json(old_log_prob + torch::randn({rows, kResponseLength}, opts) * 0.4)},
      {"entropy", engine_tensor_to_json(torch::rand({rows, kResponseLength}, opts) * 3.0)},
      {"advantages", engine_tensor_to_json(torch::randn({rows, kResponseLength}, opts))},
      {"ref_log_prob", engine_tensor_to_json(old_log_prob + torch::randn({rows, kResponseLength}, opts) * 0.2)},
      {"vpreds", engine_tensor_to_json(torch::randn({rows, kResponseLength}, opts))},
      {"values", engine_tensor_to_json(torch::randn({rows, kResponseLength}, opts))},
      {"returns", engine_tensor_to_json(torch::randn({rows, kResponseLength}, opts))},
      {"micro_batches", micro_batches}};
  if (with_is_weights)
    rank["rollout_is_weights"] = engine_tensor_to_json(torch::rand({rows, kResponseLength}, opts) + 0.5);
  return rank;
}

struct EngineLossCase {
  std::string kind;  // actor / critic
  std::string loss_mode;
  std::string loss_agg_mode;
  double entropy_coeff = 0.0;
  bool use_kl_loss = false;
  bool with_is_weights = false;
  std::optional<double> loss_scale_factor;
  int ranks = 2;
};

json engine_loss_case_json(const EngineLossCase& c) {
  json config = {{"ppo_mini_batch_size", 5}, {"loss_agg_mode", c.loss_agg_mode}};
  if (c.loss_scale_factor) config["loss_scale_factor"] = *c.loss_scale_factor;
  if (c.kind == "actor") {
    config.update({{"clip_ratio_low", 0.2},
                   {"clip_ratio_high", 0.28},
                   {"clip_ratio_c", 3.0},
                   {"entropy_coeff", c.entropy_coeff},
                   {"use_kl_loss", c.use_kl_loss},
                   {"kl_loss_coef", 0.05},
                   {"kl_loss_type", "low_var_kl"}});
  } else {
    config["cliprange_value"] = 0.5;
  }
  json ranks = json::array();
  // Five rows per rank, split 2 + 3, 1 + 4 and 4 + 1: every micro-batch a different share, as many on every rank
  // (verl's same_micro_num_in_dp; its metric aggregation requires it).
  const std::vector<std::vector<std::vector<int64_t>>> splits = {
      {{0, 1}, {2, 3, 4}}, {{0}, {1, 2, 3, 4}}, {{0, 1, 2, 3}, {4}}};
  for (int r = 0; r < c.ranks; ++r) ranks.push_back(engine_loss_rank(5, splits[r], c.with_is_weights));
  return {{"kind", c.kind},
          {"config", config},
          {"loss_mode", c.loss_mode},
          {"prompt_length", kPromptLength},
          {"global_batch_size", 5 * c.ranks},
          {"ranks", ranks}};
}

torch::Tensor engine_rows_of(const torch::Tensor& t, const json& rows) {
  return t.index_select(0, torch::tensor(rows.get<std::vector<int64_t>>(), torch::kInt64));
}

// Float64 on both sides, except that verl adds the seq-mean-token-mean epsilon (1e-8) to an integer token count,
// which makes the sum a float32 tensor where it vanishes; verl.cpp keeps it in float64: up to 1e-8 relative.
constexpr double kEngineLossTolerance = 3e-8;

void expect_engine_near(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, kEngineLossTolerance * std::max(1.0, std::abs(expected))) << what;
}

// verl.cpp's side of one case: each rank's micro-batches, its gradients and the metrics the trainer logs (each
// rank's per-mini-batch lists, averaged over the ranks as the controller's reduce_metrics does).
void check_engine_loss_case(const EngineLossCase& c, const json& input, const json& verl) {
  const std::string label = c.kind + " " + c.loss_mode + " " + c.loss_agg_mode;
  const json& ranks = input.at("ranks");
  double tokens = 0.0;
  for (const auto& rank : ranks) tokens += engine_tensor_from_json(rank.at("response_mask")).sum().item<double>();
  algo::AggLossOptions global;
  global.dp_size = static_cast<double>(ranks.size());
  global.batch_num_tokens = tokens;
  global.global_batch_size = input.at("global_batch_size").get<double>();
  global.loss_scale_factor = c.loss_scale_factor;

  std::map<std::string, std::vector<double>> logged;  // key -> every rank's values
  for (size_t r = 0; r < ranks.size(); ++r) {
    const json& rank = ranks[r];
    const json& verl_rank = verl.at("ranks")[r];
    const torch::Tensor mask = engine_tensor_from_json(rank.at("response_mask"));
    std::map<std::string, torch::Tensor> leaves;
    for (const char* name : {"log_prob", "entropy", "vpreds"}) {
      leaves[name] = engine_tensor_from_json(rank.at(name)).requires_grad_(true);
    }
    workers::UpdateMetrics metrics;
    for (size_t m = 0; m < rank.at("micro_batches").size(); ++m) {
      const json& rows = rank.at("micro_batches")[m];
      const std::string where = label + ", rank " + std::to_string(r) + ", micro-batch " + std::to_string(m);
      const torch::Tensor micro_mask = engine_rows_of(mask, rows);
      torch::Tensor loss;
      if (c.kind == "actor") {
        algo::PpoLossInputs in;
        in.log_prob = engine_rows_of(leaves["log_prob"], rows);
        in.entropy = engine_rows_of(leaves["entropy"], rows);
        in.old_log_prob = engine_rows_of(engine_tensor_from_json(rank.at("old_log_prob")), rows);
        in.advantages = engine_rows_of(engine_tensor_from_json(rank.at("advantages")), rows);
        in.response_mask = micro_mask;
        in.ref_log_prob = engine_rows_of(engine_tensor_from_json(rank.at("ref_log_prob")), rows);
        if (c.with_is_weights)
          in.rollout_is_weights = engine_rows_of(engine_tensor_from_json(rank.at("rollout_is_weights")), rows);
        algo::PpoLossOptions options;
        options.loss_mode = c.loss_mode;
        options.loss_agg_mode = c.loss_agg_mode;
        options.policy.clip_ratio_low = 0.2;
        options.policy.clip_ratio_high = 0.28;
        options.policy.clip_ratio_c = 3.0;
        options.policy.agg = global;
        options.entropy_coeff = c.entropy_coeff;
        options.use_kl_loss = c.use_kl_loss;
        options.kl_loss_coef = 0.05;
        options.kl_loss_type = "low_var_kl";
        const algo::PpoLossOutput out = algo::ppo_loss(in, options);
        loss = out.loss;
        workers::add_ppo_loss_metrics(metrics, out, options.kl_loss_coef);
        metrics.add("actor/loss", loss.item<double>(), workers::MetricAggregation::Sum);  // as update_policy
      } else {
        const torch::Tensor vpreds = engine_rows_of(leaves["vpreds"], rows);
        const algo::ValueLossOutput out = algo::compute_value_loss(
            vpreds, engine_rows_of(engine_tensor_from_json(rank.at("returns")), rows),
            engine_rows_of(engine_tensor_from_json(rank.at("values")), rows), micro_mask, 0.5, c.loss_agg_mode, global);
        loss = out.vf_loss;
        workers::add_value_loss_metrics(metrics, out, vpreds, micro_mask);
      }
      loss.backward();
      const json& verl_micro = verl_rank.at("micro")[m];
      expect_engine_near(loss.item<double>(), verl_micro.at("loss").get<double>(), where + ": loss");
    }
    metrics.end_mini_batch();
    for (const auto& [key, values] : metrics.lists()) {
      logged[key].insert(logged[key].end(), values.begin(), values.end());
    }
    for (const auto& [name, grad] : verl_rank.at("grads").items()) {
      const torch::Tensor expected = engine_tensor_from_json(grad);
      ASSERT_TRUE(leaves[name].grad().defined()) << label << ": no gradient reached " << name;
      const double diff = (leaves[name].grad() - expected).abs().max().item<double>();
      EXPECT_LT(diff, kEngineLossTolerance * std::max(1.0, expected.abs().max().item<double>()))
          << label << ", rank " << r << ": gradient of " << name << " differs by " << diff;
    }
  }
  const json& expected = verl.at("aggregated");
  for (const auto& [key, value] : expected.items()) {
    ASSERT_TRUE(logged.count(key)) << label << ": verl.cpp does not log " << key;
    const std::vector<double>& values = logged.at(key);
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    // verl computes its clip fractions in fp32 (the mask as float).
    EXPECT_NEAR(mean, value.get<double>(), 1e-7 * std::max(1.0, std::abs(value.get<double>())))
        << label << ": logged " << key;
  }
  for (const auto& [key, values] : logged) {
    EXPECT_TRUE(expected.contains(key)) << label << ": verl does not log " << key;
  }
}

TEST(EngineLossOracle, MicroBatchLossesGradientsAndMetricsAreVerls) {
  torch::manual_seed(20261202);
  std::vector<EngineLossCase> cases;
  for (const std::string mode :
       {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
    cases.push_back({"actor", "vanilla", mode, 0.01, true});
    cases.push_back({"critic", "", mode});
  }
  cases.push_back({"actor", "vanilla", "token-mean", 0.0, false, false, std::nullopt, 3});
  cases.push_back({"actor", "vanilla", "seq-mean-token-sum-norm", 0.01, false, false, 64.0});
  cases.push_back({"critic", "", "seq-mean-token-sum-norm", 0.0, false, false, 64.0, 3});
  cases.push_back({"actor", "vanilla", "token-mean", 0.0, true, true});
  cases.push_back({"actor", "gspo", "seq-mean-token-mean", 0.0, false});
  cases.push_back({"actor", "cispo", "token-mean", 0.01, false});
  cases.push_back({"actor", "gpg", "token-sum", 0.0, true});
  cases.push_back({"actor", "geo_mean", "token-mean", 0.0, false});
  json input = json::array();
  for (const EngineLossCase& c : cases) input.push_back(engine_loss_case_json(c));
  const std::string path = make_temp_dir("engine_loss_oracle") + "/cases.json";
  std::ofstream(path) << input.dump();
  const CommandResult r = run_command(test_python() + kEngineLossOracle + " " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const json verl = json::parse(r.out);
  ASSERT_EQ(verl.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) check_engine_loss_case(cases[i], input[i], verl[i]);
}

}  // namespace
}  // namespace verl::test
