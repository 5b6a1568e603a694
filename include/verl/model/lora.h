// LoRA (Hu et al., 2021) on the decoder layers' projections, as Hugging Face PEFT builds it, with verl's keys
// (model.lora_rank, lora_alpha, target_modules, exclude_modules, lora_adapter_path).
//
// A targeted projection y = x W^T + b becomes y = x W^T + b + s * (x A^T) B^T with
//   A = lora_A.weight  (r, in)   Kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in))
//   B = lora_B.weight  (out, r)  zeros, so a fresh adapter leaves the model unchanged
//   s = lora_alpha / r          (lora_alpha / sqrt(r) for an adapter saved with use_rslora)
// A and B are Linear modules registered on the projection itself, so their names are PEFT's
// (model.layers.0.self_attn.q_proj.lora_A.weight); every base parameter is frozen. The frozen base is the
// reference policy: AdapterDisabled turns the side path off for a scope (no second copy of the weights).
// MergedAdapter puts W + s B A into the projections for a scope (the rollout's decode kernels then run at
// full speed) and restores the exact original tensors after.
//
// Under tensor parallelism (model/tensor_parallel_model.h) the factors follow their base's split: a column-parallel
// projection (q/k/v/gate/up, W by rows) has A whole and B by rows, a row-parallel one (o/down, W by columns) A by
// columns and B whole, whose partial side path joins the base's partial product in its all-reduce. The whole
// factor's gradient is summed over the group (the same on every rank, as for a replicated parameter). Files hold
// the whole adapters: gathered to save (collective), sliced on load.
//
// PEFT's files: adapter_model.safetensors ("base_model.model." + the names above) and adapter_config.json
// (peft_type LORA, task_type CAUSAL_LM, r, lora_alpha, target_modules, exclude_modules, base_model_name_or_path).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"

namespace verl::model {

struct LoraSpec {
  int64_t rank = 0;  // r; 0 = no adapter
  double alpha = 16;
  // {"all-linear"} (every decoder-layer projection, never lm_head or the value head), or HF module names
  // (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; a dotted suffix such as
  // "layers.0.self_attn.q_proj" also matches), or with target_regex one regular expression over the full module
  // name (PEFT's re.fullmatch of a target_modules string).
  std::vector<std::string> target_modules = {"all-linear"};
  bool target_regex = false;
  std::vector<std::string> exclude_modules;  // the same matching (exclude_regex); wins over target_modules
  bool exclude_regex = false;
  bool use_rslora = false;                   // s = alpha / sqrt(r) (adapters saved by PEFT with use_rslora)
  double scale() const;
};

// The spec of verl's model keys (config::LoraConfig: lora_rank, lora_alpha, target_modules, exclude_modules).
LoraSpec lora_spec(const config::LoraConfig& config);

// Shared by every Attention / MLP of a model with adapters (their `lora` field).
struct LoraState {
  LoraSpec spec;
  bool enabled = true;  // false: the base model (AdapterDisabled)
  bool merged = false;  // the deltas sit inside the base weights (MergedAdapter): no side path
  bool side_path() const { return enabled && !merged; }
};

// x W^T + b, plus s (x A^T) B^T when `proj` carries lora_A / lora_B and state's side path is on. With an active
// `tp`, `proj` is column-parallel (its output this rank's rows) and `x` the same on every rank.
torch::Tensor lora_linear(torch::nn::Linear& proj, const torch::Tensor& x, const LoraState* state,
                          const TensorParallelGroup& tp = {});
// A row-parallel projection (o, down) on this rank's input columns: sum over `tp` of x_r W_r^T + s (x_r A_r^T) B^T
// in one all-reduce, then + b; the output whole on every rank. Without an active `tp`, lora_linear.
// `scatter_sequence` (Megatron's sequence parallelism): the sum reduce-scattered along dim 1 instead, the output
// this rank's chunk of the tokens (parallel/tensor_parallel.h).
torch::Tensor lora_row_parallel_linear(torch::nn::Linear& proj, const torch::Tensor& x_shard, const LoraState* state,
                                       const TensorParallelGroup& tp, bool scatter_sequence = false);
// Whether `proj` carries an adapter.
bool has_adapter(const torch::nn::Linear& proj);

// The decoder-layer projections `spec` selects, by module name ("model.layers.0.self_attn.q_proj"). An entry of
// target_modules that matches nothing is an error listing the projection names. A Qwen2-MoE / Qwen3-MoE model takes
// adapters on its attention only: all-linear, an MLP name (gate_proj, up_proj, down_proj, gate, experts, ...) or a
// regex reaching a layer's mlp is an error, since PEFT would put those on the experts and the router.
std::vector<std::string> lora_target_names(CausalLM& model, const LoraSpec& spec);

// Adds the adapters (A from a generator seeded with `seed`, B zeros) and freezes the base parameters. On
// tensor-parallel slices each rank takes its part of the whole model's A (the same values as a 1-rank model's).
// A model with adapters or a rank < 1 is an error. Returns the state the modules share.
std::shared_ptr<LoraState> add_lora(CausalLM& model, const LoraSpec& spec, uint64_t seed);
// The model's adapter state; null without adapters.
std::shared_ptr<LoraState> lora_state(const CausalLM& model);
// The adapters' parameters by HF-style name (...q_proj.lora_A.weight, ...q_proj.lora_B.weight), layer order.
NamedTensors lora_named_parameters(const CausalLM& model);
std::vector<torch::Tensor> lora_parameters(const CausalLM& model);
// lora_named_parameters whole (detached): gathered over the tensor-parallel group, a collective there.
NamedTensors lora_full_state(const CausalLM& model);
bool is_lora_parameter_name(const std::string& name);
// A whole saved tensor's part on this rank (tensor_parallel_model.h's split; the whole tensor when the model is not
// tensor parallel, `name` is not split, or its size does not divide: the caller's shape check then names it), and
// the whole shape that a rank's `part` is a slice of (for those errors).
torch::Tensor tensor_parallel_part(const CausalLM& model, const std::string& name, const torch::Tensor& whole);
std::vector<int64_t> whole_parameter_shape(const CausalLM& model, const std::string& name, const torch::Tensor& part);

// The base model for a scope: the side path off (verl's ref log-probs with LoRA: `disable_adapter()`).
class AdapterDisabled {
 public:
  explicit AdapterDisabled(const CausalLM& model);
  ~AdapterDisabled();
  AdapterDisabled(const AdapterDisabled&) = delete;
  AdapterDisabled& operator=(const AdapterDisabled&) = delete;

 private:
  std::shared_ptr<LoraState> state_;
  bool was_enabled_ = true;
};

// W + s B A in every adapted projection for a scope (new tensors; the originals are kept and put back exactly,
// not subtracted). No gradients flow. No adapters: does nothing.
class MergedAdapter {
 public:
  explicit MergedAdapter(const CausalLM& model);
  ~MergedAdapter();
  MergedAdapter(const MergedAdapter&) = delete;
  MergedAdapter& operator=(const MergedAdapter&) = delete;

 private:
  std::shared_ptr<LoraState> state_;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> originals_;  // (parameter, its original data)
};

// PEFT's merge_and_unload: W += s B A for good, the adapters removed, base parameters left frozen.
void merge_and_unload(CausalLM& model);

// adapter_model.safetensors + adapter_config.json into `dir` (created), loadable by
// peft.PeftModel.from_pretrained(transformers_model, dir). A tensor-parallel model is an error (the gather is a
// collective): save its lora_full_state with the second form.
void save_peft_adapter(const CausalLM& model, const std::string& dir, const std::string& base_model_name_or_path);
void save_peft_adapter(const NamedTensors& whole_adapters, const LoraSpec& spec, const std::string& dir,
                       const std::string& base_model_name_or_path);
// The task type of a PEFT adapter folder. CausalLM: the actor's, adapters only. TokenClassification: verl's critic
// (AutoModelForTokenClassification, PEFT's TOKEN_CLS), whose value head `score` PEFT trains in full as
// modules_to_save [classifier, score] (model/value_lora.h reads its weights).
enum class PeftTask { CausalLM, TokenClassification };
// adapter_config.json of a PEFT folder: r, lora_alpha, target_modules, exclude_modules, use_rslora. Anything
// verl.cpp does not implement (DoRA, modules_to_save, bias, rank_pattern, ...) is an error naming the key and file;
// with TokenClassification the task_type must be TOKEN_CLS and modules_to_save [classifier, score] or [score].
LoraSpec read_peft_adapter_config(const std::string& dir, PeftTask task = PeftTask::CausalLM);
// base_model_name_or_path of adapter_config.json ("" when absent or null).
std::string peft_base_model(const std::string& dir);
// Copies adapter_model.safetensors into the model's adapters (this rank's slices under tensor parallelism): a
// missing or extra tensor, a shape that is not (r, in) / (out, r) of its projection, is an error naming the file
// and what the model expects.
void load_peft_adapter_weights(CausalLM& model, const std::string& dir);
// read_peft_adapter_config + add_lora + load_peft_adapter_weights; `expected` (when its rank > 0) must agree
// on r and lora_alpha (the run's keys vs the adapter's file).
std::shared_ptr<LoraState> load_peft_adapter(CausalLM& model, const std::string& dir, const LoraSpec* expected = nullptr);

// Adapter weights only, in a checkpoint's model file (HF-style names, whole); loading checks names and shapes and
// takes this rank's slices. A tensor-parallel model is an error for the first form: save its lora_full_state.
void save_lora_state(const CausalLM& model, const std::string& path);
void save_lora_state(const NamedTensors& whole_adapters, const std::string& path);
void load_lora_state(CausalLM& model, const std::string& path);

}  // namespace verl::model
