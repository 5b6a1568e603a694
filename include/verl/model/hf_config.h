// Hugging Face config.json for the decoder families verl.cpp runs: LlamaForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM, MistralForCausalLM (Llama's layers without biases), and the mixture-of-experts Qwen2MoeForCausalLM
// and Qwen3MoeForCausalLM (Qwen2's / Qwen3's attention; `moe` set). Sliding-window attention as transformers
// masks it: Mistral's sliding_window on every layer, Qwen2 / Qwen3's use_sliding_window on the layers from
// max_window_layers on (or as layer_types lists them). Reading checks every field the forward uses; writing
// produces a config.json that HF transformers loads. Any other architecture is an error that lists the supported ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verl::model {

enum class Arch { Llama, Qwen2, Qwen3, Mistral };

const char* arch_class_name(Arch arch);  // "LlamaForCausalLM", ...
const char* arch_model_type(Arch arch);  // "llama", "qwen2", "qwen3", "mistral"
// "llama" | "qwen2" | "qwen3" | "mistral" (CLI names); throws listing them otherwise.
Arch parse_arch_short(const std::string& name);

struct RopeScaling {
  enum class Type { None, Linear, Llama3, Yarn } type = Type::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;                    // llama3
  double high_freq_factor = 4.0;                   // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3, yarn
  // yarn (transformers' _compute_yarn_parameters): cos and sin are multiplied by attention_factor (given, or
  // resolved from factor, mscale and mscale_all_dim when parsed); the frequencies between beta_fast and beta_slow
  // rotations over the original length ramp from extrapolated to interpolated (the range floored / ceiled when
  // truncate).
  double attention_factor = 1.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
};

// transformers' get_mscale for yarn: 0.1 * mscale * ln(factor) + 1, or 1 for factor <= 1. yarn's attention factor
// is yarn_mscale(factor, 1), or yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim) with both given.
double yarn_mscale(double factor, double mscale);

// Qwen2-MoE / Qwen3-MoE's sparse MLP fields, with transformers' defaults (Qwen2MoeConfig / Qwen3MoeConfig). Layer i
// is sparse when num_experts > 0, i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0; the other
// layers keep the dense MLP of intermediate_size.
struct MoeConfig {
  bool enabled = false;  // a *MoeForCausalLM config
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;  // renormalise the kept experts' weights to sum to 1
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  int64_t shared_expert_intermediate_size = 0;  // Qwen2-MoE's shared expert (0: none, Qwen3-MoE)
  // The load-balancing loss fields: transformers adds that loss only to a forward given labels, which verl's
  // actor and critic never pass, so they are kept for the config.json written back and change nothing here.
  double router_aux_loss_coef = 0.001;
  bool output_router_logits = false;
};

struct HFConfig {
  Arch arch = Arch::Llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless given
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool attention_bias = false;  // q/k/v/o biases (Llama, Qwen3); Qwen2 always has q/k/v bias and no o bias
  bool mlp_bias = false;        // Llama only
  bool tie_word_embeddings = false;
  double initializer_range = 0.02;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
  std::string torch_dtype = "float32";
  // <Family>ForTokenClassification with one label: the checkpoint of a critic / reward model (value head
  // `score`). Written by save_model for value-head models so HF's AutoModelForTokenClassification loads it.
  bool token_classification = false;
  // Sliding-window attention: a sliding layer's query attends to the keys of the last `sliding_window` positions
  // only, itself included (transformers' sliding_window_overlay: key index > query index - window). One entry per
  // layer, or empty when no layer slides (no window, Qwen's use_sliding_window false).
  int64_t sliding_window = 0;
  std::vector<bool> sliding_layers;
  MoeConfig moe;

  bool layer_is_sparse(int64_t layer) const;
  bool layer_slides(int64_t layer) const {
    return !sliding_layers.empty() && sliding_layers[static_cast<size_t>(layer)];
  }
  bool qkv_bias() const { return arch == Arch::Qwen2 || attention_bias; }
  bool o_bias() const { return arch != Arch::Qwen2 && attention_bias; }
  bool qk_norm() const { return arch == Arch::Qwen3; }
  // Throws naming the inconsistent fields (heads not dividing, non-positive sizes, ...).
  void validate() const;
};

// The config's transformers class ("Qwen3MoeForCausalLM", ...; *ForTokenClassification for a value-head
// checkpoint) and model_type ("qwen3_moe", ...).
std::string hf_class_name(const HFConfig& config);
std::string hf_model_type(const HFConfig& config);

HFConfig parse_hf_config_text(const std::string& json_text, const std::string& source = "config.json");
// `path` is a model folder or a config.json file.
HFConfig load_hf_config(const std::string& path);

// verl's model.override_config: fields set on the HF config before the model is built (verl's
// update_model_config), for the actor, the reference and the rollout alike (critic: critic.model.override_config).
// A JSON object; `key` names the config key it comes from, for errors. As verl's HFModelConfig, a "model_config"
// object stands for the whole override. The fields, by what verl.cpp does with them:
//   honoured        max_position_embeddings, rope_theta, rope_scaling / rope_parameters (merged key by key into
//                   config.json's), rms_norm_eps, bos_token_id, eos_token_id, pad_token_id, initializer_range
//   as config.json  the fields that shape the weights (vocab_size, hidden_size, intermediate_size,
//                   num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, attention_bias,
//                   mlp_bias, tie_word_embeddings, architectures, model_type; the MoE configs' num_experts,
//                   moe_intermediate_size, shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers):
//                   accepted only at the checkpoint's value, any other an error before anything is allocated
//   honoured (MoE)  num_experts_per_tok, norm_topk_prob
//   honoured too    use_sliding_window, sliding_window, max_window_layers, layer_types (Qwen2 / Qwen3; Mistral's
//                   sliding_window)
//   validated       hidden_act (silu), attention_dropout (0: no dropout here)
//   no effect       attn_implementation (eager, sdpa, flash_attention_2/3, flex_attention: one attention here,
//                   the same numbers), use_cache, router_aux_loss_coef and output_router_logits (MoE: no
//                   labels reach the forward, so transformers adds no load-balancing loss in verl either)
// Any other field is a one-line error naming `key`.<field>.
struct HFConfigOverrides {
  std::string key;           // e.g. "actor_rollout_ref.model.override_config"
  std::string json = "{}";   // a JSON object
  bool empty() const;
};
// The field names alone (no config.json needed): throws naming the first field verl.cpp cannot honour.
void check_hf_config_override_fields(const HFConfigOverrides& overrides);
// config.json's text with the overrides applied (checked against config.json as above).
std::string apply_hf_config_overrides(const std::string& config_json_text, const HFConfigOverrides& overrides,
                                      const std::string& source = "config.json");
HFConfig load_hf_config(const std::string& path, const HFConfigOverrides& overrides);
std::string hf_config_to_json(const HFConfig& config);
void save_hf_config(const HFConfig& config, const std::string& dir);
// generation_config.json: bos/eos/pad ids.
void save_generation_config(const HFConfig& config, const std::string& dir);

}  // namespace verl::model
