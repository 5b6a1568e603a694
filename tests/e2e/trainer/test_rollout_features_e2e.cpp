// `verl train` end to end (digit-completion task, tiny random Llama, one CPU process) with the rollout-side
// features of verl's algorithm section: DAPO dynamic sampling (algorithm.filter_groups, data.gen_batch_size),
// rollout correction (algorithm.rollout_correction with rollout_log_probs) and PF-PPO (algorithm.use_pf_ppo).
// Each run is two steps of 8 prompts (seconds).
#include <gtest/gtest.h>

#include <cmath>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& rollout_features_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_rollout_features"), 8);
  return instance;
}

TrainRun rollout_features_run(const std::string& name, const std::vector<std::string>& overrides) {
  const std::string run_dir = make_temp_dir("e2e_" + name);
  std::vector<std::string> all = rollout_features_setup().base_overrides(run_dir);
  all.insert(all.end(), {"trainer.total_training_steps=2", "trainer.test_freq=-1"});
  all.insert(all.end(), overrides.begin(), overrides.end());
  return run_verl_train(all, run_dir);
}

double at(const trainer::MetricHistory& history, const std::string& key, int64_t step) {
  auto it = history.find(key);
  if (it == history.end() || !it->second.count(step)) {
    ADD_FAILURE() << key << " not logged at step " << step;
    return std::nan("");
  }
  return it->second.at(step);
}

// data.gen_batch_size=4 < train_batch_size=8: every step needs at least two generation batches; with n=1 each
// group is one response (always kept), so exactly two.
TEST(RolloutFeaturesE2E, FilterGroupsGeneratesExtraBatchesAndLogsThem) {
  TrainRun run =
      rollout_features_run("filter_groups", {"algorithm.adv_estimator=grpo", "algorithm.filter_groups.enable=true",
                                             "algorithm.filter_groups.metric=seq_reward", "data.gen_batch_size=4"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (int64_t step : {1, 2}) {
    EXPECT_EQ(at(run.history, "train/num_gen_batches", step), 2.0) << step;
    EXPECT_EQ(at(run.history, "global_seqlen/mean", step) > 0, true);
  }
  EXPECT_NE(run.result.err.find("generating more"), std::string::npos) << run.result.err;
}

// Groups of 4 sampled responses: groups whose summed reward is uniform are dropped, and generation continues
// until 8 varying groups are kept (at least one batch of 8 prompts per step).
TEST(RolloutFeaturesE2E, FilterGroupsDropsUniformGroups) {
  TrainRun run = rollout_features_run(
      "filter_groups_n4",
      {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4", "algorithm.filter_groups.enable=true",
       "algorithm.filter_groups.metric=reward", "algorithm.filter_groups.max_num_gen_batches=40"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (int64_t step : {1, 2}) {
    EXPECT_GE(at(run.history, "train/num_gen_batches", step), 1.0) << step;
    // Every kept group varies, so GRPO's advantages are not all zero.
    EXPECT_GT(at(run.history, "critic/advantages/max", step), 0.0) << step;
  }
}

// Greedy decoding gives each group identical responses: no group is ever kept, and the run stops with verl's
// error once max_num_gen_batches batches are spent.
TEST(RolloutFeaturesE2E, FilterGroupsFailsAsVerlWhenNoGroupVaries) {
  TrainRun run = rollout_features_run(
      "filter_groups_greedy",
      {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.do_sample=false",
       "algorithm.filter_groups.enable=true", "algorithm.filter_groups.max_num_gen_batches=3"});
  EXPECT_EQ(run.result.exit_code, 1);
  EXPECT_NE(run.result.err.find("num_gen_batches=3 >= max_num_gen_batches=3"), std::string::npos) << run.result.err;
}

// The rollout engine and the actor hold the same fp32 weights: their log-probs agree, so the off-policy KL is
// ~0 and no token is rejected by a [0.5, 2] ratio band; the IS weights sit at 1.
TEST(RolloutFeaturesE2E, RolloutCorrectionLogsVerlMetrics) {
  TrainRun run =
      rollout_features_run("rollout_correction", {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=2",
                                                  "actor_rollout_ref.rollout.calculate_log_probs=true",
                                                  "algorithm.rollout_correction.rollout_is=token",
                                                  "algorithm.rollout_correction.rollout_rs=token_k1,seq_mean_k3",
                                                  "algorithm.rollout_correction.rollout_rs_threshold='0.5_2.0,0.01'"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (int64_t step : {1, 2}) {
    EXPECT_LT(std::abs(at(run.history, "rollout_corr/kl", step)), 1e-4) << step;
    EXPECT_NEAR(at(run.history, "rollout_corr/rollout_is_mean", step), 1.0, 1e-3) << step;
    EXPECT_EQ(at(run.history, "rollout_corr/rollout_rs_masked_fraction", step), 0.0) << step;
    // verl's calculate_debug_metrics: the two probabilities agree and correlate.
    EXPECT_EQ(at(run.history, "training/rollout_probs_diff_valid", step), 1.0) << step;
    EXPECT_LT(at(run.history, "training/rollout_probs_diff_max", step), 1e-4) << step;
    EXPECT_GT(at(run.history, "training/rollout_actor_probs_pearson_corr", step), 0.999) << step;
    for (const char* key : {"rollout_corr/training_ppl", "rollout_corr/rollout_ppl", "rollout_corr/chi2_token",
                            "rollout_corr/rollout_is_eff_sample_size", "rollout_corr/rollout_rs_token_k1_mean"}) {
      EXPECT_TRUE(std::isfinite(at(run.history, key, step))) << key;
    }
  }
}

TEST(RolloutFeaturesE2E, RolloutCorrectionWithoutRolloutLogProbsIsAConfigError) {
  TrainRun run =
      rollout_features_run("rollout_correction_no_logprobs", {"algorithm.rollout_correction.rollout_is=sequence"});
  EXPECT_EQ(run.result.exit_code, 1);
  EXPECT_NE(run.result.err.find("actor_rollout_ref.rollout.calculate_log_probs=true"), std::string::npos)
      << run.result.err;
}

// With the KL penalty in the reward, the recipe computes old and reference log-probs per generation batch before
// filtering; seq_final_reward (scores less the penalty) is the metric.
TEST(RolloutFeaturesE2E, FilterGroupsWithKlInRewardOnSeqFinalReward) {
  TrainRun run = rollout_features_run(
      "filter_groups_kl",
      {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=2", "algorithm.use_kl_in_reward=true",
       "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_final_reward",
       "algorithm.filter_groups.max_num_gen_batches=40"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (int64_t step : {1, 2}) {
    EXPECT_GE(at(run.history, "train/num_gen_batches", step), 1.0) << step;
    EXPECT_TRUE(std::isfinite(at(run.history, "actor/reward_kl_penalty", step))) << step;
  }
}

// verl's bypass mode: the rollout's log-probs serve as the old ones (no old_log_prob pass) and the actor's
// bypass_mode loss reports the rollout-correction metrics of the current policy against the rollout.
TEST(RolloutFeaturesE2E, BypassModeSkipsTheOldLogProbPass) {
  for (const std::string loss_type : {"ppo_clip", "reinforce"}) {
    TrainRun run = rollout_features_run(
        "bypass_" + loss_type,
        {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=2",
         "actor_rollout_ref.rollout.calculate_log_probs=true", "algorithm.rollout_correction.bypass_mode=true",
         "algorithm.rollout_correction.loss_type=" + loss_type, "algorithm.rollout_correction.rollout_is=sequence"});
    ASSERT_EQ(run.result.exit_code, 0) << loss_type << ": " << run.result.err;
    EXPECT_EQ(run.history.count("timing_s/old_log_prob"), 0u) << loss_type;
    EXPECT_TRUE(std::isfinite(at(run.history, "actor/pg_loss", 2))) << loss_type;
    EXPECT_LT(std::abs(at(run.history, "rollout_corr/kl", 1)), 1e-4) << loss_type;
  }
}

// PF-PPO resamples the step's batch by reward weights before the update (the data metrics see the resampled
// batch, as verl's). Step 1 generates the same responses with and without it; with pow weights |score|^2 a
// zero-score response (weight 1e-8) is practically never drawn when any response scored, so the resampled
// batch's minimum score is positive.
TEST(RolloutFeaturesE2E, PfPpoResamplesByRewardAfterGae) {
  TrainRun plain = rollout_features_run("pf_ppo_off", {"algorithm.adv_estimator=gae", "actor_rollout_ref.rollout.n=4"});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  ASSERT_GT(at(plain.history, "critic/score/max", 1), 0.0) << "no response scored: the check below would be vacuous";
  ASSERT_EQ(at(plain.history, "critic/score/min", 1), 0.0);
  for (const std::string method : {"pow", "max_min", "max_random"}) {
    const std::string n = method == "pow" ? "4" : "1";  // the other two only need to run
    TrainRun run = rollout_features_run("pf_ppo_" + method,
                                        {"algorithm.adv_estimator=gae", "actor_rollout_ref.rollout.n=" + n,
                                         "algorithm.use_pf_ppo=true", "algorithm.pf_ppo.reweight_method=" + method});
    ASSERT_EQ(run.result.exit_code, 0) << method << ": " << run.result.err;
    EXPECT_TRUE(std::isfinite(at(run.history, "actor/pg_loss", 2))) << method;
    EXPECT_TRUE(std::isfinite(at(run.history, "critic/vf_loss", 2))) << method;
    if (method == "pow") EXPECT_GT(at(run.history, "critic/score/min", 1), 0.0);
  }
}

}  // namespace
}  // namespace verl::test
