// A compiled PCRE2 regular expression in UTF + Unicode-properties mode (JIT when available), as the
// tokenizer's Split pre-tokenizer and Replace normalizer/decoder need it. Owns its PCRE2 handles.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace verl::tokenizer {

class Regex {
 public:
  // Throws verl::Error naming `where` (e.g. "tokenizer.json pre_tokenizer Split") when `pattern` is invalid.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match, left to right, as [begin, end) byte offsets. `text` must be valid UTF-8.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  // `text` with every match replaced by `replacement` (taken literally).
  std::string replace_all(std::string_view text, const std::string& replacement) const;

  // A pattern that matches `literal` exactly (for {"String": ...} patterns).
  static std::string escape(const std::string& literal);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string where_;
};

}  // namespace verl::tokenizer
