// KL controllers: spec section 13's adaptive step and the config factory.
#include <gtest/gtest.h>

#include "verl/algo/kl_controller.h"
#include "verl/common/error.h"

namespace verl::algo {
namespace {

TEST(KLController, FixedStaysConstant) {
  FixedKLController c(0.001);
  c.update(5.0, 1024);
  EXPECT_DOUBLE_EQ(c.value(), 0.001);
}

TEST(KLController, AdaptiveWorkedNumbers) {
  // target 0.1, horizon 10000, current_kl 0.3, n_steps 1024: e = clip(2, +-0.2) = 0.2 => x 1.02048
  AdaptiveKLController c(0.5, 0.1, 10000);
  c.update(0.3, 1024);
  EXPECT_NEAR(c.value(), 0.5 * 1.02048, 1e-15);
  // current_kl 0.09: e = -0.1 => x (1 - 0.1 * 100 / 10000) = 0.999
  c.update(0.09, 100);
  EXPECT_NEAR(c.value(), 0.5 * 1.02048 * 0.999, 1e-15);
  // far below target: e clipped at -0.2
  AdaptiveKLController d(1.0, 0.1, 10);
  d.update(0.0, 5);
  EXPECT_NEAR(d.value(), 0.9, 1e-15);
}

TEST(KLController, FactoryFromConfig) {
  config::KLControlConfig cfg;
  cfg.type = "fixed";
  cfg.kl_coef = 0.002;
  auto fixed = get_kl_controller(cfg);
  EXPECT_NE(dynamic_cast<FixedKLController*>(fixed.get()), nullptr);
  EXPECT_DOUBLE_EQ(fixed->value(), 0.002);
  cfg.type = "adaptive";
  auto adaptive = get_kl_controller(cfg);
  auto* a = dynamic_cast<AdaptiveKLController*>(adaptive.get());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->horizon(), 10000);
  EXPECT_DOUBLE_EQ(a->target(), 0.1);
  cfg.horizon = 0;
  EXPECT_THROW(get_kl_controller(cfg), Error);
  cfg.type = "pid";
  try {
    get_kl_controller(cfg);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fixed, adaptive"), std::string::npos) << e.what();
  }
}

TEST(KLController, ApplyKlPenaltyByHand) {
  // kl = old - ref = [0.2, 0.4 | 0.1, masked]; beta 0.5 before the update.
  auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  torch::Tensor scores = torch::tensor({0.0, 1.0, 0.5, 0.0}, f64).view({2, 2});
  torch::Tensor old_lp = torch::tensor({-1.0, -1.0, -1.0, -1.0}, f64).view({2, 2});
  torch::Tensor ref = torch::tensor({-1.2, -1.4, -1.1, -5.0}, f64).view({2, 2});
  torch::Tensor m = torch::tensor({1.0, 1.0, 1.0, 0.0}, f64).view({2, 2});
  AdaptiveKLController ctrl(0.5, 0.1, 100);
  KLPenaltyOutput out = apply_kl_penalty(scores, old_lp, ref, m, ctrl, "kl");
  torch::Tensor want = torch::tensor({-0.1, 0.8, 0.45, 0.0}, f64).view({2, 2});
  EXPECT_LT((out.token_level_rewards - want).abs().max().item<double>(), 1e-12);
  // current_kl = mean(0.3, 0.1) = 0.2 (within 1e-8 of masked_mean's epsilon)
  EXPECT_NEAR(out.metrics.at("actor/reward_kl_penalty"), 0.2, 1e-8);
  EXPECT_DOUBLE_EQ(out.metrics.at("actor/reward_kl_penalty_coeff"), 0.5);
  // e = clip(0.2 / 0.1 - 1, +-0.2) = 0.2, n_steps = 2: beta = 0.5 * (1 + 0.2 * 2 / 100)
  EXPECT_NEAR(ctrl.value(), 0.5 * 1.004, 1e-15);
}

}  // namespace
}  // namespace verl::algo
