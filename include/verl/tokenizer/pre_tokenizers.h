// Pre-tokenizers of Hugging Face tokenizer.json ("pre_tokenizer" key): split normalized text into the
// pieces the model encodes one by one. Supported types: ByteLevel (with or without GPT-2's regex,
// add_prefix_space), Split (String or PCRE2 Regex pattern; behaviours Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), Digits, Metaspace, Whitespace, WhitespaceSplit,
// Sequence. Any other type is an error naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace verl::tokenizer {

struct Piece {
  std::string text;
  bool at_text_start = false;  // begins at offset 0 of the original input (Metaspace prepend_scheme "first")
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their sub-pieces (empty pieces are dropped).
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config, const std::string& where);

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Splits `text` given the delimiter spans `matches` (sorted, non-overlapping), as HF's
// NormalizedString::split does. With `invert` the matches are the pieces to keep.
std::vector<std::string> split_by_matches(const std::string& text,
                                          const std::vector<std::pair<size_t, size_t>>& matches,
                                          SplitBehavior behavior, bool invert);

}  // namespace verl::tokenizer
