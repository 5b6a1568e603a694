// Search-R1's exact-match reward, as verl/utils/reward_score/search_r1_like_qa_em.py (the searchR1_* data sources):
//
//   answer  = the last <answer>...</answer> of the response (non-greedy, across lines), stripped; none -> 0
//   correct = normalize_answer(answer) equals normalize_answer(t) for some t in ground_truth["target"]
//             (a string or a list of strings); normalize_answer = lower, drop ASCII punctuation, the words
//             a / an / the become " ", whitespace runs become one space, ends trimmed
//   score   = 1.0 when correct (0.25 when the response has more than 10 <answer> or </answer> tags), else 0.0
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace verl::reward {

// extract_solution: the last <answer>...</answer>'s text, stripped, or nullopt where verl returns None.
std::optional<std::string> search_r1_extract_answer(const std::string& solution_str);

// normalize_answer(s), Python's str and re semantics on UTF-8 text.
std::string search_r1_normalize_answer(const std::string& text);

// compute_score(solution_str, ground_truth) with verl's defaults (format_score 0.0, score 1.0). `ground_truth` is
// reward_model.ground_truth: an object whose "target" is a string or a list of strings (an error names any other).
double search_r1_compute_score(const std::string& solution_str, const nlohmann::json& ground_truth);

}  // namespace verl::reward
