#include "verl/tokenizer/tokenizer_builder.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

namespace {

// Byte-level text of each byte of `raw`, one symbol per byte.
std::vector<std::string> byte_symbols(const std::string& raw) {
  std::vector<std::string> out;
  for (unsigned char c : raw) out.push_back(byte_to_unicode(c));
  return out;
}

// BPE on one pre-tokenized chunk: repeatedly merge the adjacent pair with the lowest rank (the leftmost on
// ties), as Hugging Face tokenizers does.
std::vector<std::string> apply_merges(std::vector<std::string> symbols,
                                      const std::map<std::pair<std::string, std::string>, size_t>& ranks) {
  while (symbols.size() > 1) {
    size_t best = std::numeric_limits<size_t>::max(), at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = ranks.find({symbols[i], symbols[i + 1]});
      if (it != ranks.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == std::numeric_limits<size_t>::max()) break;
    symbols[at] += symbols[at + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  return symbols;
}

}  // namespace

std::string printable_ascii_alphabet() {
  std::string out;
  for (int c = 0x20; c < 0x7f; ++c) out += static_cast<char>(c);
  out += '\n';
  return out;
}

const std::string& chatml_template() {
  static const std::string text =
      "{%- for message in messages %}"
      "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
      "{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  return text;
}

namespace {

const char* const kToolsHeader = "Tools you can call:\n<tools>";
const char* const kToolsFooter =
    "\n</tools>\nTo call one, reply with:\n<tool_call>\n{\"name\": <name>, \"arguments\": <args-json>}\n</tool_call>";

// `text` as a single-quoted Jinja string literal.
std::string jinja_literal(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "'";
}

void append_json_string(const std::string& text, std::string& out) {
  // nlohmann escapes as json.dumps(ensure_ascii=False) does: \" \\ \b \f \n \r \t, other controls \u00XX,
  // UTF-8 kept.
  out += nlohmann::ordered_json(text).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
}

void append_python_json(const nlohmann::ordered_json& value, std::string& out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      append_json_string(it.key(), out);
      out += ": ";
      append_python_json(it.value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      append_python_json(value[i], out);
    }
    out += ']';
  } else if (value.is_string()) {
    append_json_string(value.get<std::string>(), out);
  } else {
    VERL_CHECK(!value.is_number_float() || std::isfinite(value.get<double>()), "tokenizer",
               "python_json_dumps: a non-finite number has no JSON text");
    out += value.dump();  // null, true / false, integers; floats in shortest round-trip form as Python's repr
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  append_python_json(value, out);
  return out;
}

std::string chatml_tools_listing(const nlohmann::ordered_json& tools) {
  VERL_CHECK(tools.is_array(), "tokenizer", "tools must be a list of schemas, got ", tools.dump());
  std::string out = kToolsHeader;
  for (const auto& tool : tools) out += "\n" + python_json_dumps(tool);
  return out + kToolsFooter;
}

const std::string& chatml_tools_template() {
  static const std::string text =
      // The system turn with the tool listing.
      "{%- if tools %}"
      "{{- '<|im_start|>system\\n' }}"
      "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
      "{{- " + jinja_literal(kToolsHeader) + " }}"
      "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
      "{{- " + jinja_literal(kToolsFooter) + " + '<|im_end|>\\n' }}"
      "{%- endif %}"
      "{%- for message in messages %}"
      // The system message went into the tools' system turn.
      "{%- if message['role'] == 'system' and loop.first and tools %}"
      // Consecutive tool results: one user turn.
      "{%- elif message['role'] == 'tool' %}"
      "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
      "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}"
      "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
      // Assistant turns: content, then the calls.
      "{%- elif message['role'] == 'assistant' %}"
      "{{- '<|im_start|>assistant\\n' }}"
      "{%- if message['content'] %}{{- message['content'] }}{%- endif %}"
      "{%- if message['tool_calls'] %}"
      "{%- for call in message['tool_calls'] %}"
      "{%- set fn = call['function'] if call['function'] is defined else call %}"
      "{%- if not loop.first or message['content'] %}{{- '\\n' }}{%- endif %}"
      "{{- '<tool_call>\\n{\"name\": ' + (fn['name'] | tojson) + ', \"arguments\": ' }}"
      "{%- if fn['arguments'] is string %}{{- fn['arguments'] }}{%- else %}{{- fn['arguments'] | tojson }}{%- endif %}"
      "{{- '}\\n</tool_call>' }}"
      "{%- endfor %}"
      "{%- endif %}"
      "{{- '<|im_end|>\\n' }}"
      "{%- else %}"
      "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
      "{%- endif %}"
      "{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  return text;
}

BuiltVocab build_byte_level_vocab(const ByteLevelBPESpec& spec) {
  BuiltVocab vocab;
  std::set<std::string> known;
  std::set<unsigned char> bytes;
  for (unsigned char c : spec.alphabet) {
    VERL_CHECK(bytes.insert(c).second, "tokenizer", "byte-level alphabet repeats byte ", static_cast<int>(c));
    vocab.tokens.push_back(byte_to_unicode(c));
    known.insert(vocab.tokens.back());
  }
  std::map<std::pair<std::string, std::string>, size_t> ranks;
  for (const auto& word : spec.words) {
    for (unsigned char c : word) {
      VERL_CHECK(bytes.count(c) > 0, "tokenizer", "word '", word, "' uses byte ", static_cast<int>(c),
                 " that is not in the alphabet");
    }
    while (true) {
      std::vector<std::string> symbols = apply_merges(byte_symbols(word), ranks);
      if (symbols.size() <= 1) break;
      std::pair<std::string, std::string> merge{symbols[0], symbols[1]};
      ranks.emplace(merge, vocab.merges.size());
      vocab.merges.push_back(merge);
      std::string merged = symbols[0] + symbols[1];
      if (known.insert(merged).second) vocab.tokens.push_back(merged);
    }
  }
  return vocab;
}

int64_t write_byte_level_bpe_folder(const std::string& dir, const ByteLevelBPESpec& spec) {
  BuiltVocab vocab = build_byte_level_vocab(spec);
  auto is_special = [&](const std::string& token) {
    for (const auto& s : spec.special_tokens) {
      if (s == token) return true;
    }
    return false;
  };
  VERL_CHECK(is_special(spec.eos_token), "tokenizer", "eos token '", spec.eos_token, "' is not a special token");
  VERL_CHECK(is_special(spec.pad_token), "tokenizer", "pad token '", spec.pad_token, "' is not a special token");

  nlohmann::ordered_json vocab_json = nlohmann::ordered_json::object();
  for (size_t i = 0; i < vocab.tokens.size(); ++i) vocab_json[vocab.tokens[i]] = i;
  nlohmann::ordered_json merges = nlohmann::ordered_json::array();
  for (const auto& m : vocab.merges) merges.push_back(m.first + " " + m.second);
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  nlohmann::ordered_json added_decoder = nlohmann::ordered_json::object();
  int64_t next_id = static_cast<int64_t>(vocab.tokens.size());
  std::vector<std::pair<std::string, bool>> added_tokens;  // (content, special): non-special first
  for (const auto& token : spec.added_tokens) {
    VERL_CHECK(!is_special(token), "tokenizer", "token '", token, "' is both an added and a special token");
    added_tokens.emplace_back(token, false);
  }
  for (const auto& token : spec.special_tokens) added_tokens.emplace_back(token, true);
  for (const auto& [token, special] : added_tokens) {
    nlohmann::ordered_json entry = {{"id", next_id},         {"content", token}, {"single_word", false},
                                    {"lstrip", false},       {"rstrip", false},  {"normalized", false},
                                    {"special", special}};
    added.push_back(entry);
    nlohmann::ordered_json decoder_entry = entry;
    decoder_entry.erase("id");
    added_decoder[std::to_string(next_id)] = decoder_entry;
    ++next_id;
  }
  nlohmann::ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  nlohmann::ordered_json tokenizer_json = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab_json},
        {"merges", merges}}},
  };
  nlohmann::ordered_json config = {
      {"add_bos_token", false},
      {"add_prefix_space", false},
      {"added_tokens_decoder", added_decoder},
      {"additional_special_tokens", nlohmann::ordered_json::array()},
      {"bos_token", nullptr},
      {"chat_template", spec.chat_template},
      {"clean_up_tokenization_spaces", false},
      {"eos_token", spec.eos_token},
      {"errors", "replace"},
      {"model_max_length", spec.model_max_length},
      {"pad_token", spec.pad_token},
      {"split_special_tokens", false},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"unk_token", nullptr},
  };
  nlohmann::ordered_json special_map = {{"eos_token", spec.eos_token}, {"pad_token", spec.pad_token}};

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  VERL_CHECK(!ec, "tokenizer", dir, ": cannot create folder (", ec.message(), ")");
  write_file_atomic(dir + "/tokenizer.json", tokenizer_json.dump(2) + "\n");
  write_file_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
  write_file_atomic(dir + "/special_tokens_map.json", special_map.dump(2) + "\n");
  return next_id;
}

}  // namespace verl::tokenizer
