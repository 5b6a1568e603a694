#include "verl/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/tokenizer/decoders.h"
#include "verl/tokenizer/pre_tokenizers.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

Tokenizer Tokenizer::from_folder(const std::string& model_dir) {
  VERL_CHECK(std::filesystem::is_directory(model_dir), "tokenizer", "tokenizer folder '", model_dir,
             "' does not exist or is not a folder");
  const std::string json_path = model_dir + "/tokenizer.json";
  VERL_CHECK(std::filesystem::exists(json_path), "tokenizer", "no tokenizer.json in '", model_dir,
             "' (only fast-tokenizer folders with tokenizer.json are supported)");
  return Tokenizer(load_tokenizer_json(json_path), load_tokenizer_config(model_dir));
}

Tokenizer::Tokenizer(TokenizerPipeline pipeline, TokenizerConfig config)
    : pipeline_(std::move(pipeline)), config_(std::move(config)) {
  VERL_ASSERT(pipeline_.model && pipeline_.added_tokens, "tokenizer", "pipeline without model");
  for (const AddedToken& token : pipeline_.added_tokens->tokens()) {
    if (token.special) special_ids_.insert(token.id);
  }
  std::vector<std::optional<std::string>> named = {config_.bos_token, config_.eos_token, config_.pad_token,
                                                   config_.unk_token};
  for (const auto& extra : config_.additional_special_tokens) named.emplace_back(extra);
  for (const auto& token : named) {
    if (auto id = special_id(token)) special_ids_.insert(*id);
  }
  // transformers' Llama/Gemma fast tokenizers rebuild the post-processor from add_bos_token (default true) and
  // add_eos_token (default false) in tokenizer_config.json; do the same so ids match AutoTokenizer.
  const std::string& cls = config_.tokenizer_class;
  const bool llama_like = cls == "LlamaTokenizer" || cls == "LlamaTokenizerFast" || cls == "CodeLlamaTokenizer" ||
                          cls == "CodeLlamaTokenizerFast" || cls == "GemmaTokenizer" || cls == "GemmaTokenizerFast";
  if (llama_like) {
    const bool add_bos = config_.add_bos_token.value_or(true), add_eos = config_.add_eos_token.value_or(false);
    std::vector<int32_t> bos, eos;
    if (add_bos) {
      auto id = bos_token_id();
      VERL_CHECK(id.has_value(), "tokenizer", cls, ": add_bos_token is true but bos_token is missing or not in the vocab");
      bos.push_back(*id);
    }
    if (add_eos) {
      auto id = eos_token_id();
      VERL_CHECK(id.has_value(), "tokenizer", cls, ": add_eos_token is true but eos_token is missing or not in the vocab");
      eos.push_back(*id);
    }
    pipeline_.post_processor = make_bos_eos_processor(std::move(bos), std::move(eos));
  }
  // transformers 5 (what verl 0.9 runs) builds LlamaTokenizer from the file's vocab and merges with a pipeline of
  // its own, whatever tokenizer.json says: no normalizer, a Metaspace pre-tokenizer that does not split and
  // prepends "▁" unless the text already starts with one (add_prefix_space, default true: "always" when the
  // config says legacy, else "first"; false: "never"), and the SentencePiece decoder, stripping the prefix space
  // only when it was added. (The file's Prepend + Replace normalizer would give text that starts with spaces one
  // "▁" more.)
  if (cls == "LlamaTokenizer" || cls == "LlamaTokenizerFast") {
    const bool prefix = config_.add_prefix_space.value_or(true);
    const std::string scheme = !prefix ? "never" : config_.legacy.value_or(false) ? "always" : "first";
    const std::string where = "transformers' LlamaTokenizer pipeline";
    pipeline_.normalizer.reset();
    pipeline_.pre_tokenizer = make_pre_tokenizer(
        {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}, {"split", false}}, where);
    nlohmann::json steps = nlohmann::json::array(
        {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}, {{"type", "ByteFallback"}},
         {{"type", "Fuse"}}});
    if (prefix) steps.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    pipeline_.decoder = make_decoder({{"type", "Sequence"}, {"decoders", steps}}, where);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const size_t bad = find_invalid_utf8(text);
  VERL_CHECK(bad == std::string::npos, "tokenizer", "input is not valid UTF-8 (invalid byte 0x", std::hex,
             static_cast<int>(static_cast<unsigned char>(text[bad < text.size() ? bad : 0])), std::dec,
             " at byte offset ", bad, ")");
  std::vector<int32_t> ids;
  std::vector<Piece> pieces;
  bool at_start = true;  // no added token has been seen yet: the next plain text starts the input
  for (Segment& raw : pipeline_.added_tokens->split(text, /*normalized_tokens=*/false)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      at_start = false;
      continue;
    }
    const std::string normalized =
        pipeline_.normalizer ? pipeline_.normalizer->normalize(raw.text) : std::move(raw.text);
    for (Segment& segment : pipeline_.added_tokens->split(normalized, /*normalized_tokens=*/true)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        at_start = false;
        continue;
      }
      if (segment.text.empty()) continue;  // e.g. a normalizer that strips everything
      pieces.clear();
      pieces.push_back(Piece{std::move(segment.text), at_start});
      at_start = false;
      if (pipeline_.pre_tokenizer) pipeline_.pre_tokenizer->pre_tokenize(pieces);
      for (const Piece& piece : pieces) pipeline_.model->encode_word(piece.text, ids);
    }
  }
  if (pipeline_.post_processor) return pipeline_.post_processor->process(std::move(ids), add_special_tokens);
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (skip_special_tokens && is_special(id)) continue;
    if (const AddedToken* added = pipeline_.added_tokens->by_id(id)) {
      tokens.push_back(added->content);
    } else if (const std::string* token = pipeline_.model->id_to_token(id)) {
      tokens.push_back(*token);
    }
  }
  if (pipeline_.decoder) return pipeline_.decoder->decode(std::move(tokens));
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* added = pipeline_.added_tokens->by_content(token)) return added->id;
  return pipeline_.model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* added = pipeline_.added_tokens->by_id(id)) return added->content;
  if (const std::string* token = pipeline_.model->id_to_token(id)) return *token;
  return std::nullopt;
}

size_t Tokenizer::vocab_size() const {
  size_t limit = pipeline_.model->id_limit();
  for (const AddedToken& token : pipeline_.added_tokens->tokens()) {
    limit = std::max(limit, static_cast<size_t>(token.id) + 1);
  }
  return limit;
}

std::optional<int32_t> Tokenizer::special_id(const std::optional<std::string>& token) const {
  if (!token) return std::nullopt;
  return token_to_id(*token);
}

std::optional<int32_t> Tokenizer::bos_token_id() const { return special_id(config_.bos_token); }
std::optional<int32_t> Tokenizer::eos_token_id() const { return special_id(config_.eos_token); }
std::optional<int32_t> Tokenizer::pad_token_id() const { return special_id(config_.pad_token); }

std::vector<int32_t> Tokenizer::eos_token_ids() const {
  std::vector<int32_t> ids = config_.generation_eos_token_ids;
  if (auto eos = eos_token_id()) {
    if (std::find(ids.begin(), ids.end(), *eos) == ids.end()) ids.push_back(*eos);
  }
  return ids;
}

void Tokenizer::set_chat_template(std::string chat_template, std::string source) {
  config_.chat_template = std::move(chat_template);
  config_.chat_template_file = std::move(source);
}

Tokenizer load_model_tokenizer(const std::string& model_dir, const std::optional<std::string>& custom_chat_template,
                               const std::string& key) {
  Tokenizer tokenizer = Tokenizer::from_folder(model_dir);
  if (custom_chat_template) tokenizer.set_chat_template(*custom_chat_template, key);
  return tokenizer;
}

}  // namespace verl::tokenizer
