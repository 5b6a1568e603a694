// distillation.* (verl 0.9.1's DistillationConfig) read as verl's dataclasses read it: the single teacher routes
// every row under the key "default", several teachers drop the default entry and route by teacher_key, and verl's
// checks (and verl.cpp's for what it does not implement) are one-line errors naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/config_overrides.h"

namespace verl::test {
namespace {

bool distillation_error_mentions(const std::vector<std::string>& overrides, const std::string& part) {
  const std::string err = config_error_of(overrides);
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  return err.find(part) != std::string::npos;
}

TEST(DistillationConfig, OffByDefaultAndTheActorCarriesNoDistillationLoss) {
  const auto c = load_with_overrides({}).ppo;
  EXPECT_FALSE(c.distillation.enabled);
  EXPECT_FALSE(c.actor_rollout_ref.actor.distillation.has_value());
}

TEST(DistillationConfig, OneTeacherRoutesEveryRowUnderTheDefaultKey) {
  const auto c =
      load_with_overrides(
          {"distillation.enabled=true", "distillation.teacher_models.teacher_model.model_path=/models/teacher",
           "distillation.teacher_models.teacher_model.inference.max_num_batched_tokens=512",
           "distillation.distillation_loss.loss_mode=k1", "distillation.distillation_loss.use_policy_gradient=true",
           "distillation.distillation_loss.use_task_rewards=false", "distillation.distillation_loss.loss_max_clamp=5"})
          .ppo;
  ASSERT_TRUE(c.distillation.enabled);
  ASSERT_EQ(c.distillation.teachers.size(), 1u);
  EXPECT_EQ(c.distillation.teachers[0].key, "default");
  EXPECT_EQ(c.distillation.teachers[0].model_path, "/models/teacher");
  EXPECT_EQ(c.distillation.teachers[0].max_num_batched_tokens, 512);
  ASSERT_TRUE(c.actor_rollout_ref.actor.distillation.has_value());
  const auto& loss = *c.actor_rollout_ref.actor.distillation;
  EXPECT_EQ(loss.loss_mode, "k1");
  EXPECT_TRUE(loss.use_policy_gradient);
  EXPECT_FALSE(loss.use_task_rewards);
  EXPECT_DOUBLE_EQ(loss.loss_max_clamp.value_or(0), 5.0);
  EXPECT_EQ(c.distillation.teacher_key, "data_source");
}

TEST(DistillationConfig, SeveralTeachersDropTheDefaultEntryAndNeedKeys) {
  const auto c =
      load_with_overrides({"distillation.enabled=true", "+distillation.teacher_models.math.key=lighteval/MATH",
                           "+distillation.teacher_models.math.model_path=/models/math",
                           "+distillation.teacher_models.gsm.key=openai/gsm8k",
                           "+distillation.teacher_models.gsm.model_path=/models/gsm"})
          .ppo;
  ASSERT_EQ(c.distillation.teachers.size(), 2u);
  EXPECT_EQ(c.distillation.teachers[0].entry, "math");
  EXPECT_EQ(c.distillation.teachers[0].key, "lighteval/MATH");
  EXPECT_EQ(c.distillation.teachers[1].key, "openai/gsm8k");
  EXPECT_EQ(c.distillation.teachers[1].max_num_batched_tokens, 8192);  // verl's inference default

  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", "+distillation.teacher_models.a.key=x",
       "+distillation.teacher_models.a.model_path=/m", "+distillation.teacher_models.b.key=x",
       "+distillation.teacher_models.b.model_path=/n"},
      "two teachers have the key 'x'"));
  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", "+distillation.teacher_models.a.model_path=/m",
       "+distillation.teacher_models.b.key=y", "+distillation.teacher_models.b.model_path=/n"},
      "distillation.teacher_models.a.key must be set"));
}

TEST(DistillationConfig, VerlsChecksAreOneLineErrorsNamingTheKey) {
  EXPECT_TRUE(distillation_error_mentions({"distillation.enabled=true"},
                                          "distillation.teacher_models.teacher_model.model_path must be set"));
  const std::string teacher = "distillation.teacher_models.teacher_model.model_path=/models/teacher";
  EXPECT_TRUE(
      distillation_error_mentions({"distillation.enabled=true", teacher, "distillation.distillation_loss.loss_mode=k1"},
                                  "needs distillation.distillation_loss.use_policy_gradient=true"));
  EXPECT_TRUE(
      distillation_error_mentions({"distillation.enabled=true", teacher, "distillation.distillation_loss.loss_mode=kl"},
                                  "needs distillation.distillation_loss.use_policy_gradient=true"));
  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", teacher, "distillation.distillation_loss.loss_mode=forward_kl_topk",
       "distillation.distillation_loss.topk=null"},
      "distillation.distillation_loss.topk must be a positive number"));
  EXPECT_TRUE(
      distillation_error_mentions({"distillation.enabled=true", teacher, "distillation.distillation_loss.loss_mode=k9"},
                                  "loss_mode 'k9' is not one of verl's distillation losses"));
  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", teacher, "distillation.distillation_loss.policy_loss_mode=gspo"},
      "policy_loss_mode must be 'vanilla'"));
  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", teacher, "distillation.teacher_models.teacher_model.inference.max_model_len=16"},
      "inference.max_model_len=16 leaves no room"));
  EXPECT_TRUE(distillation_error_mentions(
      {"distillation.enabled=true", teacher, "+distillation.distillation_loss.temperature=2"},
      "distillation.distillation_loss.temperature' is not used by verl.cpp"));
}

TEST(DistillationConfig, TheTopKLossReadsItsKnobs) {
  const std::string teacher = "distillation.teacher_models.teacher_model.model_path=/models/teacher";
  const auto c = load_with_overrides(
                     {"distillation.enabled=true", teacher, "distillation.distillation_loss.loss_mode=forward_kl_topk",
                      "distillation.distillation_loss.topk=64", "distillation.distillation_loss.log_prob_min_clamp=-5",
                      "+distillation.distillation_loss.use_chunked_topk=true"})
                     .ppo;
  EXPECT_EQ(c.distillation.loss.loss_mode, "forward_kl_topk");
  EXPECT_EQ(c.distillation.loss.topk, 64);
  EXPECT_DOUBLE_EQ(c.distillation.loss.log_prob_min_clamp.value_or(0), -5.0);
  // verl's defaults: top-32, no clamp.
  const auto d = load_with_overrides({"distillation.enabled=true", teacher}).ppo;
  EXPECT_EQ(d.distillation.loss.topk, 32);
  EXPECT_FALSE(d.distillation.loss.log_prob_min_clamp.has_value());
}

TEST(DistillationConfig, DisabledSectionsAreNotChecked) {
  // verl builds the dataclasses only when distillation is enabled: a half-written section is fine when off.
  const auto c = load_with_overrides({"distillation.distillation_loss.loss_mode=k1"}).ppo;
  EXPECT_FALSE(c.distillation.enabled);
}

}  // namespace
}  // namespace verl::test
