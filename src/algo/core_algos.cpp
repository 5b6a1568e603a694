// verl's PPO algorithms (reference spec sections 3 and 14). Notation: r = token_level_rewards (B, R),
// m = response_mask (B, R), V = values (B, R), s_i = sum_t r[i, t] (outcome score of response i),
// g(i) = group (uid) of response i, mu_g / sigma_g = mean / unbiased std of the scores of group g.
#include "verl/algo/core_algos.h"

#include <algorithm>
#include <unordered_map>

#include "policy_loss_support.h"
#include "verl/algo/policy_losses.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/ppo_config.h"

namespace verl::algo {

namespace {

constexpr double kMaskEps = 1e-8;  // verl's masked_mean / whitening epsilon

using detail::as_dtype_of;

// A denominator that is never 0: where d > 0 use d, else 1 (the numerator is 0 there anyway). Keeps
// both the value and the gradient finite on all-masked input.
Tensor safe_denominator(const Tensor& d) { return torch::where(d > 0, d, torch::ones_like(d)); }

void check_same_shape(const Tensor& a, const Tensor& b, const char* a_name, const char* b_name) {
  VERL_CHECK(a.sizes() == b.sizes(), "algo", a_name, " has shape ", a.sizes(), " but ", b_name, " has shape ",
             b.sizes(), "; expected equal shapes");
}

void check_rewards_and_mask(const Tensor& rewards, const Tensor& mask) {
  VERL_CHECK(rewards.dim() == 2, "algo", "token_level_rewards must be (B, R), got shape ", rewards.sizes());
  check_same_shape(rewards, mask, "token_level_rewards", "response_mask");
}

void check_index(const std::vector<std::string>& index, int64_t batch) {
  VERL_CHECK(static_cast<int64_t>(index.size()) == batch, "algo", "index (uid) has ", index.size(),
             " entries but the batch has ", batch, " responses");
}

// Responses of each group, groups in order of first appearance.
std::vector<std::vector<int64_t>> groups_of(const std::vector<std::string>& index) {
  std::unordered_map<std::string, size_t> slot;
  std::vector<std::vector<int64_t>> groups;
  for (size_t i = 0; i < index.size(); ++i) {
    auto [it, inserted] = slot.emplace(index[i], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(static_cast<int64_t>(i));
  }
  return groups;
}

Tensor index_tensor(const std::vector<int64_t>& rows, const Tensor& like) {
  return torch::tensor(rows, torch::TensorOptions().dtype(torch::kInt64)).to(like.device());
}

// Per-response group mean of the scores with verl's singleton rule (mu = 0 for a group of one).
Tensor group_mean_singleton_zero(const Tensor& scores, const std::vector<std::string>& index) {
  Tensor mean = torch::zeros_like(scores);
  for (const auto& rows : groups_of(index)) {
    if (rows.size() < 2) continue;
    Tensor idx = index_tensor(rows, scores);
    Tensor mu = scores.index_select(0, idx).mean();
    mean.index_fill_(0, idx, mu);
  }
  return mean;
}

}  // namespace

// ---- helpers -------------------------------------------------------------------------------------------

// masked_sum(v, m) = sum(where(m, v, 0) * m)
Tensor masked_sum(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis) {
  Tensor m = as_dtype_of(mask, values);
  Tensor valid = torch::where(mask.to(torch::kBool), values, torch::zeros({}, values.options()));
  Tensor product = valid * m;
  return axis ? product.sum(*axis) : product.sum();
}

// masked_mean(v, m) = masked_sum(v, m) / (sum(m) + 1e-8)
Tensor masked_mean(const Tensor& values, const Tensor& mask, std::optional<int64_t> axis) {
  Tensor m = as_dtype_of(mask, values);
  Tensor count = axis ? m.sum(*axis) : m.sum();
  return masked_sum(values, mask, axis) / (count + kMaskEps);
}

// mean = masked_mean(v, m); var = masked_mean((v - mean)^2, m); unbiased: var *= N / (N - 1), N = sum(m)
Tensor masked_var(const Tensor& values, const Tensor& mask, bool unbiased) {
  Tensor mean = masked_mean(values, mask);
  Tensor centered = values - mean;
  Tensor variance = masked_mean(centered * centered, mask);
  if (unbiased) {
    double n = as_dtype_of(mask, values).sum().item<double>();
    VERL_CHECK(n != 0.0, "algo", "masked_var: the mask selects no element; at least one is required");
    VERL_CHECK(n != 1.0, "algo", "masked_var: the mask selects one element; the unbiased variance needs two");
    variance = variance * (n / (n - 1.0));
  }
  return variance;
}

// whiten(v) = (v - mean) * rsqrt(var + 1e-8), mean and unbiased var over all masked elements;
// shift_mean = false adds the mean back.
Tensor masked_whiten(const Tensor& values, const Tensor& mask, bool shift_mean) {
  Tensor mean = masked_mean(values, mask);
  Tensor var = masked_var(values, mask, true);
  Tensor whitened = (values - mean) * torch::rsqrt(var + kMaskEps);
  if (!shift_mean) whitened = whitened + mean;
  return whitened;
}

// clip_by_value(x, lo, hi) = max(min(x, hi), lo)
Tensor clip_by_value(const Tensor& x, const Tensor& tensor_min, const Tensor& tensor_max) {
  return torch::max(torch::min(x, tensor_max), tensor_min);
}

// H(z) = logsumexp(z) - sum_v softmax(z)_v * z_v
Tensor entropy_from_logits(const Tensor& logits) {
  Tensor pd = torch::softmax(logits, -1);
  return torch::logsumexp(logits, -1) - (pd * logits).sum(-1);
}

// eos = isin(ids, eos_token); mask = (cumsum(eos) - eos) == 0: 1 through the first EOS, 0 after.
Tensor get_response_mask(const Tensor& response_id, const std::vector<int64_t>& eos_token, torch::Dtype dtype) {
  VERL_CHECK(!eos_token.empty(), "algo", "get_response_mask: eos_token is empty; expected at least one id");
  Tensor eos_ids = torch::tensor(eos_token, torch::TensorOptions().dtype(torch::kInt64)).to(response_id.device());
  Tensor eos = torch::isin(response_id.to(torch::kInt64), eos_ids).to(torch::kInt64);
  return ((eos.cumsum(-1) - eos) == 0).to(dtype);
}

// position_ids = clip(cumsum(mask, -1) - 1, min = 0)
Tensor compute_position_id_with_mask(const Tensor& mask) {
  return torch::clamp_min(mask.to(torch::kInt64).cumsum(-1) - 1, 0);
}

// sum_v pi_v^2 = exp(logsumexp(2 z) - 2 logsumexp(z))
Tensor sum_pi_squared_from_logits(const Tensor& logits) {
  return torch::exp(torch::logsumexp(2.0 * logits, -1) - 2.0 * torch::logsumexp(logits, -1));
}

// logp[..] = log_softmax(logits)[label], computed in float32 (float64 input stays float64)
Tensor logprobs_from_logits(const Tensor& logits, const Tensor& labels) {
  VERL_CHECK(logits.dim() == labels.dim() + 1, "algo", "logprobs_from_logits: logits ", logits.sizes(),
             " must have one more dimension (V) than labels ", labels.sizes());
  Tensor z = logits.scalar_type() == torch::kDouble ? logits : logits.to(torch::kFloat);
  Tensor logp = torch::log_softmax(z, -1);
  return logp.gather(-1, labels.to(torch::kInt64).unsqueeze(-1)).squeeze(-1);
}

Tensor group_index_from_uids(const std::vector<std::string>& index) {
  std::vector<int64_t> ids(index.size());
  int64_t group = 0;
  for (const auto& rows : groups_of(index)) {
    for (int64_t row : rows) ids[row] = group;
    ++group;
  }
  return torch::tensor(ids, torch::TensorOptions().dtype(torch::kInt64));
}

// ---- advantage estimators --------------------------------------------------------------------------

// GAE, scanned backwards with bootstrap value 0 after the last token; masked tokens are skipped:
//   delta_t = r_t + gamma * nextV - V_t;  gae_t = delta_t + gamma * lam * gae_{t+1}
//   nextV <- m_t V_t + (1 - m_t) nextV;   lastgae <- m_t gae_t + (1 - m_t) lastgae;  A_t = lastgae
//   returns = A + V (before whitening);   A = masked_whiten(A, m) over the whole batch
AdvantageReturn compute_gae_advantage_return(const Tensor& token_level_rewards, const Tensor& values,
                                             const Tensor& response_mask, double gamma, double lam) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_same_shape(token_level_rewards, values, "token_level_rewards", "values");
  torch::NoGradGuard no_grad;
  const Tensor& r = token_level_rewards;
  Tensor v = values.to(r.scalar_type());
  Tensor m = as_dtype_of(response_mask, r);
  // Time-major contiguous copies: each step reads one contiguous row of B values.
  Tensor r_tm = r.t().contiguous(), v_tm = v.t().contiguous(), m_tm = m.t().contiguous();
  const int64_t R = r.size(1);
  Tensor advantages_tm = torch::empty_like(r_tm);
  Tensor next_values = torch::zeros({r.size(0)}, r.options());
  Tensor last_gae = torch::zeros({r.size(0)}, r.options());
  for (int64_t t = R - 1; t >= 0; --t) {
    Tensor m_t = m_tm[t], v_t = v_tm[t];
    Tensor gae = r_tm[t] + gamma * next_values - v_t + (gamma * lam) * last_gae;
    next_values = next_values + m_t * (v_t - next_values);  // = m V_t + (1 - m) nextV
    last_gae = last_gae + m_t * (gae - last_gae);           // = m gae_t + (1 - m) lastgae
    advantages_tm[t].copy_(last_gae);
  }
  Tensor advantages = advantages_tm.t().contiguous();
  Tensor returns = advantages + v;
  advantages = masked_whiten(advantages, m);
  return {advantages, returns};
}

// GRPO: a_i = (s_i - mu_g) / (sigma_g + eps), or s_i - mu_g when norm_adv_by_std_in_grpo = false
// (Dr.GRPO); sigma unbiased; a group of one has mu = 0, sigma = 1.  A = a_i * m, returns = A.
// verl holds a singleton's mu, sigma as float32 scalars, so its sigma + eps is rounded to float32 (1 + 1e-6 ->
// 1.00000095...) whatever the scores' dtype; followed here.
namespace {

// The GRPO scalar of each response from its score: (s_i - mu_g) / (sigma_g + eps) or s_i - mu_g.
Tensor grpo_scalars(const Tensor& scores, const std::vector<std::string>& index, double epsilon,
                    bool norm_adv_by_std_in_grpo) {
  Tensor out = torch::empty_like(scores);
  for (const auto& rows : groups_of(index)) {
    Tensor idx = index_tensor(rows, scores);
    Tensor s = scores.index_select(0, idx);
    Tensor mu = torch::zeros({}, scores.options());
    Tensor sigma_eps = torch::scalar_tensor(static_cast<double>(1.0f + static_cast<float>(epsilon)), scores.options());
    if (rows.size() > 1) {
      mu = s.mean();
      sigma_eps = s.std(/*unbiased=*/true) + epsilon;
    }
    Tensor a = norm_adv_by_std_in_grpo ? (s - mu) / sigma_eps : s - mu;
    out.index_copy_(0, idx, a);
  }
  return out;
}

}  // namespace

AdvantageReturn compute_grpo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index, double epsilon,
                                               bool norm_adv_by_std_in_grpo) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor out = grpo_scalars(token_level_rewards.sum(-1), index, epsilon, norm_adv_by_std_in_grpo);
  Tensor advantages = out.unsqueeze(-1) * as_dtype_of(response_mask, out);
  return {advantages, advantages};
}

// GDPO: per component k, a_k = grpo_scalars(s_k) (the loop form above); A = masked_whiten(sum_k w_k a_k * m, m) * m.
// Components are float32 (verl reads compute_score's values with np.float32), weights float32 too.
AdvantageReturn compute_gdpo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index,
                                               const std::vector<Tensor>& reward_components,
                                               const std::vector<double>& reward_weights, double epsilon,
                                               bool norm_adv_by_std_in_grpo) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  const size_t k = reward_components.empty() ? 1 : reward_components.size();
  VERL_CHECK(reward_weights.empty() || reward_weights.size() == k, "algo", "gdpo: ", reward_weights.size(),
             " reward weights for ", k, " reward components (algorithm.gdpo_reward_weights vs gdpo_reward_keys)");
  torch::NoGradGuard no_grad;
  Tensor sum;
  for (size_t i = 0; i < k; ++i) {
    Tensor scores;
    if (reward_components.empty()) {
      scores = token_level_rewards.sum(-1);
    } else {
      const Tensor& c = reward_components[i];
      VERL_CHECK(c.dim() == 1 && c.size(0) == token_level_rewards.size(0), "algo", "gdpo: reward component ", i,
                 " has shape ", c.sizes(), "; expected (", token_level_rewards.size(0), ")");
      scores = c.to(torch::kFloat32);
    }
    Tensor a = grpo_scalars(scores, index, epsilon, norm_adv_by_std_in_grpo);
    // a * m in PyTorch's promoted dtype (a float64 mask makes it float64, as in verl), times the float32 weight.
    const auto dtype = torch::promote_types(a.scalar_type(), response_mask.scalar_type());
    const float w = reward_weights.empty() ? 1.0f : static_cast<float>(reward_weights[i]);
    Tensor term = static_cast<double>(w) * (a.unsqueeze(-1).to(dtype) * response_mask.to(dtype));
    sum = sum.defined() ? sum + term : term;
  }
  Tensor m = response_mask.to(sum.scalar_type());
  Tensor advantages = masked_whiten(sum, m) * m;
  return {advantages, advantages};
}

// Pass@k: per group (n >= 2), the best response i* = argmax s gets s_max - s_second [/ (sigma_g + eps)], every other
// response 0.  A = a_i * m, returns = A.
AdvantageReturn compute_grpo_passk_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                                     const std::vector<std::string>& index, double epsilon,
                                                     bool norm_adv_by_std_in_grpo) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor a = torch::zeros_like(scores);
  for (const auto& rows : groups_of(index)) {
    VERL_CHECK(rows.size() >= 2, "algo", "grpo_passk needs at least 2 responses per group (rollout.n >= 2); group '",
               index[rows[0]], "' has ", rows.size());
    Tensor s = scores.index_select(0, index_tensor(rows, scores));
    auto [top, top_idx] = torch::topk(s, 2);
    Tensor adv = top[0] - top[1];
    if (norm_adv_by_std_in_grpo) adv = adv / (s.std(/*unbiased=*/true) + epsilon);
    a[rows[top_idx[0].item<int64_t>()]] = adv;
  }
  Tensor advantages = a.unsqueeze(-1) * as_dtype_of(response_mask, a);
  return {advantages, advantages};
}

// GRPO by per-group sums (index_add), the statistics in float32 as verl's group_mean_std computes them:
//   n_g = count, mu_g = sum_g s / n_g, sigma_g = sqrt(sum_g (s - mu_g)^2 / max(n_g - 1, 1)); n_g = 1: mu 0, sigma 1.
AdvantageReturn compute_grpo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index, double epsilon,
                                                          bool norm_adv_by_std_in_grpo) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor g = group_index_from_uids(index).to(scores.device());
  const int64_t num_groups = g.numel() == 0 ? 0 : g.max().item<int64_t>() + 1;
  Tensor s32 = scores.to(torch::kFloat32);
  Tensor counts = torch::zeros({num_groups}, s32.options()).index_add_(0, g, torch::ones_like(s32));
  Tensor sums = torch::zeros({num_groups}, s32.options()).index_add_(0, g, s32);
  Tensor mean = sums / torch::clamp_min(counts, 1.0);
  Tensor centered = s32 - mean.index_select(0, g);
  Tensor sq = torch::zeros({num_groups}, s32.options()).index_add_(0, g, centered * centered);
  Tensor std = torch::sqrt(torch::clamp_min(sq / torch::clamp_min(counts - 1, 1), 0.0));
  Tensor multi = counts > 1;
  mean = torch::where(multi, mean, torch::zeros_like(mean));
  std = torch::where(multi, std, torch::ones_like(std));
  Tensor a = scores - mean.index_select(0, g).to(scores.scalar_type());
  if (norm_adv_by_std_in_grpo) a = a / (std.index_select(0, g) + epsilon).to(scores.scalar_type());  // sigma + eps in fp32
  Tensor advantages = a.unsqueeze(-1) * as_dtype_of(response_mask, a);
  return {advantages, advantages};
}

// RLOO (leave-one-out baseline): n = group size; n > 1: a_i = s_i n/(n-1) - mu_g n/(n-1)
// (= s_i minus the mean of the other n-1 scores); n = 1: a_i = s_i.  A = a_i * m, returns = A.
AdvantageReturn compute_rloo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                               const std::vector<std::string>& index) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor out = scores.clone();
  for (const auto& rows : groups_of(index)) {
    if (rows.size() < 2) continue;
    Tensor idx = index_tensor(rows, scores);
    Tensor s = scores.index_select(0, idx);
    const double n = static_cast<double>(rows.size());
    out.index_copy_(0, idx, s * n / (n - 1) - s.mean() * n / (n - 1));
  }
  Tensor advantages = out.unsqueeze(-1) * as_dtype_of(response_mask, out);
  return {advantages, advantages};
}

// RLOO by group sums (verl's rloo_vectorized): a_i = (n_g s_i - S_g) / max(n_g - 1, 1) * [n_g > 1]. Equal to rloo
// for groups of two or more; a group of ONE response gets 0 here (rloo gives it s_i).
AdvantageReturn compute_rloo_vectorized_outcome_advantage(const Tensor& token_level_rewards,
                                                          const Tensor& response_mask,
                                                          const std::vector<std::string>& index) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor g = group_index_from_uids(index).to(scores.device());
  const int64_t num_groups = g.numel() == 0 ? 0 : g.max().item<int64_t>() + 1;
  Tensor counts = torch::zeros({num_groups}, scores.options()).index_add_(0, g, torch::ones_like(scores));
  Tensor sums = torch::zeros({num_groups}, scores.options()).index_add_(0, g, scores);
  Tensor n = counts.index_select(0, g);
  Tensor a = (n * scores - sums.index_select(0, g)) / torch::clamp_min(n - 1, 1) * (n > 1).to(scores.scalar_type());
  Tensor advantages = a.unsqueeze(-1) * as_dtype_of(response_mask, a);
  return {advantages, advantages};
}

// REINFORCE++ (verl 0.9.1): g_t = r_t + gamma * running;  returns_t = g_t m_t;
// running <- g_t m_t + running (1 - m_t) (a masked span, e.g. an observation between turns, carries the running
// return through unchanged);  A = masked_whiten(returns, m) * m.
AdvantageReturn compute_reinforce_plus_plus_outcome_advantage(const Tensor& token_level_rewards,
                                                              const Tensor& response_mask, double gamma) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  torch::NoGradGuard no_grad;
  const Tensor& r = token_level_rewards;
  Tensor m = as_dtype_of(response_mask, r);
  Tensor r_tm = r.t().contiguous(), m_tm = m.t().contiguous();
  Tensor returns_tm = torch::empty_like(r_tm);
  Tensor running = torch::zeros({r.size(0)}, r.options());
  for (int64_t t = r.size(1) - 1; t >= 0; --t) {
    Tensor g = r_tm[t] + gamma * running;
    returns_tm[t].copy_(g * m_tm[t]);
    running = g * m_tm[t] + running * (1 - m_tm[t]);
  }
  Tensor returns = returns_tm.t().contiguous();
  Tensor advantages = masked_whiten(returns, m) * m;
  return {advantages, returns};
}

// REINFORCE++ with baseline: a_i = s_i - mu_g (mu = 0 for a group of one), tiled over R and * m;
// A = masked_whiten(a, m) * m over the batch; returns = A.
AdvantageReturn compute_reinforce_plus_plus_baseline_outcome_advantage(const Tensor& token_level_rewards,
                                                                       const Tensor& response_mask,
                                                                       const std::vector<std::string>& index) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor a = scores - group_mean_singleton_zero(scores, index);
  Tensor m = as_dtype_of(response_mask, scores);
  Tensor tiled = a.unsqueeze(-1).expand_as(m) * m;
  Tensor advantages = masked_whiten(tiled, m) * m;
  return {advantages, advantages};
}

// ReMax: returns_t = sum_{t' >= t} r_t' m_t';  A = returns - b_i * m, b_i = reward of the greedy sample.
AdvantageReturn compute_remax_outcome_advantage(const Tensor& token_level_rewards, const Tensor& reward_baselines,
                                                const Tensor& response_mask) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  VERL_CHECK(reward_baselines.defined() && reward_baselines.dim() == 1 &&
                 reward_baselines.size(0) == token_level_rewards.size(0),
             "algo", "remax needs reward_baselines of shape (B,) = (", token_level_rewards.size(0), ")");
  torch::NoGradGuard no_grad;
  Tensor m = as_dtype_of(response_mask, token_level_rewards);
  Tensor returns = (token_level_rewards * m).flip({-1}).cumsum(-1).flip({-1});
  Tensor advantages = returns - reward_baselines.to(returns.scalar_type()).unsqueeze(-1) * m;
  return {advantages, returns};
}

// OPO: length-weighted group baseline b_g = sum_g L_i s_i / sum_g L_i, L_i = sum_t m[i, t]
// (b = 0 for a group of one); a_i = s_i - b_g; A = a_i * m, returns = A.
AdvantageReturn compute_opo_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                              const std::vector<std::string>& index) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  Tensor lengths = as_dtype_of(response_mask, scores).sum(-1);
  Tensor baseline = torch::zeros_like(scores);
  for (const auto& rows : groups_of(index)) {
    if (rows.size() < 2) continue;
    Tensor idx = index_tensor(rows, scores);
    Tensor len = lengths.index_select(0, idx);
    Tensor b = (len * scores.index_select(0, idx)).sum() / safe_denominator(len.sum());
    baseline.index_fill_(0, idx, b);
  }
  Tensor a = scores - baseline;
  Tensor advantages = a.unsqueeze(-1) * as_dtype_of(response_mask, a);
  return {advantages, advantages};
}

// GPG: alpha = B / max(#{i : s_i != 0}, 1);  a_i = alpha (s_i - mu_g) / f_norm (mu = 0 for a group
// of one); A = a_i * m, returns = A.
AdvantageReturn compute_gpg_outcome_advantage(const Tensor& token_level_rewards, const Tensor& response_mask,
                                              const std::vector<std::string>& index, double f_norm) {
  check_rewards_and_mask(token_level_rewards, response_mask);
  check_index(index, token_level_rewards.size(0));
  torch::NoGradGuard no_grad;
  Tensor scores = token_level_rewards.sum(-1);
  const double nonzero = static_cast<double>(torch::count_nonzero(scores).item<int64_t>());
  // verl divides by an integer tensor, which gives a float32 alpha: rounded the same way here.
  const double alpha = static_cast<double>(static_cast<float>(scores.size(0)) / static_cast<float>(std::max(nonzero, 1.0)));
  Tensor a = alpha * (scores - group_mean_singleton_zero(scores, index)) / f_norm;
  Tensor advantages = a.unsqueeze(-1) * as_dtype_of(response_mask, a);
  return {advantages, advantages};
}

namespace {

void require(const Tensor& t, const std::string& estimator, const char* what) {
  VERL_CHECK(t.defined(), "algo", "adv_estimator '", estimator, "' needs ", what);
}

void require_token_baseline_inputs(const AdvantageInputs& in, const std::string& estimator) {
  require(in.sum_pi_squared, estimator,
          "sum_pi_squared from the actor (set actor_rollout_ref.actor.calculate_sum_pi_squared=true)");
  require(in.old_log_probs, estimator, "old_log_probs");
}

// The estimator table, in the order of algo_names.h / the config's documentation.
const std::vector<std::pair<std::string, AdvantageEstimatorFn>>& adv_estimator_registry() {
  static const std::vector<std::pair<std::string, AdvantageEstimatorFn>> table = {
      {"gae",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         require(in.values, "gae", "values (a critic)");
         return compute_gae_advantage_return(in.token_level_rewards, in.values, in.response_mask, o.gamma, o.lam);
       }},
      {"grpo",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         return compute_grpo_outcome_advantage(in.token_level_rewards, in.response_mask, in.index, 1e-6,
                                               o.norm_adv_by_std_in_grpo);
       }},
      {"rloo",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         return compute_rloo_outcome_advantage(in.token_level_rewards, in.response_mask, in.index);
       }},
      {"reinforce_plus_plus",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         return compute_reinforce_plus_plus_outcome_advantage(in.token_level_rewards, in.response_mask, o.gamma);
       }},
      {"reinforce_plus_plus_baseline",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         return compute_reinforce_plus_plus_baseline_outcome_advantage(in.token_level_rewards, in.response_mask,
                                                                       in.index);
       }},
      {"remax",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         require(in.reward_baselines, "remax", "reward_baselines (the greedy samples' rewards)");
         return compute_remax_outcome_advantage(in.token_level_rewards, in.reward_baselines, in.response_mask);
       }},
      {"opo",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         return compute_opo_outcome_advantage(in.token_level_rewards, in.response_mask, in.index);
       }},
      {"gpg",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         return compute_gpg_outcome_advantage(in.token_level_rewards, in.response_mask, in.index);
       }},
      {"grpo_passk",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         return compute_grpo_passk_outcome_advantage(in.token_level_rewards, in.response_mask, in.index, 1e-6,
                                                     o.norm_adv_by_std_in_grpo);
       }},
      {"grpo_vectorized",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         return compute_grpo_vectorized_outcome_advantage(in.token_level_rewards, in.response_mask, in.index, 1e-6,
                                                          o.norm_adv_by_std_in_grpo);
       }},
      {"rloo_vectorized",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         return compute_rloo_vectorized_outcome_advantage(in.token_level_rewards, in.response_mask, in.index);
       }},
      {"optimal_token_baseline",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         require_token_baseline_inputs(in, "optimal_token_baseline");
         return compute_optimal_token_baseline_advantage(in.token_level_rewards, in.response_mask, in.index,
                                                         in.old_log_probs, in.sum_pi_squared, in.rollout_is_weights);
       }},
      {"tir_optimal_token_baseline",
       [](const AdvantageInputs& in, const AdvantageOptions&) {
         require_token_baseline_inputs(in, "tir_optimal_token_baseline");
         return compute_multi_turn_optimal_token_baseline_advantage(in.token_level_rewards, in.response_mask,
                                                                    in.index, in.old_log_probs, in.sum_pi_squared,
                                                                    in.rollout_is_weights);
       }},
      {"gdpo",
       [](const AdvantageInputs& in, const AdvantageOptions& o) {
         return compute_gdpo_outcome_advantage(in.token_level_rewards, in.response_mask, in.index,
                                               in.reward_components, o.gdpo_reward_weights, 1e-6,
                                               o.norm_adv_by_std_in_grpo);
       }},
  };
  return table;
}

template <typename Fn>
const Fn& lookup(const std::vector<std::pair<std::string, Fn>>& table, const std::string& name, const char* what) {
  std::vector<std::string> names;
  for (const auto& [key, fn] : table) {
    if (key == name) return fn;
    names.push_back(key);
  }
  VERL_FAIL("algo", "unknown ", what, " '", name, "'; valid: ", join(names, ", "));
}

template <typename Fn>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, Fn>>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

}  // namespace

const AdvantageEstimatorFn& get_adv_estimator_fn(const std::string& name) {
  return lookup(adv_estimator_registry(), name, "algorithm.adv_estimator");
}

AdvantageReturn compute_advantage(const std::string& adv_estimator, const AdvantageInputs& inputs,
                                  const AdvantageOptions& options) {
  return get_adv_estimator_fn(adv_estimator)(inputs, options);
}

std::vector<std::string> adv_estimator_names() { return names_of(adv_estimator_registry()); }

// ---- loss aggregation ----------------------------------------------------------------------------------

namespace {

using AggFn = std::function<Tensor(const Tensor& loss_mat, const Tensor& m, const AggLossOptions& o)>;

Tensor scalar_like(double v, const Tensor& like) { return torch::full({}, v, like.options()); }

// seq-mean over non-empty rows: sum_i seq_i [row i has a token] / global_batch_size * dp_size,
// global_batch_size defaulting to the number of non-empty rows.
Tensor seq_mean(const Tensor& seq_losses, const Tensor& m, const AggLossOptions& o) {
  Tensor seq_mask = (m.sum(-1) > 0).to(seq_losses.scalar_type());
  Tensor denom = o.global_batch_size ? scalar_like(*o.global_batch_size, seq_losses) : seq_mask.sum();
  return masked_sum(seq_losses, seq_mask) / safe_denominator(denom) * o.dp_size;
}

const std::vector<std::pair<std::string, AggFn>>& agg_loss_registry() {
  static const std::vector<std::pair<std::string, AggFn>> table = {
      // token-mean: sum(L m) / batch_num_tokens * dp_size, batch_num_tokens = sum(m) by default
      {"token-mean",
       [](const Tensor& L, const Tensor& m, const AggLossOptions& o) {
         Tensor n = o.batch_num_tokens ? scalar_like(*o.batch_num_tokens, L) : m.sum();
         return masked_sum(L, m) / safe_denominator(n) * o.dp_size;
       }},
      // token-sum: sum(L m) * dp_size (the data-parallel average of the gradients then sums over the global batch)
      {"token-sum", [](const Tensor& L, const Tensor& m, const AggLossOptions& o) { return masked_sum(L, m) * o.dp_size; }},
      // seq-mean-token-sum: seq_i = sum_t L m, then seq-mean
      {"seq-mean-token-sum",
       [](const Tensor& L, const Tensor& m, const AggLossOptions& o) {
         return seq_mean(masked_sum(L, m, -1), m, o);
       }},
      // seq-mean-token-mean: seq_i = sum_t L m / (sum_t m + 1e-8), then seq-mean
      {"seq-mean-token-mean",
       [](const Tensor& L, const Tensor& m, const AggLossOptions& o) {
         return seq_mean(masked_sum(L, m, -1) / (m.sum(-1) + kMaskEps), m, o);
       }},
      // seq-mean-token-sum-norm (Dr.GRPO): the seq-mean of token sums / loss_scale_factor, factor = R by default
      {"seq-mean-token-sum-norm",
       [](const Tensor& L, const Tensor& m, const AggLossOptions& o) {
         double factor = o.loss_scale_factor ? *o.loss_scale_factor : static_cast<double>(m.size(-1));
         if (factor == 0.0) factor = 1.0;  // R = 0: the sum is 0 anyway
         return seq_mean(masked_sum(L, m, -1), m, o) / factor;
       }},
  };
  return table;
}

}  // namespace

Tensor agg_loss(const Tensor& loss_mat, const Tensor& loss_mask, const std::string& loss_agg_mode,
                const AggLossOptions& options) {
  const AggFn& fn = lookup(agg_loss_registry(), loss_agg_mode, "loss_agg_mode");
  check_same_shape(loss_mat, loss_mask, "loss_mat", "loss_mask");
  VERL_CHECK(loss_mat.dim() == 2, "algo", "agg_loss: loss_mat must be (B, R), got shape ", loss_mat.sizes());
  return fn(loss_mat, as_dtype_of(loss_mask, loss_mat), options);
}

std::vector<std::string> loss_agg_mode_names() { return names_of(agg_loss_registry()); }

// ---- policy losses -------------------------------------------------------------------------------------

PolicyLossConfig PolicyLossConfig::from_actor_config(const config::ActorConfig& actor) {
  PolicyLossConfig c;
  c.clip_ratio = actor.clip_ratio;
  c.clip_ratio_low = actor.clip_ratio_low;
  c.clip_ratio_high = actor.clip_ratio_high;
  c.clip_ratio_c = actor.clip_ratio_c;
  c.agg.loss_scale_factor = actor.loss_scale_factor;
  c.tau_pos = actor.tau_pos;
  c.tau_neg = actor.tau_neg;
  c.clip_cov_ratio = actor.clip_cov_ratio;
  c.clip_cov_lb = actor.clip_cov_lb;
  c.clip_cov_ub = actor.clip_cov_ub;
  c.kl_cov_ratio = actor.kl_cov_ratio;
  c.ppo_kl_coef = actor.ppo_kl_coef;
  c.dro_beta = actor.dro_beta;
  if (actor.rollout_correction) {  // bypass mode (set by the config layer from algorithm.rollout_correction)
    const auto& r = *actor.rollout_correction;
    c.rollout_correction = RolloutCorrectionOptions{r.rollout_is, r.rollout_is_threshold, r.rollout_is_batch_normalize,
                                                    r.rollout_rs, r.rollout_rs_threshold};
    c.bypass_loss_type = r.loss_type;
  }
  return c;
}

namespace {

using detail::apply_is_weights;
using detail::clamped_ratio_and_ppo_kl;
using detail::clip_range;
using detail::ClipRange;
using detail::metric;

void check_policy_inputs(const Tensor& old_log_prob, const Tensor& log_prob, const Tensor& advantages,
                         const Tensor& response_mask, const Tensor& rollout_is_weights) {
  check_same_shape(log_prob, old_log_prob, "log_prob", "old_log_prob");
  check_same_shape(log_prob, advantages, "log_prob", "advantages");
  check_same_shape(log_prob, response_mask, "log_prob", "response_mask");
  if (rollout_is_weights.defined()) check_same_shape(log_prob, rollout_is_weights, "log_prob", "rollout_is_weights");
}

}  // namespace

// Vanilla PPO-clip with dual clip:
//   rho = exp(clamp(logp - old, -20, 20));  ppo_kl = masked_mean(old - logp)
//   L1 = -A rho;  L2 = -A clamp(rho, 1 - eps_lo, 1 + eps_hi);  Lclip = max(L1, L2)
//   L3 = -A c;    L = A < 0 ? min(L3, Lclip) : Lclip   [* rollout_is_weights]
//   pg_loss = agg_loss(L, m);  pg_clipfrac = mean_m[L2 > L1];  pg_clipfrac_lower = mean_m[Lclip > L3 and A < 0]
PolicyLossOutput compute_policy_loss_vanilla(const Tensor& old_log_prob, const Tensor& log_prob,
                                             const Tensor& advantages, const Tensor& response_mask,
                                             const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                             const Tensor& rollout_is_weights) {
  check_policy_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const ClipRange eps = clip_range(config);
  VERL_CHECK(config.clip_ratio_c > 1.0, "algo", "clip_ratio_c must be > 1 for the dual clip, got ",
             config.clip_ratio_c);
  const Tensor& A = advantages;
  auto [ratio, ppo_kl] = clamped_ratio_and_ppo_kl(old_log_prob, log_prob, response_mask);

  Tensor losses1 = -A * ratio;
  Tensor losses2 = -A * torch::clamp(ratio, 1.0 - eps.low, 1.0 + eps.high);
  Tensor clip_losses1 = torch::maximum(losses1, losses2);
  Tensor clipfrac = masked_mean(torch::gt(losses2, losses1).to(A.scalar_type()), response_mask);

  Tensor losses3 = -A * config.clip_ratio_c;
  Tensor clip_losses2 = torch::minimum(losses3, clip_losses1);
  Tensor clipfrac_lower =
      masked_mean(torch::logical_and(torch::gt(clip_losses1, losses3), A < 0).to(A.scalar_type()), response_mask);

  Tensor pg_losses = apply_is_weights(torch::where(A < 0, clip_losses2, clip_losses1), rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  return {pg_loss,
          {{"actor/pg_clipfrac", metric(clipfrac)},
           {"actor/ppo_kl", metric(ppo_kl)},
           {"actor/pg_clipfrac_lower", metric(clipfrac_lower)}}};
}

// GSPO (sequence-level ratio):
//   log s_i = sum_t m (logp - old) / max(|y_i|, 1)
//   rho_t = exp(min(logp_t - sg(logp_t) + sg(log s_i), 10))   (value s_i, gradient d rho / d logp_t = rho_t)
//   L = max(-A rho, -A clamp(rho, 1 - eps_lo, 1 + eps_hi))  [* rollout_is_weights]
//   pg_loss = agg_loss(L, m) (verl's gspo recipes set loss_agg_mode seq-mean-token-mean);
//   pg_clipfrac = mean_m[clipped]; ppo_kl = masked_mean(old - logp); pg_clipfrac_lower = 0 (no dual clip).
PolicyLossOutput compute_policy_loss_gspo(const Tensor& old_log_prob, const Tensor& log_prob,
                                          const Tensor& advantages, const Tensor& response_mask,
                                          const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                          const Tensor& rollout_is_weights) {
  check_policy_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const ClipRange eps = clip_range(config);
  const Tensor& A = advantages;
  Tensor m = as_dtype_of(response_mask, log_prob);
  Tensor neg_approx_kl = log_prob - old_log_prob;
  Tensor seq_lengths = torch::clamp_min(m.sum(-1), 1.0);
  Tensor neg_approx_kl_seq = masked_sum(neg_approx_kl, m, -1) / seq_lengths;
  Tensor log_ratio = log_prob - log_prob.detach() + neg_approx_kl_seq.detach().unsqueeze(-1);
  Tensor ratio = torch::exp(torch::clamp_max(log_ratio, 10.0));

  Tensor losses1 = -A * ratio;
  Tensor losses2 = -A * torch::clamp(ratio, 1.0 - eps.low, 1.0 + eps.high);
  Tensor pg_losses = apply_is_weights(torch::maximum(losses1, losses2), rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  Tensor clipfrac = masked_mean(torch::gt(losses2, losses1).to(A.scalar_type()), response_mask);
  Tensor ppo_kl = masked_mean(-neg_approx_kl, response_mask);
  return {pg_loss,
          {{"actor/pg_clipfrac", metric(clipfrac)},
           {"actor/ppo_kl", metric(ppo_kl)},
           {"actor/pg_clipfrac_lower", 0.0}}};
}

// GPG: L = -logp * A [* rollout_is_weights]; pg_loss = agg_loss(L, m); no ratio, and no metrics (as verl).
PolicyLossOutput compute_policy_loss_gpg(const Tensor& old_log_prob, const Tensor& log_prob,
                                         const Tensor& advantages, const Tensor& response_mask,
                                         const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                         const Tensor& rollout_is_weights) {
  check_policy_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  Tensor pg_losses = apply_is_weights(-log_prob * advantages, rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  return {pg_loss, {}};
}

// CISPO: rho = exp(clamp(logp - old, -20, 20));  L = -sg(clamp(rho, 1 - eps_lo, 1 + eps_hi)) * A * logp
// [* rollout_is_weights]; pg_loss = agg_loss(L, m); pg_clipfrac = mean_m[rho outside the band];
// pg_clipfrac_lower = 0 (as verl: no dual clip); ppo_kl = masked_mean(old - logp).
PolicyLossOutput compute_policy_loss_cispo(const Tensor& old_log_prob, const Tensor& log_prob,
                                           const Tensor& advantages, const Tensor& response_mask,
                                           const std::string& loss_agg_mode, const PolicyLossConfig& config,
                                           const Tensor& rollout_is_weights) {
  check_policy_inputs(old_log_prob, log_prob, advantages, response_mask, rollout_is_weights);
  const ClipRange eps = clip_range(config);
  auto [ratio, ppo_kl] = clamped_ratio_and_ppo_kl(old_log_prob, log_prob, response_mask);
  Tensor clipped_ratio = torch::clamp(ratio, 1.0 - eps.low, 1.0 + eps.high).detach();
  Tensor pg_losses = apply_is_weights(-clipped_ratio * advantages * log_prob, rollout_is_weights);
  Tensor pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, config.agg);
  Tensor dtype_ratio = ratio.detach();
  Tensor clipfrac = masked_mean(torch::ne(dtype_ratio, clipped_ratio).to(ratio.scalar_type()), response_mask);
  return {pg_loss,
          {{"actor/pg_clipfrac", metric(clipfrac)}, {"actor/ppo_kl", metric(ppo_kl)}, {"actor/pg_clipfrac_lower", 0.0}}};
}

namespace {

const std::vector<std::pair<std::string, PolicyLossFn>>& policy_loss_registry() {
  static const std::vector<std::pair<std::string, PolicyLossFn>> table = {
      {"vanilla", compute_policy_loss_vanilla},
      {"gspo", compute_policy_loss_gspo},
      {"gpg", compute_policy_loss_gpg},
      {"cispo", compute_policy_loss_cispo},
      {"sapo", compute_policy_loss_sapo},
      {"geo_mean", compute_policy_loss_geo_mean},
      {"dppo_tv", compute_policy_loss_dppo_tv},
      {"dppo_kl", compute_policy_loss_dppo_kl},
      {"dro", compute_policy_loss_dro},
      {"clip_cov", compute_policy_loss_clip_cov},
      {"kl_cov", compute_policy_loss_kl_cov},
      {"bypass_mode", compute_policy_loss_bypass_mode},
  };
  return table;
}

}  // namespace

const PolicyLossFn& get_policy_loss_fn(const std::string& loss_mode) {
  return lookup(policy_loss_registry(), loss_mode, "actor_rollout_ref.actor.policy_loss.loss_mode");
}

PolicyLossOutput compute_policy_loss(const std::string& loss_mode, const Tensor& old_log_prob,
                                     const Tensor& log_prob, const Tensor& advantages,
                                     const Tensor& response_mask, const std::string& loss_agg_mode,
                                     const PolicyLossConfig& config, const Tensor& rollout_is_weights) {
  return get_policy_loss_fn(loss_mode)(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                                       rollout_is_weights);
}

std::vector<std::string> policy_loss_mode_names() { return names_of(policy_loss_registry()); }

// ---- value loss, entropy, KL -------------------------------------------------------------------------

// vclip = clip_by_value(vpreds, values - c, values + c);  l1 = (vpreds - returns)^2;  l2 = (vclip - returns)^2
// vf_loss = 0.5 * agg_loss(max(l1, l2), m);  vf_clipfrac = mean_m[l2 > l1]
ValueLossOutput compute_value_loss(const Tensor& vpreds, const Tensor& returns, const Tensor& values,
                                   const Tensor& response_mask, double cliprange_value,
                                   const std::string& loss_agg_mode, const AggLossOptions& agg) {
  check_same_shape(vpreds, returns, "vpreds", "returns");
  check_same_shape(vpreds, values, "vpreds", "values");
  check_same_shape(vpreds, response_mask, "vpreds", "response_mask");
  Tensor vpred_clipped = clip_by_value(vpreds, values - cliprange_value, values + cliprange_value);
  Tensor losses1 = (vpreds - returns).pow(2);
  Tensor losses2 = (vpred_clipped - returns).pow(2);
  Tensor vf_loss = 0.5 * agg_loss(torch::maximum(losses1, losses2), response_mask, loss_agg_mode, agg);
  Tensor vf_clipfrac = masked_mean(torch::gt(losses2, losses1).to(vpreds.scalar_type()), response_mask).detach();
  return {vf_loss, vf_clipfrac};
}

// entropy_loss = agg_loss(entropy_from_logits(logits), m)
Tensor compute_entropy_loss(const Tensor& logits, const Tensor& response_mask, const std::string& loss_agg_mode) {
  return agg_loss(entropy_from_logits(logits), response_mask, loss_agg_mode);
}

namespace {

using KlFn = std::function<Tensor(const Tensor& logprob, const Tensor& ref_logprob)>;

// The base estimators, d = logprob - ref_logprob:
//   kl / k1: d;  abs: |d|;  mse / k2: d^2 / 2;
//   low_var_kl / k3: x = clamp(ref - logp, -20, 20); clamp(exp(x) - x - 1, -10, 10)
const std::vector<std::pair<std::string, KlFn>>& kl_base_registry() {
  static const KlFn k1 = [](const Tensor& lp, const Tensor& ref) { return lp - ref; };
  static const KlFn abs_kl = [](const Tensor& lp, const Tensor& ref) { return (lp - ref).abs(); };
  static const KlFn k2 = [](const Tensor& lp, const Tensor& ref) { return 0.5 * (lp - ref).pow(2); };
  static const KlFn k3 = [](const Tensor& lp, const Tensor& ref) {
    Tensor x = torch::clamp(ref - lp, -20.0, 20.0);
    return torch::clamp(torch::exp(x) - x - 1, -10.0, 10.0);
  };
  static const std::vector<std::pair<std::string, KlFn>> table = {
      {"kl", k1}, {"k1", k1}, {"abs", abs_kl}, {"mse", k2}, {"k2", k2}, {"low_var_kl", k3}, {"k3", k3},
  };
  return table;
}

}  // namespace

std::vector<std::string> kl_penalty_names() {
  std::vector<std::string> names = names_of(kl_base_registry());
  const size_t base = names.size();
  for (size_t i = 0; i < base; ++i) names.push_back(names[i] + "+");
  return names;
}

// kind "+" (straight-through): k2 - sg(k2) + sg(kind) -- the value of the base kind, the gradient of k2.
Tensor kl_penalty(const Tensor& logprob, const Tensor& ref_logprob, const std::string& kl_penalty) {
  check_same_shape(logprob, ref_logprob, "logprob", "ref_logprob");
  VERL_CHECK(kl_penalty != "full", "algo", "kl_penalty 'full' is not implemented (verl does not implement it either)");
  const bool straight_through = ends_with(kl_penalty, "+");
  const std::string base = straight_through ? kl_penalty.substr(0, kl_penalty.size() - 1) : kl_penalty;
  const KlFn* fn = nullptr;
  for (const auto& [key, f] : kl_base_registry()) {
    if (key == base) fn = &f;
  }
  VERL_CHECK(fn != nullptr, "algo", "unknown kl_penalty '", kl_penalty, "'; valid: ", join(kl_penalty_names(), ", "));
  Tensor forward = (*fn)(logprob, ref_logprob);
  if (!straight_through) return forward;
  Tensor k2 = 0.5 * (logprob - ref_logprob).pow(2);
  return k2 - k2.detach() + forward.detach();
}

}  // namespace verl::algo
