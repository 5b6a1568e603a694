#include "verl/model/pipeline_parallel_model.h"

#include <map>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/model/lora.h"

namespace verl::model {
namespace {

constexpr const char* kPipelineModelComponent = "model";

// The config's layer index in an HF parameter name "model.layers.<i>.", or -1.
int64_t layer_index(const std::string& name) {
  const std::string prefix = "model.layers.";
  if (!starts_with(name, prefix)) return -1;
  return std::stoll(name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size()));
}

}  // namespace

PipelineParallelGroup pipeline_parallel_group(const std::shared_ptr<parallel::Comm>& stages, int64_t num_layers,
                                              const std::string& key, int64_t virtual_stages,
                                              const std::string& virtual_key) {
  if (stages == nullptr || stages->size() == 1) return {};
  const int64_t chunk = parallel::pipeline_chunk_layers(num_layers, stages->size(), virtual_stages, key, virtual_key);
  return PipelineParallelGroup{parallel::pipeline_links(stages, /*ring=*/virtual_stages > 1), chunk, virtual_stages};
}

int pipeline_stage_of(const std::string& name, const HFConfig& config, int stages, int64_t virtual_stages) {
  const int64_t layer = layer_index(name);
  if (layer >= 0) return static_cast<int>((layer / (config.num_hidden_layers / (stages * virtual_stages))) % stages);
  return name == "model.embed_tokens.weight" ? 0 : stages - 1;
}

CausalLM pipeline_stage_model(CausalLM& whole, const PipelineParallelGroup& pp) {
  VERL_CHECK(!whole->pp.active(), kPipelineModelComponent, "pipeline_stage_model needs a whole-depth model");
  VERL_CHECK(!lora_state(whole), kPipelineModelComponent,
             "LoRA adapters with pipeline parallelism (pipeline_model_parallel_size > 1) are not supported");
  const auto first = whole->parameters().front();
  CausalLM stage(whole->config, whole->head, whole->tp, pp);
  stage->to(first.device(), first.scalar_type());
  auto whole_params = whole->named_parameters();
  torch::NoGradGuard no_grad;
  for (auto& item : stage->named_parameters()) item.value().copy_(whole_params[item.key()]);
  stage->train(whole->is_training());
  stage->model->gradient_checkpointing = whole->model->gradient_checkpointing;
  stage->remove_padding = whole->remove_padding;
  return stage;
}

CausalLM gather_pipeline_stages(CausalLM& model) {
  if (!model->pp.active()) return model;
  VERL_CHECK(!lora_state(model), kPipelineModelComponent,
             "LoRA adapters with pipeline parallelism (pipeline_model_parallel_size > 1) are not supported");
  parallel::Comm& stages = *model->pp.links->stages;
  const auto first = model->parameters().front();
  CausalLM whole(model->config, model->head, model->tp);
  whole->to(first.device(), first.scalar_type());
  auto mine = model->named_parameters();
  // Each stage broadcasts its parameters (bucketed), in named_parameters() order within a stage.
  std::map<int, std::vector<torch::Tensor>> by_stage;
  torch::NoGradGuard no_grad;
  for (auto& item : whole->named_parameters()) {
    const int owner = pipeline_stage_of(item.key(), model->config, stages.size(), model->pp.chunks);
    if (owner == stages.rank()) item.value().copy_(mine[item.key()]);
    by_stage[owner].push_back(item.value());
  }
  for (auto& [owner, tensors] : by_stage) parallel::broadcast_coalesced(stages, tensors, owner);
  whole->train(model->is_training());
  whole->model->gradient_checkpointing = model->model->gradient_checkpointing;
  whole->remove_padding = model->remove_padding;
  return whole;
}

void sum_tied_embedding_gradients(CausalLM& model) {
  const auto& pp = model->pp;
  if (!pp.active() || pp.links->embedding == nullptr || !model->model->embed_tokens || !(pp.first() || pp.last())) {
    return;
  }
  if (model->head != HeadKind::LM || !model->config.tie_word_embeddings) return;
  auto& weight = model->model->embed_tokens->weight;
  if (!weight.requires_grad()) return;
  // A stage whose backward left no gradient (none of its rows used) contributes zeros.
  if (!weight.grad().defined()) weight.mutable_grad() = torch::zeros_like(weight);
  auto grad = weight.grad();
  pp.links->embedding->all_reduce(grad, parallel::ReduceOp::Sum);
}

std::vector<bool> parameter_counts_in_norm(CausalLM& model) {
  std::vector<bool> out;
  const bool duplicate_embedding = model->pp.active() && !model->pp.first() && model->model->embed_tokens;
  for (const auto& item : model->named_parameters()) {
    out.push_back(!(duplicate_embedding && item.key() == "model.embed_tokens.weight"));
  }
  return out;
}

}  // namespace verl::model
