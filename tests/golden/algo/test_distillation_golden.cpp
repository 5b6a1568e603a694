// The on-policy distillation loss (algo/distillation_loss.h) against tests/golden/algo/distillation_golden.json,
// produced by gen_distillation_golden.py CALLING verl 0.9.1's own distillation_loss and distillation_ppo_loss
// (verl/trainer/distillation/losses.py) in float64: every estimator as a supervised loss and as a policy gradient,
// with and without loss_max_clamp, under three aggregation modes (value, gradient w.r.t. the student's log-probs,
// metrics), forward_kl_topk from the student's logits (model/top_k_log_probs.h, then the loss: verl's
// fsdp/losses.py compute_forward_kl_topk chained into distillation_loss; gradient w.r.t. the logits), and the
// combination with the task's loss for each use_task_rewards / use_policy_gradient pair.
#include <gtest/gtest.h>

#include <set>

#include "support/golden_json.h"
#include "verl/algo/distillation_loss.h"
#include "verl/model/top_k_log_probs.h"
#include "verl/model/transformer.h"

namespace verl::algo {
namespace {

using nlohmann::json;

const json& distillation_golden() {
  static const json data = test::read_golden_json("tests/golden/algo/distillation_golden.json",
                                                  "tests/golden/algo/gen_distillation_golden.py");
  return data;
}

config::DistillationLossConfig distillation_config_of(const json& fields) {
  config::DistillationLossConfig c;
  c.loss_mode = fields.at("loss_mode").get<std::string>();
  c.use_policy_gradient = fields.at("use_policy_gradient").get<bool>();
  if (!fields.at("loss_max_clamp").is_null()) c.loss_max_clamp = fields.at("loss_max_clamp").get<double>();
  c.use_task_rewards = fields.at("use_task_rewards").get<bool>();
  c.distillation_loss_coef = fields.at("distillation_loss_coef").get<double>();
  c.clip_ratio = fields.at("clip_ratio").get<double>();
  c.clip_ratio_low = fields.at("clip_ratio_low").get<double>();
  c.clip_ratio_high = fields.at("clip_ratio_high").get<double>();
  c.topk = fields.at("topk").get<int64_t>();
  if (!fields.at("log_prob_min_clamp").is_null()) c.log_prob_min_clamp = fields.at("log_prob_min_clamp").get<double>();
  return c;
}

struct DistillationInputs {
  torch::Tensor mask, old_log_prob, log_prob, teacher, is_weights;
  AggLossOptions agg;  // the micro-batch's own token and row counts, as the generator gave verl
};

DistillationInputs distillation_inputs() {
  const json& in = distillation_golden().at("inputs");
  DistillationInputs x;
  x.mask = test::tensor_of(in.at("response_mask"));
  x.old_log_prob = test::tensor_of(in.at("old_log_prob"));
  x.log_prob = test::tensor_of(in.at("log_prob"));
  x.teacher = test::tensor_of(in.at("teacher_log_prob"));
  x.is_weights = test::tensor_of(in.at("rollout_is_weights"));
  x.agg.dp_size = 1;
  x.agg.batch_num_tokens = x.mask.sum().item<double>();
  x.agg.global_batch_size = static_cast<double>(x.mask.size(0));
  return x;
}

TEST(DistillationGolden, EveryVerlLossIsHandled) {
  std::set<std::string> verl_modes;
  for (const auto& name : distillation_golden().at("registry")) verl_modes.insert(name.get<std::string>());
  // The estimators all go through kl_penalty; forward_kl_topk is verl's one other loss (its own test below).
  const std::set<std::string> expected = {"abs", "forward_kl_topk", "k1", "k2", "k3", "kl", "low_var_kl", "mse"};
  EXPECT_EQ(verl_modes, expected) << "verl's DISTILLATION_LOSS_REGISTRY changed: update verl.cpp's distillation loss";
}

TEST(DistillationGolden, LossGradientAndMetricsEqualVerls) {
  const DistillationInputs x = distillation_inputs();
  int checked = 0;
  for (const json& c : distillation_golden().at("distillation_loss")) {
    const std::string name = c.at("name").get<std::string>();
    const config::DistillationLossConfig cfg = distillation_config_of(c.at("config"));
    torch::Tensor log_prob = x.log_prob.clone().requires_grad_(true);
    const torch::Tensor is_weights = c.at("rollout_is_weights").get<bool>() ? x.is_weights : torch::Tensor();
    const DistillationLossOutput out = distillation_loss(cfg, log_prob, x.old_log_prob, x.teacher, x.mask,
                                                         c.at("loss_agg_mode").get<std::string>(), x.agg, is_weights);
    EXPECT_NEAR(out.loss.item<double>(), c.at("loss").get<double>(), 1e-9) << name;
    out.loss.backward();
    const torch::Tensor expected_grad = test::tensor_of(c.at("grad"));
    EXPECT_LT((log_prob.grad() - expected_grad).abs().max().item<double>(), 1e-9) << name << " gradient";
    std::set<std::string> verl_keys, ours;
    for (auto it = c.at("metrics").begin(); it != c.at("metrics").end(); ++it) {
      verl_keys.insert(it.key());
      ASSERT_TRUE(out.metrics.count(it.key())) << name << ": no metric " << it.key();
      EXPECT_NEAR(out.metrics.at(it.key()), it.value().get<double>(), 1e-9) << name << " " << it.key();
    }
    for (const auto& [key, value] : out.metrics) ours.insert(key);
    EXPECT_EQ(ours, verl_keys) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 72);
}

void expect_metrics_equal(const std::map<std::string, double>& ours, const json& verls, const std::string& name,
                          double tolerance) {
  std::set<std::string> verl_keys, our_keys;
  for (auto it = verls.begin(); it != verls.end(); ++it) {
    verl_keys.insert(it.key());
    ASSERT_TRUE(ours.count(it.key())) << name << ": no metric " << it.key();
    EXPECT_NEAR(ours.at(it.key()), it.value().get<double>(), tolerance) << name << " " << it.key();
  }
  for (const auto& [key, value] : ours) our_keys.insert(key);
  EXPECT_EQ(our_keys, verl_keys) << name;
}

TEST(DistillationGolden, ForwardKlTopKFromTheLogitsEqualsVerls) {
  const DistillationInputs x = distillation_inputs();
  const json& in = distillation_golden().at("topk_inputs");
  const torch::Tensor logits = test::tensor_of(in.at("logits"));
  const torch::Tensor responses = test::tensor_of(in.at("responses")).to(torch::kInt64);
  const torch::Tensor teacher_log_probs = test::tensor_of(in.at("teacher_top_k_log_probs"));
  const torch::Tensor teacher_ids = test::tensor_of(in.at("teacher_top_k_ids")).to(torch::kInt64);
  int checked = 0;
  for (const json& c : distillation_golden().at("forward_kl_topk")) {
    const std::string name = c.at("name").get<std::string>();
    const config::DistillationLossConfig cfg = distillation_config_of(c.at("config"));
    const double temperature = c.at("temperature").get<double>();
    torch::Tensor student_logits = logits.clone().requires_grad_(true);
    // The student's side as the actor reads it (fp32): the sampled tokens' log-probs, the teacher's tokens' and its
    // own top-k.
    const torch::Tensor log_prob = model::token_log_probs(student_logits, responses, temperature);
    model::TopKQuery query;
    query.gather_ids = teacher_ids;
    query.top_k = teacher_ids.size(2);
    const model::TopKLogProbs student = model::top_k_log_probs(student_logits, temperature, query);
    const torch::Tensor is_weights = c.at("rollout_is_weights").get<bool>() ? x.is_weights : torch::Tensor();
    const DistillationLossOutput out = distillation_loss_from_tokens(
        cfg,
        forward_kl_topk_token_losses(cfg, student.gathered_log_probs, student.top_k_ids, teacher_log_probs, teacher_ids,
                                     x.mask),
        log_prob, x.old_log_prob, x.mask, c.at("loss_agg_mode").get<std::string>(), x.agg, is_weights);
    EXPECT_NEAR(out.loss.item<double>(), c.at("loss").get<double>(), 2e-5) << name;
    out.loss.backward();
    const torch::Tensor expected_grad = test::tensor_of(c.at("grad"));
    EXPECT_LT((student_logits.grad() - expected_grad).abs().max().item<double>(), 2e-5) << name << " gradient";
    expect_metrics_equal(out.metrics, c.at("metrics"), name, 2e-5);
    ++checked;
  }
  EXPECT_EQ(checked, 48);
}

TEST(DistillationGolden, TheTaskLossCombinesAsVerls) {
  const DistillationInputs x = distillation_inputs();
  int checked = 0;
  for (const json& c : distillation_golden().at("combination")) {
    const config::DistillationLossConfig cfg = distillation_config_of(c.at("config"));
    EXPECT_EQ(distillation_computes_task_loss(cfg), c.at("task_loss_computed").get<bool>()) << c.at("config").dump();
    const DistillationLossOutput distill =
        distillation_loss(cfg, x.log_prob, x.old_log_prob, x.teacher, x.mask, "token-mean", x.agg);
    const torch::Tensor task = distillation_computes_task_loss(cfg)
                                   ? torch::tensor(c.at("task_loss").get<double>(), torch::kDouble)
                                   : torch::Tensor();
    EXPECT_NEAR(loss_with_distillation(cfg, task, distill.loss).item<double>(), c.at("total").get<double>(), 1e-9)
        << c.at("config").dump();
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace verl::algo
