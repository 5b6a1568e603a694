// Added tokens (tokenizer.json "added_tokens"): strings matched in the text before the model sees it,
// leftmost-longest, honouring single_word (must not touch a word character on either side), lstrip / rstrip
// (swallow the whitespace on that side) and normalized (matched on normalized text, else on the raw text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace verl::tokenizer {

class Normalizer;

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A stretch of text: an added token (id >= 0) or plain text for the normalizer and model (id == -1).
struct Segment {
  std::string text;
  int32_t id = -1;
  bool at_text_start = false;
};

class AddedVocabulary {
 public:
  // `normalizer` (may be null) normalizes the content of tokens with normalized=true.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` on the tokens with normalized == `normalized_tokens`; plain segments keep their text.
  std::vector<Segment> split(std::string_view text, bool normalized_tokens) const;

  const AddedToken* by_id(int32_t id) const;
  const AddedToken* by_content(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t token = -1;                                       // index into tokens_
    };
    std::vector<Node> nodes{1};
    bool first_byte[256] = {};  // bytes that start some token: most text positions are rejected here
    void insert(const std::string& key, int32_t token);
    int32_t child(int32_t node, unsigned char byte) const;
  };
  std::vector<AddedToken> tokens_;
  std::vector<std::string> match_text_;  // content, normalized for normalized tokens
  Trie raw_trie_, normalized_trie_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
};

}  // namespace verl::tokenizer
