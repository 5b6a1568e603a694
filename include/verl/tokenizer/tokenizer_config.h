// The non-vocabulary files of a Hugging Face model folder: tokenizer_config.json (special tokens,
// chat_template, add_bos_token, ...), special_tokens_map.json (overrides the config's special tokens, as in
// transformers), chat_template.jinja (overrides the config's template) and generation_config.json (eos ids).
// Every file is optional; a file that exists but is malformed is an error naming it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace verl::tokenizer {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::vector<std::string> additional_special_tokens;
  std::optional<bool> add_bos_token, add_eos_token;
  std::optional<bool> add_prefix_space, legacy;  // read by transformers' LlamaTokenizer (see tokenizer.cpp)
  std::string tokenizer_class;
  // The default chat template ("" when the folder has none) and named ones (list form of chat_template).
  std::string chat_template;
  std::string chat_template_file;  // the file it was read from (named in rendering errors)
  std::map<std::string, std::string> named_chat_templates;
  // eos_token_id of generation_config.json (one id or a list), empty when absent.
  std::vector<int32_t> generation_eos_token_ids;
};

TokenizerConfig load_tokenizer_config(const std::string& model_dir);

}  // namespace verl::tokenizer
