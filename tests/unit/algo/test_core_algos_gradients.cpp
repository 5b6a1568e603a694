// Finite-difference gradient checks in float64: LibTorch autograd through every policy loss, the value
// loss and the KL estimators against central differences. Where verl's loss uses a stop-gradient
// (gspo's token ratio, cispo's clipped weight, the "+" KL variants) the intended gradient is the
// derivative of a surrogate written out here, and the check compares against that.
#include <gtest/gtest.h>

#include "algo_test_util.h"
#include "verl/algo/core_algos.h"

namespace verl::algo {
namespace {

using test::autograd_grad;
using test::f64;
using test::mask_from_lengths;
using test::max_abs_diff;
using test::numeric_grad;

constexpr double kTol = 1e-6;

struct PolicyBatch {
  torch::Tensor old_log_prob, log_prob, advantages, mask;
};

// Ratios spread over [e^-0.6, e^0.6] plus a few far above the dual-clip bound c = 3, so every branch
// (unclipped, clipped high/low, dual clip) is exercised; masks include an empty row.
PolicyBatch policy_batch(int seed) {
  torch::manual_seed(seed);
  const int64_t B = 5, R = 6;
  PolicyBatch b;
  b.old_log_prob = -torch::rand({B, R}, f64()) * 3;
  torch::Tensor delta = (torch::rand({B, R}, f64()) - 0.5) * 1.2;
  delta[0][1] = 1.5;  // ratio 4.5
  delta[3][0] = 1.3;
  b.log_prob = b.old_log_prob + delta;
  b.advantages = torch::randn({B, R}, f64());
  b.advantages[0][1] = -0.7;  // dual clip applies
  b.mask = mask_from_lengths({6, 3, 0, 5, 1}, R);
  return b;
}

TEST(CoreAlgosGradients, VanillaGpgMatchFiniteDifferences) {
  for (int seed = 0; seed < 3; ++seed) {
    PolicyBatch b = policy_batch(seed);
    torch::Tensor weights = torch::rand({5, 6}, f64()) + 0.5;
    for (const std::string mode : {"vanilla", "gpg"}) {
      for (const auto& agg : loss_agg_mode_names()) {
        for (bool with_weights : {false, true}) {
          torch::Tensor w = with_weights ? weights : torch::Tensor();
          auto loss_of = [&](const torch::Tensor& lp) {
            return compute_policy_loss(mode, b.old_log_prob, lp, b.advantages, b.mask, agg, {}, w).pg_loss;
          };
          torch::Tensor analytic = autograd_grad(loss_of, b.log_prob);
          torch::Tensor numeric = numeric_grad([&](const torch::Tensor& lp) { return loss_of(lp).item<double>(); },
                                               b.log_prob);
          EXPECT_LT(max_abs_diff(analytic, numeric), kTol) << mode << " " << agg << " seed " << seed;
        }
      }
    }
  }
}

TEST(CoreAlgosGradients, VanillaDualClipHasZeroGradient) {
  PolicyBatch b = policy_batch(0);
  torch::Tensor g = autograd_grad(
      [&](const torch::Tensor& lp) {
        return compute_policy_loss_vanilla(b.old_log_prob, lp, b.advantages, b.mask).pg_loss;
      },
      b.log_prob);
  EXPECT_EQ(g[0][1].item<double>(), 0.0);  // A < 0, ratio 4.5 > c: the constant -A c branch
  EXPECT_EQ(g[2].abs().sum().item<double>(), 0.0);  // empty row
}

// GSPO: the token ratio has value s_i and derivative rho_t wrt logp_t, i.e. it behaves like
// rho_t(x) = s_i(x0) * exp(x_t - x0_t). The surrogate below uses exactly that, with its own
// seq-mean-token-mean, and must have the same gradient as the library's loss at x0.
TEST(CoreAlgosGradients, GspoMatchesSurrogateFiniteDifferences) {
  for (int seed = 0; seed < 3; ++seed) {
    PolicyBatch b = policy_batch(seed);
    const double lo = 0.2, hi = 0.28;
    PolicyLossConfig cfg;
    cfg.clip_ratio_low = lo;
    cfg.clip_ratio_high = hi;
    torch::Tensor m = b.mask;
    torch::Tensor lengths = m.sum(-1);
    torch::Tensor log_s = ((b.log_prob - b.old_log_prob) * m).sum(-1) / torch::clamp_min(lengths, 1.0);
    torch::Tensor x0 = b.log_prob.clone();
    auto surrogate = [&](const torch::Tensor& x) {
      torch::Tensor rho = torch::exp(log_s.unsqueeze(-1) + x - x0);
      torch::Tensor l1 = -b.advantages * rho;
      torch::Tensor l2 = -b.advantages * torch::clamp(rho, 1 - lo, 1 + hi);
      torch::Tensor l = torch::maximum(l1, l2) * m;
      torch::Tensor per_seq = l.sum(-1) / (lengths + 1e-8);
      torch::Tensor nonempty = (lengths > 0).to(torch::kDouble);
      return ((per_seq * nonempty).sum() / nonempty.sum()).item<double>();
    };
    auto loss_of = [&](const torch::Tensor& lp) {
      // verl 0.9.1's gspo aggregates with the loss_agg_mode it is given (its recipes set seq-mean-token-mean).
      return compute_policy_loss_gspo(b.old_log_prob, lp, b.advantages, m, "seq-mean-token-mean", cfg).pg_loss;
    };
    EXPECT_NEAR(loss_of(b.log_prob).item<double>(), surrogate(x0), 1e-12) << "value, seed " << seed;
    torch::Tensor analytic = autograd_grad(loss_of, b.log_prob);
    torch::Tensor numeric = numeric_grad(surrogate, x0);
    EXPECT_LT(max_abs_diff(analytic, numeric), kTol) << "seed " << seed;
  }
}

// CISPO: L = -sg(clip(rho)) A logp, so the gradient is that of -c0 A x with c0 fixed at x0.
TEST(CoreAlgosGradients, CispoMatchesSurrogateFiniteDifferences) {
  for (int seed = 0; seed < 3; ++seed) {
    PolicyBatch b = policy_batch(seed);
    torch::Tensor c0 = torch::clamp(torch::exp(b.log_prob - b.old_log_prob), 0.8, 1.2);
    for (const auto& agg : loss_agg_mode_names()) {
      auto surrogate = [&](const torch::Tensor& x) {
        return agg_loss(-c0 * b.advantages * x, b.mask, agg).item<double>();
      };
      auto loss_of = [&](const torch::Tensor& lp) {
        return compute_policy_loss_cispo(b.old_log_prob, lp, b.advantages, b.mask, agg).pg_loss;
      };
      EXPECT_NEAR(loss_of(b.log_prob).item<double>(), surrogate(b.log_prob), 1e-12) << agg;
      torch::Tensor analytic = autograd_grad(loss_of, b.log_prob);
      torch::Tensor numeric = numeric_grad(surrogate, b.log_prob);
      EXPECT_LT(max_abs_diff(analytic, numeric), kTol) << agg << " seed " << seed;
    }
  }
}

TEST(CoreAlgosGradients, ValueLossMatchesFiniteDifferences) {
  for (int seed = 0; seed < 3; ++seed) {
    torch::manual_seed(100 + seed);
    torch::Tensor values = torch::randn({4, 5}, f64());
    torch::Tensor vpreds = values + torch::randn({4, 5}, f64());  // about half outside the 0.5 clip range
    torch::Tensor returns = torch::randn({4, 5}, f64());
    torch::Tensor m = mask_from_lengths({5, 2, 4, 0}, 5);
    for (const auto& agg : loss_agg_mode_names()) {
      auto loss_of = [&](const torch::Tensor& vp) { return compute_value_loss(vp, returns, values, m, 0.5, agg).vf_loss; };
      torch::Tensor analytic = autograd_grad(loss_of, vpreds);
      torch::Tensor numeric = numeric_grad([&](const torch::Tensor& vp) { return loss_of(vp).item<double>(); }, vpreds);
      EXPECT_LT(max_abs_diff(analytic, numeric), kTol) << agg << " seed " << seed;
    }
  }
}

TEST(CoreAlgosGradients, KlEstimatorsMatchFiniteDifferences) {
  torch::manual_seed(7);
  torch::Tensor lp = -torch::rand({3, 4}, f64()) * 2;
  torch::Tensor ref = lp + (torch::rand({3, 4}, f64()) - 0.5) * 2;
  torch::Tensor weights = torch::rand({3, 4}, f64());
  for (const std::string kind : {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"}) {
    auto loss_of = [&](const torch::Tensor& x) { return (kl_penalty(x, ref, kind) * weights).sum(); };
    torch::Tensor analytic = autograd_grad(loss_of, lp);
    torch::Tensor numeric = numeric_grad([&](const torch::Tensor& x) { return loss_of(x).item<double>(); }, lp);
    EXPECT_LT(max_abs_diff(analytic, numeric), kTol) << kind;
    // "+": the value stays the base kind's, the gradient is the one of k2 = (x - ref)^2 / 2.
    auto plus_of = [&](const torch::Tensor& x) { return (kl_penalty(x, ref, kind + "+") * weights).sum(); };
    auto k2_of = [&](const torch::Tensor& x) { return (0.5 * (x - ref).pow(2) * weights).sum().item<double>(); };
    EXPECT_LT(max_abs_diff(autograd_grad(plus_of, lp), numeric_grad(k2_of, lp)), kTol) << kind << "+";
    EXPECT_NEAR(plus_of(lp).item<double>(), loss_of(lp).item<double>(), 1e-12) << kind << "+";
  }
}

TEST(CoreAlgosGradients, EntropyLossMatchesFiniteDifferences) {
  torch::manual_seed(8);
  torch::Tensor logits = torch::randn({2, 3, 5}, f64());
  torch::Tensor m = mask_from_lengths({3, 1}, 3);
  auto loss_of = [&](const torch::Tensor& z) { return compute_entropy_loss(z, m, "token-mean"); };
  torch::Tensor numeric = numeric_grad([&](const torch::Tensor& z) { return loss_of(z).item<double>(); }, logits);
  EXPECT_LT(max_abs_diff(autograd_grad(loss_of, logits), numeric), kTol);
}

}  // namespace
}  // namespace verl::algo
