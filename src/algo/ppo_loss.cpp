#include "verl/algo/ppo_loss.h"

#include "verl/common/error.h"

namespace verl::algo {

PpoLossOutput ppo_loss(const PpoLossInputs& in, const PpoLossOptions& options) {
  const PolicyLossFn& policy_loss_fn = get_policy_loss_fn(options.loss_mode);
  PolicyLossOutput pg = policy_loss_fn(in.old_log_prob, in.log_prob, in.advantages, in.response_mask,
                                       options.loss_agg_mode, options.policy, in.rollout_is_weights);
  PpoLossOutput out;
  out.loss = pg.pg_loss;
  out.pg_loss = pg.pg_loss.detach();
  out.pg_metrics = std::move(pg.metrics);
  if (in.entropy.defined()) {
    Tensor entropy_loss = agg_loss(in.entropy, in.response_mask, options.loss_agg_mode, options.policy.agg);
    out.loss = out.loss - options.entropy_coeff * entropy_loss;
    out.entropy_loss = entropy_loss.detach();
  }
  if (options.use_kl_loss) {
    VERL_CHECK(in.ref_log_prob.defined(), "algo", "ppo_loss with use_kl_loss needs ref_log_prob");
    Tensor kld = kl_penalty(in.log_prob, in.ref_log_prob, options.kl_loss_type);
    Tensor kl_loss = agg_loss(kld, in.response_mask, options.loss_agg_mode, options.policy.agg);
    out.loss = out.loss + kl_loss * options.kl_loss_coef;
    out.kl_loss = kl_loss.detach();
  }
  return out;
}

}  // namespace verl::algo
