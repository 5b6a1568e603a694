// The fused decode attention kernel against the matmul + softmax + matmul path it replaces (in fp64).
#include <gtest/gtest.h>

#include <limits>

#include "verl/common/error.h"
#include "verl/model/decode_attention.h"

namespace verl::model {
namespace {

torch::Tensor decode_attention_reference(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
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
      auto want = decode_attention_reference(q, keys, vals, bias.view({B, S}), scaling);
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_LT((got - want).abs().max().item<float>(), 2e-6);
      // Masked positions get no weight: changing their values changes nothing.
      v_cache.select(0, 2).narrow(1, 0, 20).fill_(1e6);
      auto again = decode_attention(q, keys, vals, bias, scaling);
      EXPECT_TRUE(torch::equal(again.select(0, 2), got.select(0, 2)));
    }
  }
}

// HF's rotate-half rotary embedding of [B, heads, D] with cos / sin [B, D], in fp64.
torch::Tensor rotate_fp64(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t D = x.size(-1);
  auto xd = x.to(torch::kFloat64);
  auto rotated = torch::cat({-xd.narrow(-1, D / 2, D / 2), xd.narrow(-1, 0, D / 2)}, -1);
  return xd * cos.to(torch::kFloat64).unsqueeze(1) + rotated * sin.to(torch::kFloat64).unsqueeze(1);
}

// The fused step: rotary of this step's q / k, k and v written to the cache at `position`, attention over
// [0, position]; against the same steps in fp64, the cache's other positions untouched.
TEST(DecodeAttention, StepRotatesWritesTheCacheAndAttends) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  if (!decode_attention_applies(torch::zeros({1, 1, 1, 8}), torch::zeros({1, 1, 1, 8}))) {
    GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  }
  for (int64_t D : {128, 64, 24, 16, 8}) {
    for (int64_t G : {1, 3, 4, 7}) {
      SCOPED_TRACE("D " + std::to_string(D) + " G " + std::to_string(G));
      const int64_t B = 3, Hkv = 2, capacity = 40, position = 26, S = position + 1;
      auto cache_k = torch::randn({B, Hkv, capacity, D}), cache_v = torch::randn({B, Hkv, capacity, D});
      const auto k_before = cache_k.clone(), v_before = cache_v.clone();
      auto q = torch::randn({B, Hkv * G * D}), k = torch::randn({B, Hkv * D}), v = torch::randn({B, Hkv * D});
      auto angle = torch::rand({B, D / 2}) * 20;
      auto emb = torch::cat({angle, angle}, -1);
      auto cos = emb.cos(), sin = emb.sin();
      auto bias = torch::zeros({B, 1, 1, 1, S});
      bias.select(0, 1).narrow(-1, 0, 5).fill_(std::numeric_limits<float>::lowest());
      const double scaling = 1.0 / std::sqrt(static_cast<double>(D));
      auto got = decode_attention_step(q, k, v, cos, sin, cache_k, cache_v, position, bias, scaling);

      auto k_rot = rotate_fp64(k.view({B, Hkv, D}), cos, sin);
      auto q_rot = rotate_fp64(q.view({B, Hkv * G, D}), cos, sin).view({B, Hkv, G, D});
      EXPECT_LT((cache_k.select(2, position).to(torch::kFloat64) - k_rot).abs().max().item<double>(), 1e-6);
      EXPECT_TRUE(torch::equal(cache_v.select(2, position), v.view({B, Hkv, D})));
      auto others = torch::ones({capacity}, torch::kBool);
      others[position] = false;
      EXPECT_TRUE(torch::equal(cache_k.index({torch::indexing::Slice(), torch::indexing::Slice(), others}),
                               k_before.index({torch::indexing::Slice(), torch::indexing::Slice(), others})));
      EXPECT_TRUE(torch::equal(cache_v.index({torch::indexing::Slice(), torch::indexing::Slice(), others}),
                               v_before.index({torch::indexing::Slice(), torch::indexing::Slice(), others})));
      auto keys = cache_k.narrow(2, 0, S).to(torch::kFloat64), vals = cache_v.narrow(2, 0, S);
      keys.select(2, position).copy_(k_rot);  // the exact rotated key, so only the attention's rounding remains
      auto want = decode_attention_reference(q_rot, keys, vals, bias.view({B, S}), scaling).view({B, Hkv * G * D});
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_LT((got - want).abs().max().item<float>(), 1e-5);
    }
  }
  auto cache = torch::zeros({1, 1, 4, 8});
  EXPECT_THROW(decode_attention_step(torch::zeros({1, 8}), torch::zeros({1, 8}), torch::zeros({1, 8}),
                                     torch::ones({1, 8}), torch::zeros({1, 8}), cache, cache, 4, torch::zeros({1, 5}), 1.0),
               Error);  // position past the cache
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
