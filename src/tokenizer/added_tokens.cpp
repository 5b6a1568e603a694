#include "verl/tokenizer/added_tokens.h"

#include <algorithm>

#include "verl/tokenizer/normalizers.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

namespace {

// The code point that ends at `end` (exclusive) in valid UTF-8 text.
int32_t code_point_before(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return next_code_point(text, begin);
}

int32_t code_point_at(std::string_view text, size_t pos) { return next_code_point(text, pos); }

}  // namespace

void AddedVocabulary::Trie::insert(const std::string& key, int32_t token) {
  first_byte[static_cast<unsigned char>(key[0])] = true;
  int32_t node = 0;
  for (unsigned char byte : key) {
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes.size());
      nodes.emplace_back();
      auto& children = nodes[node].children;
      children.insert(std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1})),
                      {byte, next});
    }
    node = next;
  }
  if (nodes[node].token < 0) nodes[node].token = token;  // first token with this content wins
}

int32_t AddedVocabulary::Trie::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
  return (it != children.end() && it->first == byte) ? it->second : -1;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& token = tokens_[i];
    std::string key = token.content;
    if (token.normalized && normalizer) key = normalizer->normalize(key);
    match_text_.push_back(key);
    if (!key.empty()) (token.normalized ? normalized_trie_ : raw_trie_).insert(key, static_cast<int32_t>(i));
    by_id_.emplace(token.id, i);
    by_content_.emplace(token.content, i);
  }
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::by_content(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool normalized_tokens) const {
  const Trie& trie = normalized_tokens ? normalized_trie_ : raw_trie_;
  std::vector<Segment> out;
  if (trie.nodes[0].children.empty()) {
    if (!text.empty()) out.push_back(Segment{std::string(text), -1, false});
    return out;
  }
  // Leftmost-longest, non-overlapping matches (as an Aho-Corasick LeftmostLongest scan), then filters.
  size_t emitted = 0;  // end of what is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t node = trie.child(0, static_cast<unsigned char>(text[pos]));
    if (node < 0) {
      ++pos;
      continue;
    }
    int32_t best = -1;
    size_t best_end = 0;
    size_t end = pos + 1;
    while (true) {
      if (trie.nodes[node].token >= 0) {
        best = trie.nodes[node].token;
        best_end = end;
      }
      if (end >= text.size()) break;
      node = trie.child(node, static_cast<unsigned char>(text[end]));
      if (node < 0) break;
      ++end;
    }
    // A match must also end on a character boundary (added tokens are whole characters).
    if (best < 0 || (best_end < text.size() && (static_cast<unsigned char>(text[best_end]) & 0xC0) == 0x80)) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[best];
    size_t start = pos, stop = best_end;
    pos = best_end;  // matches do not overlap, even when this one is rejected below
    if (token.single_word) {
      const bool space_before = start == 0 || !is_word_char(code_point_before(text, start));
      const bool space_after = stop == text.size() || !is_word_char(code_point_at(text, stop));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) {
      while (start > emitted) {
        size_t prev = start - 1;
        while (prev > emitted && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
        size_t probe = prev;
        if (!is_whitespace(next_code_point(text, probe))) break;
        start = prev;
      }
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t probe = stop;
        if (!is_whitespace(next_code_point(text, probe))) break;
        stop = probe;
      }
      pos = stop;
    }
    if (emitted < start) out.push_back(Segment{std::string(text.substr(emitted, start - emitted)), -1, false});
    out.push_back(Segment{std::string(text.substr(start, stop - start)), token.id, false});
    emitted = stop;
  }
  if (emitted < text.size()) out.push_back(Segment{std::string(text.substr(emitted)), -1, false});
  return out;
}

}  // namespace verl::tokenizer
