// `verl train` one step with each advantage estimator and policy loss that verl 0.9.1 registers beyond the
// classic ones (their numbers are checked against verl in tests/golden/algo): the keys they need are read, the
// actor feeds sum_pi_squared to the optimal token baselines, GDPO reads its components from a Python reward's
// extra info, and each loss reports the metrics verl's does. Digit-completion task, tiny random Llama, one CPU
// process; one training step each.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_registry_digits"));
  return instance;
}

TrainRun train_one_step(const std::string& name, const std::vector<std::string>& overrides) {
  const std::string run_dir = make_temp_dir("e2e_registry_" + name);
  std::vector<std::string> all = setup().base_overrides(run_dir);
  for (const char* o : {"actor_rollout_ref.rollout.n=2", "trainer.total_training_steps=1"}) all.push_back(o);
  all.insert(all.end(), overrides.begin(), overrides.end());
  return run_verl_train(all, run_dir);
}

bool logged(const trainer::MetricHistory& history, const std::string& key) {
  auto it = history.find(key);
  return it != history.end() && it->second.count(1);
}

// A verl-style reward file returning a dict: "score" plus two components GDPO normalises separately.
std::string gdpo_reward_file() {
  const std::string path = make_temp_dir("e2e_registry_gdpo_reward") + "/reward.py";
  write_file(path, R"PY(def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    format_reward = 1.0 if solution_str.strip() else 0.0
    accuracy_reward = 1.0 if solution_str.strip().startswith(str(ground_truth)[:1]) else 0.0
    return {"score": format_reward + accuracy_reward, "format_reward": format_reward,
            "accuracy_reward": accuracy_reward}
)PY");
  return path;
}

TEST(AlgorithmRegistryE2E, EachNewAdvantageEstimatorTrainsOneStep) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"grpo_passk", {}},
      {"grpo_vectorized", {}},
      {"rloo_vectorized", {}},
      {"optimal_token_baseline", {"actor_rollout_ref.actor.calculate_sum_pi_squared=true"}},
      {"tir_optimal_token_baseline", {"actor_rollout_ref.actor.calculate_sum_pi_squared=true"}},
      {"gdpo",
       {"custom_reward_function.path=" + gdpo_reward_file(), "algorithm.gdpo_reward_keys=[format_reward,accuracy_reward]",
        "algorithm.gdpo_reward_weights=[1.0,0.5]"}},
  };
  for (const auto& [estimator, extra] : cases) {
    SCOPED_TRACE(estimator);
    std::vector<std::string> overrides = {"algorithm.adv_estimator=" + estimator};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    TrainRun run = train_one_step(estimator, overrides);
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    for (const char* key : {"actor/pg_loss", "critic/advantages/mean", "critic/advantages/max", "actor/grad_norm"}) {
      EXPECT_TRUE(logged(run.history, key)) << key;
    }
  }
}

// verl asserts at run time; verl.cpp refuses the config before loading anything.
TEST(AlgorithmRegistryE2E, OptimalTokenBaselineWithoutSumPiSquaredIsAConfigError) {
  TrainRun run = train_one_step("otb_no_sum_pi", {"algorithm.adv_estimator=optimal_token_baseline"});
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.err.find("actor_rollout_ref.actor.calculate_sum_pi_squared=true"), std::string::npos)
      << run.result.err;
}

TEST(AlgorithmRegistryE2E, EachNewPolicyLossTrainsOneStepWithVerlsMetrics) {
  const std::string p = "actor_rollout_ref.actor.policy_loss.";
  struct Case {
    std::string mode;
    std::vector<std::string> extra;
    bool clipfrac;        // reports actor/pg_clipfrac
    bool clipfrac_lower;  // reports actor/pg_clipfrac_lower
  };
  const std::vector<Case> cases = {
      {"sapo", {"actor_rollout_ref.actor.tau_pos=1.0", "actor_rollout_ref.actor.tau_neg=1.05"}, true, true},
      {"geo_mean", {}, true, true},
      {"dppo_tv", {}, true, true},
      {"dppo_kl", {}, true, true},
      {"dro", {p + "dro_beta=0.1"}, false, false},
      {"clip_cov", {p + "clip_cov_ratio=0.2", p + "clip_cov_lb=0.0", p + "clip_cov_ub=5.0"}, true, false},
      {"kl_cov", {p + "kl_cov_ratio=0.2", p + "ppo_kl_coef=0.5"}, false, false},
      {"gpg", {}, false, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode);
    std::vector<std::string> overrides = {"algorithm.adv_estimator=grpo", p + "loss_mode=" + c.mode};
    overrides.insert(overrides.end(), c.extra.begin(), c.extra.end());
    TrainRun run = train_one_step("loss_" + c.mode, overrides);
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_TRUE(logged(run.history, "actor/pg_loss"));
    EXPECT_TRUE(logged(run.history, "actor/grad_norm"));
    EXPECT_EQ(logged(run.history, "actor/ppo_kl"), c.mode != "gpg");
    EXPECT_EQ(logged(run.history, "actor/pg_clipfrac"), c.clipfrac);
    EXPECT_EQ(logged(run.history, "actor/pg_clipfrac_lower"), c.clipfrac_lower);
  }
}

// bypass_mode is the loss verl switches to with algorithm.rollout_correction.bypass_mode=true: the rollout's
// log-probs are the old ones, the correction runs inside the loss, and its rollout_corr/ metrics reach the log.
TEST(AlgorithmRegistryE2E, BypassModeLossTrainsOneStepWithBothLossTypes) {
  const std::string rc = "algorithm.rollout_correction.";
  for (const std::string loss_type : {"ppo_clip", "reinforce"}) {
    SCOPED_TRACE(loss_type);
    TrainRun run = train_one_step("bypass_" + loss_type,
                                  {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.calculate_log_probs=true",
                                   rc + "bypass_mode=true", rc + "loss_type=" + loss_type, rc + "rollout_is=token"});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
    EXPECT_TRUE(logged(run.history, "actor/pg_loss"));
    EXPECT_TRUE(logged(run.history, "actor/ppo_kl"));
    EXPECT_EQ(logged(run.history, "actor/pg_clipfrac"), loss_type == "ppo_clip");
    EXPECT_TRUE(logged(run.history, "rollout_corr/rollout_is_mean"));
  }
}

TEST(AlgorithmRegistryE2E, DroWithoutBetaIsAConfigError) {
  TrainRun run = train_one_step("dro_no_beta", {"actor_rollout_ref.actor.policy_loss.loss_mode=dro"});
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.err.find("dro_beta"), std::string::npos) << run.result.err;
}

}  // namespace
}  // namespace verl::test
