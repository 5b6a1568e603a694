#include "verl/model/hf_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::model {
namespace {

constexpr const char* kHfConfigComponent = "hf_config";
using json = nlohmann::json;

int64_t get_int(const json& j, const std::string& key, const std::string& src, std::optional<int64_t> fallback) {
  if (!j.contains(key) || j[key].is_null()) {
    VERL_CHECK(fallback.has_value(), kHfConfigComponent, src, ": missing required integer \"", key, "\"");
    return *fallback;
  }
  VERL_CHECK(j[key].is_number_integer(), kHfConfigComponent, src, ": \"", key, "\" must be an integer, got ",
             json_excerpt(j[key]));
  return j[key].get<int64_t>();
}

double get_double(const json& j, const std::string& key, const std::string& src, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  VERL_CHECK(j[key].is_number(), kHfConfigComponent, src, ": \"", key, "\" must be a number, got ",
             json_excerpt(j[key]));
  return j[key].get<double>();
}

bool get_bool(const json& j, const std::string& key, const std::string& src, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  VERL_CHECK(j[key].is_boolean(), kHfConfigComponent, src, ": \"", key, "\" must be true or false, got ",
             json_excerpt(j[key]));
  return j[key].get<bool>();
}

std::optional<int64_t> get_opt_int(const json& j, const std::string& key, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  VERL_CHECK(j[key].is_number_integer(), kHfConfigComponent, src, ": \"", key, "\" must be an integer, got ",
             json_excerpt(j[key]));
  return j[key].get<int64_t>();
}

// llama3 / yarn: transformers takes a top-level original_max_position_embeddings (Phi3 writes one) over the rope
// object's, and the config's max_position_embeddings (`max_positions`, its default applied) where neither is given.
int64_t original_max_position_embeddings(const json& config, const json& rope, const std::string& src,
                                         const std::string& rope_src, int64_t max_positions) {
  if (config.contains("original_max_position_embeddings") && !config["original_max_position_embeddings"].is_null())
    return get_int(config, "original_max_position_embeddings", src, max_positions);
  return get_int(rope, "original_max_position_embeddings", rope_src, max_positions);
}

// yarn's cos / sin scale: attention_factor when given, else from the mscale pair when both are non-zero (as
// transformers tests them), else from the factor alone.
double yarn_attention_factor(const json& rope, const std::string& rope_src, double factor) {
  if (rope.contains("attention_factor") && !rope["attention_factor"].is_null())
    return get_double(rope, "attention_factor", rope_src, 1.0);
  const double mscale = get_double(rope, "mscale", rope_src, 0.0);
  const double mscale_all_dim = get_double(rope, "mscale_all_dim", rope_src, 0.0);
  if (mscale != 0 && mscale_all_dim != 0) return yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim);
  return yarn_mscale(factor, 1.0);
}

}  // namespace

double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

const char* arch_class_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "LlamaForCausalLM";
    case Arch::Qwen2: return "Qwen2ForCausalLM";
    case Arch::Qwen3: return "Qwen3ForCausalLM";
    case Arch::Mistral: return "MistralForCausalLM";
  }
  return "";
}

const char* arch_model_type(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Mistral: return "mistral";
  }
  return "";
}

Arch parse_arch_short(const std::string& name) {
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  if (name == "mistral") return Arch::Mistral;
  VERL_FAIL(kHfConfigComponent, "unknown architecture '", name, "'; supported: llama, qwen2, qwen3, mistral");
}

// Upper bounds, each several times the largest released model's (Llama 3.1 405B: hidden 16384, intermediate
// 53248, 126 layers, 128 heads; vocabularies up to ~262k; contexts up to 10M): an absurd size is one line
// naming the field, never an allocation of that size.
void HFConfig::validate() const {
  const struct {
    const char* field;
    int64_t value;
    int64_t limit;
  } bounds[] = {{"vocab_size", vocab_size, kMaxVocabSize},
                {"hidden_size", hidden_size, 65536},
                {"intermediate_size", intermediate_size, 262144},
                {"num_hidden_layers", num_hidden_layers, 1024},
                {"num_attention_heads", num_attention_heads, 1024},
                {"num_key_value_heads", num_key_value_heads, 1024},
                {"head_dim", head_dim, 4096},
                {"max_position_embeddings", max_position_embeddings, int64_t{1} << 25}};
  for (const auto& b : bounds) {
    VERL_CHECK(b.value <= b.limit, kHfConfigComponent, b.field, "=", b.value, " is beyond any real model (limit ",
               b.limit, ")");
  }
  VERL_CHECK(vocab_size > 0 && hidden_size > 0 && intermediate_size > 0 && num_hidden_layers > 0 &&
                 num_attention_heads > 0 && num_key_value_heads > 0 && head_dim > 0,
             kHfConfigComponent,
             "vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
             "num_key_value_heads and head_dim must all be positive");
  VERL_CHECK(num_attention_heads % num_key_value_heads == 0, kHfConfigComponent, "num_attention_heads (",
             num_attention_heads, ") must be a multiple of num_key_value_heads (", num_key_value_heads, ")");
  VERL_CHECK(head_dim % 2 == 0, kHfConfigComponent, "head_dim (", head_dim, ") must be even for rotary embeddings");
  VERL_CHECK(rms_norm_eps > 0, kHfConfigComponent, "rms_norm_eps must be positive");
  VERL_CHECK(rope_theta > 0, kHfConfigComponent, "rope_theta must be positive");
  VERL_CHECK(rope_scaling.factor > 0, kHfConfigComponent, "rope_scaling.factor must be positive");
  if (rope_scaling.type == RopeScaling::Type::Llama3)
    VERL_CHECK(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor, kHfConfigComponent,
               "rope_scaling: high_freq_factor must exceed low_freq_factor");
  if (rope_scaling.type == RopeScaling::Type::Yarn) {
    VERL_CHECK(rope_scaling.beta_fast > 0 && rope_scaling.beta_slow > 0, kHfConfigComponent,
               "rope_scaling: yarn's beta_fast and beta_slow must be positive");
    VERL_CHECK(rope_scaling.attention_factor > 0, kHfConfigComponent,
               "rope_scaling: yarn's attention_factor must be positive");
    VERL_CHECK(rope_scaling.original_max_position_embeddings > 0, kHfConfigComponent,
               "rope_scaling: original_max_position_embeddings must be positive");
  }
  if (moe.enabled) {
    VERL_CHECK(moe.num_experts >= 0 && moe.num_experts <= 4096, kHfConfigComponent, "num_experts=", moe.num_experts,
               " must be between 0 and 4096");
    if (moe.num_experts > 0) {
      VERL_CHECK(moe.num_experts_per_tok >= 1 && moe.num_experts_per_tok <= moe.num_experts, kHfConfigComponent,
                 "num_experts_per_tok (", moe.num_experts_per_tok, ") must be between 1 and num_experts (",
                 moe.num_experts, ")");
      VERL_CHECK(moe.moe_intermediate_size > 0 && moe.moe_intermediate_size <= 262144, kHfConfigComponent,
                 "moe_intermediate_size=", moe.moe_intermediate_size, " must be positive (and at most 262144)");
    }
    VERL_CHECK(moe.decoder_sparse_step >= 1, kHfConfigComponent, "decoder_sparse_step must be at least 1, got ",
               moe.decoder_sparse_step);
    VERL_CHECK(moe.shared_expert_intermediate_size >= 0 && moe.shared_expert_intermediate_size <= 262144,
               kHfConfigComponent, "shared_expert_intermediate_size=", moe.shared_expert_intermediate_size,
               " must be between 0 and 262144");
    for (int64_t layer : moe.mlp_only_layers) {
      VERL_CHECK(layer >= 0 && layer < num_hidden_layers, kHfConfigComponent, "mlp_only_layers lists layer ", layer,
                 " of ", num_hidden_layers);
    }
  }
  VERL_CHECK(sliding_layers.empty() ||
                 (static_cast<int64_t>(sliding_layers.size()) == num_hidden_layers && sliding_window > 0),
             kHfConfigComponent, "sliding-window layers need a positive sliding_window and one entry per layer (",
             num_hidden_layers, "), got window ", sliding_window, " over ", sliding_layers.size(), " layers");
}

bool HFConfig::layer_is_sparse(int64_t layer) const {
  return moe.enabled && moe.num_experts > 0 && (layer + 1) % moe.decoder_sparse_step == 0 &&
         std::find(moe.mlp_only_layers.begin(), moe.mlp_only_layers.end(), layer) == moe.mlp_only_layers.end();
}

std::string hf_class_name(const HFConfig& c) {
  std::string family = arch_class_name(c.arch);
  family = family.substr(0, family.size() - std::string("ForCausalLM").size());
  if (c.moe.enabled) family += "Moe";
  return family + (c.token_classification ? "ForTokenClassification" : "ForCausalLM");
}

std::string hf_model_type(const HFConfig& c) {
  return std::string(arch_model_type(c.arch)) + (c.moe.enabled ? "_moe" : "");
}

namespace {

// Qwen2-MoE / Qwen3-MoE's expert fields, transformers' defaults where config.json leaves one out.
void parse_moe(const json& j, const std::string& src, HFConfig& c) {
  MoeConfig& m = c.moe;
  m.enabled = true;
  const bool qwen2 = c.arch == Arch::Qwen2;
  // transformers >= 5 writes Qwen3-MoE's count as num_local_experts (its attribute map), older versions num_experts.
  const bool local = j.contains("num_local_experts") && !j["num_local_experts"].is_null();
  m.num_experts = get_int(j, local ? "num_local_experts" : "num_experts", src, qwen2 ? 60 : 128);
  if (local && j.contains("num_experts") && !j["num_experts"].is_null()) {
    VERL_CHECK(get_int(j, "num_experts", src, 0) == m.num_experts, kHfConfigComponent, src,
               ": num_experts and num_local_experts disagree (", json_excerpt(j["num_experts"]), " and ", m.num_experts,
               ")");
  }
  if (qwen2) {
    VERL_CHECK(get_bool(j, "qkv_bias", src, true), kHfConfigComponent, src,
               ": qkv_bias=false is not supported for Qwen2-MoE (its q/k/v projections have biases)");
  }
  m.num_experts_per_tok = get_int(j, "num_experts_per_tok", src, qwen2 ? 4 : 8);
  m.moe_intermediate_size = get_int(j, "moe_intermediate_size", src, qwen2 ? 1408 : 768);
  m.norm_topk_prob = get_bool(j, "norm_topk_prob", src, false);
  m.decoder_sparse_step = get_int(j, "decoder_sparse_step", src, 1);
  if (qwen2) m.shared_expert_intermediate_size = get_int(j, "shared_expert_intermediate_size", src, 5632);
  m.router_aux_loss_coef = get_double(j, "router_aux_loss_coef", src, 0.001);
  m.output_router_logits = get_bool(j, "output_router_logits", src, false);
  if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
    const json& layers = j["mlp_only_layers"];
    VERL_CHECK(layers.is_array(), kHfConfigComponent, src, ": mlp_only_layers must be a list of layer indices, got ",
               json_excerpt(layers));
    for (const auto& layer : layers) {
      VERL_CHECK(layer.is_number_integer(), kHfConfigComponent, src,
                 ": mlp_only_layers must be a list of layer indices, got ", json_excerpt(layers));
      m.mlp_only_layers.push_back(layer.get<int64_t>());
    }
  }
  // transformers' Qwen2-MoE / Qwen3-MoE attention take no sliding window the way the dense families do.
  VERL_CHECK(!get_bool(j, "use_sliding_window", src, false), kHfConfigComponent, src,
             ": use_sliding_window with a mixture-of-experts config is not supported (verl.cpp's sliding windows "
             "are the dense Mistral, Qwen2 and Qwen3 models')");
}

// Sliding-window attention as transformers' configs resolve it. Mistral: `sliding_window` (default 4096; null
// for none) on every layer. Qwen2 / Qwen3: only with use_sliding_window, then `sliding_window` (default 4096) on
// the layers `layer_types` names "sliding_attention", or by default those from max_window_layers (default 28) on.
void parse_sliding_window(const json& j, const std::string& src, HFConfig& c) {
  if (c.arch == Arch::Llama) return;
  const bool qwen = c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3;
  if (qwen && !get_bool(j, "use_sliding_window", src, false)) return;
  const std::optional<int64_t> window =
      j.contains("sliding_window") ? get_opt_int(j, "sliding_window", src) : std::optional<int64_t>(4096);
  if (!window) return;  // null: full attention (Mistral 7B v0.2 and later)
  VERL_CHECK(*window > 0, kHfConfigComponent, src,
             ": sliding_window must be a positive number of positions or null, got ", *window);
  c.sliding_window = *window;
  c.sliding_layers.assign(static_cast<size_t>(c.num_hidden_layers), true);
  if (!qwen) return;  // Mistral: every layer (transformers ignores a Mistral config's layer_types)
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& types = j["layer_types"];
    VERL_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.num_hidden_layers, kHfConfigComponent, src,
               ": layer_types must list one entry per layer (", c.num_hidden_layers, "), got ", json_excerpt(types));
    for (size_t i = 0; i < types.size(); ++i) {
      VERL_CHECK(types[i] == "full_attention" || types[i] == "sliding_attention", kHfConfigComponent, src,
                 ": layer_types[", i, "] is ", json_excerpt(types[i]),
                 "; expected \"full_attention\" or \"sliding_attention\"");
      c.sliding_layers[i] = types[i] == "sliding_attention";
    }
  } else {
    const int64_t first = get_int(j, "max_window_layers", src, 28);
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) c.sliding_layers[static_cast<size_t>(i)] = i >= first;
  }
  if (std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true) == c.sliding_layers.end()) {
    c.sliding_layers.clear();  // the window reaches no layer
    c.sliding_window = 0;
  }
}

}  // namespace

HFConfig parse_hf_config_text(const std::string& json_text, const std::string& src) {
  check_json_limits(json_text, src);
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    VERL_FAIL(kHfConfigComponent, src, " is not valid JSON (", e.what(), ")");
  }
  VERL_CHECK(j.is_object(), kHfConfigComponent, src, " must be a JSON object");
  const std::string supported =
      "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM, Qwen2MoeForCausalLM, "
      "Qwen3MoeForCausalLM";
  std::string arch_name;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    arch_name = j["architectures"][0].get<std::string>();
  } else if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string mt = j["model_type"].get<std::string>();
    arch_name = mt == "llama"       ? "LlamaForCausalLM"
                : mt == "qwen2"     ? "Qwen2ForCausalLM"
                : mt == "qwen3"     ? "Qwen3ForCausalLM"
                : mt == "mistral"   ? "MistralForCausalLM"
                : mt == "qwen2_moe" ? "Qwen2MoeForCausalLM"
                : mt == "qwen3_moe" ? "Qwen3MoeForCausalLM"
                                    : "model_type " + mt;
  }
  HFConfig c;
  // Token-classification / sequence-classification variants share the trunk (critic and reward models).
  auto family = [&](const std::string& prefix) { return arch_name.rfind(prefix, 0) == 0; };
  c.token_classification = arch_name.size() > 22 &&
                           arch_name.compare(arch_name.size() - 22, 22, "ForTokenClassification") == 0;
  if (family("LlamaFor")) c.arch = Arch::Llama;
  else if (family("Qwen2For")) c.arch = Arch::Qwen2;
  else if (family("Qwen3For")) c.arch = Arch::Qwen3;
  else if (family("MistralFor")) c.arch = Arch::Mistral;
  else if (family("Qwen2MoeFor")) {
    c.arch = Arch::Qwen2;
    c.moe.enabled = true;
  } else if (family("Qwen3MoeFor")) {
    c.arch = Arch::Qwen3;
    c.moe.enabled = true;
  } else
    VERL_FAIL(kHfConfigComponent, src, ": unsupported architecture '", arch_name.empty() ? "(none given)" : arch_name,
              "'; supported: ", supported);
  if (j.contains("hidden_act") && !j["hidden_act"].is_null())
    VERL_CHECK(j["hidden_act"] == "silu", kHfConfigComponent, src, ": hidden_act ", json_excerpt(j["hidden_act"]),
               " is not supported (only \"silu\")");
  c.vocab_size = get_int(j, "vocab_size", src, std::nullopt);
  c.hidden_size = get_int(j, "hidden_size", src, std::nullopt);
  c.intermediate_size = get_int(j, "intermediate_size", src, std::nullopt);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", src, std::nullopt);
  c.num_attention_heads = get_int(j, "num_attention_heads", src, std::nullopt);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", src, c.num_attention_heads);
  VERL_CHECK(c.num_attention_heads > 0, kHfConfigComponent, src, ": num_attention_heads must be positive");
  c.head_dim = get_int(j, "head_dim", src, c.hidden_size / c.num_attention_heads);
  if (!j.contains("head_dim") || j["head_dim"].is_null())
    VERL_CHECK(c.hidden_size % c.num_attention_heads == 0, kHfConfigComponent, src, ": hidden_size (", c.hidden_size,
               ") must be a multiple of num_attention_heads (", c.num_attention_heads, ") when head_dim is not given");
  // transformers' MistralConfig defaults: 131072 positions, a 4096-token window.
  const bool mistral = c.arch == Arch::Mistral;
  c.max_position_embeddings = get_int(j, "max_position_embeddings", src, mistral ? 131072 : 2048);
  c.rms_norm_eps = get_double(j, "rms_norm_eps", src, 1e-6);
  c.rope_theta = get_double(j, "rope_theta", src, 10000.0);
  // Mistral's layers have no biases whatever the config says (transformers does not read these fields for it).
  c.attention_bias = !mistral && get_bool(j, "attention_bias", src, false);
  c.mlp_bias = !mistral && get_bool(j, "mlp_bias", src, false);
  VERL_CHECK(!(c.arch != Arch::Llama && c.mlp_bias), kHfConfigComponent, src, ": mlp_bias is only supported for Llama");
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", src, false);
  c.initializer_range = get_double(j, "initializer_range", src, 0.02);
  if (c.moe.enabled) parse_moe(j, src, c);
  parse_sliding_window(j, src, c);
  // transformers >= 5 writes rope_theta and the scaling into "rope_parameters"; older versions wrote top-level
  // "rope_theta" and "rope_scaling". As in transformers, a legacy rope_scaling wins over rope_parameters, and a
  // rope_theta inside the object over the top-level one.
  const bool legacy = j.contains("rope_scaling") && !j["rope_scaling"].is_null();
  const std::string rope_key = legacy ? "rope_scaling" : "rope_parameters";
  if (j.contains(rope_key) && !j[rope_key].is_null()) {
    const json& rs = j[rope_key];
    VERL_CHECK(rs.is_object(), kHfConfigComponent, src, ": ", rope_key, " must be an object or null");
    const std::string rsrc = src + " " + rope_key;
    for (const auto& item : rs.items())
      VERL_CHECK(!item.value().is_object(), kHfConfigComponent, rsrc, ": per-layer-type rope parameters (\"",
                 item.key(), "\") are not supported");
    c.rope_theta = get_double(rs, "rope_theta", rsrc, c.rope_theta);
    std::string type;
    if (rs.contains("rope_type") && rs["rope_type"].is_string()) type = rs["rope_type"].get<std::string>();
    else if (rs.contains("type") && rs["type"].is_string()) type = rs["type"].get<std::string>();
    if (type == "default") {
      c.rope_scaling.type = RopeScaling::Type::None;
    } else if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::Linear;
      c.rope_scaling.factor = get_double(rs, "factor", rsrc, 1.0);
    } else if (type == "llama3") {
      c.rope_scaling.type = RopeScaling::Type::Llama3;
      VERL_CHECK(rs.contains("factor"), kHfConfigComponent, rsrc, ": llama3 needs \"factor\"");
      c.rope_scaling.factor = get_double(rs, "factor", rsrc, 8.0);
      c.rope_scaling.low_freq_factor = get_double(rs, "low_freq_factor", rsrc, 1.0);
      c.rope_scaling.high_freq_factor = get_double(rs, "high_freq_factor", rsrc, 4.0);
      c.rope_scaling.original_max_position_embeddings =
          original_max_position_embeddings(j, rs, src, rsrc, c.max_position_embeddings);
    } else if (type == "yarn") {
      c.rope_scaling.type = RopeScaling::Type::Yarn;
      RopeScaling& y = c.rope_scaling;
      y.original_max_position_embeddings =
          original_max_position_embeddings(j, rs, src, rsrc, c.max_position_embeddings);
      VERL_CHECK(y.original_max_position_embeddings > 0, kHfConfigComponent, rsrc,
                 ": original_max_position_embeddings must be positive");
      // As transformers: a null factor is the ratio of the two lengths; 0 or null betas are the defaults 32 and 1.
      y.factor = get_double(
          rs, "factor", rsrc,
          static_cast<double>(c.max_position_embeddings) / static_cast<double>(y.original_max_position_embeddings));
      y.beta_fast = get_double(rs, "beta_fast", rsrc, 0.0);
      if (y.beta_fast == 0) y.beta_fast = 32.0;
      y.beta_slow = get_double(rs, "beta_slow", rsrc, 0.0);
      if (y.beta_slow == 0) y.beta_slow = 1.0;
      y.truncate = get_bool(rs, "truncate", rsrc, true);
      y.attention_factor = yarn_attention_factor(rs, rsrc, y.factor);
    } else {
      VERL_FAIL(kHfConfigComponent, rsrc, ": type '", type,
                "' is not supported (supported: linear, llama3, yarn, default)");
    }
  }
  c.bos_token_id = get_opt_int(j, "bos_token_id", src);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (const auto& id : e) {
        VERL_CHECK(id.is_number_integer(), kHfConfigComponent, src, ": eos_token_id entries must be integers");
        c.eos_token_ids.push_back(id.get<int64_t>());
      }
    } else {
      VERL_CHECK(e.is_number_integer(), kHfConfigComponent, src, ": eos_token_id must be an integer or a list");
      c.eos_token_ids.push_back(e.get<int64_t>());
    }
  }
  c.pad_token_id = get_opt_int(j, "pad_token_id", src);
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.torch_dtype = j["torch_dtype"].get<std::string>();
  try {
    c.validate();
  } catch (const Error& e) {
    VERL_FAIL(kHfConfigComponent, src, ": ", e.message());
  }
  return c;
}

HFConfig load_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string file = fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
  std::ifstream in(file);
  VERL_CHECK(in.good(), kHfConfigComponent, "cannot read '", file, "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hf_config_text(text.str(), file);
}

namespace {

enum class OverrideRule { Honoured, Shape, Validated, NoEffect };

std::optional<OverrideRule> override_rule(const std::string& field) {
  static const std::map<std::string, OverrideRule> rules = {
      {"max_position_embeddings", OverrideRule::Honoured},
      {"rope_theta", OverrideRule::Honoured},
      {"rope_scaling", OverrideRule::Honoured},
      {"rope_parameters", OverrideRule::Honoured},
      {"rms_norm_eps", OverrideRule::Honoured},
      {"bos_token_id", OverrideRule::Honoured},
      {"eos_token_id", OverrideRule::Honoured},
      {"pad_token_id", OverrideRule::Honoured},
      {"initializer_range", OverrideRule::Honoured},
      {"use_sliding_window", OverrideRule::Honoured},
      {"sliding_window", OverrideRule::Honoured},
      {"max_window_layers", OverrideRule::Honoured},
      {"layer_types", OverrideRule::Honoured},
      {"vocab_size", OverrideRule::Shape},
      {"hidden_size", OverrideRule::Shape},
      {"intermediate_size", OverrideRule::Shape},
      {"num_hidden_layers", OverrideRule::Shape},
      {"num_attention_heads", OverrideRule::Shape},
      {"num_key_value_heads", OverrideRule::Shape},
      {"head_dim", OverrideRule::Shape},
      {"attention_bias", OverrideRule::Shape},
      {"mlp_bias", OverrideRule::Shape},
      {"tie_word_embeddings", OverrideRule::Shape},
      {"architectures", OverrideRule::Shape},
      {"model_type", OverrideRule::Shape},
      {"num_experts", OverrideRule::Shape},
      {"moe_intermediate_size", OverrideRule::Shape},
      {"shared_expert_intermediate_size", OverrideRule::Shape},
      {"decoder_sparse_step", OverrideRule::Shape},
      {"mlp_only_layers", OverrideRule::Shape},
      {"num_local_experts", OverrideRule::Shape},
      {"qkv_bias", OverrideRule::Shape},
      {"num_experts_per_tok", OverrideRule::Honoured},
      {"norm_topk_prob", OverrideRule::Honoured},
      {"router_aux_loss_coef", OverrideRule::NoEffect},
      {"output_router_logits", OverrideRule::NoEffect},
      {"hidden_act", OverrideRule::Validated},
      {"attention_dropout", OverrideRule::Validated},
      {"attn_implementation", OverrideRule::NoEffect},
      {"use_cache", OverrideRule::NoEffect},
  };
  const auto it = rules.find(field);
  return it == rules.end() ? std::nullopt : std::optional<OverrideRule>(it->second);
}

// The override object (verl's HFModelConfig: a "model_config" object stands for the whole override).
json override_object(const HFConfigOverrides& o) {
  json j;
  try {
    j = json::parse(o.json.empty() ? std::string("{}") : o.json);
  } catch (const json::exception& e) {
    VERL_FAIL(kHfConfigComponent, o.key, " is not valid JSON (", e.what(), ")");
  }
  VERL_CHECK(j.is_object() || j.is_null(), kHfConfigComponent, "config key '", o.key, "' must be a map, got ",
             json_excerpt(j));
  if (j.is_null()) return json::object();
  if (j.contains("model_config")) {
    VERL_CHECK(j.size() == 1 && j["model_config"].is_object(), kHfConfigComponent, "config key '", o.key,
               ".model_config' must be a map and the only field (verl reads the override from it)");
    return j["model_config"];
  }
  return j;
}

std::string field_key(const HFConfigOverrides& o, const std::string& field) { return o.key + "." + field; }

// Which layers hold experts ("0 1 3 ..."), for the shape check: decoder_sparse_step and mlp_only_layers decide it.
std::string sparse_layers_text(const HFConfig& c) {
  std::string text;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (c.layer_is_sparse(i)) text += (text.empty() ? "" : " ") + std::to_string(i);
  }
  return text.empty() ? "none" : "[" + text + "]";
}

}  // namespace

bool HFConfigOverrides::empty() const { return override_object(*this).empty(); }

void check_hf_config_override_fields(const HFConfigOverrides& o) {
  const json overrides = override_object(o);
  for (const auto& [field, value] : overrides.items()) {
    const auto rule = override_rule(field);
    VERL_CHECK(rule.has_value(), kHfConfigComponent, "config key '", field_key(o, field),
               "': verl.cpp's models (Llama, Qwen2, Qwen3, Mistral and the MoE Qwens) do not use the HF config field '",
               field,
               "'; override_config takes max_position_embeddings, rope_theta, rope_scaling, rms_norm_eps, token ids, "
               "the sliding-window fields, attn_implementation (docs/config.md)");
    if (field == "attn_implementation") {
      static const std::vector<std::string> kinds = {"eager", "sdpa", "flash_attention_2", "flash_attention_3",
                                                     "flex_attention"};
      VERL_CHECK(value.is_string() && std::find(kinds.begin(), kinds.end(), value.get<std::string>()) != kinds.end(),
                 kHfConfigComponent, "config key '", field_key(o, field), "' is ", json_excerpt(value),
                 "; expected one of eager, sdpa, flash_attention_2, flash_attention_3, flex_attention");
    } else if (field == "attention_dropout") {
      VERL_CHECK(value.is_number() && value.get<double>() == 0.0, kHfConfigComponent, "config key '",
                 field_key(o, field), "' is ", json_excerpt(value),
                 ": attention dropout is not implemented in verl.cpp (only 0)");
    } else if (field == "use_cache") {
      VERL_CHECK(value.is_boolean(), kHfConfigComponent, "config key '", field_key(o, field),
                 "' must be true or false");
    } else if (field == "hidden_act") {
      VERL_CHECK(value == "silu", kHfConfigComponent, "config key '", field_key(o, field), "' is ", json_excerpt(value),
                 ": verl.cpp's MLP is SwiGLU (only silu)");
    }
  }
}

std::string apply_hf_config_overrides(const std::string& text, const HFConfigOverrides& o, const std::string& src) {
  check_hf_config_override_fields(o);
  const json overrides = override_object(o);
  const HFConfig before = parse_hf_config_text(text, src);
  json j = json::parse(text);
  static const std::set<std::string> kExpertFields = {"num_experts",
                                                      "num_local_experts",
                                                      "num_experts_per_tok",
                                                      "moe_intermediate_size",
                                                      "shared_expert_intermediate_size",
                                                      "norm_topk_prob",
                                                      "decoder_sparse_step",
                                                      "mlp_only_layers",
                                                      "router_aux_loss_coef",
                                                      "output_router_logits",
                                                      "qkv_bias"};
  for (const auto& [field, value] : overrides.items()) {
    VERL_CHECK(before.moe.enabled || !kExpertFields.count(field), kHfConfigComponent, "config key '",
               field_key(o, field), "': ", src, " is ", hf_class_name(before),
               ", a dense model without that Qwen2-MoE / Qwen3-MoE field");
    if (field == "rope_parameters") {
      VERL_CHECK(!j.contains("rope_scaling") || j["rope_scaling"].is_null(), kHfConfigComponent, "config key '",
                 field_key(o, field), "': ", src,
                 " gives rope_scaling, which wins over rope_parameters (as in "
                 "transformers); override rope_scaling instead");
    }
    // verl sets attributes one level down into nested configs; the rope dicts are merged key by key likewise.
    if ((field == "rope_scaling" || field == "rope_parameters") && value.is_object() && j.contains(field) &&
        j[field].is_object()) {
      for (const auto& [k, v] : value.items()) {
        // "type" and "rope_type" name the same thing (transformers reads rope_type first): setting one replaces both.
        if (k == "type") j[field].erase("rope_type");
        if (k == "rope_type") j[field].erase("type");
        j[field][k] = v;
      }
    } else {
      j[field] = value;
    }
  }
  const std::string merged = j.dump();
  const HFConfig after = parse_hf_config_text(merged, src + " with " + o.key);
  const struct {
    const char* field;
    std::string was, now;
  } shape[] = {
      {"architectures", hf_class_name(before), hf_class_name(after)},
      {"vocab_size", std::to_string(before.vocab_size), std::to_string(after.vocab_size)},
      {"hidden_size", std::to_string(before.hidden_size), std::to_string(after.hidden_size)},
      {"intermediate_size", std::to_string(before.intermediate_size), std::to_string(after.intermediate_size)},
      {"num_hidden_layers", std::to_string(before.num_hidden_layers), std::to_string(after.num_hidden_layers)},
      {"num_attention_heads", std::to_string(before.num_attention_heads), std::to_string(after.num_attention_heads)},
      {"num_key_value_heads", std::to_string(before.num_key_value_heads), std::to_string(after.num_key_value_heads)},
      {"head_dim", std::to_string(before.head_dim), std::to_string(after.head_dim)},
      {"attention_bias", std::to_string(before.attention_bias), std::to_string(after.attention_bias)},
      {"mlp_bias", std::to_string(before.mlp_bias), std::to_string(after.mlp_bias)},
      {"tie_word_embeddings", std::to_string(before.tie_word_embeddings), std::to_string(after.tie_word_embeddings)},
      {"token_classification", std::to_string(before.token_classification), std::to_string(after.token_classification)},
      {"num_experts", std::to_string(before.moe.num_experts), std::to_string(after.moe.num_experts)},
      {"moe_intermediate_size", std::to_string(before.moe.moe_intermediate_size),
       std::to_string(after.moe.moe_intermediate_size)},
      {"shared_expert_intermediate_size", std::to_string(before.moe.shared_expert_intermediate_size),
       std::to_string(after.moe.shared_expert_intermediate_size)},
      {"sparse layers", sparse_layers_text(before), sparse_layers_text(after)},
  };
  for (const auto& s : shape) {
    if (s.was == s.now) continue;
    std::string named;
    for (const auto& [field, value] : overrides.items()) {
      if (override_rule(field) == OverrideRule::Shape) named += (named.empty() ? "" : ", ") + field_key(o, field) + "=" + value.dump();
    }
    VERL_FAIL(kHfConfigComponent, "config key ", named.empty() ? std::string("'") + o.key + "'" : named, " changes ",
              s.field, " from ", s.was, " (", src, ", the checkpoint's shapes) to ", s.now,
              ": override_config may change no field that shapes the weights");
  }
  return merged;
}

HFConfig load_hf_config(const std::string& path, const HFConfigOverrides& overrides) {
  if (overrides.empty()) return load_hf_config(path);
  namespace fs = std::filesystem;
  const std::string file = fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
  std::ifstream in(file);
  VERL_CHECK(in.good(), kHfConfigComponent, "cannot read '", file, "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hf_config_text(apply_hf_config_overrides(text.str(), overrides, file), file + " with " + overrides.key);
}

std::string hf_config_to_json(const HFConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {hf_class_name(c)};
  if (c.token_classification) {
    j["id2label"] = {{"0", "LABEL_0"}};
    j["label2id"] = {{"LABEL_0", 0}};
    j["classifier_dropout"] = 0.0;
  }
  j["model_type"] = hf_model_type(c);
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type == RopeScaling::Type::None) {
    j["rope_scaling"] = nullptr;
  } else if (c.rope_scaling.type == RopeScaling::Type::Linear) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling.factor}};
  } else if (c.rope_scaling.type == RopeScaling::Type::Yarn) {
    // The resolved attention_factor stands for the mscale pair it may have come from.
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", c.rope_scaling.factor},
                         {"attention_factor", c.rope_scaling.attention_factor},
                         {"beta_fast", c.rope_scaling.beta_fast},
                         {"beta_slow", c.rope_scaling.beta_slow},
                         {"truncate", c.rope_scaling.truncate},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_scaling.factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  }
  if (c.arch == Arch::Llama || c.arch == Arch::Qwen3) j["attention_bias"] = c.attention_bias;
  if (c.arch == Arch::Llama) j["mlp_bias"] = c.mlp_bias;
  if (c.moe.enabled) {
    const MoeConfig& m = c.moe;
    j["num_experts"] = m.num_experts;
    j["num_experts_per_tok"] = m.num_experts_per_tok;
    j["moe_intermediate_size"] = m.moe_intermediate_size;
    if (c.arch == Arch::Qwen2) j["shared_expert_intermediate_size"] = m.shared_expert_intermediate_size;
    j["norm_topk_prob"] = m.norm_topk_prob;
    j["decoder_sparse_step"] = m.decoder_sparse_step;
    j["mlp_only_layers"] = m.mlp_only_layers;
    j["router_aux_loss_coef"] = m.router_aux_loss_coef;
    j["output_router_logits"] = m.output_router_logits;
  }
  if (c.arch == Arch::Qwen2 || c.arch == Arch::Qwen3) {
    j["use_sliding_window"] = !c.sliding_layers.empty();
    if (!c.sliding_layers.empty()) {
      j["sliding_window"] = c.sliding_window;
      std::vector<std::string> types;
      for (bool slides : c.sliding_layers) types.push_back(slides ? "sliding_attention" : "full_attention");
      j["layer_types"] = types;
    }
  }
  if (c.arch == Arch::Mistral) {
    if (c.sliding_layers.empty()) j["sliding_window"] = nullptr;
    else j["sliding_window"] = c.sliding_window;
  }
  j["attention_dropout"] = 0.0;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["initializer_range"] = c.initializer_range;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  j["torch_dtype"] = c.torch_dtype;
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

namespace {
void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    VERL_CHECK(out.good(), kHfConfigComponent, "cannot write '", tmp, "'");
  }
  std::filesystem::rename(tmp, path);
}
}  // namespace

void save_hf_config(const HFConfig& config, const std::string& dir) {
  std::filesystem::create_directories(dir);
  write_text_atomic((std::filesystem::path(dir) / "config.json").string(), hf_config_to_json(config));
}

void save_generation_config(const HFConfig& c, const std::string& dir) {
  nlohmann::ordered_json j;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  j["transformers_version"] = "4.45.0";
  std::filesystem::create_directories(dir);
  write_text_atomic((std::filesystem::path(dir) / "generation_config.json").string(), j.dump(2) + "\n");
}

}  // namespace verl::model
