// The names the algorithm registries accept, in registry order. Torch-free on purpose: the config
// system (a torch-free area) validates `algorithm.adv_estimator`, `policy_loss.loss_mode`,
// `kl_penalty` / `kl_loss_type` and `loss_agg_mode` against these lists, so config and registries
// cannot drift apart. Defined in src/algo/core_algos.cpp next to the registries.
#pragma once

#include <string>
#include <vector>

namespace verl::algo {

std::vector<std::string> adv_estimator_names();     // gae, grpo, rloo, ...
std::vector<std::string> policy_loss_mode_names();  // vanilla, gspo, gpg, cispo
std::vector<std::string> kl_penalty_names();        // kl, k1, abs, mse, k2, low_var_kl, k3 and each with "+"
std::vector<std::string> loss_agg_mode_names();     // token-mean, seq-mean-token-sum, ...

}  // namespace verl::algo
