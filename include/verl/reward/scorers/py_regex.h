// A compiled PCRE2 pattern used with Python `re` semantics for the patterns verl's scorers use:
// UTF-8 code points (not bytes), `.` matches everything but "\n", findall / sub scan left to right over
// non-overlapping matches. Python's `\s` and `(?i)` are not PCRE2's: patterns spell out Python's classes
// (see kPythonSpace) instead of relying on them.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace verl::reward::py {

// Python's `\s` on str patterns (str.isspace code points) as a PCRE2 class body, for use inside [...].
extern const char* const kPythonSpace;

class Regex {
 public:
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // re.findall(pattern, text): group `group` of every non-overlapping match (0 = the whole match).
  std::vector<std::string> findall(const std::string& text, int group = 0) const;

  // re.sub(pattern, replacement, text): every non-overlapping match replaced by `replacement`, where
  // "\\1".."\\9" insert that group's text and every other character is literal (Python template subset).
  std::string sub(const std::string& replacement, const std::string& text) const;

 private:
  struct Match {
    std::vector<std::string> groups;  // [0] = whole match; unset groups are ""
    size_t begin = 0;
    size_t end = 0;
  };
  // Next match at or after byte `start`; when `not_empty_at_start` an empty match at `start` is refused.
  bool find(const std::string& text, size_t start, bool not_empty_at_start, Match* match) const;
  template <typename OnMatch>
  size_t scan(const std::string& text, OnMatch on_match) const;

  std::string pattern_;
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace verl::reward::py
