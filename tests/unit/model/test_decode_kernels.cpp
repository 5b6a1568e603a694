// The decode-step kernels (model/decode_kernels.h) against the LibTorch formulas they replace, computed in
// fp64; the fused decode layer against the general path; the CPU sampler against the tensor-op sampler.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include "support/tensor_compare.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/decode_kernels.h"
#include "verl/model/transformer.h"
#include "verl/rollout/generator.h"

namespace verl::model {
namespace {

using test::max_abs_diff;

bool kernels_here() {
  torch::NoGradGuard no_grad;
  return decode_kernels_apply(torch::zeros({1, 8}));
}

// HF's RMSNorm in fp64.
torch::Tensor rms_norm_fp64(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  auto xd = x.to(torch::kFloat64);
  return w.to(torch::kFloat64) * (xd * torch::rsqrt(xd.pow(2).mean(-1, true) + eps));
}

// x W^T + b in fp64 (x already fp64 or not).
torch::Tensor linear_fp64(const torch::Tensor& x, const SkinnyProjection& p) {
  return torch::nn::functional::linear(x.to(torch::kFloat64), p.weight.to(torch::kFloat64),
                                       p.bias.defined() ? p.bias.to(torch::kFloat64) : torch::Tensor());
}

// skinny_linear's outputs for x against fp64, with the tolerance of a K-long fp32 sum.
void expect_projections_match(const std::vector<torch::Tensor>& outs, const std::vector<SkinnyProjection>& ps,
                              const torch::Tensor& x) {
  ASSERT_EQ(outs.size(), ps.size());
  const double tolerance = 2e-5 * std::sqrt(static_cast<double>(x.size(1)));
  for (size_t i = 0; i < ps.size(); ++i) {
    auto want = linear_fp64(x, ps[i]);
    ASSERT_EQ(outs[i].sizes(), want.sizes());
    EXPECT_LT(max_abs_diff(outs[i], want), tolerance) << "projection " << i;
  }
}

TEST(DecodeKernels, SkinnyLinearMatchesLinearForEveryTileShape) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU: the decode step keeps LibTorch's ops";
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  // Rows 1..67 cover every row remainder of the 4-row tiles; 1, 2, 3, 5, 26, 50 columns every column
  // remainder of the 3-column tiles and of the 24-column work items.
  for (int64_t M : {1, 2, 3, 4, 5, 64, 67}) {
    for (int64_t K : {8, 40, 512}) {
      SCOPED_TRACE("M " + std::to_string(M) + " K " + std::to_string(K));
      auto x = torch::randn({M, K});
      std::vector<SkinnyProjection> ps;
      for (int64_t N : {1, 2, 3, 5, 26, 50}) {
        ps.push_back({torch::randn({N, K}), N % 2 ? torch::randn({N}) : torch::Tensor()});
      }
      expect_projections_match(skinny_linear(x, ps), ps, x);
      // With the skip connection added in the same pass.
      auto residual = torch::randn({M, 26});
      auto got = skinny_linear(x, ps[4], residual);
      EXPECT_LT(max_abs_diff(got, linear_fp64(x, ps[4]) + residual.to(torch::kFloat64)),
                2e-5 * std::sqrt(static_cast<double>(K)));
      // With the input norm applied on the way in: ps[3] has a bias, ps[5] none.
      auto norm_w = torch::randn({K});
      auto normed = skinny_linear(x * 5, RowNorm{norm_w, 1e-6}, {ps[3], ps[5]});
      auto xn = rms_norm_fp64(x * 5, norm_w, 1e-6);
      EXPECT_LT(max_abs_diff(normed[0], linear_fp64(xn, ps[3])), 2e-5 * std::sqrt(static_cast<double>(K)));
      EXPECT_LT(max_abs_diff(normed[1], linear_fp64(xn, ps[5])), 2e-5 * std::sqrt(static_cast<double>(K)));
    }
  }
}

// The broadcast kernel over packed panels: every row remainder of its 8-row tiles, column counts around the
// 16 / 32-column masks, K not a multiple of 16, bias and skip connection; against fp64.
TEST(DecodeKernels, PackedWeightsMatchLinearForEveryTileShape) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::NoGradGuard no_grad;
  torch::manual_seed(15);
  for (int64_t K : {8, 40, 512}) {
    std::vector<SkinnyProjection> ps;
    for (int64_t N : {1, 5, 16, 17, 31, 32, 33, 70, 96}) {
      ps.push_back({torch::randn({N, K}), N % 2 ? torch::randn({N}) : torch::Tensor()});
    }
    std::vector<torch::Tensor> weights;
    for (const auto& p : ps) weights.push_back(p.weight);
    // The formulas read copies: packing rearranges the weights themselves.
    std::vector<SkinnyProjection> stored;
    for (const auto& p : ps) stored.push_back({p.weight.clone(), p.bias});
    DecodeWeightPacking packing(weights);
    if (packing.size() == 0) GTEST_SKIP() << "no AVX-512F on this CPU: nothing is packed";
    ASSERT_EQ(packing.size(), 2u) << "only N = 32 and 96 are multiples of the panel width";  // the rest run unpacked
    for (int64_t M : {1, 3, 8, 9, 15, 64, 67}) {
      SCOPED_TRACE("M " + std::to_string(M) + " K " + std::to_string(K));
      auto x = torch::randn({M, K});
      expect_projections_match(skinny_linear(x, ps), stored, x);
      for (size_t j : {size_t{6}, size_t{8}}) {  // N 33 unpacked, N 96 packed
        const int64_t N = ps[j].weight.size(0);
        auto residual = torch::randn({M, N});
        auto got = skinny_linear(x, ps[j], residual);
        EXPECT_LT(max_abs_diff(got, linear_fp64(x, stored[j]) + residual.to(torch::kFloat64)),
                  2e-5 * std::sqrt(static_cast<double>(K)));
        auto norm_w = torch::randn({K});
        auto normed = skinny_linear(x * 5, RowNorm{norm_w, 1e-6}, {ps[j]}).front();
        EXPECT_LT(max_abs_diff(normed, linear_fp64(rms_norm_fp64(x * 5, norm_w, 1e-6), stored[j])),
                  2e-5 * std::sqrt(static_cast<double>(K)));
      }
    }
  }
}

// Packing rearranges the weight where it lies and puts it back bit for bit when the scope ends, even when the
// scope is left by an exception; a nested scope does not pack it twice; other tensors over the same memory find
// the packing; a weight whose N is not a multiple of 32 is left as stored.
TEST(DecodeKernels, PackingIsInPlaceAndUndoneBitForBit) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::NoGradGuard no_grad;
  torch::manual_seed(16);
  auto x = torch::randn({9, 48});
  auto w = torch::randn({64, 48}), odd = torch::randn({40, 48});
  const auto w_stored = w.clone(), odd_stored = odd.clone();
  const void* memory = w.data_ptr();
  const auto want = torch::nn::functional::linear(x.to(torch::kFloat64), w_stored.to(torch::kFloat64));
  const auto ids = torch::tensor({{0, 63, 31}, {32, 5, 40}}, torch::kInt64);
  {
    DecodeWeightPacking packing({w, odd});
    if (packing.size() == 0) GTEST_SKIP() << "no AVX-512F on this CPU: nothing is packed";
    EXPECT_EQ(packing.size(), 1u);
    EXPECT_EQ(w.data_ptr(), memory) << "packed into new memory";
    EXPECT_FALSE(torch::equal(w, w_stored)) << "the weight's memory does not hold the panels";
    EXPECT_TRUE(torch::equal(odd, odd_stored));
    EXPECT_TRUE(packed_for_decode(w));
    EXPECT_TRUE(packed_for_decode(w.view({64, 48})));  // another tensor over the same memory
    EXPECT_FALSE(packed_for_decode(odd));
    EXPECT_LT(max_abs_diff(skinny_linear(x, {{w, {}}}).front(), want), 1e-4);
    EXPECT_TRUE(torch::equal(embedding_rows(w, ids), torch::embedding(w_stored, ids)));
    {
      DecodeWeightPacking inner({w});
      EXPECT_EQ(inner.size(), 0u) << "packed twice";
      EXPECT_LT(max_abs_diff(skinny_linear(x, {{w, {}}}).front(), want), 1e-4);
    }
    EXPECT_TRUE(packed_for_decode(w)) << "the inner scope unpacked the outer scope's weight";
    EXPECT_LT(max_abs_diff(skinny_linear(x, {{w, {}}}).front(), want), 1e-4);
  }
  EXPECT_TRUE(torch::equal(w, w_stored)) << "not put back bit for bit";
  EXPECT_FALSE(packed_for_decode(w));
  EXPECT_TRUE(torch::equal(embedding_rows(w, ids), torch::embedding(w_stored, ids)));
  try {
    DecodeWeightPacking packing({w});
    throw std::runtime_error("leaves the scope");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(torch::equal(w, w_stored)) << "an exception left the weight packed";
}

// Weights made under InferenceMode are packed and used all the same.
TEST(DecodeKernels, PackedWeightsAcceptInferenceTensors) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  c10::InferenceMode inference;
  auto x = torch::randn({5, 32});
  auto w = torch::randn({64, 32});
  ASSERT_TRUE(w.is_inference());
  const auto want = torch::nn::functional::linear(x.to(torch::kFloat64), w.to(torch::kFloat64));
  DecodeWeightPacking packing({w});
  if (packing.size() == 0) GTEST_SKIP() << "no AVX-512F on this CPU: nothing is packed";
  EXPECT_LT(max_abs_diff(skinny_linear(x, {{w, {}}}).front(), want), 1e-4);
}

// The MLP's gated activation in one kernel on packed gate / up weights (and its unpacked fallback): every row
// remainder of the 6-row tiles, widths around the 16 / 32-column masks, with and without biases, large |gate|.
TEST(DecodeKernels, SkinnyGluMatchesSiluOfGateTimesUp) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::NoGradGuard no_grad;
  torch::manual_seed(17);
  for (int64_t K : {8, 48}) {
    for (int64_t N : {8, 16, 24, 32, 40, 64}) {
      for (bool bias : {false, true}) {
        SkinnyProjection gate{torch::randn({N, K}), bias ? torch::randn({N}) * 30 : torch::Tensor()};
        SkinnyProjection up{torch::randn({N, K}), bias ? torch::randn({N}) : torch::Tensor()};
        const auto gate_w = gate.weight.to(torch::kFloat64), up_w = up.weight.to(torch::kFloat64);  // as stored
        for (bool packed : {false, true}) {
          std::vector<torch::Tensor> weights;
          if (packed) weights = {gate.weight, up.weight};
          DecodeWeightPacking packing(weights);
          if (packed && packing.size() == 0) continue;  // no AVX-512F: the fallback was tested above
          for (int64_t M : {1, 5, 6, 7, 13, 64}) {
            SCOPED_TRACE("K " + std::to_string(K) + " N " + std::to_string(N) + " M " + std::to_string(M) +
                         (bias ? " bias" : "") + (packed ? " packed" : ""));
            auto x = torch::randn({M, K}) * 2;
            auto xd = x.to(torch::kFloat64);
            auto g = torch::nn::functional::linear(xd, gate_w,
                                                   bias ? gate.bias.to(torch::kFloat64) : torch::Tensor());
            auto u = torch::nn::functional::linear(xd, up_w,
                                                   bias ? up.bias.to(torch::kFloat64) : torch::Tensor());
            auto want = g * torch::sigmoid(g) * u;
            auto got = skinny_glu(x, gate, up);
            ASSERT_EQ(got.sizes(), want.sizes());
            EXPECT_LT(max_abs_diff(got, want), 1e-4 * (1 + want.abs().max().item<double>()));
            // With the input norm applied on the way in.
            auto norm_w = torch::rand({K}) + 0.5;
            auto xn = rms_norm_fp64(x, norm_w, 1e-5);
            auto gn = torch::nn::functional::linear(xn, gate_w,
                                                    bias ? gate.bias.to(torch::kFloat64) : torch::Tensor());
            auto un = torch::nn::functional::linear(xn, up_w,
                                                    bias ? up.bias.to(torch::kFloat64) : torch::Tensor());
            auto want_normed = gn * torch::sigmoid(gn) * un;
            EXPECT_LT(max_abs_diff(skinny_glu(x, gate, up, RowNorm{norm_w, 1e-5}), want_normed),
                      1e-4 * (1 + want_normed.abs().max().item<double>()));
          }
        }
      }
    }
  }
}

TEST(DecodeKernels, NormAndSiluMatchHFFormulas) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  auto x = torch::randn({5, 48}) * 3, w = torch::randn({48});
  auto xd = x.to(torch::kFloat64);
  auto want_norm = w.to(torch::kFloat64) * (xd * torch::rsqrt(xd.pow(2).mean(-1, true) + 1e-6));
  EXPECT_LT(max_abs_diff(rms_norm_rows(x, w, 1e-6), want_norm), 1e-5);

  // Large |gate| included: exp(-gate) overflows / underflows fp32 there.
  auto gate = torch::cat({torch::randn({3, 40}) * 4, torch::tensor({-120.f, -90.f, 0.f, 90.f, 120.f}).repeat({3, 1})}, 1);
  auto up = torch::randn({3, 45});
  auto gd = gate.to(torch::kFloat64);
  auto want_act = gd * torch::sigmoid(gd) * up.to(torch::kFloat64);
  EXPECT_LT(max_abs_diff(silu_mul(gate, up), want_act), 1e-5);
}

TEST(DecodeKernels, ApplyOnlyWithoutGradientsAndCheckShapes) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(decode_kernels_apply(torch::zeros({2, 12})));  // not a multiple of 8
    EXPECT_FALSE(decode_kernels_apply(torch::zeros({2, 8}, torch::kFloat64)));
    try {
      skinny_linear(torch::zeros({2, 8}), {{torch::zeros({4, 16}), {}}});
      ADD_FAILURE() << "a weight of the wrong width was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("weight must be fp32 [N, 8]"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(decode_kernels_apply(torch::zeros({2, 8})));  // grad mode on
}

HFConfig tiny(Arch arch) { return test::tiny_config(arch); }

// Decode-step logits of one model through both paths: grad mode off takes the fused kernels, grad mode on the
// general LibTorch path (the kernels never run with gradients).
TEST(DecodeKernels, FusedDecodeStepMatchesGeneralPath) {
  if (!kernels_here()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    SCOPED_TRACE(static_cast<int>(arch));
    // Widths of 64 so that gate / up and the LM head pack too (k / v stay at 16 or 32); Qwen2 ties the head to
    // the input embedding, which the step then reads through the panels.
    auto config = tiny(arch);
    config.vocab_size = 64;
    config.intermediate_size = 64;
    config.tie_word_embeddings = arch == Arch::Qwen2;
    CausalLM m(config);
    init_weights(m, 4, /*perturb=*/true);
    auto ids = torch::tensor({{39, 39, 4, 9, 2, 17, 30, 5}, {1, 12, 7, 3, 22, 8, 13, 21}}, torch::kInt64);
    auto mask = torch::ones_like(ids);
    mask[0][0] = 0;
    mask[0][1] = 0;
    auto pos = position_ids_from_mask(mask);
    const int64_t P = 4, L = ids.size(1);
    auto decode = [&](bool grad, bool packed) {
      torch::AutoGradMode mode(grad);
      KVCache cache = m->make_cache(2, L);
      m->hidden_states(ids.narrow(1, 0, P), mask.narrow(1, 0, P), pos.narrow(1, 0, P), &cache);
      // As the rollout does: the decode step's weights packed after the prefill.
      const auto weights = fused_decode_weights(m, cache);
      EXPECT_EQ(weights.size(), grad ? 0u : 7 * m->model->layer_list.size() + 1);
      DecodeWeightPacking packing(packed ? weights : std::vector<torch::Tensor>{});
      if (packed && packing.size() > 0) EXPECT_GE(packing.size(), 5 * m->model->layer_list.size() + 1);
      std::vector<torch::Tensor> steps;
      for (int64_t t = P; t < L; ++t) {
        auto h = m->hidden_states(ids.narrow(1, t, 1), mask.narrow(1, 0, t + 1), pos.narrow(1, t, 1), &cache);
        steps.push_back(grad ? m->logits(h).detach() : rollout::decode_step_logits(m, h.squeeze(1)).unsqueeze(1));
      }
      if (packing.size() > 0) {  // nothing but the fused step may read packed weights
        EXPECT_THROW(m->hidden_states(ids, mask, pos), verl::Error);
        EXPECT_THROW(m->logits(torch::zeros({1, m->config.hidden_size})), verl::Error);
      }
      return steps;
    };
    // The fused step on the dot-product kernel, then on packed weights (an AVX-512F CPU), against the general path.
    auto fused = decode(false, false), packed = decode(false, true), general = decode(true, false);
    ASSERT_EQ(fused.size(), general.size());
    ASSERT_EQ(packed.size(), general.size());
    for (size_t t = 0; t < fused.size(); ++t) {
      EXPECT_LT(max_abs_diff(fused[t], general[t]), 1e-5) << "step " << t;
      EXPECT_LT(max_abs_diff(packed[t], general[t]), 1e-5) << "packed, step " << t;
    }
  }
}

// The CPU sampler walks the fp64 running sum itself; the tensor-op version (cumsum, count) must agree token
// for token on the same uniforms, zero-probability tokens included.
TEST(DecodeKernels, CpuSamplerPicksTheTensorOpSamplersTokens) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(8);
  const int64_t b = 200, V = 37;
  auto probs = torch::softmax(torch::randn({b, V}) * 2, -1);
  probs.narrow(1, 30, 7).zero_();  // a zero tail, as top-k / top-p leave it
  probs.narrow(1, 3, 2).zero_();
  probs = probs / probs.sum(-1, true);
  auto gen_a = at::detail::createCPUGenerator(11), gen_b = at::detail::createCPUGenerator(11);
  auto got = rollout::sample_from_probs(probs, gen_a);
  auto u = torch::empty({b, 1}, torch::kFloat64).uniform_(0.0, 1.0, gen_b);
  auto cdf = probs.to(torch::kFloat64).cumsum(-1);
  auto want = (cdf <= u * cdf.narrow(-1, V - 1, 1)).sum(-1).clamp_max(V - 1);
  EXPECT_TRUE(torch::equal(got, want));
  EXPECT_TRUE((probs.gather(1, got.unsqueeze(1)) > 0).all().item<bool>());
}

}  // namespace
}  // namespace verl::model
