// The megatron strategy's pipeline stages: a tiny 4-layer model cut into 2 and 4 stages (and 2 stages of 2
// tensor-parallel ranks; and 2 stages of 2 interleaved runs each) on thread ranks, against the whole model: logits,
// response log-probs, entropy and top-k reads, values, every parameter's gradient (each from the stage holding it; a
// tied embedding's summed over the first and last stage), the clipped-gradient norm, the gathered model and its
// generation, and the errors.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/model_compare.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"
#include "verl/parallel/model_parallel_mesh.h"
#include "verl/parallel/pipeline_parallel.h"
#include "verl/rollout/generator.h"
#include "verl/workers/optimizer.h"

namespace verl::model {
namespace {

using test::max_relative;

HFConfig pipeline_tiny(Arch arch, bool tied) {
  HFConfig c = test::tiny_config(arch);
  c.num_hidden_layers = 4;
  c.initializer_range = 0.2;
  c.tie_word_embeddings = tied;
  return c;
}

CausalLM pipeline_whole(const HFConfig& c, HeadKind head = HeadKind::LM) {
  CausalLM m(c, head);
  init_weights(m, 3, /*perturb=*/true);
  m->to(torch::kFloat64);  // fp64: the comparison shows the cut, not fp32 rounding
  return m;
}

struct PipelineLayout {
  int ranks, tp, pp;
  bool checkpointing;
  int virtual_stages = 1;  // runs of layers per stage (interleaved)
};

// The stage model of this rank of a (tp x pp) mesh of thread ranks, cut from `whole`.
CausalLM cut_stage(CausalLM& whole, const std::shared_ptr<parallel::Comm>& comm, const PipelineLayout& layout,
                   std::shared_ptr<parallel::Comm>* stages_out = nullptr) {
  const auto mesh = parallel::model_parallel_mesh(comm, layout.tp, /*cp_size=*/1, layout.pp);
  CausalLM base = layout.tp > 1 ? shard_model(whole, TensorParallelGroup{mesh.tp}) : whole;
  const auto pp = pipeline_parallel_group(mesh.stages, whole->config.num_hidden_layers, "pipeline_model_parallel_size",
                                          layout.virtual_stages);
  if (stages_out != nullptr) *stages_out = mesh.stages;
  CausalLM stage = pipeline_stage_model(base, pp);
  stage->model->gradient_checkpointing = layout.checkpointing;
  return stage;
}

class PipelineParallelModel : public ::testing::TestWithParam<std::tuple<Arch, bool, PipelineLayout>> {};

TEST_P(PipelineParallelModel, StagesGiveTheWholeModelsOutputsAndGradients) {
  const auto [arch, tied, layout] = GetParam();
  const HFConfig c = pipeline_tiny(arch, tied);
  CausalLM whole = pipeline_whole(c);
  const auto b = test::ragged_model_batch(c.vocab_size, 11);
  TopKQuery query;
  query.top_k = 3;
  query.gather_ids = (b.responses.unsqueeze(-1) + torch::tensor(std::vector<int64_t>{0, 5})) % c.vocab_size;
  const auto loss_of = [&](CausalLM& m, ResponseLogProbs* out) {
    auto lp =
        response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true, false, query);
    if (out != nullptr) *out = lp;
    return (lp.log_probs.to(torch::kFloat64) * (1.0 + torch::arange(lp.log_probs.size(1)))).sum() +
           0.3 * lp.entropy.to(torch::kFloat64).sum() + 0.25 * lp.top_k.gathered_log_probs.to(torch::kFloat64).sum();
  };
  for (bool remove_padding : {false, true}) {
    SCOPED_TRACE(remove_padding ? "remove_padding" : "padded");
    whole->remove_padding = remove_padding;
    const auto logits_whole = whole->forward(b.input_ids, b.attention_mask, b.position_ids).detach();
    whole->zero_grad();
    ResponseLogProbs want;
    loss_of(whole, &want).backward();
    std::vector<torch::Tensor> whole_params = whole->parameters();
    std::map<std::string, torch::Tensor> grads_whole;
    for (const auto& item : whole->named_parameters()) grads_whole[item.key()] = item.value().grad().clone();
    const double norm_whole = workers::clip_grad_norm(whole_params, 1e30);

    test::on_thread_ranks(layout.ranks, [&](const std::shared_ptr<parallel::Comm>& comm) {
      std::shared_ptr<parallel::Comm> stages;
      CausalLM stage = cut_stage(whole, comm, layout, &stages);
      // A stage holds its layers only, under their HF names: runs s, s + P, ... of the P x V runs.
      const int64_t per_run = c.num_hidden_layers / (layout.pp * layout.virtual_stages);
      EXPECT_EQ(static_cast<int64_t>(stage->model->layer_list.size()), per_run * layout.virtual_stages);
      const auto names = stage->named_parameters();
      for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
        const std::string name = "model.layers." + std::to_string(layer) + ".input_layernorm.weight";
        EXPECT_EQ(names.contains(name), (layer / per_run) % layout.pp == stages->rank()) << name;
      }
      EXPECT_EQ(names.contains("model.norm.weight"), stages->rank() == layout.pp - 1);

      const auto logits = stage->forward(b.input_ids, b.attention_mask, b.position_ids).detach();
      EXPECT_LT(max_relative(logits, logits_whole), 1e-10);
      stage->zero_grad();
      ResponseLogProbs got;
      loss_of(stage, &got).backward();
      // Log-probs are taken in fp32 (verl's convention): fp32 rounding.
      EXPECT_LT(max_relative(got.log_probs.detach(), want.log_probs.detach()), 1e-6);
      EXPECT_LT(max_relative(got.entropy.detach(), want.entropy.detach()), 1e-6);
      EXPECT_LT(max_relative(got.top_k.top_k_log_probs, want.top_k.top_k_log_probs), 1e-6);
      EXPECT_TRUE(torch::equal(got.top_k.top_k_ids, want.top_k.top_k_ids));
      sum_tied_embedding_gradients(stage);
      CausalLM grads(c, HeadKind::LM, stage->tp, stage->pp);
      grads->to(torch::kFloat64);
      {
        torch::NoGradGuard no_grad;
        auto gp = grads->named_parameters();
        for (const auto& item : stage->named_parameters()) gp[item.key()].copy_(item.value().grad());
      }
      CausalLM gathered = gather_full_model(grads);  // the TP slices put together (this stage's parameters only)
      for (const auto& item : gathered->named_parameters()) {
        EXPECT_LT(max_relative(item.value(), grads_whole.at(item.key())), 1e-6) << item.key();
      }
      std::vector<torch::Tensor> params = stage->parameters();
      workers::GradientPlacement placement;
      placement.pipeline = stages.get();
      placement.counts_in_norm = parameter_counts_in_norm(stage);
      if (stage->tp.active()) {
        placement.tensor_parallel = stage->tp.comm.get();
        placement.is_slice = parameter_is_slice(stage);
      }
      EXPECT_NEAR(workers::clip_grad_norm(params, 1e30, placement), norm_whole, 1e-6 * norm_whole);
    });
  }
}

std::string pipeline_case_name(const ::testing::TestParamInfo<std::tuple<Arch, bool, PipelineLayout>>& info) {
  const Arch arch = std::get<0>(info.param);
  const PipelineLayout layout = std::get<2>(info.param);
  return std::string(arch == Arch::Qwen2   ? "Qwen2"
                     : arch == Arch::Qwen3 ? "Qwen3"
                                           : "Llama") +
         (std::get<1>(info.param) ? "Tied" : "") + "Tp" + std::to_string(layout.tp) + "Pp" + std::to_string(layout.pp) +
         (layout.virtual_stages > 1 ? "Vpp" + std::to_string(layout.virtual_stages) : "") +
         (layout.checkpointing ? "Checkpointed" : "");
}

INSTANTIATE_TEST_SUITE_P(Layouts, PipelineParallelModel,
                         ::testing::Values(std::make_tuple(Arch::Qwen2, false, PipelineLayout{2, 1, 2, false}),
                                           std::make_tuple(Arch::Qwen3, true, PipelineLayout{2, 1, 2, true}),
                                           std::make_tuple(Arch::Llama, true, PipelineLayout{4, 1, 4, false}),
                                           std::make_tuple(Arch::Qwen2, true, PipelineLayout{4, 2, 2, false}),
                                           std::make_tuple(Arch::Qwen3, false, PipelineLayout{2, 1, 2, false, 2}),
                                           std::make_tuple(Arch::Llama, true, PipelineLayout{4, 2, 2, true, 2})),
                         pipeline_case_name);

TEST(PipelineParallelModelTest, ValueHeadStagesGiveTheWholeValuesAndGradients) {
  const HFConfig c = pipeline_tiny(Arch::Qwen2, false);
  CausalLM whole = pipeline_whole(c, HeadKind::Value);
  whole->remove_padding = true;  // packed, as the critic runs by default
  const auto b = test::ragged_model_batch(c.vocab_size, 5);
  const int64_t R = b.responses.size(1);
  auto values_whole = response_values(whole, b.input_ids, b.attention_mask, b.position_ids, R);
  whole->zero_grad();
  (values_whole * values_whole).sum().backward();
  const auto first_grad = whole->model->layer_list[0]->mlp->up_proj->weight.grad().clone();
  const auto score_grad = whole->score->weight.grad().clone();
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM stage = cut_stage(whole, comm, PipelineLayout{2, 1, 2, false});
    auto values = response_values(stage, b.input_ids, b.attention_mask, b.position_ids, R);
    EXPECT_LT(max_relative(values.detach(), values_whole.detach()), 1e-10);
    stage->zero_grad();
    (values * values).sum().backward();
    if (comm->rank() == 0) {
      EXPECT_FALSE(stage->score);
      EXPECT_LT(max_relative(stage->model->layer_list[0]->mlp->up_proj->weight.grad(), first_grad), 1e-9);
    } else {
      EXPECT_LT(max_relative(stage->score->weight.grad(), score_grad), 1e-9);
    }
  });
}

TEST(PipelineParallelModelTest, GatheredStagesAreTheWholeModelAndGenerateItsTokens) {
  const HFConfig c = pipeline_tiny(Arch::Qwen3, true);
  CausalLM whole(c);
  init_weights(whole, 5, true);  // fp32, as the rollout runs
  whole->eval();
  const auto b = test::ragged_model_batch(c.vocab_size, 3);
  const auto prompts = b.input_ids.narrow(1, 0, 5).clone();
  const auto prompt_mask = b.attention_mask.narrow(1, 0, 5).clone();
  rollout::SamplingParams params;
  params.do_sample = false;
  params.max_response_length = 6;
  params.pad_token_id = c.vocab_size - 1;
  torch::NoGradGuard no_grad;
  const auto expected = rollout::generate(whole, prompts, prompt_mask, params);
  test::on_thread_ranks(4, [&](const std::shared_ptr<parallel::Comm>& comm) {
    torch::NoGradGuard no_grad_here;
    CausalLM stage = cut_stage(whole, comm, PipelineLayout{4, 2, 2, false, 2});
    CausalLM depth = gather_pipeline_stages(stage);
    EXPECT_FALSE(depth->pp.active());
    EXPECT_TRUE(depth->tp.active());  // TP slices stay slices
    CausalLM back = gather_full_model(depth);
    for (const auto& item : whole->named_parameters()) {
      EXPECT_TRUE(torch::equal(back->named_parameters()[item.key()], item.value())) << item.key();
    }
    const auto out = rollout::generate(depth, prompts, prompt_mask, params);
    EXPECT_TRUE(torch::equal(out.responses, expected.responses));
  });
}

TEST(PipelineParallelModelTest, StagesThatDoNotDivideTheLayersAreAnErrorNamingTheKey) {
  std::vector<std::string> errors(3);
  test::on_thread_ranks(3, [&](const std::shared_ptr<parallel::Comm>& comm) {
    try {
      pipeline_parallel_group(comm, 4, "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size");
    } catch (const Error& e) {
      errors[static_cast<size_t>(comm->rank())] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=3 must divide config.json's "
                     "num_hidden_layers (4)"),
              std::string::npos)
        << e;
  }
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    try {
      pipeline_parallel_group(comm, 4, "pipeline_model_parallel_size", 3, "virtual_pipeline_model_parallel_size");
      ADD_FAILURE() << "2 stages x 3 virtual stages of 4 layers";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("pipeline_model_parallel_size=2 x virtual_pipeline_model_parallel_size=3 "
                                           "must divide config.json's num_hidden_layers (4)"),
                std::string::npos)
          << e.what();
    }
  });
}

TEST(PipelineParallelModelTest, ParametersBelongToTheStageHoldingThem) {
  const HFConfig c = pipeline_tiny(Arch::Qwen2, false);
  EXPECT_EQ(pipeline_stage_of("model.embed_tokens.weight", c, 2), 0);
  EXPECT_EQ(pipeline_stage_of("model.layers.1.mlp.up_proj.weight", c, 2), 0);
  EXPECT_EQ(pipeline_stage_of("model.layers.2.self_attn.q_proj.bias", c, 2), 1);
  EXPECT_EQ(pipeline_stage_of("model.layers.3.input_layernorm.weight", c, 4), 3);
  EXPECT_EQ(pipeline_stage_of("model.norm.weight", c, 4), 3);
  EXPECT_EQ(pipeline_stage_of("lm_head.weight", c, 2), 1);
  // Two virtual stages of 1 layer on each of 2 stages: layers 0 and 2 on the first, 1 and 3 on the last.
  EXPECT_EQ(pipeline_stage_of("model.layers.2.mlp.up_proj.weight", c, 2, 2), 0);
  EXPECT_EQ(pipeline_stage_of("model.layers.1.mlp.up_proj.weight", c, 2, 2), 1);
  EXPECT_EQ(pipeline_stage_of("model.layers.3.mlp.up_proj.weight", c, 2, 2), 1);
}

}  // namespace
}  // namespace verl::model
