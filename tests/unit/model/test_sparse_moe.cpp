// Qwen2-MoE / Qwen3-MoE's sparse MLP: which layers hold experts, HF's parameter names, the routed forward and its
// gradients against a second formulation (every expert run on every token, weighted by the router's kept
// probabilities), and the features that refuse experts with one line. transformers' own models are the oracle in
// tests/oracle/test_model_oracle.cpp.
#include <gtest/gtest.h>

#include <tuple>

#include "support/error_text.h"
#include "support/tiny_model.h"
#include "verl/model/hf_config.h"
#include "verl/model/lora.h"
#include "verl/model/model_size.h"
#include "verl/model/transformer.h"

namespace verl::model {
namespace {

using verl::test::error_of;

HFConfig moe_config(Arch arch) {
  HFConfig c = test::tiny_config(arch);
  c.moe.enabled = true;
  c.moe.num_experts = 5;
  c.moe.num_experts_per_tok = 2;
  c.moe.moe_intermediate_size = 12;
  if (arch == Arch::Qwen2) c.moe.shared_expert_intermediate_size = 20;
  return c;
}

// The block's output the slow way: for each token, the softmax over all experts, its top-k kept (renormalised
// when asked), each expert's MLP on the whole batch, weighted per token. No grouping by expert, no index_add.
torch::Tensor dense_reference(SparseMoeBlockImpl& block, const torch::Tensor& x) {
  const auto tokens = x.reshape({-1, x.size(-1)});
  const auto probs = torch::softmax(block.gate->forward(tokens), 1, torch::kFloat32);
  const auto kth = std::get<0>(torch::topk(probs, block.top_k, -1)).narrow(1, block.top_k - 1, 1);
  auto kept = probs * (probs >= kth).to(probs.scalar_type());
  if (block.norm_topk_prob) kept = kept / kept.sum(-1, true);
  kept = kept.to(tokens.scalar_type());
  auto out = torch::zeros_like(tokens);
  for (size_t e = 0; e < block.expert_list.size(); ++e) {
    out = out + kept.select(1, static_cast<int64_t>(e)).unsqueeze(1) * block.expert_list[e]->forward(tokens);
  }
  if (block.shared_expert) {
    out = out + torch::sigmoid(block.shared_expert_gate->forward(tokens)) * block.shared_expert->forward(tokens);
  }
  return out.view(x.sizes());
}

TEST(SparseMoe, LayersHoldExpertsByDecoderSparseStepAndMlpOnlyLayers) {
  HFConfig c = moe_config(Arch::Qwen3);
  c.num_hidden_layers = 6;
  c.moe.decoder_sparse_step = 2;
  c.moe.mlp_only_layers = {3};
  std::vector<bool> sparse;
  for (int64_t i = 0; i < 6; ++i) sparse.push_back(c.layer_is_sparse(i));
  // transformers: sparse when i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
  c.moe.num_experts = 0;
  EXPECT_FALSE(c.layer_is_sparse(1)) << "no experts: every layer dense";
  EXPECT_FALSE(test::tiny_config(Arch::Qwen3).layer_is_sparse(0)) << "a dense config";
}

TEST(SparseMoe, ParameterNamesAreHFsPerExpertNames) {
  HFConfig c = moe_config(Arch::Qwen2);
  c.num_hidden_layers = 2;
  c.moe.decoder_sparse_step = 2;  // layer 0 dense, layer 1 sparse
  CausalLM m(c);
  std::set<std::string> names;
  for (const auto& p : m->named_parameters()) names.insert(p.key());
  for (const std::string name :
       {"model.layers.0.mlp.gate_proj.weight", "model.layers.1.mlp.gate.weight",
        "model.layers.1.mlp.experts.0.gate_proj.weight", "model.layers.1.mlp.experts.4.down_proj.weight",
        "model.layers.1.mlp.shared_expert.up_proj.weight", "model.layers.1.mlp.shared_expert_gate.weight"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_FALSE(names.count("model.layers.1.mlp.gate_proj.weight"));
  EXPECT_FALSE(names.count("model.layers.1.mlp.experts.5.gate_proj.weight"));
  int64_t numel = 0;
  for (const auto& p : m->parameters()) numel += p.numel();
  EXPECT_EQ(parameter_count(c), static_cast<double>(numel));
}

TEST(SparseMoe, RoutedForwardAndGradientsEqualEveryExpertWeightedByItsKeptProbability) {
  for (Arch arch : {Arch::Qwen3, Arch::Qwen2}) {
    for (bool renormalise : {false, true}) {
      HFConfig c = moe_config(arch);
      c.moe.norm_topk_prob = renormalise;
      SparseMoeBlock block(c);
      block->to(torch::kFloat64);
      torch::manual_seed(3);
      for (auto& p : block->parameters()) p.data().normal_(0.0, 0.3);
      const auto x = torch::randn({3, 7, c.hidden_size}, torch::kFloat64).requires_grad_(true);
      const auto weights = torch::randn({3, 7, c.hidden_size}, torch::kFloat64);
      const std::string label =
          std::string(arch == Arch::Qwen3 ? "qwen3_moe" : "qwen2_moe") + (renormalise ? " norm_topk_prob" : "");

      auto grads_of = [&](const torch::Tensor& out) {
        for (auto& p : block->parameters()) p.mutable_grad() = torch::Tensor();
        if (x.grad().defined()) x.mutable_grad() = torch::Tensor();
        (out * weights).sum().backward();
        std::vector<torch::Tensor> g{x.grad().clone()};
        for (auto& p : block->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
        return g;
      };
      const auto routed = block->forward(x);
      const auto reference = dense_reference(*block, x);
      EXPECT_TRUE(torch::allclose(routed, reference, 1e-12, 1e-12)) << label;
      const auto routed_grads = grads_of(block->forward(x));
      const auto reference_grads = grads_of(dense_reference(*block, x));
      ASSERT_EQ(routed_grads.size(), reference_grads.size());
      for (size_t i = 0; i < routed_grads.size(); ++i) {
        EXPECT_TRUE(torch::allclose(routed_grads[i], reference_grads[i], 1e-10, 1e-12)) << label << " gradient " << i;
      }
      // The router's weight gets a gradient through the kept probabilities (it would not with detached weights).
      EXPECT_GT(block->gate->weight.grad().abs().sum().item<double>(), 0) << label;
    }
  }
}

// Adapters go on the attention of a mixture-of-experts model; targets that PEFT would put on its experts or router
// (all-linear, the MLP names, a regex reaching an MLP) are one line each.
TEST(SparseMoe, LoraAdaptsTheAttentionAndRefusesExpertTargets) {
  HFConfig c = moe_config(Arch::Qwen3);
  c.moe.mlp_only_layers = {0};  // layer 0 dense: its MLP names are refused too (PEFT would read them as experts')
  CausalLM m(c);
  LoraSpec spec;
  spec.rank = 4;
  spec.alpha = 8;
  spec.target_modules = {"q_proj", "o_proj"};
  EXPECT_EQ(lora_target_names(m, spec),
            (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj",
                                      "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.o_proj"}));
  for (const auto& [targets, regex, expected] : std::vector<std::tuple<std::vector<std::string>, bool, std::string>>{
           {{"all-linear"}, false, "all-linear on Qwen3MoeForCausalLM"},
           {{"q_proj", "gate_proj"}, false, "'gate_proj' names an MLP module"},
           {{"model.layers.1.mlp.gate"}, false, "'model.layers.1.mlp.gate' names an MLP module"},
           {{R"(.*layers\.1\..*)"}, true, "matches 'model.layers.1.mlp'"}}) {
    LoraSpec bad = spec;
    bad.target_modules = targets;
    bad.target_regex = regex;
    const std::string err = error_of([&] { add_lora(m, bad, 1); });
    EXPECT_NE(err.find(expected), std::string::npos) << err;
    EXPECT_NE(err.find("list q_proj, k_proj, v_proj, o_proj"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  add_lora(m, spec, 1);
  EXPECT_EQ(lora_named_parameters(m).size(), 8u);
}

}  // namespace
}  // namespace verl::model
