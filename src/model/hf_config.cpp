#include "verl/model/hf_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::model {
namespace {

constexpr const char* kComponent = "hf_config";
using json = nlohmann::json;

int64_t get_int(const json& j, const std::string& key, const std::string& src, std::optional<int64_t> fallback) {
  if (!j.contains(key) || j[key].is_null()) {
    VERL_CHECK(fallback.has_value(), kComponent, src, ": missing required integer \"", key, "\"");
    return *fallback;
  }
  VERL_CHECK(j[key].is_number_integer(), kComponent, src, ": \"", key, "\" must be an integer, got ", json_excerpt(j[key]));
  return j[key].get<int64_t>();
}

double get_double(const json& j, const std::string& key, const std::string& src, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  VERL_CHECK(j[key].is_number(), kComponent, src, ": \"", key, "\" must be a number, got ", json_excerpt(j[key]));
  return j[key].get<double>();
}

bool get_bool(const json& j, const std::string& key, const std::string& src, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  VERL_CHECK(j[key].is_boolean(), kComponent, src, ": \"", key, "\" must be true or false, got ", json_excerpt(j[key]));
  return j[key].get<bool>();
}

std::optional<int64_t> get_opt_int(const json& j, const std::string& key, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  VERL_CHECK(j[key].is_number_integer(), kComponent, src, ": \"", key, "\" must be an integer, got ", json_excerpt(j[key]));
  return j[key].get<int64_t>();
}

}  // namespace

const char* arch_class_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "LlamaForCausalLM";
    case Arch::Qwen2: return "Qwen2ForCausalLM";
    case Arch::Qwen3: return "Qwen3ForCausalLM";
  }
  return "";
}

const char* arch_model_type(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
  }
  return "";
}

Arch parse_arch_short(const std::string& name) {
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  VERL_FAIL(kComponent, "unknown architecture '", name, "'; supported: llama, qwen2, qwen3");
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
    VERL_CHECK(b.value <= b.limit, kComponent, b.field, "=", b.value, " is beyond any real model (limit ", b.limit,
               ")");
  }
  VERL_CHECK(vocab_size > 0 && hidden_size > 0 && intermediate_size > 0 && num_hidden_layers > 0 &&
                 num_attention_heads > 0 && num_key_value_heads > 0 && head_dim > 0,
             kComponent, "vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
             "num_key_value_heads and head_dim must all be positive");
  VERL_CHECK(num_attention_heads % num_key_value_heads == 0, kComponent, "num_attention_heads (",
             num_attention_heads, ") must be a multiple of num_key_value_heads (", num_key_value_heads, ")");
  VERL_CHECK(head_dim % 2 == 0, kComponent, "head_dim (", head_dim, ") must be even for rotary embeddings");
  VERL_CHECK(rms_norm_eps > 0, kComponent, "rms_norm_eps must be positive");
  VERL_CHECK(rope_theta > 0, kComponent, "rope_theta must be positive");
  VERL_CHECK(rope_scaling.factor > 0, kComponent, "rope_scaling.factor must be positive");
  if (rope_scaling.type == RopeScaling::Type::Llama3)
    VERL_CHECK(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor, kComponent,
               "rope_scaling: high_freq_factor must exceed low_freq_factor");
}

HFConfig parse_hf_config_text(const std::string& json_text, const std::string& src) {
  check_json_limits(json_text, src);
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    VERL_FAIL(kComponent, src, " is not valid JSON (", e.what(), ")");
  }
  VERL_CHECK(j.is_object(), kComponent, src, " must be a JSON object");
  const std::string supported = "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM";
  std::string arch_name;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    arch_name = j["architectures"][0].get<std::string>();
  } else if (j.contains("model_type") && j["model_type"].is_string()) {
    const std::string mt = j["model_type"].get<std::string>();
    arch_name = mt == "llama" ? "LlamaForCausalLM" : mt == "qwen2" ? "Qwen2ForCausalLM"
                : mt == "qwen3" ? "Qwen3ForCausalLM" : "model_type " + mt;
  }
  HFConfig c;
  // Token-classification / sequence-classification variants share the trunk (critic and reward models).
  auto family = [&](const std::string& prefix) { return arch_name.rfind(prefix, 0) == 0; };
  c.token_classification = arch_name.size() > 22 &&
                           arch_name.compare(arch_name.size() - 22, 22, "ForTokenClassification") == 0;
  if (family("LlamaFor")) c.arch = Arch::Llama;
  else if (family("Qwen2For")) c.arch = Arch::Qwen2;
  else if (family("Qwen3For")) c.arch = Arch::Qwen3;
  else VERL_FAIL(kComponent, src, ": unsupported architecture '", arch_name.empty() ? "(none given)" : arch_name,
                 "'; supported: ", supported);
  if (j.contains("hidden_act") && !j["hidden_act"].is_null())
    VERL_CHECK(j["hidden_act"] == "silu", kComponent, src, ": hidden_act ", json_excerpt(j["hidden_act"]),
               " is not supported (only \"silu\")");
  c.vocab_size = get_int(j, "vocab_size", src, std::nullopt);
  c.hidden_size = get_int(j, "hidden_size", src, std::nullopt);
  c.intermediate_size = get_int(j, "intermediate_size", src, std::nullopt);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", src, std::nullopt);
  c.num_attention_heads = get_int(j, "num_attention_heads", src, std::nullopt);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", src, c.num_attention_heads);
  VERL_CHECK(c.num_attention_heads > 0, kComponent, src, ": num_attention_heads must be positive");
  c.head_dim = get_int(j, "head_dim", src, c.hidden_size / c.num_attention_heads);
  if (!j.contains("head_dim") || j["head_dim"].is_null())
    VERL_CHECK(c.hidden_size % c.num_attention_heads == 0, kComponent, src, ": hidden_size (", c.hidden_size,
               ") must be a multiple of num_attention_heads (", c.num_attention_heads, ") when head_dim is not given");
  c.max_position_embeddings = get_int(j, "max_position_embeddings", src, 2048);
  c.rms_norm_eps = get_double(j, "rms_norm_eps", src, 1e-6);
  c.rope_theta = get_double(j, "rope_theta", src, 10000.0);
  c.attention_bias = get_bool(j, "attention_bias", src, false);
  c.mlp_bias = get_bool(j, "mlp_bias", src, false);
  VERL_CHECK(!(c.arch != Arch::Llama && c.mlp_bias), kComponent, src, ": mlp_bias is only supported for Llama");
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", src, c.arch == Arch::Llama ? false : false);
  c.initializer_range = get_double(j, "initializer_range", src, 0.02);
  if (c.arch != Arch::Llama && get_bool(j, "use_sliding_window", src, false))
    VERL_FAIL(kComponent, src, ": use_sliding_window=true is not supported");
  // transformers >= 5 writes rope_theta and the scaling into "rope_parameters"; older versions wrote top-level
  // "rope_theta" and "rope_scaling". As in transformers, a legacy rope_scaling wins over rope_parameters, and a
  // rope_theta inside the object over the top-level one.
  const bool legacy = j.contains("rope_scaling") && !j["rope_scaling"].is_null();
  const std::string rope_key = legacy ? "rope_scaling" : "rope_parameters";
  if (j.contains(rope_key) && !j[rope_key].is_null()) {
    const json& rs = j[rope_key];
    VERL_CHECK(rs.is_object(), kComponent, src, ": ", rope_key, " must be an object or null");
    const std::string rsrc = src + " " + rope_key;
    for (const auto& item : rs.items())
      VERL_CHECK(!item.value().is_object(), kComponent, rsrc, ": per-layer-type rope parameters (\"", item.key(),
                 "\") are not supported");
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
      VERL_CHECK(rs.contains("factor"), kComponent, rsrc, ": llama3 needs \"factor\"");
      c.rope_scaling.factor = get_double(rs, "factor", rsrc, 8.0);
      c.rope_scaling.low_freq_factor = get_double(rs, "low_freq_factor", rsrc, 1.0);
      c.rope_scaling.high_freq_factor = get_double(rs, "high_freq_factor", rsrc, 4.0);
      c.rope_scaling.original_max_position_embeddings =
          get_int(rs, "original_max_position_embeddings", rsrc, c.max_position_embeddings);  // transformers' default
    } else {
      VERL_FAIL(kComponent, rsrc, ": type '", type, "' is not supported (supported: linear, llama3, default)");
    }
  }
  c.bos_token_id = get_opt_int(j, "bos_token_id", src);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (const auto& id : e) {
        VERL_CHECK(id.is_number_integer(), kComponent, src, ": eos_token_id entries must be integers");
        c.eos_token_ids.push_back(id.get<int64_t>());
      }
    } else {
      VERL_CHECK(e.is_number_integer(), kComponent, src, ": eos_token_id must be an integer or a list");
      c.eos_token_ids.push_back(e.get<int64_t>());
    }
  }
  c.pad_token_id = get_opt_int(j, "pad_token_id", src);
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.torch_dtype = j["torch_dtype"].get<std::string>();
  try {
    c.validate();
  } catch (const Error& e) {
    VERL_FAIL(kComponent, src, ": ", e.message());
  }
  return c;
}

HFConfig load_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string file = fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
  std::ifstream in(file);
  VERL_CHECK(in.good(), kComponent, "cannot read '", file, "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hf_config_text(text.str(), file);
}

std::string hf_config_to_json(const HFConfig& c) {
  nlohmann::ordered_json j;
  if (c.token_classification) {
    std::string name = arch_class_name(c.arch);
    j["architectures"] = {name.substr(0, name.size() - std::string("ForCausalLM").size()) + "ForTokenClassification"};
    j["id2label"] = {{"0", "LABEL_0"}};
    j["label2id"] = {{"LABEL_0", 0}};
    j["classifier_dropout"] = 0.0;
  } else {
    j["architectures"] = {arch_class_name(c.arch)};
  }
  j["model_type"] = arch_model_type(c.arch);
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
  } else {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_scaling.factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  }
  if (c.arch != Arch::Qwen2) j["attention_bias"] = c.attention_bias;
  if (c.arch == Arch::Llama) j["mlp_bias"] = c.mlp_bias;
  if (c.arch == Arch::Qwen2) j["use_sliding_window"] = false;
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
    VERL_CHECK(out.good(), kComponent, "cannot write '", tmp, "'");
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
