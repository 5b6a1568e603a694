// `verl train` with on-policy distillation (distillation.enabled) on the digit-completion setup, one CPU process:
// the teacher is the student's own network with its LM head scaled up (a sharper distribution over the same
// tokens), so the student can only close the gap by learning. Distillation alone (use_task_rewards=false, k3 as a
// supervised loss) must shrink the logged reverse KL; k1 as a policy gradient beside the task's GRPO loss logs
// verl's metric keys and the teacher's phase. forward_kl_topk (the teacher's top-4 distribution, supervised) must
// shrink its forward KL too and log verl's mass and overlap metrics.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& distillation_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_distillation"));
  return instance;
}

std::vector<std::string> distillation_run(const std::string& run_dir, const std::string& teacher,
                                          const std::vector<std::string>& more) {
  std::vector<std::string> overrides = distillation_setup().base_overrides(run_dir);
  const std::vector<std::string> distillation = {
      "algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=2", "distillation.enabled=true",
      "trainer.test_freq=-1", "distillation.teacher_models.teacher_model.model_path=" + teacher};
  overrides.insert(overrides.end(), distillation.begin(), distillation.end());
  overrides.insert(overrides.end(), more.begin(), more.end());
  return overrides;
}

double distillation_mean_over(const std::map<int64_t, double>& by_step, int64_t first, int64_t last) {
  double sum = 0;
  for (int64_t step = first; step <= last; ++step) sum += by_step.at(step);
  return sum / static_cast<double>(last - first + 1);
}

// Distillation alone (no task rewards, a teacher sharpened 6x) for 16 steps at lr 3e-3 with `loss` overrides.
TrainRun sixteen_steps_of_distillation_alone(const std::string& name, const std::vector<std::string>& loss) {
  const std::string teacher = make_sharpened_teacher(distillation_setup().model_dir, 6.0, name + "_teacher");
  const std::string run_dir = make_temp_dir(name);
  std::vector<std::string> more = {"distillation.distillation_loss.use_task_rewards=false",
                                   "actor_rollout_ref.actor.optim.lr=3e-3", "trainer.total_training_steps=16"};
  more.insert(more.end(), loss.begin(), loss.end());
  return run_verl_train(distillation_run(run_dir, teacher, more), run_dir);
}

// The logged distillation loss of steps 13-16 is under half that of steps 1-4.
void expect_distillation_loss_halves(const TrainRun& run) {
  const auto& loss = run.history.at("actor/distillation/loss");
  ASSERT_EQ(loss.size(), 16u);
  const double first = distillation_mean_over(loss, 1, 4), last = distillation_mean_over(loss, 13, 16);
  EXPECT_LT(last, 0.5 * first) << "actor/distillation/loss: steps 1-4 " << first << ", steps 13-16 " << last;
}

TEST(DistillationE2E, DistillationAloneShrinksTheReverseKlToTheTeacher) {
  const TrainRun run =
      sixteen_steps_of_distillation_alone("e2e_distillation_alone", {"distillation.distillation_loss.loss_mode=k3"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  expect_distillation_loss_halves(run);
  EXPECT_EQ(run.history.count("actor/pg_loss"), 0u) << "without task rewards verl computes no PPO loss";
  for (const char* key : {"actor/distillation/abs_loss", "actor/distillation/loss_min", "actor/distillation/loss_max",
                          "timing_s/teacher"}) {
    EXPECT_EQ(run.history.count(key), 1u) << key;
  }
}

TEST(DistillationE2E, TopKForwardKlAloneShrinksAndLogsVerlsMassAndOverlap) {
  const TrainRun run = sixteen_steps_of_distillation_alone(
      "e2e_distillation_topk",
      {"distillation.distillation_loss.loss_mode=forward_kl_topk", "distillation.distillation_loss.topk=4",
       "distillation.distillation_loss.log_prob_min_clamp=-10"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  expect_distillation_loss_halves(run);
  for (const char* key :
       {"actor/distillation/student_mass", "actor/distillation/student_mass_min", "actor/distillation/student_mass_max",
        "actor/distillation/teacher_mass", "actor/distillation/teacher_mass_min", "actor/distillation/teacher_mass_max",
        "actor/distillation/overlap_ratio", "actor/distillation/overlap_token_advantage", "actor/distillation/loss_min",
        "actor/distillation/loss_max"}) {
    EXPECT_EQ(run.history.count(key), 1u) << key;
  }
  EXPECT_EQ(run.history.count("actor/distillation/abs_loss"), 0u) << "verl logs abs_loss for the estimators only";
  // The student learns the teacher's sharper distribution: more of its mass on the teacher's top-4 at the end.
  const auto& mass = run.history.at("actor/distillation/student_mass");
  EXPECT_GT(distillation_mean_over(mass, 13, 16), distillation_mean_over(mass, 1, 4));
}

TEST(DistillationE2E, PolicyGradientDistillationBesideGrpoLogsVerlsKeys) {
  const std::string teacher = make_sharpened_teacher(distillation_setup().model_dir, 3.0, "e2e_distillation_teacher_pg");
  const std::string run_dir = make_temp_dir("e2e_distillation_pg");
  TrainRun run = run_verl_train(
      distillation_run(
          run_dir, teacher,
          {"distillation.distillation_loss.loss_mode=k1", "distillation.distillation_loss.use_policy_gradient=true",
           "distillation.distillation_loss.distillation_loss_coef=0.5",
           "distillation.distillation_loss.loss_max_clamp=10", "trainer.total_training_steps=2"}),
      run_dir);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (const char* key :
       {"actor/pg_loss", "actor/distillation/loss", "actor/distillation/abs_loss", "actor/distillation/pg_clipfrac",
        "actor/distillation/ppo_kl", "actor/distillation/pg_clipfrac_lower", "timing_s/teacher", "critic/score/mean"}) {
    ASSERT_EQ(run.history.count(key), 1u) << key;
    EXPECT_EQ(run.history.at(key).size(), 2u) << key;
  }
}

TEST(DistillationE2E, ATeacherWithASmallerVocabularyStopsTheRunBeforeAnyWeightsLoad) {
  const std::string run_dir = make_temp_dir("e2e_distillation_bad_teacher");
  const std::string teacher = make_temp_dir("e2e_distillation_wide_teacher");
  const CommandResult init =
      run_command(verl_binary() + " model init --arch llama --out '" + teacher + "' --vocab-size 8 --hidden-size 16 " +
                  "--num-layers 1 --num-heads 2 --num-kv-heads 2 --intermediate-size 32 --seed 2");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  TrainRun run = run_verl_train(distillation_run(run_dir, teacher, {"trainer.total_training_steps=1"}), run_dir);
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.err.find("but distillation.teacher_models.teacher_model.model_path '" + teacher +
                                "' has vocab_size 8 (teacher and student must share a tokenizer)"),
            std::string::npos)
      << run.result.err;
}

TEST(DistillationE2E, TopKWithAWiderTeacherOrAKPastItsVocabularyStopsTheRunBeforeAnyWeightsLoad) {
  const std::string teacher = make_temp_dir("e2e_distillation_wider_teacher");
  const CommandResult init =
      run_command(verl_binary() + " model init --arch llama --out '" + teacher + "' --vocab-size 200 " +
                  "--hidden-size 16 --num-layers 1 --num-heads 2 --num-kv-heads 2 --intermediate-size 32 --seed 2");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const std::string top_k = "distillation.distillation_loss.loss_mode=forward_kl_topk";
  // The student reads its log-probs at the teacher's ids: a teacher with ids the actor lacks is refused.
  const std::string wider_dir = make_temp_dir("e2e_distillation_topk_wider");
  TrainRun wider =
      run_verl_train(distillation_run(wider_dir, teacher, {top_k, "trainer.total_training_steps=1"}), wider_dir);
  EXPECT_NE(wider.result.exit_code, 0);
  EXPECT_NE(wider.result.err.find("distillation.teacher_models.teacher_model.model_path '" + teacher +
                                  "' has vocab_size 200, more than the actor's"),
            std::string::npos)
      << wider.result.err;
  const std::string sharp = make_sharpened_teacher(distillation_setup().model_dir, 2.0, "e2e_distillation_topk_k");
  const std::string k_dir = make_temp_dir("e2e_distillation_topk_large_k");
  TrainRun large_k = run_verl_train(
      distillation_run(k_dir, sharp,
                       {top_k, "distillation.distillation_loss.topk=100000", "trainer.total_training_steps=1"}),
      k_dir);
  EXPECT_NE(large_k.result.exit_code, 0);
  EXPECT_NE(large_k.result.err.find("distillation.distillation_loss.topk=100000 is larger than the vocab_size"),
            std::string::npos)
      << large_k.result.err;
}

}  // namespace
}  // namespace verl::test
