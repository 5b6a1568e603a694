#include "verl/algo/kl_controller.h"

#include <algorithm>

#include "verl/algo/core_algos.h"
#include "verl/common/error.h"

namespace verl::algo {

AdaptiveKLController::AdaptiveKLController(double init_kl_coef, double target_kl, int64_t horizon)
    : KLController(init_kl_coef), target_(target_kl), horizon_(horizon) {
  VERL_CHECK(horizon > 0, "algo", "algorithm.kl_ctrl.horizon must be > 0 for the adaptive controller, got ",
             horizon);
  VERL_CHECK(target_kl > 0, "algo", "algorithm.kl_ctrl.target_kl must be > 0 for the adaptive controller, got ",
             target_kl);
}

// e = clip(current_kl / target - 1, -0.2, 0.2);  value *= 1 + e * n_steps / horizon
void AdaptiveKLController::update(double current_kl, int64_t n_steps) {
  const double proportional_error = std::clamp(current_kl / target_ - 1.0, -0.2, 0.2);
  const double mult = 1.0 + proportional_error * static_cast<double>(n_steps) / static_cast<double>(horizon_);
  value_ *= mult;
}

std::unique_ptr<KLController> get_kl_controller(const config::KLControlConfig& kl_ctrl) {
  if (kl_ctrl.type == "fixed") return std::make_unique<FixedKLController>(kl_ctrl.kl_coef);
  if (kl_ctrl.type == "adaptive") {
    return std::make_unique<AdaptiveKLController>(kl_ctrl.kl_coef, kl_ctrl.target_kl, kl_ctrl.horizon);
  }
  VERL_FAIL("algo", "unknown algorithm.kl_ctrl.type '", kl_ctrl.type, "'; valid: fixed, adaptive");
}

KLPenaltyOutput apply_kl_penalty(const torch::Tensor& token_level_scores, const torch::Tensor& old_log_probs,
                                 const torch::Tensor& ref_log_prob, const torch::Tensor& response_mask,
                                 KLController& kl_ctrl, const std::string& kind) {
  VERL_CHECK(token_level_scores.sizes() == response_mask.sizes(), "algo", "apply_kl_penalty: token_level_scores ",
             token_level_scores.sizes(), " and response_mask ", response_mask.sizes(), " differ in shape");
  torch::NoGradGuard no_grad;
  torch::Tensor m = response_mask.to(token_level_scores.scalar_type());
  torch::Tensor kld = kl_penalty(old_log_probs, ref_log_prob, kind).to(m.scalar_type()) * m;
  const double beta = kl_ctrl.value();
  torch::Tensor rewards = token_level_scores - beta * kld;
  const double current_kl = masked_mean(kld, m, -1).mean().item<double>();
  kl_ctrl.update(current_kl, token_level_scores.size(0));
  return {rewards, {{"actor/reward_kl_penalty", current_kl}, {"actor/reward_kl_penalty_coeff", beta}}};
}

}  // namespace verl::algo
