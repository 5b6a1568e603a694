#include "verl/tokenizer/tokenizer_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

std::optional<std::string> read_text(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.good(), "tokenizer", "cannot open ", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::optional<json> read_json(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  check_json_limits(*text, path);
  try {
    json value = json::parse(*text);
    VERL_CHECK(value.is_object(), "tokenizer", path, ": expected a JSON object at the top level");
    return value;
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number beyond double
    VERL_FAIL("tokenizer", path, ": not valid JSON: ", e.what());
  }
}

// A special token is written as "text" or as {"content": "text", ...} (AddedToken dicts); null means none.
std::optional<std::string> token_text(const json& value, const std::string& where) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  VERL_CHECK(value.is_object() && value.contains("content") && value["content"].is_string(), "tokenizer", where,
             ": expected a string or an object with string \"content\", got ", json_excerpt(value));
  return value["content"].get<std::string>();
}

void apply_special_tokens(const json& root, const std::string& path, TokenizerConfig& config) {
  const std::pair<const char*, std::optional<std::string>*> fields[] = {
      {"bos_token", &config.bos_token},
      {"eos_token", &config.eos_token},
      {"pad_token", &config.pad_token},
      {"unk_token", &config.unk_token},
  };
  for (const auto& [key, target] : fields) {
    if (root.contains(key)) *target = token_text(root[key], path + " " + key);
  }
  if (root.contains("additional_special_tokens") && root["additional_special_tokens"].is_array()) {
    config.additional_special_tokens.clear();
    for (const json& item : root["additional_special_tokens"]) {
      if (auto text = token_text(item, path + " additional_special_tokens")) {
        config.additional_special_tokens.push_back(*text);
      }
    }
  }
}

}  // namespace

TokenizerConfig load_tokenizer_config(const std::string& model_dir) {
  TokenizerConfig config;
  const std::string config_path = model_dir + "/tokenizer_config.json";
  if (auto root = read_json(config_path)) {
    try {
      apply_special_tokens(*root, config_path, config);
      if (root->contains("add_bos_token") && (*root)["add_bos_token"].is_boolean()) {
        config.add_bos_token = (*root)["add_bos_token"].get<bool>();
      }
      for (auto [key, field] : {std::pair<const char*, std::optional<bool>*>{"add_prefix_space", &config.add_prefix_space},
                                {"legacy", &config.legacy}}) {
        if (root->contains(key) && (*root)[key].is_boolean()) *field = (*root)[key].get<bool>();
      }
      if (root->contains("add_eos_token") && (*root)["add_eos_token"].is_boolean()) {
        config.add_eos_token = (*root)["add_eos_token"].get<bool>();
      }
      if (root->contains("tokenizer_class") && (*root)["tokenizer_class"].is_string()) {
        config.tokenizer_class = (*root)["tokenizer_class"].get<std::string>();
      }
      if (root->contains("chat_template")) {
        const json& tmpl = (*root)["chat_template"];
        config.chat_template_file = config_path;
        if (tmpl.is_string()) {
          config.chat_template = tmpl.get<std::string>();
        } else if (tmpl.is_array()) {
          for (const json& item : tmpl) {
            VERL_CHECK(item.is_object() && item.contains("name") && item["name"].is_string() &&
                           item.contains("template") && item["template"].is_string(),
                       "tokenizer", config_path,
                       ": chat_template list entries need string \"name\" and \"template\"");
            config.named_chat_templates[item["name"].get<std::string>()] = item["template"].get<std::string>();
          }
          auto it = config.named_chat_templates.find("default");
          if (it != config.named_chat_templates.end()) config.chat_template = it->second;
        } else {
          VERL_CHECK(tmpl.is_null(), "tokenizer", config_path, ": chat_template must be a string or a list");
        }
      }
    } catch (const json::exception& e) {
      VERL_FAIL("tokenizer", config_path, ": unexpected value: ", e.what());
    }
  }
  const std::string map_path = model_dir + "/special_tokens_map.json";
  if (auto root = read_json(map_path)) apply_special_tokens(*root, map_path, config);
  if (auto jinja = read_text(model_dir + "/chat_template.jinja")) {
    config.chat_template = *jinja;
    config.chat_template_file = model_dir + "/chat_template.jinja";
  }

  const std::string generation_path = model_dir + "/generation_config.json";
  if (auto root = read_json(generation_path)) {
    if (root->contains("eos_token_id")) {
      const json& eos = (*root)["eos_token_id"];
      if (eos.is_number_integer()) {
        config.generation_eos_token_ids.push_back(eos.get<int32_t>());
      } else if (eos.is_array()) {
        for (const json& id : eos) {
          VERL_CHECK(id.is_number_integer(), "tokenizer", generation_path, ": eos_token_id entries must be integers");
          config.generation_eos_token_ids.push_back(id.get<int32_t>());
        }
      } else {
        VERL_CHECK(eos.is_null(), "tokenizer", generation_path, ": eos_token_id must be an integer or a list");
      }
    }
  }
  return config;
}

}  // namespace verl::tokenizer
