// A Hugging Face tokenizer loaded from a model folder: the same ids as HF `tokenizers` for BPE tokenizers
// (GPT-2, Qwen2/2.5/3, Llama 3, Llama 2 / Mistral), decoding, special tokens and the chat template.
//
//   auto tok = verl::tokenizer::Tokenizer::from_folder("/models/Qwen3-0.6B");
//   std::vector<int32_t> ids = tok.encode("Hello", /*add_special_tokens=*/true);
//   std::string text = tok.decode(ids, /*skip_special_tokens=*/true);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "verl/tokenizer/tokenizer_config.h"
#include "verl/tokenizer/tokenizer_json.h"

namespace verl::tokenizer {

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json (required) and the optional config files (see tokenizer_config.h).
  static Tokenizer from_folder(const std::string& model_dir);
  Tokenizer(TokenizerPipeline pipeline, TokenizerConfig config);

  // Text -> ids. Added tokens in the text are matched first; add_special_tokens applies the post-processor
  // (e.g. Llama 2's leading <s>). For Llama/CodeLlama/Gemma tokenizer classes the post-processor is rebuilt
  // from add_bos_token / add_eos_token, as transformers does. Invalid UTF-8 is an error naming the byte offset.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;

  // Ids -> text through the decoder. Ids outside the vocab are skipped (as HF tokenizers does); with
  // skip_special_tokens, special added tokens and the config's special tokens are left out.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // One past the largest id (model vocab and added tokens).
  size_t vocab_size() const;
  bool is_special(int32_t id) const { return special_ids_.count(id) > 0; }

  const TokenizerConfig& config() const { return config_; }
  // Replaces the chat template (verl's model.custom_chat_template, which HFModelConfig sets on the tokenizer);
  // `source` names it in rendering errors.
  void set_chat_template(std::string chat_template, std::string source);
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> eos_token_id() const;
  std::optional<int32_t> pad_token_id() const;
  // The ids that end generation: generation_config.json's eos_token_id, plus the eos token's id.
  std::vector<int32_t> eos_token_ids() const;

 private:
  std::optional<int32_t> special_id(const std::optional<std::string>& token) const;

  TokenizerPipeline pipeline_;
  TokenizerConfig config_;
  std::unordered_set<int32_t> special_ids_;
};

// verl's HFModelConfig tokenizer: the folder's, with `custom_chat_template` (when set; the config key `key`
// names it in rendering errors) in place of the folder's chat template.
Tokenizer load_model_tokenizer(const std::string& model_dir, const std::optional<std::string>& custom_chat_template,
                               const std::string& key);

}  // namespace verl::tokenizer
