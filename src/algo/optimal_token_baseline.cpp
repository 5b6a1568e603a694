// Optimal Token Baseline (verl's optimal_token_baseline / tir_optimal_token_baseline). Notation: r = rewards,
// m = response_mask, G_t = sum_{t' >= t} r_t' m_t' (reward-to-go), pi_t = exp(old_log_prob_t),
//   w_t = (1 - 2 pi_t + sum_v pi_v^2) [* rho_t^2 with rollout IS weights],  W_t = sum_{j <= t} w_j m_j,
// and per prompt group g of N > 1 responses the baseline b_t = sum_i G_it W_it m_it / (sum_i W_it m_it + eps);
// A = (G - b) * m. A group of one has b = 0.
#include "verl/algo/optimal_token_baseline.h"

#include <algorithm>
#include <unordered_map>

#include "verl/common/error.h"

namespace verl::algo {

namespace {

using torch::Tensor;

std::vector<std::vector<int64_t>> groups_in_order(const std::vector<std::string>& index,
                                                  const std::vector<bool>& skip) {
  std::unordered_map<std::string, size_t> slot;
  std::vector<std::vector<int64_t>> groups;
  for (size_t i = 0; i < index.size(); ++i) {
    if (skip[i]) continue;
    auto [it, inserted] = slot.emplace(index[i], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(static_cast<int64_t>(i));
  }
  return groups;
}

void check_baseline_inputs(const Tensor& r, const Tensor& m, const std::vector<std::string>& index,
                           const Tensor& old_lp, const Tensor& sum_pi_sq, const Tensor& is_w) {
  VERL_CHECK(r.dim() == 2, "algo", "token_level_rewards must be (B, R), got shape ", r.sizes());
  for (const Tensor* t : {&m, &old_lp, &sum_pi_sq}) {
    VERL_CHECK(t->defined() && t->sizes() == r.sizes(), "algo", "optimal token baseline: every input must have the "
               "rewards' shape ", r.sizes());
  }
  VERL_CHECK(!is_w.defined() || is_w.sizes() == r.sizes(), "algo", "rollout_is_weights has shape ", is_w.sizes(),
             "; expected ", r.sizes());
  VERL_CHECK(static_cast<int64_t>(index.size()) == r.size(0), "algo", "index (uid) has ", index.size(),
             " entries but the batch has ", r.size(0), " responses");
}

// check_baseline_inputs, then G (reward-to-go) and W (cumulative path-variance proxy), both (B, R).
std::pair<Tensor, Tensor> checked_returns_and_path_variance(const Tensor& r, const Tensor& m,
                                                             const std::vector<std::string>& index,
                                                             const Tensor& old_lp, const Tensor& sum_pi_sq,
                                                             const Tensor& is_w) {
  check_baseline_inputs(r, m, index, old_lp, sum_pi_sq, is_w);
  Tensor returns = (r * m).flip({-1}).cumsum(-1).flip({-1});
  Tensor w = 1 - 2 * torch::exp(old_lp) + sum_pi_sq;
  if (is_w.defined()) w = w * is_w.pow(2);
  return {returns, (w * m).cumsum(-1)};
}

// With handle_zero_tail: if one response of the group is strictly the longest, its baseline past the second
// longest length is 0.
void zero_tail(Tensor& baselines, const Tensor& lengths, const std::vector<int64_t>& rows) {
  std::vector<double> lens;
  for (int64_t row : rows) lens.push_back(lengths[row].item<double>());
  std::vector<double> sorted = lens;
  std::sort(sorted.begin(), sorted.end());
  const double max_len = sorted.back(), second = sorted[sorted.size() - 2];
  if (std::count(lens.begin(), lens.end(), max_len) != 1 || max_len <= second) return;
  const int64_t row = rows[std::find(lens.begin(), lens.end(), max_len) - lens.begin()];
  baselines.index_put_({row, torch::indexing::Slice(static_cast<int64_t>(second), torch::indexing::None)}, 0.0);
}

Tensor index_of(const std::vector<int64_t>& rows, const Tensor& like) {
  return torch::tensor(rows, torch::TensorOptions().dtype(torch::kInt64)).to(like.device());
}

}  // namespace

std::pair<Tensor, Tensor> compute_optimal_token_baseline_advantage(const Tensor& token_level_rewards,
                                                                   const Tensor& response_mask,
                                                                   const std::vector<std::string>& index,
                                                                   const Tensor& old_log_probs,
                                                                   const Tensor& sum_pi_squared,
                                                                   const Tensor& rollout_is_weights,
                                                                   bool handle_zero_tail, double epsilon) {
  torch::NoGradGuard no_grad;
  const Tensor& m = response_mask;
  auto [returns, W] = checked_returns_and_path_variance(token_level_rewards, m, index, old_log_probs,
                                                        sum_pi_squared, rollout_is_weights);
  Tensor baselines = torch::zeros_like(returns);
  Tensor lengths = m.sum(-1);
  for (const auto& rows : groups_in_order(index, std::vector<bool>(index.size(), false))) {
    if (rows.size() == 1) continue;
    Tensor idx = index_of(rows, returns);
    Tensor G = returns.index_select(0, idx), Wg = W.index_select(0, idx), mg = m.index_select(0, idx);
    Tensor b = (G * Wg * mg).sum(0) / ((Wg * mg).sum(0) + epsilon);
    baselines.index_copy_(0, idx, b.unsqueeze(0).expand({static_cast<int64_t>(rows.size()), -1}).contiguous());
    if (handle_zero_tail) zero_tail(baselines, lengths, rows);
  }
  return {(returns - baselines) * m, returns};
}

// The multi-turn form: per response, the valid positions are gathered into a compact row (length L_i), the
// baseline b_k = sum_i G_ik W_ik / (sum_i W_ik + eps) runs over compact positions k (rows shorter than k
// contribute 0), and the advantages are scattered back to the valid positions. Empty responses join no group.
std::pair<Tensor, Tensor> compute_multi_turn_optimal_token_baseline_advantage(
    const Tensor& token_level_rewards, const Tensor& response_mask, const std::vector<std::string>& index,
    const Tensor& old_log_probs, const Tensor& sum_pi_squared, const Tensor& rollout_is_weights,
    bool handle_zero_tail, double epsilon) {
  torch::NoGradGuard no_grad;
  const Tensor& m = response_mask;
  auto [returns, W] = checked_returns_and_path_variance(token_level_rewards, m, index, old_log_probs,
                                                        sum_pi_squared, rollout_is_weights);
  const int64_t B = m.size(0);
  Tensor lengths = m.sum(-1).to(torch::kInt64);
  const int64_t max_len = B == 0 ? 0 : lengths.max().item<int64_t>();
  Tensor compact_W = torch::zeros({B, max_len}, W.options());
  Tensor compact_G = torch::zeros_like(compact_W);
  std::vector<bool> empty(B);
  std::vector<Tensor> valid(B);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t len = lengths[i].item<int64_t>();
    empty[i] = len == 0;
    if (empty[i]) continue;
    valid[i] = m[i].to(torch::kBool);
    compact_W[i].narrow(0, 0, len).copy_(W[i].masked_select(valid[i]));
    compact_G[i].narrow(0, 0, len).copy_(returns[i].masked_select(valid[i]));
  }
  Tensor baselines = torch::zeros_like(compact_G);
  for (const auto& rows : groups_in_order(index, empty)) {
    if (rows.size() == 1) continue;
    Tensor idx = index_of(rows, compact_G);
    Tensor Wg = compact_W.index_select(0, idx), G = compact_G.index_select(0, idx);
    Tensor b = (G * Wg).sum(0) / (Wg.sum(0) + epsilon);
    baselines.index_copy_(0, idx, b.unsqueeze(0).expand({static_cast<int64_t>(rows.size()), -1}).contiguous());
    if (handle_zero_tail) zero_tail(baselines, lengths, rows);
  }
  Tensor compact_A = compact_G - baselines;
  Tensor advantages = torch::zeros_like(returns);
  for (int64_t i = 0; i < B; ++i) {
    if (empty[i]) continue;
    advantages[i].masked_scatter_(valid[i], compact_A[i].narrow(0, 0, lengths[i].item<int64_t>()));
  }
  return {advantages * m, returns};
}

}  // namespace verl::algo
