// KL coefficient controllers for the in-reward KL penalty (verl core_algos.py: FixedKLController,
// AdaptiveKLController, get_kl_controller), built from `algorithm.kl_ctrl`.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "verl/config/ppo_config.h"

namespace verl::algo {

class KLController {
 public:
  virtual ~KLController() = default;
  double value() const { return value_; }
  // Restores a saved coefficient (checkpoint resume).
  void set_value(double value) { value_ = value; }
  // current_kl: the batch's mean KL; n_steps: the number of responses in the batch.
  virtual void update(double current_kl, int64_t n_steps) = 0;

 protected:
  explicit KLController(double value) : value_(value) {}
  double value_;
};

// beta stays kl_coef.
class FixedKLController : public KLController {
 public:
  explicit FixedKLController(double kl_coef) : KLController(kl_coef) {}
  void update(double current_kl, int64_t n_steps) override {}
};

// Ziegler et al.: e = clip(current_kl / target_kl - 1, -0.2, 0.2);  beta *= 1 + e * n_steps / horizon.
class AdaptiveKLController : public KLController {
 public:
  AdaptiveKLController(double init_kl_coef, double target_kl, int64_t horizon);
  void update(double current_kl, int64_t n_steps) override;
  double target() const { return target_; }
  int64_t horizon() const { return horizon_; }

 private:
  double target_;
  int64_t horizon_;
};

// type "fixed" or "adaptive"; anything else throws naming algorithm.kl_ctrl.type.
std::unique_ptr<KLController> get_kl_controller(const config::KLControlConfig& kl_ctrl);

struct KLPenaltyOutput {
  torch::Tensor token_level_rewards;      // (B, R)
  std::map<std::string, double> metrics;  // actor/reward_kl_penalty, actor/reward_kl_penalty_coeff
};

// The in-reward KL penalty (verl ray_trainer.apply_kl_penalty), B = responses, R = response length:
//   kld = kl_penalty(old_log_probs, ref_log_prob, kind) * m;  beta = controller value before the update
//   token_level_rewards = token_level_scores - beta * kld
//   current_kl = mean_i masked_mean(kld_i, m_i);  controller.update(current_kl, n_steps = B)
KLPenaltyOutput apply_kl_penalty(const torch::Tensor& token_level_scores, const torch::Tensor& old_log_probs,
                                 const torch::Tensor& ref_log_prob, const torch::Tensor& response_mask,
                                 KLController& kl_ctrl, const std::string& kl_penalty = "kl");

}  // namespace verl::algo
