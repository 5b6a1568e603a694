// The fused decode attention kernel against the matmul + softmax + matmul path it replaces (in fp64).
#include <gtest/gtest.h>

#include <limits>

#include "verl/common/error.h"
#include "verl/model/decode_attention.h"

namespace verl::model {
namespace {

torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
                        const torch::Tensor& bias, double scaling) {
  const int64_t B = q.size(0), S = keys.size(2);
  auto scores = torch::matmul(q.to(torch::kFloat64), keys.to(torch::kFloat64).transpose(2, 3)) * scaling +
                bias.to(torch::kFloat64).view({B, 1, 1, S});
  return torch::matmul(torch::softmax(scores, -1), vals.to(torch::kFloat64)).to(torch::kFloat32);
}

TEST(DecodeAttention, MatchesMatmulSoftmaxOnCacheViewsWithMaskedPositions) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  if (!decode_attention_applies(torch::zeros({1, 1, 1, 8}), torch::zeros({1, 1, 1, 8}))) {
    GTEST_SKIP() << "no AVX2 + FMA on this CPU: the decode step keeps the matmul path";
  }
  // 128, 64, 32 and 16 take the 512-bit kernel on an AVX-512F CPU (128 in blocks of two query heads), 24 and 8
  // the AVX2 one.
  for (int64_t D : {128, 64, 32, 24, 16, 8}) {
    // 7 = a block of four query heads and a block of three (Qwen2.5-0.5B has 7 per kv head).
    for (int64_t G : {1, 2, 3, 4, 7}) {
      SCOPED_TRACE("D " + std::to_string(D) + " G " + std::to_string(G));
      const int64_t B = 3, Hkv = 2, capacity = 40, S = 27;
      auto q = torch::randn({B, Hkv, G, D});
      // Views of a preallocated cache, as the decode step passes them.
      auto k_cache = torch::randn({B, Hkv, capacity, D}), v_cache = torch::randn({B, Hkv, capacity, D});
      auto keys = k_cache.narrow(2, 0, S), vals = v_cache.narrow(2, 0, S);
      // Left padding: row 1 masks its first 5 positions, row 2 its first 20, with the dtype's lowest value.
      auto bias = torch::zeros({B, 1, 1, 1, S});
      bias.select(0, 1).narrow(-1, 0, 5).fill_(std::numeric_limits<float>::lowest());
      bias.select(0, 2).narrow(-1, 0, 20).fill_(std::numeric_limits<float>::lowest());
      const double scaling = 1.0 / std::sqrt(static_cast<double>(D));
      ASSERT_TRUE(decode_attention_applies(q, keys));
      auto got = decode_attention(q, keys, vals, bias, scaling);
      auto want = reference(q, keys, vals, bias.view({B, S}), scaling);
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_LT((got - want).abs().max().item<float>(), 2e-6);
      // Masked positions get no weight: changing their values changes nothing.
      v_cache.select(0, 2).narrow(1, 0, 20).fill_(1e6);
      auto again = decode_attention(q, keys, vals, bias, scaling);
      EXPECT_TRUE(torch::equal(again.select(0, 2), got.select(0, 2)));
    }
  }
}

TEST(DecodeAttention, AppliesOnlyToCpuFp32WithoutGradients) {
  auto q = torch::randn({1, 1, 1, 8}), k = torch::randn({1, 1, 3, 8});
  if (!decode_attention_applies(q, k)) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  EXPECT_FALSE(decode_attention_applies(torch::randn({1, 1, 1, 12}), torch::randn({1, 1, 3, 12})));
  EXPECT_FALSE(decode_attention_applies(q.to(torch::kFloat64), k.to(torch::kFloat64)));
  EXPECT_FALSE(decode_attention_applies(q.clone().requires_grad_(true), k));
  EXPECT_THROW(decode_attention(q, torch::randn({1, 1, 3, 16}), torch::randn({1, 1, 3, 16}), torch::zeros({1, 3}), 1.0),
               Error);
  EXPECT_THROW(decode_attention(q, k, k, torch::zeros({1, 4}), 1.0), Error);
}

}  // namespace
}  // namespace verl::model
