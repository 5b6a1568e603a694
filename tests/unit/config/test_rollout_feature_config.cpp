// algorithm.rollout_correction / filter_groups / use_pf_ppo / pf_ppo and data.gen_batch_size: verl 0.9.1's
// defaults, the threshold forms verl accepts, and the bad values verl rejects, rejected before any weights load.
#include <gtest/gtest.h>

#include "support/config_overrides.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"

namespace verl::config {
namespace {

PPOConfig rollout_feature_config_load(std::vector<std::string> overrides) {
  return test::load_with_overrides(std::move(overrides)).ppo;
}
std::string rollout_feature_config_error_of(std::vector<std::string> overrides) {
  return test::config_error_of(std::move(overrides));
}

TEST(RolloutFeatureConfig, DefaultsAreVerls) {
  const PPOConfig c = rollout_feature_config_load({});
  const RolloutCorrectionConfig& rc = c.algorithm.rollout_correction;
  EXPECT_FALSE(rc.rollout_is.has_value());
  EXPECT_DOUBLE_EQ(std::stod(rc.rollout_is_threshold), 2.0);
  EXPECT_FALSE(rc.rollout_is_batch_normalize);
  EXPECT_FALSE(rc.rollout_rs.has_value());
  EXPECT_FALSE(rc.rollout_rs_threshold.has_value());
  EXPECT_FALSE(rc.bypass_mode);
  EXPECT_EQ(rc.loss_type, "ppo_clip");
  EXPECT_FALSE(c.algorithm.filter_groups.enable);
  EXPECT_EQ(c.algorithm.filter_groups.metric, "reward");
  EXPECT_EQ(c.algorithm.filter_groups.max_num_gen_batches, 0);
  EXPECT_EQ(c.algorithm.filter_groups.max_inflight_gen_batches, 1);
  EXPECT_FALSE(c.algorithm.use_pf_ppo);
  EXPECT_EQ(c.algorithm.pf_ppo.reweight_method, "pow");
  EXPECT_DOUBLE_EQ(c.algorithm.pf_ppo.weight_pow, 2.0);
  EXPECT_FALSE(c.data.gen_batch_size.has_value());
}

TEST(RolloutFeatureConfig, ThresholdsAsNumbersOrStrings) {
  const std::string p = "algorithm.rollout_correction.";
  PPOConfig c =
      rollout_feature_config_load({p + "rollout_is=sequence", p + "rollout_is_threshold=0.5_5.0",
                                   p + "rollout_rs=token_k1,seq_max_k2", p + "rollout_rs_threshold='0.5_2.0,0.3'"});
  EXPECT_EQ(c.algorithm.rollout_correction.rollout_is, "sequence");
  EXPECT_EQ(c.algorithm.rollout_correction.rollout_is_threshold, "0.5_5.0");
  EXPECT_EQ(c.algorithm.rollout_correction.rollout_rs, "token_k1,seq_max_k2");
  EXPECT_EQ(c.algorithm.rollout_correction.rollout_rs_threshold, "0.5_2.0,0.3");
  c = rollout_feature_config_load({p + "rollout_is=token", p + "rollout_is_threshold=3", p + "rollout_rs=seq_mean_k3",
                                   p + "rollout_rs_threshold=0.01"});
  EXPECT_DOUBLE_EQ(std::stod(c.algorithm.rollout_correction.rollout_is_threshold), 3.0);
  EXPECT_DOUBLE_EQ(std::stod(*c.algorithm.rollout_correction.rollout_rs_threshold), 0.01);
  c = rollout_feature_config_load({"algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=acc",
                                   "data.gen_batch_size=48", "algorithm.use_pf_ppo=true",
                                   "algorithm.pf_ppo.reweight_method=max_random"});
  EXPECT_EQ(c.algorithm.filter_groups.metric, "acc");
  EXPECT_EQ(c.data.gen_batch_size, 48);
  EXPECT_EQ(c.algorithm.pf_ppo.reweight_method, "max_random");
}

TEST(RolloutFeatureConfig, BadValuesNameTheKey) {
  const std::string p = "algorithm.rollout_correction.";
  EXPECT_NE(rollout_feature_config_error_of({p + "rollout_is=geometric"}).find("invalid rollout_is 'geometric'"),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({p + "rollout_is=token", p + "rollout_is_threshold=2_1"})
                .find("algorithm.rollout_correction: "),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({p + "rollout_is=token", p + "rollout_is_threshold=2_1"})
                .find("lower bound must be <= upper"),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({p + "rollout_rs=token_k4", p + "rollout_rs_threshold=1.0"})
                .find("invalid rollout_rs option 'token_k4'"),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({p + "rollout_rs=token_k2"}).find("rollout_rs_threshold must be set"),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({p + "loss_type=grpo"}).find(p + "loss_type"), std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({"algorithm.pf_ppo.reweight_method=softmax"})
                .find("algorithm.pf_ppo.reweight_method"),
            std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({"algorithm.filter_groups.max_inflight_gen_batches=0"})
                .find("algorithm.filter_groups.max_inflight_gen_batches"),
            std::string::npos);
  EXPECT_NE(
      rollout_feature_config_error_of({"algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=null"})
          .find("algorithm.filter_groups.metric' must be set"),
      std::string::npos);
  EXPECT_NE(rollout_feature_config_error_of({"data.gen_batch_size=0"}).find("data.gen_batch_size"), std::string::npos);
}

}  // namespace
}  // namespace verl::config
