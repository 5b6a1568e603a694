// model::fused_log_probs against the unfused formulas (log_softmax + gather, lse - sum softmax(z) z) through
// LibTorch's autograd, both in fp32 as verl computes log-probs (whatever the logits' dtype): values and gradients
// to fp32 rounding (1e-5 absolute, on values up to ~10; a wrong or missing term is off by O(0.1)) over chunks that
// split the rows unevenly, with a temperature, for a loss on both outputs, on the log-probs alone and on the
// entropy alone; bf16 logits give fp32 outputs and a bf16 gradient.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "support/tensor_compare.h"
#include "verl/model/fused_log_probs.h"

namespace verl::model {
namespace {

using test::max_abs_diff;

struct Reference {
  torch::Tensor log_probs, entropy;
};
Reference unfused(const torch::Tensor& logits, const torch::Tensor& tokens, double temperature) {
  auto z = logits.to(torch::kFloat32) / temperature;
  Reference r;
  r.log_probs = torch::log_softmax(z, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
  r.entropy = torch::logsumexp(z, -1) - (torch::softmax(z, -1) * z).sum(-1);
  return r;
}

TEST(FusedLogProbs, ValuesAndGradientsEqualTheUnfusedFormulas) {
  torch::manual_seed(3);
  const auto base = torch::randn({3, 7, 41}, torch::kFloat64) * 3;
  const auto tokens = torch::randint(0, 41, {3, 7}, torch::kInt64);
  const auto w_lp = torch::randn({3, 7}, torch::kFloat64), w_h = torch::randn({3, 7}, torch::kFloat64);
  for (int which : {0, 1, 2}) {  // loss on both outputs, the log-probs only, the entropy only
    for (int64_t chunk : {int64_t{0}, int64_t{4}}) {
      auto a = base.clone().requires_grad_(true), b = base.clone().requires_grad_(true);
      auto fused = fused_log_probs(a, tokens, 0.7, /*with_entropy=*/which != 1, chunk);
      auto ref = unfused(b, tokens, 0.7);
      EXPECT_LT(max_abs_diff(fused.log_probs, ref.log_probs), 1e-5);
      if (which != 1) {
        EXPECT_LT(max_abs_diff(fused.entropy, ref.entropy), 1e-5);
      } else {
        EXPECT_FALSE(fused.entropy.defined());
      }
      torch::Tensor loss_f = torch::zeros({}, torch::kFloat64), loss_r = torch::zeros({}, torch::kFloat64);
      if (which != 2) {
        loss_f = loss_f + (fused.log_probs * w_lp).sum();
        loss_r = loss_r + (ref.log_probs * w_lp).sum();
      }
      if (which != 1) {
        loss_f = loss_f + (fused.entropy * w_h).sum();
        loss_r = loss_r + (ref.entropy * w_h).sum();
      }
      loss_f.backward();
      loss_r.backward();
      EXPECT_LT(max_abs_diff(a.grad(), b.grad()), 1e-5) << "loss " << which << " chunk " << chunk;
      EXPECT_GT(b.grad().abs().max().item<double>(), 1e-3);
    }
  }
}

TEST(FusedLogProbs, Bf16LogitsGiveFp32StatisticsAndABf16Gradient) {
  torch::manual_seed(5);
  auto logits = (torch::randn({5, 300}) * 4).to(torch::kBFloat16).requires_grad_(true);
  const auto tokens = torch::randint(0, 300, {5}, torch::kInt64);
  auto fused = fused_log_probs(logits, tokens, 1.0, true, 2);
  EXPECT_EQ(fused.log_probs.scalar_type(), torch::kFloat32);
  auto ref = unfused(logits.detach(), tokens, 1.0);  // the same bf16 values, in fp32
  EXPECT_LT(max_abs_diff(fused.log_probs, ref.log_probs), 1e-4);
  EXPECT_LT(max_abs_diff(fused.entropy, ref.entropy), 1e-4);
  (fused.log_probs.sum() + fused.entropy.sum()).backward();
  EXPECT_EQ(logits.grad().scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace verl::model
