#include "verl/reward/scorers/search_r1_qa_em.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "verl/common/error.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward {

namespace {

constexpr const char* kOpenTag = "<answer>";
constexpr const char* kCloseTag = "</answer>";
// verl divides the score by 4 past this many opening or closing tags ("prevent output a lot of </answer>").
constexpr size_t kMaxAnswerTags = 10;

// str.count: non-overlapping occurrences.
size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

bool is_ascii_punctuation(char32_t c) {  // Python's string.punctuation
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// re.sub(r"\b(a|an|the)\b", " ", text): a maximal run of word code points that is exactly an article.
std::u32string replace_articles(const std::u32string& text) {
  std::u32string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!py::is_word(text[i])) {
      out += text[i++];
      continue;
    }
    const size_t begin = i;
    while (i < text.size() && py::is_word(text[i])) ++i;
    const std::u32string word = text.substr(begin, i - begin);
    out += (word == U"a" || word == U"an" || word == U"the") ? std::u32string(U" ") : word;
  }
  return out;
}

// ground_truth["target"] as the list of golden answers (a string is one answer).
std::vector<std::string> golden_answers(const nlohmann::json& ground_truth) {
  const auto fail = [&] {
    VERL_FAIL("reward",
              "reward_model.ground_truth for a searchR1_* data source must be an object whose \"target\" "
              "is a string or a list of strings, got ",
              ground_truth.dump());
  };
  if (!ground_truth.is_object() || !ground_truth.contains("target")) fail();
  const nlohmann::json& target = ground_truth.at("target");
  if (target.is_string()) return {target.get<std::string>()};
  if (!target.is_array()) fail();
  std::vector<std::string> answers;
  for (const nlohmann::json& answer : target) {
    if (!answer.is_string()) fail();
    answers.push_back(answer.get<std::string>());
  }
  return answers;
}

}  // namespace

std::optional<std::string> search_r1_extract_answer(const std::string& solution_str) {
  // re.finditer(r"<answer>(.*?)</answer>", s, re.DOTALL), last match: each match runs from the next opening tag
  // to the first closing tag after it.
  std::optional<std::string> last;
  const std::string open = kOpenTag, close = kCloseTag;
  size_t pos = 0;
  while (true) {
    const size_t begin = solution_str.find(open, pos);
    if (begin == std::string::npos) break;
    const size_t end = solution_str.find(close, begin + open.size());
    if (end == std::string::npos) break;
    last = solution_str.substr(begin + open.size(), end - begin - open.size());
    pos = end + close.size();
  }
  if (!last) return std::nullopt;
  return py::strip(*last);
}

std::string search_r1_normalize_answer(const std::string& text) {
  std::u32string kept;
  for (char32_t c : py::decode(py::lower(text))) {
    if (!is_ascii_punctuation(c)) kept += c;
  }
  std::string out;
  for (const std::string& word : py::split_whitespace(py::encode(replace_articles(kept)))) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

double search_r1_compute_score(const std::string& solution_str, const nlohmann::json& ground_truth) {
  const std::vector<std::string> answers = golden_answers(ground_truth);
  const std::string text = py::sanitize_utf8(solution_str);
  const std::optional<std::string> answer = search_r1_extract_answer(text);
  if (!answer) return 0.0;
  const std::string prediction = search_r1_normalize_answer(*answer);
  for (const std::string& golden : answers) {
    if (search_r1_normalize_answer(py::sanitize_utf8(golden)) != prediction) continue;
    const bool too_many_tags =
        count_occurrences(text, kOpenTag) > kMaxAnswerTags || count_occurrences(text, kCloseTag) > kMaxAnswerTags;
    return too_many_tags ? 0.25 : 1.0;
  }
  return 0.0;
}

}  // namespace verl::reward
