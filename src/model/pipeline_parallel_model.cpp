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
  auto whole_params = whole->named_parameters();
  return rebuild_model(whole, whole->tp, pp, [&](const std::string& name) { return whole_params[name]; });
}

CausalLM gather_pipeline_stages(CausalLM& model) {
  if (!model->pp.active()) return model;
  VERL_CHECK(!lora_state(model), kPipelineModelComponent,
             "LoRA adapters with pipeline parallelism (pipeline_model_parallel_size > 1) are not supported");
  parallel::Comm& stages = *model->pp.links->stages;
  auto mine = model->named_parameters();
  const auto owner = [&](const std::string& name) {
    return pipeline_stage_of(name, model->config, stages.size(), model->pp.chunks);
  };
  CausalLM whole = rebuild_model(model, model->tp, {}, [&](const std::string& name) {
    return owner(name) == stages.rank() ? mine[name] : torch::Tensor();
  });
  // Each stage broadcasts its parameters (bucketed), in named_parameters() order within a stage.
  std::map<int, std::vector<torch::Tensor>> by_stage;
  for (auto& item : whole->named_parameters()) by_stage[owner(item.key())].push_back(item.value());
  for (auto& [stage, tensors] : by_stage) parallel::broadcast_coalesced(stages, tensors, stage);
  return whole;
}

void sum_tied_embedding_gradients(CausalLM& model) {
  const auto& pp = model->pp;
  // Only the first and last stages have the embedding group; only a tied LM head puts a copy on the last.
  const bool tied = model->head == HeadKind::LM && model->config.tie_word_embeddings;
  if (!pp.active() || pp.links->embedding == nullptr || !tied) return;
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
