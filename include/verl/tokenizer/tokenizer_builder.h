// Writes a small byte-level BPE tokenizer folder that this module and Hugging Face both read
// (tokenizer.json + tokenizer_config.json + special_tokens_map.json): the embedded default's tokenizer.
//
// The vocabulary holds one token per byte of `alphabet` (GPT-2's byte-to-character table, as every byte-level
// BPE does), one token per `word`, reached through merges found by running BPE itself: while a word does not
// encode to one token, the merge of its first two current symbols is appended (lowest priority), so adding a
// word never changes how earlier words encode. Added tokens follow: the non-special ones (e.g. <tool_call>), then
// the special tokens (the top ids). Text outside the
// alphabet cannot be encoded (BPE without unk_token drops it), so the alphabet should cover the task's text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::tokenizer {

struct ByteLevelBPESpec {
  std::string alphabet;                 // distinct bytes, each one token (ids in this order, from 0)
  std::vector<std::string> words;       // pre-tokenizer chunks (raw text such as " after") made single tokens
  std::vector<std::string> added_tokens;    // non-special added tokens (kept by decode(skip_special_tokens),
                                            // as Qwen's <tool_call>), ids after the vocabulary
  std::vector<std::string> special_tokens;  // special added tokens, ids after added_tokens (the top ids)
  std::string eos_token;                // one of special_tokens
  std::string pad_token;                // one of special_tokens
  std::string chat_template;
  int64_t model_max_length = 512;
};

// Printable ASCII (0x20..0x7e) and '\n'.
std::string printable_ascii_alphabet();

// ChatML (Qwen2's format, no default system prompt): <|im_start|>role\ncontent<|im_end|>\n per message,
// and "<|im_start|>assistant\n" with add_generation_prompt.
const std::string& chatml_template();

// chatml_template() plus tools in Qwen 2.5's hermes style (our own wording):
//   - with `tools`, the first turn is a system turn: the system message's content (if the conversation starts
//     with one) + "\n\n", then chatml_tools_listing(tools);
//   - an assistant message renders its content, then each of its tool_calls (an OpenAI {"function": {...}}
//     entry or a bare {"name", "arguments"}) as "<tool_call>\n{\"name\": <name>, \"arguments\": <args>}\n</tool_call>",
//     "\n" between them and after non-empty content; `arguments` a string is written as is, anything else as
//     tojson; other fields (reasoning_content, ids) are ignored;
//   - consecutive `tool` messages are one user turn of "\n<tool_response>\n<content>\n</tool_response>" blocks;
//   - "<|im_start|>assistant\n" with add_generation_prompt.
const std::string& chatml_tools_template();

// The tool part of that system turn for `tools` (a list of schemas), up to the <|im_end|>:
//   "Tools you can call:\n<tools>\n<tool 1 json>\n...\n</tools>\nTo call one, reply with:\n<tool_call>\n
//    {\"name\": <name>, \"arguments\": <args-json>}\n</tool_call>"
// Text equal to what the template writes, so a conversation can be rendered without `tools` by putting
// content + "\n\n" + this listing in its system message (the demo's SFT prompts).
std::string chatml_tools_listing(const nlohmann::ordered_json& tools);

// Python's json.dumps(value, ensure_ascii=False) (", " and ": " separators, keys in the given order): what the
// templates' `tojson` filter writes.
std::string python_json_dumps(const nlohmann::ordered_json& value);

struct BuiltVocab {
  std::vector<std::string> tokens;                            // byte-level text of each id (vocab, no specials)
  std::vector<std::pair<std::string, std::string>> merges;    // in rank order
};
BuiltVocab build_byte_level_vocab(const ByteLevelBPESpec& spec);

// Writes DIR/tokenizer.json, DIR/tokenizer_config.json and DIR/special_tokens_map.json (DIR is created).
// Returns the total vocabulary size (base tokens + special tokens).
int64_t write_byte_level_bpe_folder(const std::string& dir, const ByteLevelBPESpec& spec);

}  // namespace verl::tokenizer
