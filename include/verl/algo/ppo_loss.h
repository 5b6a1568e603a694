// verl 0.9.1's ppo_loss (verl/workers/utils/losses.py): one micro-batch's actor loss
//   loss = pg_loss - entropy_coeff * entropy_loss + kl_loss_coef * kl_loss
//   pg_loss       the policy loss of loss_mode (get_policy_loss_fn) over (old_log_prob, log_prob, advantages)
//   entropy_loss  agg_loss(entropy, m)                          when the entropy is computed
//   kl_loss       agg_loss(kl_penalty(log_prob, ref, kl_loss_type), m)   with use_kl_loss
// every term aggregated with loss_agg_mode against the global batch in `policy.agg` (workers/global_batch.h), so
// the micro-batch losses of a mini-batch add up to the mini-batch's loss.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

#include "verl/algo/core_algos.h"

namespace verl::algo {

// All (B, R); log_prob (and entropy) with autograd history.
struct PpoLossInputs {
  torch::Tensor log_prob;
  torch::Tensor entropy;  // undefined: no entropy term and no entropy_loss metric
  torch::Tensor old_log_prob;
  torch::Tensor advantages;
  torch::Tensor response_mask;
  torch::Tensor ref_log_prob;        // with use_kl_loss
  torch::Tensor rollout_is_weights;  // undefined: none
};

struct PpoLossOptions {
  std::string loss_mode = "vanilla";         // actor.policy_loss.loss_mode
  std::string loss_agg_mode = "token-mean";  // actor.loss_agg_mode
  PolicyLossConfig policy;                   // clip ratios etc.; agg: the global batch info
  double entropy_coeff = 0.0;
  bool use_kl_loss = false;
  double kl_loss_coef = 0.001;
  std::string kl_loss_type = "low_var_kl";
};

struct PpoLossOutput {
  torch::Tensor loss;     // scalar with autograd history
  torch::Tensor pg_loss;  // the terms, detached; entropy_loss / kl_loss undefined when not computed
  torch::Tensor entropy_loss;
  torch::Tensor kl_loss;
  std::map<std::string, double> pg_metrics;  // the policy loss's own (actor/pg_clipfrac, actor/ppo_kl, ...)
};

PpoLossOutput ppo_loss(const PpoLossInputs& inputs, const PpoLossOptions& options);

}  // namespace verl::algo
