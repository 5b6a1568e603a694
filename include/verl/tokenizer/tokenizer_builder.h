// Writes a small byte-level BPE tokenizer folder that this module and Hugging Face both read
// (tokenizer.json + tokenizer_config.json + special_tokens_map.json): the embedded default's tokenizer.
//
// The vocabulary holds one token per byte of `alphabet` (GPT-2's byte-to-character table, as every byte-level
// BPE does), one token per `word`, reached through merges found by running BPE itself: while a word does not
// encode to one token, the merge of its first two current symbols is appended (lowest priority), so adding a
// word never changes how earlier words encode. Special tokens follow as added tokens. Text outside the
// alphabet cannot be encoded (BPE without unk_token drops it), so the alphabet should cover the task's text.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace verl::tokenizer {

struct ByteLevelBPESpec {
  std::string alphabet;                 // distinct bytes, each one token (ids in this order, from 0)
  std::vector<std::string> words;       // pre-tokenizer chunks (raw text such as " after") made single tokens
  std::vector<std::string> special_tokens;  // added tokens, ids after the vocabulary
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

struct BuiltVocab {
  std::vector<std::string> tokens;                            // byte-level text of each id (vocab, no specials)
  std::vector<std::pair<std::string, std::string>> merges;    // in rank order
};
BuiltVocab build_byte_level_vocab(const ByteLevelBPESpec& spec);

// Writes DIR/tokenizer.json, DIR/tokenizer_config.json and DIR/special_tokens_map.json (DIR is created).
// Returns the total vocabulary size (base tokens + special tokens).
int64_t write_byte_level_bpe_folder(const std::string& dir, const ByteLevelBPESpec& spec);

}  // namespace verl::tokenizer
