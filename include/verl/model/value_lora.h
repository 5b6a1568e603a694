// LoRA on a value model (verl's critic with critic.model.lora_rank > 0 or lora_adapter_path), as verl builds it:
// PEFT's get_peft_model(critic, LoraConfig(task_type=TOKEN_CLS, ...)) on the AutoModelForTokenClassification
// critic. The decoder projections get model/lora.h's adapters with the base frozen, and the value head `score`
// (Linear(hidden, 1) with bias) trains in full, because TOKEN_CLS puts [classifier, score] into PEFT's
// modules_to_save. The trainable state is therefore the A/B factors plus score.weight / score.bias, and that is
// all a checkpoint's model file holds (with the base's folder in its metadata).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "verl/model/lora.h"

namespace verl::model {

// add_lora on the decoder projections (never the value head), then the value head trainable again. A model
// without a value head is an error.
std::shared_ptr<LoraState> add_value_lora(CausalLM& model, const LoraSpec& spec, uint64_t seed);

// The trainable parameters of a value model with adapters, by HF-style name: the adapters (layer order), then
// score.weight and score.bias.
NamedTensors value_lora_named_parameters(const CausalLM& model);
std::vector<torch::Tensor> value_lora_parameters(const CausalLM& model);

// A PEFT TOKEN_CLS adapter folder (verl's critic lora_adapter_path): read_peft_adapter_config(TokenClassification),
// add_value_lora, then adapter_model.safetensors' lora_A / lora_B and score.weight / score.bias into the model (this
// rank's slices under tensor parallelism). A missing or extra tensor, or a wrong shape, is an error naming the file;
// `expected` (rank > 0) must agree on r and lora_alpha.
std::shared_ptr<LoraState> load_peft_value_adapter(CausalLM& model, const std::string& dir,
                                                   const LoraSpec* expected = nullptr);

// value_lora_named_parameters whole (detached): the adapters gathered over the tensor-parallel group (a collective
// there: call on every rank), the value head as every rank holds it.
NamedTensors value_lora_full_state(const CausalLM& model);

// The trainable state only (value_lora_named_parameters, whole) in a checkpoint's model file;
// base_model_name_or_path goes into the file's metadata. A tensor-parallel model is an error in the first form (the
// gather is a collective): save its value_lora_full_state with the second. Loading requires exactly those names and
// whole shapes, and takes this rank's part of each under tensor parallelism.
void save_value_lora_state(const CausalLM& model, const std::string& path, const std::string& base_model_name_or_path);
void save_value_lora_state(const NamedTensors& whole_state, const std::string& path,
                           const std::string& base_model_name_or_path);
void load_value_lora_state(CausalLM& model, const std::string& path);

}  // namespace verl::model
