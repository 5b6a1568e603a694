// LibTorch side of safetensors, and HF model folders: load = name-to-tensor copy with dtype conversion
// (a missing or unexpected key, or a shape that disagrees with config.json, is an error naming it);
// save = config.json + model.safetensors (or shards) + generation_config.json (+ tokenizer files).
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verl/io/safetensors.h"
#include "verl/model/transformer.h"

namespace verl::model {

torch::ScalarType to_torch_dtype(io::DType dtype);
io::DType to_safetensors_dtype(torch::ScalarType dtype);  // throws for types safetensors lacks
// A CPU tensor holding a copy of the view's bytes.
torch::Tensor tensor_from_view(const io::TensorView& view);

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
// Writes tensors (moved to CPU, made contiguous) to one safetensors file, atomically.
void save_tensors(const std::string& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata = {});
// Every tensor of a file or checkpoint folder, in name order, as CPU tensors.
NamedTensors load_tensors(const std::string& path);

struct LoadOptions {
  HeadKind head = HeadKind::LM;
  torch::ScalarType dtype = torch::kFloat32;  // parameters are converted to this
  // Value head: when the checkpoint has no score.* (an LM checkpoint), initialise a fresh head from this
  // seed and ignore lm_head.weight; when it has score.*, load it.
  uint64_t value_head_seed = 0;
  // Active: the folder is read whole and this rank keeps its slices (model/tensor_parallel_model.h).
  TensorParallelGroup tensor_parallel;
  // More than one rank: this rank keeps its stage of the (sliced) model (model/pipeline_parallel_model.h), the
  // layers split evenly over the stages (an error naming `pipeline_key` when they do not divide).
  std::shared_ptr<parallel::Comm> pipeline_stages;
  std::string pipeline_key = "pipeline_model_parallel_size";
  // Runs of layers per stage (virtual_pipeline_model_parallel_size; the layers split into stages x this many runs).
  int64_t pipeline_virtual_stages = 1;
  std::string pipeline_virtual_key = "virtual_pipeline_model_parallel_size";
  // verl's model.override_config, applied to config.json before the model is built (model/hf_config.h).
  HFConfigOverrides config_overrides;
  // verl's model.hf_config_path: config.json from this folder instead of the weights' (empty: the weights').
  std::string config_dir;
};

// Copies checkpoint tensors into the model's parameters by name with dtype conversion.
void load_state(CausalLM& model, const io::SafetensorsCheckpoint& checkpoint, const LoadOptions& options);
// Reads config.json (from options.config_dir when set; with options.config_overrides) and the weights of an HF
// folder.
CausalLM load_model(const std::string& dir, const LoadOptions& options = {});

struct SaveOptions {
  size_t max_shard_bytes = 0;         // 0: one model.safetensors
  std::optional<std::string> tokenizer_dir;  // copy tokenizer.json / tokenizer_config.json / ... from here
  std::optional<torch::ScalarType> dtype;    // convert weights (e.g. kBFloat16); default: as held
};
// Writes an HF model folder. config.json's torch_dtype follows the saved weights. A tensor-parallel model is
// an error: gather it whole first (gather_full_model, collective).
void save_model(CausalLM& model, const std::string& dir, const SaveOptions& options = {});

}  // namespace verl::model
