// core_algos: spec section 13's worked numbers and other hand-computed cases, invariances (masked
// positions, loop vs vectorized, singleton groups), registries and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "algo_test_util.h"
#include "support/error_text.h"
#include "verl/algo/core_algos.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/config/ppo_config.h"

namespace verl::algo {
namespace {

using verl::test::error_of;

// A config every registered loss accepts: dro needs dro_beta, bypass_mode a rollout correction (token IS weights).
PolicyLossConfig every_loss_config() {
  PolicyLossConfig c;
  c.dro_beta = 0.1;
  c.clip_cov_ratio = 0.2;
  c.kl_cov_ratio = 0.2;
  RolloutCorrectionOptions rc;
  rc.rollout_is = "token";
  c.rollout_correction = rc;
  return c;
}

using test::f64;
using test::mask_from_lengths;
using test::max_abs_diff;

// Sparse outcome rewards: score s_i at the last valid token of each row.
torch::Tensor outcome_rewards(const std::vector<double>& scores, const std::vector<int64_t>& lengths, int64_t R) {
  torch::Tensor r = torch::zeros({static_cast<int64_t>(scores.size()), R}, f64());
  for (size_t i = 0; i < scores.size(); ++i) r[static_cast<int64_t>(i)][lengths[i] - 1] = scores[i];
  return r;
}

// ---- spec section 13 ------------------------------------------------------------------------------------

TEST(CoreAlgos, GrpoWorkedNumbers) {
  // scores [1, 0, 1, 0] in one group: mu 0.5, sigma = sqrt(1/3); a = +-0.5 / (sigma + 1e-6) = +-0.866024
  std::vector<int64_t> lengths = {3, 2, 4, 1};
  torch::Tensor m = mask_from_lengths(lengths, 4);
  torch::Tensor r = outcome_rewards({1, 0, 1, 0}, lengths, 4);
  auto [adv, ret] = compute_grpo_outcome_advantage(r, m, {"u", "u", "u", "u"});
  const double expected = 0.5 / (std::sqrt(1.0 / 3.0) + 1e-6);
  EXPECT_NEAR(expected, 0.866024, 1e-6);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t t = 0; t < 4; ++t) {
      const double want = t < lengths[i] ? (i % 2 == 0 ? expected : -expected) : 0.0;
      EXPECT_NEAR(adv[i][t].item<double>(), want, 1e-12) << "row " << i << " t " << t;
    }
  }
  EXPECT_TRUE(torch::equal(adv, ret));
}

TEST(CoreAlgos, DrGrpoDoesNotDivideByStd) {
  torch::Tensor m = mask_from_lengths({2, 2, 2, 2}, 2);
  torch::Tensor r = outcome_rewards({1, 0, 1, 0}, {2, 2, 2, 2}, 2);
  auto [adv, ret] = compute_advantage("grpo", {r, m, {}, {}, {"u", "u", "u", "u"}},
                                      AdvantageOptions{1.0, 1.0, /*norm_adv_by_std_in_grpo=*/false});
  EXPECT_NEAR(adv[0][0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(adv[1][1].item<double>(), -0.5, 1e-12);
}

TEST(CoreAlgos, RlooWorkedNumbers) {
  torch::Tensor m = mask_from_lengths({2, 2, 2, 2}, 2);
  torch::Tensor r = outcome_rewards({1, 0, 1, 0}, {2, 2, 2, 2}, 2);
  auto [adv, ret] = compute_advantage("rloo", {r, m, {}, {}, {"u", "u", "u", "u"}});
  const double want[4] = {2.0 / 3, -2.0 / 3, 2.0 / 3, -2.0 / 3};
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(adv[i][0].item<double>(), want[i], 1e-12);
}

TEST(CoreAlgos, GaeTerminalRewardWorkedNumbers) {
  // gamma = lam = 1, reward r at the last valid token: raw A_t = r - V_t, returns_t = r; then A is whitened
  // over the 5 valid tokens (unbiased variance, +1e-8 inside rsqrt).
  torch::Tensor m = mask_from_lengths({3, 2}, 3);
  torch::Tensor r = outcome_rewards({1.0, 0.5}, {3, 2}, 3);
  torch::Tensor v = torch::tensor({0.1, 0.2, 0.3, 0.4, -0.2, 9.0}, f64()).view({2, 3});
  auto [adv, ret] = compute_gae_advantage_return(r, v, m, 1.0, 1.0);
  const double raw[5] = {0.9, 0.8, 0.7, 0.1, 0.7};
  double sum = 0;
  for (double a : raw) sum += a;
  const double mean = sum / (5 + 1e-8);
  double sq = 0;
  for (double a : raw) sq += (a - mean) * (a - mean);
  const double var = sq / (5 + 1e-8) * 5.0 / 4.0;
  const int64_t rows[5] = {0, 0, 0, 1, 1}, cols[5] = {0, 1, 2, 0, 1};
  for (int k = 0; k < 5; ++k) {
    EXPECT_NEAR(adv[rows[k]][cols[k]].item<double>(), (raw[k] - mean) / std::sqrt(var + 1e-8), 1e-9) << k;
    EXPECT_NEAR(ret[rows[k]][cols[k]].item<double>(), rows[k] == 0 ? 1.0 : 0.5, 1e-12) << k;
  }
}

TEST(CoreAlgos, LowVarKlWorkedNumber) {
  torch::Tensor logp = torch::tensor({-1.0}, f64());
  torch::Tensor ref = torch::tensor({-1.5}, f64());
  EXPECT_NEAR(kl_penalty(logp, ref, "low_var_kl").item<double>(), 0.106531, 1e-6);
  EXPECT_NEAR(kl_penalty(logp, ref, "k3").item<double>(), std::exp(-0.5) + 0.5 - 1, 1e-15);
  EXPECT_NEAR(kl_penalty(logp, ref, "kl").item<double>(), 0.5, 1e-15);
  EXPECT_NEAR(kl_penalty(logp, ref, "k1").item<double>(), 0.5, 1e-15);
  EXPECT_NEAR(kl_penalty(ref, logp, "abs").item<double>(), 0.5, 1e-15);
  EXPECT_NEAR(kl_penalty(logp, ref, "mse").item<double>(), 0.125, 1e-15);
  EXPECT_NEAR(kl_penalty(logp, ref, "k2").item<double>(), 0.125, 1e-15);
}

TEST(CoreAlgos, LowVarKlIsClamped) {
  // x = ref - logp = 30 is clamped to 20, exp(20) - 21 is clamped to 10.
  torch::Tensor v = kl_penalty(torch::tensor({0.0}, f64()), torch::tensor({30.0}, f64()), "k3");
  EXPECT_DOUBLE_EQ(v.item<double>(), 10.0);
}

TEST(CoreAlgos, DualClipWorkedNumbers) {
  // A = -1, ratio = 5, eps = 0.2, c = 3: L1 = 5, L2 = 1.2, Lclip = 5, L3 = 3 => L = 3, counted as lower clip.
  torch::Tensor old_lp = torch::zeros({1, 1}, f64());
  torch::Tensor lp = torch::full({1, 1}, std::log(5.0), f64());
  torch::Tensor adv = torch::full({1, 1}, -1.0, f64());
  torch::Tensor m = torch::ones({1, 1}, f64());
  PolicyLossOutput out = compute_policy_loss("vanilla", old_lp, lp, adv, m);
  EXPECT_NEAR(out.pg_loss.item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(out.metrics.at("actor/pg_clipfrac_lower"), 1.0, 1e-6);
  EXPECT_NEAR(out.metrics.at("actor/pg_clipfrac"), 0.0, 1e-12);  // L2 = 1.2 < L1 = 5
  EXPECT_NEAR(out.metrics.at("actor/ppo_kl"), -std::log(5.0), 1e-6);
}

TEST(CoreAlgos, VanillaClipHighAndLow) {
  // ratio 1.5 with A = +1: L1 = -1.5, L2 = -1.2 => clipped, loss -1.2 (upper clip 0.2).
  // ratio 0.5 with A = -1: L1 = 0.5, L2 = 0.7 => clipped, loss 0.7 (lower clip 0.3 -> 1 - 0.3 = 0.7).
  torch::Tensor old_lp = torch::zeros({1, 2}, f64());
  torch::Tensor lp = torch::tensor({std::log(1.5), std::log(0.5)}, f64()).view({1, 2});
  torch::Tensor adv = torch::tensor({1.0, -1.0}, f64()).view({1, 2});
  torch::Tensor m = torch::ones({1, 2}, f64());
  PolicyLossConfig cfg;
  cfg.clip_ratio_low = 0.3;
  PolicyLossOutput out = compute_policy_loss_vanilla(old_lp, lp, adv, m, "token-mean", cfg);
  EXPECT_NEAR(out.pg_loss.item<double>(), (-1.2 + 0.7) / 2, 1e-12);
  EXPECT_NEAR(out.metrics.at("actor/pg_clipfrac"), 1.0, 1e-6);
  EXPECT_NEAR(out.metrics.at("actor/pg_clipfrac_lower"), 0.0, 1e-12);
}

TEST(CoreAlgos, DualClipNeedsCAboveOne) {
  PolicyLossConfig cfg;
  cfg.clip_ratio_c = 1.0;
  torch::Tensor z = torch::zeros({1, 1}, f64());
  EXPECT_NE(error_of([&] { compute_policy_loss_vanilla(z, z, z, z + 1, "token-mean", cfg); }).find("clip_ratio_c"),
            std::string::npos);
}

// ---- agg_loss -------------------------------------------------------------------------------------------

TEST(CoreAlgos, AggLossModesByHand) {
  torch::Tensor L = torch::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 100.0}, f64()).view({2, 3});
  torch::Tensor m = torch::tensor({1.0, 1.0, 1.0, 1.0, 1.0, 0.0}, f64()).view({2, 3});
  EXPECT_NEAR(agg_loss(L, m, "token-mean").item<double>(), 15.0 / 5, 1e-12);
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-sum").item<double>(), (6.0 + 9.0) / 2, 1e-12);
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-mean").item<double>(), (6.0 / 3 + 9.0 / 2) / 2, 1e-7);
  EXPECT_NEAR(agg_loss(L, m, "token-sum").item<double>(), 15.0, 1e-12);
  // verl 0.9.1: the seq-mean of the token sums, divided by loss_scale_factor (R = 3 by default).
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-sum-norm").item<double>(), (6.0 + 9.0) / 2 / 3, 1e-12);
  AggLossOptions o;
  o.loss_scale_factor = 10;
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-sum-norm", o).item<double>(), 0.75, 1e-12);
  AggLossOptions global;
  global.dp_size = 2;
  global.batch_num_tokens = 20;
  global.global_batch_size = 6;
  EXPECT_NEAR(agg_loss(L, m, "token-mean", global).item<double>(), 15.0 / 20 * 2, 1e-12);
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-sum", global).item<double>(), 15.0 / 6 * 2, 1e-12);
}

TEST(CoreAlgos, AggLossEmptyRowsDoNotCountInSeqMean) {
  torch::Tensor L = torch::tensor({2.0, 4.0, 7.0, 7.0}, f64()).view({2, 2});
  torch::Tensor m = torch::tensor({1.0, 1.0, 0.0, 0.0}, f64()).view({2, 2});
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-sum").item<double>(), 6.0, 1e-12);
  EXPECT_NEAR(agg_loss(L, m, "seq-mean-token-mean").item<double>(), 3.0, 1e-7);
}

TEST(CoreAlgos, AggLossAllMaskedIsFiniteWithFiniteGradient) {
  for (const auto& mode : loss_agg_mode_names()) {
    torch::Tensor L = torch::randn({3, 4}, f64()).set_requires_grad(true);
    torch::Tensor m = torch::zeros({3, 4}, f64());
    torch::Tensor loss = agg_loss(L, m, mode);
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << mode;
    EXPECT_EQ(loss.item<double>(), 0.0) << mode;
    loss.backward();
    EXPECT_TRUE(torch::isfinite(L.grad()).all().item<bool>()) << mode;
    // Also through a policy loss and the value loss.
    torch::Tensor z = torch::zeros({3, 4}, f64());
    for (const auto& loss_mode : policy_loss_mode_names()) {
      if (loss_mode == "bypass_mode") continue;  // its rollout correction refuses an all-masked batch (as verl)
      auto out = compute_policy_loss(loss_mode, z, torch::randn({3, 4}, f64()), torch::randn({3, 4}, f64()), m, mode,
                                     every_loss_config());
      EXPECT_TRUE(std::isfinite(out.pg_loss.item<double>())) << loss_mode << " " << mode;
      for (const auto& [k, v] : out.metrics) EXPECT_TRUE(std::isfinite(v)) << loss_mode << " " << k;
    }
    auto vf = compute_value_loss(torch::randn({3, 4}, f64()), z, z, m, 0.5, mode);
    EXPECT_TRUE(std::isfinite(vf.vf_loss.item<double>())) << mode;
  }
}

TEST(CoreAlgos, AggLossAcceptsBoolAndIntMasks) {
  torch::Tensor L = torch::randn({2, 3}, f64());
  torch::Tensor m = mask_from_lengths({3, 1}, 3);
  for (const auto& mode : loss_agg_mode_names()) {
    const double want = agg_loss(L, m, mode).item<double>();
    EXPECT_DOUBLE_EQ(agg_loss(L, m.to(torch::kBool), mode).item<double>(), want) << mode;
    EXPECT_DOUBLE_EQ(agg_loss(L, m.to(torch::kInt64), mode).item<double>(), want) << mode;
  }
}

// ---- helpers --------------------------------------------------------------------------------------------

TEST(CoreAlgos, MaskedHelpersIgnoreMaskedValuesEvenNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  torch::Tensor v = torch::tensor({1.0, 2.0, nan, 4.0, 6.0, 1e30}, f64()).view({2, 3});
  torch::Tensor m = torch::tensor({1.0, 1.0, 0.0, 1.0, 1.0, 0.0}, f64()).view({2, 3});
  EXPECT_NEAR(masked_sum(v, m).item<double>(), 13.0, 1e-12);
  EXPECT_NEAR(masked_mean(v, m).item<double>(), 13.0 / 4, 1e-8);
  torch::Tensor row = masked_mean(v, m, 1);
  EXPECT_NEAR(row[0].item<double>(), 1.5, 1e-7);  // 3 / (2 + 1e-8)
  EXPECT_NEAR(row[1].item<double>(), 5.0, 1e-7);
  // values 1, 2, 4, 6: mean 3.25, squared deviations sum 14.75, unbiased 14.75 / 3
  EXPECT_NEAR(masked_var(v, m).item<double>(), 14.75 / 3, 1e-7);
  EXPECT_NEAR(masked_var(v, m, false).item<double>(), 14.75 / 4, 1e-7);
  torch::Tensor w = masked_whiten(v, m);
  EXPECT_NEAR(w[0][0].item<double>(), (1 - 3.25) / std::sqrt(14.75 / 3 + 1e-8), 1e-7);
  torch::Tensor w_keep = masked_whiten(v, m, false);
  EXPECT_NEAR(w_keep[1][1].item<double>(), (6 - 3.25) / std::sqrt(14.75 / 3 + 1e-8) + 3.25, 1e-7);
}

TEST(CoreAlgos, MaskedVarNeedsTwoElements) {
  torch::Tensor v = torch::ones({4}, f64());
  EXPECT_NE(error_of([&] { masked_var(v, torch::zeros({4}, f64())); }).find("no element"), std::string::npos);
  EXPECT_NE(error_of([&] { masked_var(v, torch::tensor({0.0, 1.0, 0.0, 0.0}, f64())); }).find("two"),
            std::string::npos);
}

TEST(CoreAlgos, ClipByValue) {
  torch::Tensor x = torch::tensor({-2.0, 0.5, 3.0}, f64());
  torch::Tensor y = clip_by_value(x, torch::full({3}, -1.0, f64()), torch::full({3}, 1.0, f64()));
  EXPECT_TRUE(torch::equal(y, torch::tensor({-1.0, 0.5, 1.0}, f64())));
}

TEST(CoreAlgos, ResponseMaskThroughFirstEos) {
  torch::Tensor ids = torch::tensor({5, 7, 2, 9, 2, 3, 4, 6, 8, 1, 1, 1}, torch::kInt64).view({3, 4});
  torch::Tensor mask = get_response_mask(ids, {2});
  torch::Tensor want = torch::tensor({1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1}, torch::kInt64).view({3, 4});
  EXPECT_TRUE(torch::equal(mask, want)) << mask;
  // Several EOS ids: row 2 now ends at its 8.
  torch::Tensor mask2 = get_response_mask(ids, {2, 8}, torch::kFloat);
  EXPECT_EQ(mask2.scalar_type(), torch::kFloat);
  EXPECT_EQ(mask2[2].sum().item<float>(), 1.0f);
  EXPECT_EQ(mask2[0].sum().item<float>(), 3.0f);
}

TEST(CoreAlgos, PositionIdsFromMask) {
  torch::Tensor m = torch::tensor({0, 0, 1, 1, 1, 1, 1, 1, 1, 0}, torch::kInt64).view({2, 5});
  torch::Tensor want = torch::tensor({0, 0, 0, 1, 2, 0, 1, 2, 3, 3}, torch::kInt64).view({2, 5});
  EXPECT_TRUE(torch::equal(compute_position_id_with_mask(m), want));
}

TEST(CoreAlgos, LogprobsAndEntropyFromLogits) {
  // logits (1, 2, 3): row 0 = [0, ln 2, ln 3] -> p = [1/6, 2/6, 3/6]; row 1 uniform.
  torch::Tensor logits = torch::tensor({0.0, std::log(2.0), std::log(3.0), 0.7, 0.7, 0.7}, f64()).view({1, 2, 3});
  torch::Tensor labels = torch::tensor({2, 0}, torch::kInt64).view({1, 2});
  torch::Tensor lp = logprobs_from_logits(logits, labels);
  EXPECT_NEAR(lp[0][0].item<double>(), std::log(0.5), 1e-12);
  EXPECT_NEAR(lp[0][1].item<double>(), -std::log(3.0), 1e-12);
  torch::Tensor h = entropy_from_logits(logits);
  const double h0 = -(1.0 / 6 * std::log(1.0 / 6) + 2.0 / 6 * std::log(2.0 / 6) + 0.5 * std::log(0.5));
  EXPECT_NEAR(h[0][0].item<double>(), h0, 1e-12);
  EXPECT_NEAR(h[0][1].item<double>(), std::log(3.0), 1e-12);
  // bf16 logits are promoted to float32 before the log-softmax.
  EXPECT_EQ(logprobs_from_logits(logits.to(torch::kBFloat16), labels).scalar_type(), torch::kFloat);
  // entropy loss = token-mean of the two entropies
  EXPECT_NEAR(compute_entropy_loss(logits, torch::ones({1, 2}, f64())).item<double>(), (h0 + std::log(3.0)) / 2,
              1e-12);
}

// ---- other estimators by hand ---------------------------------------------------------------------------

TEST(CoreAlgos, RemaxByHand) {
  torch::Tensor r = torch::tensor({0.0, 1.0, 2.0, 0.5, 0.5, 9.0}, f64()).view({2, 3});
  torch::Tensor m = mask_from_lengths({3, 2}, 3);
  torch::Tensor base = torch::tensor({1.0, -1.0}, f64());
  auto [adv, ret] = compute_advantage("remax", {r, m, {}, base, {}});
  // returns = reverse cumsum of r*m: row 0 [3, 3, 2], row 1 [1, 0.5, 0]; A = returns - b*m
  torch::Tensor want_ret = torch::tensor({3.0, 3.0, 2.0, 1.0, 0.5, 0.0}, f64()).view({2, 3});
  torch::Tensor want_adv = torch::tensor({2.0, 2.0, 1.0, 2.0, 1.5, 0.0}, f64()).view({2, 3});
  EXPECT_LT(max_abs_diff(ret, want_ret), 1e-12);
  EXPECT_LT(max_abs_diff(adv, want_adv), 1e-12);
}

TEST(CoreAlgos, OpoByHand) {
  // one group: scores 1 (length 1) and 0 (length 3): baseline = (1*1 + 3*0) / 4 = 0.25
  torch::Tensor m = mask_from_lengths({1, 3}, 3);
  torch::Tensor r = outcome_rewards({1.0, 0.0}, {1, 3}, 3);
  auto [adv, ret] = compute_advantage("opo", {r, m, {}, {}, {"g", "g"}});
  EXPECT_NEAR(adv[0][0].item<double>(), 0.75, 1e-12);
  EXPECT_NEAR(adv[1][2].item<double>(), -0.25, 1e-12);
  EXPECT_EQ(adv[0][1].item<double>(), 0.0);
}

TEST(CoreAlgos, GpgByHand) {
  // scores [2, 0, 1, 0], groups {a: 2, 0}, {b: 1, 0}; nonzero = 2, alpha = 4 / 2 = 2
  torch::Tensor m = mask_from_lengths({1, 1, 1, 1}, 1);
  torch::Tensor r = torch::tensor({2.0, 0.0, 1.0, 0.0}, f64()).view({4, 1});
  auto [adv, ret] = compute_advantage("gpg", {r, m, {}, {}, {"a", "a", "b", "b"}});
  torch::Tensor want = torch::tensor({2.0, -2.0, 1.0, -1.0}, f64()).view({4, 1});
  EXPECT_LT(max_abs_diff(adv, want), 1e-12);
}

TEST(CoreAlgos, ReinforcePlusPlusByHand) {
  // gamma 0.5, row [1, 2, 4] full mask: G = [1 + 0.5*(2 + 0.5*4), 2 + 2, 4] = [3, 4, 4]
  // row 2 = [1, 1, 2] with mask [1, 0, 1]: g_2 = 2; g_1 = 1 + 0.5*2 = 2 but m_1 = 0, so returns_1 = 0 and the
  // running return (2) is carried through the masked token unchanged (verl 0.9.1): g_0 = 1 + 0.5*2 = 2.
  torch::Tensor r = torch::tensor({1.0, 2.0, 4.0, 1.0, 1.0, 2.0}, f64()).view({2, 3});
  torch::Tensor m = torch::tensor({1.0, 1.0, 1.0, 1.0, 0.0, 1.0}, f64()).view({2, 3});
  auto [adv, ret] = compute_reinforce_plus_plus_outcome_advantage(r, m, 0.5);
  torch::Tensor want = torch::tensor({3.0, 4.0, 4.0, 2.0, 0.0, 2.0}, f64()).view({2, 3});
  EXPECT_LT(max_abs_diff(ret, want), 1e-12);
  // A = whitened returns over the 5 masked-in tokens {3, 4, 4, 2, 2}, times the mask.
  const double vals[5] = {3, 4, 4, 2, 2};
  const double mean = 15.0 / (5 + 1e-8);
  double sq = 0;
  for (double x : vals) sq += (x - mean) * (x - mean);
  const double sd = std::sqrt(sq / (5 + 1e-8) * 5 / 4 + 1e-8);
  EXPECT_NEAR(adv[0][0].item<double>(), (3 - mean) / sd, 1e-9);
  EXPECT_NEAR(adv[1][2].item<double>(), (2 - mean) / sd, 1e-9);
  EXPECT_EQ(adv[1][1].item<double>(), 0.0);
}

TEST(CoreAlgos, ReinforcePlusPlusBaselineByHand) {
  // groups {a: 3, 1}, {b: 5 alone}: a = [1, -1, 5] (singleton mean 0), each over 1 token -> whitened.
  torch::Tensor m = mask_from_lengths({1, 1, 1}, 2);
  torch::Tensor r = torch::tensor({3.0, 0.0, 1.0, 0.0, 5.0, 0.0}, f64()).view({3, 2});
  auto [adv, ret] = compute_advantage("reinforce_plus_plus_baseline", {r, m, {}, {}, {"a", "a", "b"}});
  const double mean = 5.0 / (3 + 1e-8);
  const double sq = (1 - mean) * (1 - mean) + (-1 - mean) * (-1 - mean) + (5 - mean) * (5 - mean);
  const double sd = std::sqrt(sq / (3 + 1e-8) * 3 / 2 + 1e-8);
  EXPECT_NEAR(adv[0][0].item<double>(), (1 - mean) / sd, 1e-9);
  EXPECT_NEAR(adv[2][0].item<double>(), (5 - mean) / sd, 1e-9);
  EXPECT_EQ(adv[2][1].item<double>(), 0.0);
}

// ---- invariances ----------------------------------------------------------------------------------------

TEST(CoreAlgos, GaeIgnoresValuesAtMaskedPositions) {
  // Multi-turn mask with observation holes (as verl's test_core_algos_on_cpu).
  torch::manual_seed(3);
  torch::Tensor m = torch::tensor({1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0}, f64()).view({2, 8});
  torch::Tensor r = torch::randn({2, 8}, f64()) * m;
  torch::Tensor v = torch::randn({2, 8}, f64());
  torch::Tensor v2 = v + (1 - m) * torch::randn({2, 8}, f64()) * 100;
  auto [a1, ret1] = compute_gae_advantage_return(r, v, m, 0.9, 0.8);
  auto [a2, ret2] = compute_gae_advantage_return(r, v2, m, 0.9, 0.8);
  torch::Tensor valid = m.to(torch::kBool);
  EXPECT_LT(max_abs_diff(a1.masked_select(valid), a2.masked_select(valid)), 1e-12);
  EXPECT_LT(max_abs_diff(ret1.masked_select(valid), ret2.masked_select(valid)), 1e-12);
}

TEST(CoreAlgos, LossesIgnoreValuesAtMaskedPositions) {
  torch::manual_seed(4);
  torch::Tensor m = mask_from_lengths({5, 2, 0, 4}, 5);
  torch::Tensor junk = (1 - m) * 1e6;
  torch::Tensor old_lp = -torch::rand({4, 5}, f64());
  torch::Tensor lp = old_lp + 0.3 * torch::randn({4, 5}, f64());
  torch::Tensor adv = torch::randn({4, 5}, f64());
  for (const auto& mode : policy_loss_mode_names()) {
    for (const auto& agg : loss_agg_mode_names()) {
      auto a = compute_policy_loss(mode, old_lp, lp, adv, m, agg, every_loss_config());
      auto b = compute_policy_loss(mode, old_lp - junk, lp + junk, adv - junk, m, agg, every_loss_config());
      EXPECT_NEAR(a.pg_loss.item<double>(), b.pg_loss.item<double>(), 1e-12) << mode << " " << agg;
      for (const auto& [k, v] : a.metrics) EXPECT_NEAR(v, b.metrics.at(k), 1e-12) << mode << " " << k;
    }
  }
  torch::Tensor vp = torch::randn({4, 5}, f64()), ret = torch::randn({4, 5}, f64()), val = torch::randn({4, 5}, f64());
  auto v1 = compute_value_loss(vp, ret, val, m, 0.5);
  auto v2 = compute_value_loss(vp + junk, ret - junk, val + junk, m, 0.5);
  EXPECT_NEAR(v1.vf_loss.item<double>(), v2.vf_loss.item<double>(), 1e-12);
  EXPECT_NEAR(v1.vf_clipfrac.item<double>(), v2.vf_clipfrac.item<double>(), 1e-12);
}

std::vector<std::string> random_uids(int64_t batch, int seed) {
  // Groups of sizes 1..5 in shuffled order, as uuids would be.
  std::vector<std::string> uids;
  int g = 0;
  while (static_cast<int64_t>(uids.size()) < batch) {
    const int size = 1 + (g * 7 + seed) % 5;
    for (int k = 0; k < size && static_cast<int64_t>(uids.size()) < batch; ++k) uids.push_back("uid-" + std::to_string(g));
    ++g;
  }
  torch::manual_seed(seed);
  torch::Tensor perm = torch::randperm(batch);
  std::vector<std::string> shuffled(batch);
  for (int64_t i = 0; i < batch; ++i) shuffled[i] = uids[perm[i].item<int64_t>()];
  return shuffled;
}

TEST(CoreAlgos, GrpoAndRlooLoopEqualsVectorized) {
  for (int seed = 0; seed < 5; ++seed) {
    const int64_t B = 37, R = 6;
    torch::manual_seed(seed);
    torch::Tensor r = torch::randn({B, R}, f64());
    torch::Tensor m = (torch::rand({B, R}, f64()) > 0.3).to(torch::kDouble);
    auto uids = random_uids(B, seed);
    for (bool norm : {true, false}) {
      auto loop = compute_grpo_outcome_advantage(r, m, uids, 1e-6, norm);
      auto vec = compute_grpo_vectorized_outcome_advantage(r, m, uids, 1e-6, norm);
      EXPECT_TRUE(torch::allclose(loop.first, vec.first, 1e-5, 1e-6)) << "grpo seed " << seed;
    }
    // rloo_vectorized gives a singleton group 0 where rloo keeps its score (verl): compare groups of 2+.
    auto loop = compute_rloo_outcome_advantage(r, m, uids);
    auto vec = compute_rloo_vectorized_outcome_advantage(r, m, uids);
    std::vector<int64_t> multi;
    for (int64_t i = 0; i < B; ++i) {
      if (std::count(uids.begin(), uids.end(), uids[i]) > 1) multi.push_back(i);
    }
    torch::Tensor rows = torch::tensor(multi, torch::kInt64);
    EXPECT_TRUE(torch::allclose(loop.first.index_select(0, rows), vec.first.index_select(0, rows), 1e-5, 1e-6))
        << "rloo seed " << seed;
  }
  // float32 too
  torch::Tensor r = torch::randn({20, 3});
  torch::Tensor m = torch::ones({20, 3});
  auto uids = random_uids(20, 9);
  EXPECT_TRUE(torch::allclose(compute_grpo_outcome_advantage(r, m, uids).first,
                              compute_grpo_vectorized_outcome_advantage(r, m, uids).first, 1e-5, 1e-6));
}

TEST(CoreAlgos, SingletonGroups) {
  torch::Tensor m = mask_from_lengths({2, 1, 2}, 2);
  torch::Tensor r = outcome_rewards({3.0, -2.0, 0.5}, {2, 1, 2}, 2);
  std::vector<std::string> uids = {"a", "b", "c"};
  // GRPO: mu = 0, sigma = 1 => s / (1 + eps); Dr.GRPO: s
  auto grpo = compute_grpo_outcome_advantage(r, m, uids);
  auto grpo_vec = compute_grpo_vectorized_outcome_advantage(r, m, uids);
  // verl's singleton sigma is a float32 scalar, so sigma + eps is 1 + 1e-6 rounded to float32.
  const double sigma_eps = static_cast<double>(1.0f + 1e-6f);
  EXPECT_NEAR(grpo.first[0][1].item<double>(), 3.0 / sigma_eps, 1e-12);
  EXPECT_NEAR(grpo.first[1][0].item<double>(), -2.0 / sigma_eps, 1e-12);
  EXPECT_EQ(grpo.first[1][1].item<double>(), 0.0);
  EXPECT_LT(max_abs_diff(grpo.first, grpo_vec.first), 1e-6);  // the vectorized statistics are float32 (verl)
  auto dr = compute_grpo_outcome_advantage(r, m, uids, 1e-6, false);
  EXPECT_NEAR(dr.first[2][0].item<double>(), 0.5, 1e-15);
  // RLOO, OPO, GPG, REINFORCE++-baseline use baseline 0 for a singleton.
  auto rloo = compute_rloo_outcome_advantage(r, m, uids);
  EXPECT_NEAR(rloo.first[0][0].item<double>(), 3.0, 1e-15);
  // ... except rloo_vectorized, which gives a singleton 0 (verl's vectorized form).
  auto rloo_vec = compute_rloo_vectorized_outcome_advantage(r, m, uids);
  EXPECT_EQ(rloo_vec.first.abs().sum().item<double>(), 0.0);
  EXPECT_NEAR(compute_opo_outcome_advantage(r, m, uids).first[1][0].item<double>(), -2.0, 1e-15);
}

// ---- registries -----------------------------------------------------------------------------------------

TEST(CoreAlgos, RegistriesMatchConfigAndVerlNames) {
  EXPECT_EQ(adv_estimator_names(),
            (std::vector<std::string>{"gae", "grpo", "rloo", "reinforce_plus_plus", "reinforce_plus_plus_baseline",
                                      "remax", "opo", "gpg", "grpo_passk", "grpo_vectorized", "rloo_vectorized",
                                      "optimal_token_baseline", "tir_optimal_token_baseline", "gdpo"}));
  EXPECT_EQ(policy_loss_mode_names(),
            (std::vector<std::string>{"vanilla", "gspo", "gpg", "cispo", "sapo", "geo_mean", "dppo_tv", "dppo_kl",
                                      "dro", "clip_cov", "kl_cov", "bypass_mode"}));
  EXPECT_EQ(loss_agg_mode_names(), (std::vector<std::string>{"token-mean", "token-sum", "seq-mean-token-sum",
                                                             "seq-mean-token-mean", "seq-mean-token-sum-norm"}));
  EXPECT_EQ(kl_penalty_names().size(), 14u);
  EXPECT_EQ(config::supported_adv_estimators(), adv_estimator_names());
  EXPECT_EQ(config::supported_policy_loss_modes(), policy_loss_mode_names());
  EXPECT_EQ(config::supported_kl_penalties(), kl_penalty_names());
  EXPECT_EQ(config::supported_loss_agg_modes(), loss_agg_mode_names());
}

TEST(CoreAlgos, PolicyLossConfigFromActorConfig) {
  config::ConfigArgs args;
  args.overrides = {"actor_rollout_ref.actor.clip_ratio_high=0.28", "actor_rollout_ref.actor.clip_ratio_c=10.0",
                    "actor_rollout_ref.actor.loss_scale_factor=4096.0"};
  config::PPOConfig ppo = config::load_config(args).ppo;
  PolicyLossConfig c = PolicyLossConfig::from_actor_config(ppo.actor_rollout_ref.actor);
  EXPECT_DOUBLE_EQ(c.clip_ratio, 0.2);
  EXPECT_DOUBLE_EQ(c.clip_ratio_low.value(), 0.2);
  EXPECT_DOUBLE_EQ(c.clip_ratio_high.value(), 0.28);
  EXPECT_DOUBLE_EQ(c.clip_ratio_c, 10.0);
  EXPECT_DOUBLE_EQ(c.agg.loss_scale_factor.value(), 4096.0);
  // Without low/high the symmetric clip_ratio applies.
  PolicyLossConfig sym;
  sym.clip_ratio = 0.1;
  torch::Tensor lp = torch::full({1, 1}, std::log(1.5), f64());
  auto out = compute_policy_loss_vanilla(torch::zeros({1, 1}, f64()), lp, torch::ones({1, 1}, f64()),
                                         torch::ones({1, 1}, f64()), "token-mean", sym);
  EXPECT_NEAR(out.pg_loss.item<double>(), -1.1, 1e-12);
}

TEST(CoreAlgos, UnknownNamesListTheValidOnes) {
  torch::Tensor z = torch::zeros({1, 1}, f64());
  std::string e = error_of([&] { get_adv_estimator_fn("grpo_passk2"); });
  EXPECT_NE(e.find("unknown algorithm.adv_estimator 'grpo_passk2'"), std::string::npos) << e;
  EXPECT_NE(e.find("gae, grpo, rloo"), std::string::npos) << e;
  e = error_of([&] { get_policy_loss_fn("sapo2"); });
  EXPECT_NE(e.find("vanilla, gspo, gpg, cispo"), std::string::npos) << e;
  e = error_of([&] { agg_loss(z, z, "token-max"); });
  EXPECT_NE(e.find("token-mean, token-sum, seq-mean-token-sum"), std::string::npos) << e;
  e = error_of([&] { kl_penalty(z, z, "k4+"); });
  EXPECT_NE(e.find("low_var_kl+"), std::string::npos) << e;
  e = error_of([&] { kl_penalty(z, z, "full"); });
  EXPECT_NE(e.find("not implemented"), std::string::npos) << e;
}

TEST(CoreAlgos, EstimatorsNeedTheirInputs) {
  torch::Tensor r = torch::zeros({2, 2}, f64()), m = torch::ones({2, 2}, f64());
  EXPECT_NE(error_of([&] { compute_advantage("gae", {r, m, {}, {}, {}}); }).find("values"), std::string::npos);
  EXPECT_NE(error_of([&] { compute_advantage("remax", {r, m, {}, {}, {}}); }).find("reward_baselines"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compute_advantage("grpo", {r, m, {}, {}, {"a"}}); }).find("index (uid) has 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compute_advantage("grpo", {r, torch::ones({2, 3}), {}, {}, {"a", "b"}}); })
                .find("response_mask"),
            std::string::npos);
}

TEST(CoreAlgos, KlStraightThroughKeepsBaseValue) {
  torch::manual_seed(5);
  torch::Tensor lp = -torch::rand({3, 4}, f64()) * 2;
  torch::Tensor ref = -torch::rand({3, 4}, f64()) * 2;
  for (const std::string base : {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"}) {
    torch::Tensor plus = kl_penalty(lp, ref, base + "+");
    EXPECT_LT(max_abs_diff(plus, kl_penalty(lp, ref, base)), 1e-15) << base;
  }
}

}  // namespace
}  // namespace verl::algo
