// FLOP and parameter counts of bench/model_flops.h against independent numbers: the parameter count of the
// built LibTorch model, Qwen2.5-0.5B's published count, and hand-expanded formulas for a small shape.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "verl/bench/model_flops.h"
#include "verl/common/error.h"
#include "verl/bench/model_presets.h"
#include "verl/model/transformer.h"

namespace verl::bench {
namespace {

double numel_of(const model::CausalLM& m) {
  double n = 0;
  for (const auto& p : m->parameters()) n += static_cast<double>(p.numel());
  return n;
}

TEST(ModelFlops, ParameterCountsMatchTheBuiltModels) {
  for (const std::string name : {"qwen2-25m", "tiny"}) {
    const model::HFConfig c = model_preset(name);
    model::CausalLM m(c);
    EXPECT_EQ(total_params(c), numel_of(m)) << name;
  }
  // Published: Qwen2.5-0.5B has 494,032,768 parameters (tied embeddings).
  EXPECT_EQ(total_params(model_preset("qwen2.5-0.5b")), 494032768.0);
  // The 25M preset: 25.3M, of which 21.1M sit in matmuls (trunk + untied LM head).
  const model::HFConfig c = model_preset("qwen2-25m");
  EXPECT_EQ(trunk_matmul_params(c), 6.0 * (512 * 512 * 2 + 512 * 128 * 2 + 3 * 512 * 1408));
  EXPECT_EQ(lm_head_params(c), 512.0 * 8192);
}

// Qwen3-30B-A3B's config.json (48 layers, 128 experts of 768, 8 per token, hidden 2048, 32 x 128 query and 4 KV
// heads, vocabulary 151936, untied): its card's 30.5B parameters, 3.3B activated. A MoE layer's FLOPs count the
// router and the 8 experts a token runs, not the 128.
TEST(ModelFlops, MixtureOfExpertsCountsEveryExpertButComputesWithTheRoutedOnes) {
  model::HFConfig c = model_preset("tiny");
  c.arch = model::Arch::Qwen3;
  c.moe.enabled = true;
  c.moe.num_experts = 6;
  c.moe.num_experts_per_tok = 2;
  c.moe.moe_intermediate_size = 24;
  c.moe.decoder_sparse_step = 2;  // layer 0 dense, layer 1 sparse
  model::CausalLM tiny(c);
  EXPECT_EQ(total_params(c), numel_of(tiny));
  const double attn = 64 * 64 + 2 * 64 * 32 + 64 * 64;
  EXPECT_EQ(trunk_matmul_params(c), 2 * attn + 3 * 64 * 128 + (64 * 6 + 2 * 3 * 64 * 24));

  model::HFConfig q = c;
  q.hidden_size = 2048;
  q.num_hidden_layers = 48;
  q.num_attention_heads = 32;
  q.num_key_value_heads = 4;
  q.head_dim = 128;
  q.intermediate_size = 6144;
  q.vocab_size = 151936;
  q.moe.num_experts = 128;
  q.moe.num_experts_per_tok = 8;
  q.moe.moe_intermediate_size = 768;
  q.moe.decoder_sparse_step = 1;
  EXPECT_EQ(total_params(q), 30532122624.0);
  const double active = trunk_matmul_params(q) + 2 * lm_head_params(q);
  EXPECT_GT(active, 3.3e9);
  EXPECT_LT(active, 3.4e9);
}

TEST(ModelFlops, PassesExpandToTheHandFormula) {
  model::HFConfig c = model_preset("tiny");  // hidden 64, 2 layers, 4 heads x 16, 2 kv heads, inter 128, vocab 256
  const double trunk = 2.0 * 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128);
  const double head = 2.0 * 64 * 256;
  const double attn_pair = 4.0 * 2 * 4 * 16;  // per (query, key) pair, all layers
  EXPECT_EQ(trunk_flops_per_token(c), trunk);
  EXPECT_EQ(prefill_flops(c, 3, 5), 3 * (5 * trunk + head + attn_pair * 25));
  // Two decode steps after a prompt of 5: contexts 6 and 7.
  EXPECT_EQ(decode_flops(c, 4, 5, 2), 4 * (2 * (trunk + head) + attn_pair * (6 + 7)));
  // Bytes: the matmul weights each step, K/V (2 x 2 layers x 2 kv heads x 16 x 4 bytes per position) read over
  // the context and written for the new token.
  const double weights = (trunk / 2 + head / 2) * 4;
  const double kv = 2.0 * 2 * 2 * 16 * 4;
  EXPECT_EQ(decode_bytes(c, 4, 5, 2), 2 * weights + 4 * kv * ((6 + 1) + (7 + 1)));
  // A log-prob pass over 2 rows of 5 + 3 tokens: the LM head at the 3 response positions only.
  EXPECT_EQ(sequence_forward_flops(c, 2, 5, 3), 2 * (8 * trunk + 3 * head + attn_pair * 64));
  EXPECT_EQ(sequence_forward_flops(c, 2, 5, 3, /*lm_head=*/false), 2 * (8 * trunk + 3 * 2.0 * 64 + attn_pair * 64));
}

TEST(ModelFlops, RooflineBoundIsTheSlowerOfComputeAndMemory) {
  auto b = roofline_bound(/*flops=*/100, /*bytes=*/10, /*peak=*/50, /*bandwidth=*/20);
  EXPECT_DOUBLE_EQ(b.compute_seconds, 2.0);
  EXPECT_DOUBLE_EQ(b.memory_seconds, 0.5);
  EXPECT_DOUBLE_EQ(b.seconds(), 2.0);
  EXPECT_STREQ(b.limit(), "compute");
  b = roofline_bound(10, 100, 50, 20);
  EXPECT_DOUBLE_EQ(b.seconds(), 5.0);
  EXPECT_STREQ(b.limit(), "memory");
}

TEST(ModelFlops, UnknownPresetNamesTheValidOnes) {
  try {
    model_preset("qwen2-7b");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen2-25m, qwen2.5-0.5b, tiny"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace verl::bench
