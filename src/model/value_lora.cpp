#include "verl/model/value_lora.h"

#include <filesystem>
#include <map>
#include <set>

#include "verl/common/error.h"

namespace verl::model {
namespace {

namespace fs = std::filesystem;

constexpr const char* kValueLoraComponent = "lora";

// Copies the tensors of `file` (names after `prefix`; whole tensors, this rank's part of each taken under tensor
// parallelism) into exactly the parameters `want` names: a missing or extra tensor, or another shape, is an error
// naming the file and what `what` expects.
void copy_exactly(const CausalLM& model, const NamedTensors& want, const std::string& file, const std::string& prefix,
                  const char* what) {
  std::map<std::string, torch::Tensor> saved;
  for (auto& [name, t] : load_tensors(file)) {
    VERL_CHECK(name.rfind(prefix, 0) == 0, kValueLoraComponent, "'", file, "' has tensor '", name,
               "'; expected names under '", prefix, "' (", what, ")");
    saved.emplace(name.substr(prefix.size()), t);
  }
  torch::NoGradGuard no_grad;
  std::set<std::string> expected;
  for (const auto& [name, p] : want) {
    expected.insert(name);
    auto it = saved.find(name);
    VERL_CHECK(it != saved.end(), kValueLoraComponent, "'", file, "' lacks tensor '", prefix, name, "' (", what, ")");
    const torch::Tensor part = tensor_parallel_part(model, name, it->second);
    VERL_CHECK(part.sizes() == p.sizes(), kValueLoraComponent, "tensor '", prefix, name, "' in '", file, "' has shape ",
               it->second.sizes(), ", this model expects ", c10::IntArrayRef(whole_parameter_shape(model, name, p)),
               " (another base model or lora_rank?)");
    torch::Tensor(p).copy_(part.to(p.scalar_type()));
  }
  for (const auto& [name, t] : saved) {
    VERL_CHECK(expected.count(name) > 0, kValueLoraComponent, "'", file, "' has tensor '", prefix, name,
               "' that is not part of ", what, " (saved with other target_modules, or a full model state?)");
  }
}

}  // namespace

std::shared_ptr<LoraState> add_value_lora(CausalLM& model, const LoraSpec& spec, uint64_t seed) {
  VERL_CHECK(model->score, kValueLoraComponent, "LoRA on a value model needs its value head `score` (HeadKind::Value)");
  auto state = add_lora(model, spec, seed);
  // PEFT's modules_to_save: the head is trained whole, not adapted.
  for (auto& p : model->score->parameters()) p.set_requires_grad(true);
  return state;
}

NamedTensors value_lora_named_parameters(const CausalLM& model) {
  NamedTensors out = lora_named_parameters(model);
  VERL_CHECK(!out.empty() && model->score, kValueLoraComponent, "a value model with LoRA adapters was expected");
  out.emplace_back("score.weight", model->score->weight);
  if (model->score->bias.defined()) out.emplace_back("score.bias", model->score->bias);
  return out;
}

std::vector<torch::Tensor> value_lora_parameters(const CausalLM& model) {
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : value_lora_named_parameters(model)) out.push_back(t);
  return out;
}

std::shared_ptr<LoraState> load_peft_value_adapter(CausalLM& model, const std::string& dir, const LoraSpec* expected) {
  const LoraSpec spec = read_peft_adapter_config(dir, PeftTask::TokenClassification);
  const std::string config_file = (fs::path(dir) / "adapter_config.json").string();
  if (expected != nullptr && expected->rank > 0) {
    VERL_CHECK(spec.rank == expected->rank, kValueLoraComponent, "'", config_file, "' has r=", spec.rank,
               ", the run's critic.model.lora_rank is ", expected->rank, "; set critic.model.lora_rank=", spec.rank);
    VERL_CHECK(spec.alpha == expected->alpha, kValueLoraComponent, "'", config_file, "' has lora_alpha=", spec.alpha,
               ", the run's critic.model.lora_alpha is ", expected->alpha,
               "; set critic.model.lora_alpha=", spec.alpha);
  }
  auto state = add_value_lora(model, spec, /*seed=*/0);
  const std::string file = (fs::path(dir) / "adapter_model.safetensors").string();
  VERL_CHECK(fs::exists(file), kValueLoraComponent, "LoRA adapter folder '", dir, "' has no adapter_model.safetensors");
  copy_exactly(model, value_lora_named_parameters(model), file, "base_model.model.",
               "a PEFT TOKEN_CLS adapter: adapter_config.json's target_modules on this model, plus the value head "
               "score.weight / score.bias");
  return state;
}

NamedTensors value_lora_full_state(const CausalLM& model) {
  NamedTensors out = lora_full_state(model);  // gathered over the tensor-parallel group
  // The rest (the value head) is whole on every tensor-parallel rank (tensor_parallel_model.h).
  for (const auto& [name, t] : value_lora_named_parameters(model)) {
    if (!is_lora_parameter_name(name)) out.emplace_back(name, t.detach());
  }
  return out;
}

void save_value_lora_state(const CausalLM& model, const std::string& path, const std::string& base_model_name_or_path) {
  VERL_CHECK(!model->tp.active(), kValueLoraComponent,
             "save_value_lora_state on tensor-parallel slices: gather "
             "value_lora_full_state on every rank and save that");
  save_value_lora_state(value_lora_full_state(model), path, base_model_name_or_path);
}

void save_value_lora_state(const NamedTensors& whole_state, const std::string& path,
                           const std::string& base_model_name_or_path) {
  VERL_CHECK(!whole_state.empty(), kValueLoraComponent, "save_value_lora_state with no tensors");
  save_tensors(path, whole_state, {{"format", "pt"}, {"base_model_name_or_path", base_model_name_or_path}});
}

void load_value_lora_state(CausalLM& model, const std::string& path) {
  VERL_CHECK(fs::exists(path), kValueLoraComponent, "critic adapter state file '", path, "' does not exist");
  copy_exactly(model, value_lora_named_parameters(model), path, "",
               "a critic LoRA checkpoint: the adapters and the value head");
}

}  // namespace verl::model
