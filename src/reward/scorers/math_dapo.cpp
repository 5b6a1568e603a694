#include "verl/reward/scorers/math_dapo.h"

#include "verl/common/error.h"
#include "verl/reward/scorers/math_reward.h"
#include "verl/reward/scorers/py_regex.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward {

namespace {

constexpr size_t kSolutionClipChars = 300;  // "The longest answer in MATH-500 has 159 characters"
constexpr long long kStrictBoxWindow = 100;

// (before, after) pairs applied in order with str.replace.
const std::pair<const char*, const char*> kSubstitutions[] = {
    {"an ", ""},    {"a ", ""},         {".$", "$"},        {"\\$", ""},       {"\\ ", ""},
    {" ", ""},      {"mbox", "text"},   {",\\text{and}", ","}, {"\\text{and}", ","}, {"\\text{m}", "\\text{}"},
};

// Removed in order with str.replace(expr, ""). "\n" below is a real line break, as in the Python source.
const char* const kRemovedExpressions[] = {
    "square",   "ways",       "integers",  "dollars",       "mph",       "inches",     "hours",
    "km",       "units",      "\\ldots",   "sue",           "points",    "feet",       "minutes",
    "digits",   "cents",      "degrees",   "cm",            "gm",        "pounds",     "meters",
    "meals",    "edges",      "students",  "childrentickets", "multiples", "\\text{s}", "\\text{.}",
    "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", "\\mathrm{th}", "^\\circ",
    "^{\\circ}", "\\;",       ",\\!",      "{,}",           "\"",        "\\dots",
};

std::optional<std::string> remove_boxed(const std::string& boxed) {
  const std::string left = "\\boxed{";
  if (boxed.compare(0, left.size(), left) != 0 || boxed.back() != '}') return std::nullopt;
  return boxed.substr(left.size(), boxed.size() - left.size() - 1);
}

// is_correct_strict_box(pred, gt, pause_tokens_index): (1 or -1, the boxed content or None).
std::pair<bool, std::optional<std::string>> is_correct_strict_box(const std::string& pred,
                                                                  const std::string& ground_truth,
                                                                  const MathDapoOptions& options) {
  std::string window;
  if (options.pause_tokens_index) {
    VERL_CHECK(options.pause_tokens_index->size() == 4, "reward",
               "math_dapo pause_tokens_index must hold 4 indices, got ", options.pause_tokens_index->size());
    window = py::slice_from(pred, options.pause_tokens_index->back() - kStrictBoxWindow);
  } else {
    window = py::slice_from(pred, -kStrictBoxWindow);
  }
  const std::optional<std::string> boxed = math_dapo_last_boxed_only_string(window);
  const std::optional<std::string> extracted = boxed ? remove_boxed(*boxed) : std::nullopt;
  return {extracted && *extracted == ground_truth, extracted};
}

}  // namespace

std::optional<std::string> math_dapo_last_boxed_only_string(const std::string& text) {
  const size_t idx = text.rfind("\\boxed{");
  if (idx == std::string::npos) return std::nullopt;
  return math_through_balanced_brace(text, idx);
}

std::string math_dapo_normalize_final_answer(const std::string& input) {
  static const py::Regex dollars("(.*?)(\\$)(.*?)(\\$)(.*)");
  static const py::Regex text_command("(\\\\text\\{)(.*?)(\\})");
  static const py::Regex textbf_command("(\\\\textbf\\{)(.*?)(\\})");
  static const py::Regex overline_command("(\\\\overline\\{)(.*?)(\\})");
  static const py::Regex boxed_command("(\\\\boxed\\{)(.*)(\\})");
  static const py::Regex short_frac("(frac)([^{])(.)");
  static const py::Regex short_sqrt("(sqrt)([^{])");

  std::string answer = py::split(py::sanitize_utf8(input), "=").back();
  for (const auto& [before, after] : kSubstitutions) answer = py::replace(answer, before, after);
  for (const char* expression : kRemovedExpressions) answer = py::replace(answer, expression, "");

  // Extract and normalise LaTeX math: keep what lies between the first two "$" of each line, then unwrap.
  answer = dollars.sub("$\\3$", answer);
  answer = text_command.sub("\\2", answer);
  answer = textbf_command.sub("\\2", answer);
  answer = overline_command.sub("\\2", answer);
  answer = boxed_command.sub("\\2", answer);
  // Shorthand TeX: \fracab -> \frac{a}{b}, \sqrta -> \sqrt{a}.
  answer = short_frac.sub("frac{\\2}{\\3}", answer);
  answer = short_sqrt.sub("sqrt{\\2}", answer);
  answer = py::replace(answer, "$", "");

  if (py::is_digit(py::replace(answer, ",", ""))) answer = py::replace(answer, ",", "");
  return py::strip(answer);
}

std::pair<bool, std::string> math_dapo_is_correct_minerva(const std::string& solution_str,
                                                          const std::string& ground_truth) {
  // (?i)Answer\s*:\s*([^\n]+) with Python's classes spelled out: under re.IGNORECASE Python lets "s" also
  // match U+017F (long s); no other code point folds onto a letter of "answer".
  static const py::Regex answer_pattern(std::string("[Aa][Nn][Ss\\x{17f}][Ww][Ee][Rr][") + py::kPythonSpace +
                                        "]*:[" + py::kPythonSpace + "]*([^\\n]+)");
  const std::vector<std::string> found = answer_pattern.findall(py::sanitize_utf8(solution_str), 1);
  const std::string pred = math_dapo_normalize_final_answer(found.empty() ? "[INVALID]" : found.back());
  return {pred == math_dapo_normalize_final_answer(ground_truth), pred};
}

ScoreResult math_dapo_compute_score(const std::string& solution_str, const std::string& ground_truth,
                                    const MathDapoOptions& options) {
  const std::string solution = py::tail(py::sanitize_utf8(solution_str), kSolutionClipChars);
  bool correct;
  ExtraValue pred;
  if (options.strict_box_verify) {
    auto [is_correct, extracted] = is_correct_strict_box(solution, ground_truth, options);
    correct = is_correct;
    pred = extracted ? ExtraValue(*extracted) : ExtraValue(std::monostate{});
  } else {
    auto [is_correct, normalized] = math_dapo_is_correct_minerva(solution, ground_truth);
    correct = is_correct;
    pred = normalized;
  }
  ScoreResult result;
  result.score = correct ? 1.0 : -1.0;
  result.is_dict = true;
  result.extra = {{"acc", correct}, {"pred", pred}};
  return result;
}

}  // namespace verl::reward
