#include "verl/reward/scorers/gsm8k.h"

#include "verl/common/error.h"
#include "verl/reward/scorers/py_regex.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward {

std::optional<std::string> gsm8k_extract_solution(const std::string& solution_str, Gsm8kMethod method) {
  static const py::Regex strict_pattern("#### (\\-?[0-9\\.\\,]+)");
  static const py::Regex flexible_pattern("(\\-?[0-9\\.\\,]+)");

  const std::string text = py::tail(py::sanitize_utf8(solution_str), kGsm8kSolutionClipChars);
  if (method == Gsm8kMethod::kStrict) {
    const std::vector<std::string> found = strict_pattern.findall(text, 1);
    if (found.empty()) return std::nullopt;
    // The "$" removal never changes anything (the pattern cannot capture "$"); kept as verl has it.
    return py::replace(py::replace(found.back(), ",", ""), "$", "");
  }
  const std::vector<std::string> found = flexible_pattern.findall(text, 1);
  if (found.empty()) return std::nullopt;
  // verl's loop `for final_answer in reversed(answer): if final_answer not in ["", "."]: break` leaves the
  // loop variable at the first element when nothing qualifies.
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    if (*it != "" && *it != ".") return *it;
  }
  return found.front();
}

double gsm8k_compute_score(const std::string& solution_str, const std::string& ground_truth, Gsm8kMethod method,
                           double format_score, double score) {
  const std::optional<std::string> answer = gsm8k_extract_solution(solution_str, method);
  if (!answer) return 0.0;
  return *answer == ground_truth ? score : format_score;
}

Gsm8kMethod parse_gsm8k_method(const std::string& name) {
  if (name == "strict") return Gsm8kMethod::kStrict;
  if (name == "flexible") return Gsm8kMethod::kFlexible;
  VERL_FAIL("reward", "unknown gsm8k extraction method '", name, "'; expected 'strict' or 'flexible'");
}

}  // namespace verl::reward
