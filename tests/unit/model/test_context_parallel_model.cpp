// The megatron strategy's context parallelism (parallel/context_parallel.h; model::set_sequence_parallel with
// SequenceSplit::ContextParallel) on thread ranks, against the whole model: the key/value gather and its adjoint;
// response log-probs, entropy, sum_pi_squared and top-k reads, values, and every parameter's gradient averaged over
// the context-parallel ranks (as the trainer averages over the DP x CP ranks), for 2, 3 and 4 ranks (sequences of 9
// tokens: padded to a multiple), a single KV head (no head has to divide the ranks, unlike Ulysses), sliding-window
// layers (each rank builds its queries' rows of the masks), Qwen3's q_norm / k_norm, gradient checkpointing, LoRA
// adapters, and combined with tensor parallelism, pipeline stages and both (8 thread ranks: TP 2 x CP 2 x PP 2).
// Under TP, sum_pi_squared's logsumexps are reduced over the vocabulary's slices. The same harness checks Megatron's
// sequence parallelism (model::set_megatron_sequence_parallel: token chunks outside the tensor-parallel regions) on
// its own and with each of those, with o_proj / MLP biases and with experts (the cases named "Sp").
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/model_compare.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/model/lora.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"
#include "verl/parallel/context_parallel.h"
#include "verl/parallel/model_parallel_mesh.h"
#include "verl/workers/optimizer.h"

namespace verl::model {
namespace {

using test::max_relative;

TEST(ContextParallel, GatherIsTheWholeAndItsGradientSumsEveryRanksReads) {
  // Rank r holds positions [2r, 2r+2) of full [B=2, H=3, 2n, D=4]; each rank weighs the gathered whole with its own
  // weights, so the gradient at its part is the sum over the ranks of their weights' slice.
  for (int n : {2, 3}) {
    auto gen = at::detail::createCPUGenerator(5);
    const auto full = torch::randn({2, 3, 2 * n, 4}, gen, torch::kFloat64);
    const auto weights = torch::randn({n, 2, 3, 2 * n, 4}, gen, torch::kFloat64);
    test::on_thread_ranks(n, [&](const std::shared_ptr<parallel::Comm>& comm) {
      const int r = comm->rank();
      auto part = full.narrow(2, 2 * r, 2).clone().requires_grad_(true);
      auto whole = parallel::gather_context(part, 2, comm);
      EXPECT_TRUE(torch::equal(whole, full));
      (whole * weights[r]).sum().backward();
      EXPECT_LT(max_relative(part.grad(), weights.sum(0).narrow(2, 2 * r, 2)), 1e-12);
    });
  }
}

struct ContextLayout {
  Arch arch;
  int tp, cp, pp;
  bool single_kv_head;
  bool checkpointing;
  bool lora = false;
  bool sliding = false;  // the first layer of each stage attends to a window of 3 tokens (Qwen2's sliding layers)
  bool megatron_sp = false;  // Megatron's sequence parallelism over the TP ranks
  bool moe = false;          // every layer's MLP experts (and Qwen2's shared expert), TP-split as dense MLPs
  bool biases = false;       // Llama's attention_bias and mlp_bias: o_proj's and down_proj's biases added per chunk
  int ranks() const { return tp * cp * pp; }
};

HFConfig context_tiny(const ContextLayout& layout) {
  HFConfig c = test::tiny_config(layout.arch);
  c.num_hidden_layers = 2 * layout.pp;
  c.initializer_range = 0.2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = layout.single_kv_head ? 1 : 2;
  c.head_dim = 8;
  if (layout.moe) {
    c.moe.enabled = true;
    c.moe.num_experts = 3;
    c.moe.num_experts_per_tok = 2;
    c.moe.moe_intermediate_size = 8;
    if (layout.arch == Arch::Qwen2) c.moe.shared_expert_intermediate_size = 12;
  }
  if (layout.biases) c.attention_bias = c.mlp_bias = true;
  if (layout.sliding) {
    c.sliding_window = 3;
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) c.sliding_layers.push_back(i % 2 == 0);
  }
  return c;
}

LoraSpec test_lora() {
  LoraSpec spec;
  spec.rank = 4;
  spec.alpha = 8;
  return spec;
}

// This rank's model of a TP x CP x PP mesh cut from `whole` (a copy: the whole model is shared by the threads).
CausalLM cut(CausalLM& whole, const std::shared_ptr<parallel::Comm>& comm, const ContextLayout& layout,
             parallel::ModelParallelMesh* mesh_out) {
  const auto mesh = parallel::model_parallel_mesh(comm, layout.tp, layout.cp, layout.pp);
  CausalLM model = shard_model(whole, TensorParallelGroup{mesh.tp});
  if (layout.pp > 1) {
    model = pipeline_stage_model(model, pipeline_parallel_group(mesh.stages, whole->config.num_hidden_layers,
                                                                "pipeline_model_parallel_size", 1));
  }
  if (layout.lora) add_lora(model, test_lora(), 17);
  model->model->gradient_checkpointing = layout.checkpointing;
  set_sequence_parallel(model, mesh.cp, "test.context_parallel_size", SequenceSplit::ContextParallel);
  set_megatron_sequence_parallel(model, layout.megatron_sp);
  EXPECT_EQ(model->model->layer_list[0]->self_attn->tp.scatter_sequence, layout.megatron_sp);
  *mesh_out = mesh;
  return model;
}

class ContextParallelModel : public ::testing::TestWithParam<ContextLayout> {};

TEST_P(ContextParallelModel, RanksGiveTheWholeModelsOutputsAndGradients) {
  const ContextLayout layout = GetParam();
  const HFConfig c = context_tiny(layout);
  CausalLM whole(c, HeadKind::LM);
  init_weights(whole, 3, /*perturb=*/true);
  whole->to(torch::kFloat64);  // fp64: the comparison shows the split, not fp32 rounding
  if (layout.lora) add_lora(whole, test_lora(), 17);
  whole->model->gradient_checkpointing = layout.checkpointing;
  const auto b = test::ragged_model_batch(c.vocab_size, 11);
  TopKQuery query;
  query.top_k = 3;
  query.gather_ids = (b.responses.unsqueeze(-1) + torch::tensor(std::vector<int64_t>{0, 5})) % c.vocab_size;
  const auto loss_of = [&](CausalLM& m, ResponseLogProbs* out) {
    auto lp = response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true, true, query);
    if (out != nullptr) *out = lp;
    return (lp.log_probs.to(torch::kFloat64) * (1.0 + torch::arange(lp.log_probs.size(1)))).sum() +
           0.3 * lp.entropy.to(torch::kFloat64).sum() + 0.2 * lp.sum_pi_squared.to(torch::kFloat64).sum() +
           0.25 * lp.top_k.gathered_log_probs.to(torch::kFloat64).sum();
  };
  for (bool remove_padding : {false, true}) {
    SCOPED_TRACE(remove_padding ? "remove_padding" : "padded");
    whole->remove_padding = remove_padding;
    whole->zero_grad();
    ResponseLogProbs want;
    loss_of(whole, &want).backward();
    std::map<std::string, torch::Tensor> grads_whole;
    for (const auto& item : whole->named_parameters()) {
      if (item.value().requires_grad()) grads_whole[item.key()] = item.value().grad().clone();
    }
    std::vector<torch::Tensor> trainable = layout.lora ? lora_parameters(whole) : whole->parameters();
    const double norm_whole = workers::clip_grad_norm(trainable, 1e30);

    test::on_thread_ranks(layout.ranks(), [&](const std::shared_ptr<parallel::Comm>& comm) {
      parallel::ModelParallelMesh mesh;
      CausalLM model = cut(whole, comm, layout, &mesh);
      model->remove_padding = remove_padding;  // a split sequence runs unpacked
      model->zero_grad();
      ResponseLogProbs got;
      loss_of(model, &got).backward();
      // Log-probs are taken in fp32 (verl's convention): fp32 rounding.
      EXPECT_LT(max_relative(got.log_probs.detach(), want.log_probs.detach()), 1e-6);
      EXPECT_LT(max_relative(got.entropy.detach(), want.entropy.detach()), 1e-6);
      EXPECT_LT(max_relative(got.sum_pi_squared.detach(), want.sum_pi_squared.detach()), 1e-6);
      EXPECT_LT(max_relative(got.top_k.gathered_log_probs.detach(), want.top_k.gathered_log_probs.detach()), 1e-6);
      EXPECT_TRUE(torch::equal(got.top_k.top_k_ids, want.top_k.top_k_ids));
      if (layout.pp > 1) sum_tied_embedding_gradients(model);
      // The trainer's average over the ranks holding the same parameters (here the CP ranks: one model copy).
      std::vector<torch::Tensor> params;
      std::vector<bool> is_slice;  // TP slices (adapters of split projections included) count once per rank
      for (const auto& item : model->named_parameters()) {
        if (!item.value().requires_grad()) continue;
        torch::Tensor g = item.value().grad();
        mesh.gradients->all_reduce(g, parallel::ReduceOp::Average);
        params.push_back(item.value());
        is_slice.push_back(model->tp.active() && tensor_parallel_dim(item.key()) >= 0);
      }
      if (layout.lora) {
        for (const auto& item : lora_named_parameters(model)) {
          // Under TP the adapters of split projections are split too (model/tensor_parallel_model.h).
          const auto grad = gather_parameter(item.first, item.second.grad(), model->tp);
          EXPECT_LT(max_relative(grad, grads_whole.at(item.first)), 1e-6) << item.first;
        }
      } else {
        CausalLM grads(c, HeadKind::LM, model->tp, model->pp);
        grads->to(torch::kFloat64);
        {
          torch::NoGradGuard no_grad;
          auto gp = grads->named_parameters();
          for (const auto& item : model->named_parameters()) gp[item.key()].copy_(item.value().grad());
        }
        CausalLM gathered = gather_full_model(grads);  // TP slices put together (this stage's parameters only)
        for (const auto& item : gathered->named_parameters()) {
          EXPECT_LT(max_relative(item.value(), grads_whole.at(item.key())), 1e-6) << item.key();
        }
      }
      workers::GradientPlacement placement;
      if (layout.pp > 1) {
        placement.pipeline = mesh.stages.get();
        placement.counts_in_norm = parameter_counts_in_norm(model);
      }
      if (model->tp.active()) {
        placement.tensor_parallel = model->tp.comm.get();
        placement.is_slice = is_slice;
      }
      EXPECT_NEAR(workers::clip_grad_norm(params, 1e30, placement), norm_whole, 1e-6 * norm_whole);
    });
  }
}

std::string context_case_name(const ::testing::TestParamInfo<ContextLayout>& info) {
  const ContextLayout& l = info.param;
  return std::string(l.arch == Arch::Qwen2   ? "Qwen2"
                     : l.arch == Arch::Qwen3 ? "Qwen3"
                                             : "Llama") +
         "Tp" + std::to_string(l.tp) + "Cp" + std::to_string(l.cp) + "Pp" + std::to_string(l.pp) +
         (l.single_kv_head ? "OneKvHead" : "") + (l.checkpointing ? "Checkpointed" : "") + (l.lora ? "Lora" : "") +
         (l.sliding ? "SlidingWindow" : "") + (l.megatron_sp ? "Sp" : "") + (l.moe ? "Moe" : "") +
         (l.biases ? "Biases" : "");
}

ContextLayout megatron_sp(ContextLayout l, bool moe = false, bool biases = false) {
  l.megatron_sp = true;
  l.moe = moe;
  l.biases = biases;
  return l;
}

INSTANTIATE_TEST_SUITE_P(Layouts, ContextParallelModel,
                         ::testing::Values(ContextLayout{Arch::Llama, 1, 2, 1, false, false},
                                           ContextLayout{Arch::Qwen2, 1, 3, 1, true, false},
                                           ContextLayout{Arch::Qwen3, 1, 4, 1, false, true},
                                           ContextLayout{Arch::Qwen2, 1, 2, 1, false, false, /*lora=*/true},
                                           ContextLayout{Arch::Qwen2, 1, 3, 1, false, false, false, /*sliding=*/true},
                                           ContextLayout{Arch::Qwen2, 2, 2, 1, false, false},
                                           ContextLayout{Arch::Llama, 1, 2, 2, false, true},
                                           ContextLayout{Arch::Qwen3, 1, 2, 2, false, false},
                                           ContextLayout{Arch::Llama, 2, 2, 2, false, true}),
                         context_case_name);

// Megatron's sequence parallelism: TP 2 (Llama with biases; Qwen3's q/k norms), with LoRA (on biased o / down), sliding
// layers, experts, gradient checkpointing, and with context parallelism and pipeline stages.
INSTANTIATE_TEST_SUITE_P(
    MegatronSequenceParallel, ContextParallelModel,
    ::testing::Values(megatron_sp(ContextLayout{Arch::Llama, 2, 1, 1, false, false}, false, /*biases=*/true),
                      megatron_sp(ContextLayout{Arch::Qwen3, 2, 1, 1, false, true}),
                      megatron_sp(ContextLayout{Arch::Llama, 2, 1, 1, false, false, /*lora=*/true}, false,
                                  /*biases=*/true),
                      megatron_sp(ContextLayout{Arch::Qwen2, 2, 1, 1, false, false, false, /*sliding=*/true}),
                      megatron_sp(ContextLayout{Arch::Qwen2, 2, 1, 1, false, false}, /*moe=*/true),
                      megatron_sp(ContextLayout{Arch::Qwen2, 2, 2, 1, false, false}),
                      megatron_sp(ContextLayout{Arch::Llama, 2, 1, 2, false, true}, false, /*biases=*/true),
                      megatron_sp(ContextLayout{Arch::Llama, 2, 2, 2, false, true})),
    context_case_name);

TEST(ContextParallelModelTest, ValueHeadGivesTheWholeValuesAndGradients) {
  HFConfig c = context_tiny(ContextLayout{Arch::Qwen2, 1, 2, 1, false, false});
  CausalLM whole(c, HeadKind::Value);
  init_weights(whole, 4, /*perturb=*/true);
  whole->to(torch::kFloat64);
  const auto b = test::ragged_model_batch(c.vocab_size, 5);
  const int64_t R = b.responses.size(1);
  auto values_whole = response_values(whole, b.input_ids, b.attention_mask, b.position_ids, R);
  (values_whole * values_whole).sum().backward();
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM model = shard_model(whole, TensorParallelGroup{});
    set_sequence_parallel(model, comm, "test.context_parallel_size", SequenceSplit::ContextParallel);
    auto values = response_values(model, b.input_ids, b.attention_mask, b.position_ids, R);
    EXPECT_LT(max_relative(values.detach(), values_whole.detach()), 1e-10);
    (values * values).sum().backward();
    auto whole_params = whole->named_parameters();
    for (const auto& item : model->named_parameters()) {
      torch::Tensor g = item.value().grad();
      comm->all_reduce(g, parallel::ReduceOp::Average);
      EXPECT_LT(max_relative(g, whole_params[item.key()].grad()), 1e-8) << item.key();
    }
  });
}

TEST(ContextParallelModelTest, MegatronSequenceParallelValueHeadGivesTheWholeValuesAndGradients) {
  HFConfig c = context_tiny(ContextLayout{Arch::Llama, 2, 1, 1, false, false, false, false, true, false, true});
  CausalLM whole(c, HeadKind::Value);
  init_weights(whole, 4, /*perturb=*/true);
  whole->to(torch::kFloat64);
  const auto b = test::ragged_model_batch(c.vocab_size, 6);
  const int64_t R = b.responses.size(1);
  for (bool remove_padding : {false, true}) {
    SCOPED_TRACE(remove_padding ? "remove_padding" : "padded");
    whole->remove_padding = remove_padding;
    whole->zero_grad();
    auto values_whole = response_values(whole, b.input_ids, b.attention_mask, b.position_ids, R);
    (values_whole * values_whole).sum().backward();
    std::map<std::string, torch::Tensor> grads_whole;
    for (const auto& item : whole->named_parameters()) grads_whole[item.key()] = item.value().grad().clone();
    test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
      CausalLM model = shard_model(whole, TensorParallelGroup{comm});
      set_megatron_sequence_parallel(model, true);
      model->zero_grad();
      auto values = response_values(model, b.input_ids, b.attention_mask, b.position_ids, R);
      EXPECT_LT(max_relative(values.detach(), values_whole.detach()), 1e-10);
      (values * values).sum().backward();
      CausalLM grads(c, HeadKind::Value, model->tp);
      grads->to(torch::kFloat64);
      {
        torch::NoGradGuard no_grad;
        auto gp = grads->named_parameters();
        for (const auto& item : model->named_parameters()) gp[item.key()].copy_(item.value().grad());
      }
      for (const auto& [name, g] : gather_full_state(grads)) {
        EXPECT_LT(max_relative(g, grads_whole.at(name)), 1e-8) << name;
      }
    });
  }
}

}  // namespace
}  // namespace verl::model
