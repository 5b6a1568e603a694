// GSM8K rule reward, as verl/utils/reward_score/gsm8k.py (reference spec §6.3).
//
//   s = solution_str[-300:]                                  (code points, only when longer than 300)
//   strict:   last match of  #### (\-?[0-9\.\,]+)  in s, with "," and "$" removed
//   flexible: last match of  (\-?[0-9\.\,]+)  in s that is not "" or "." (no comma removal; if every match
//             is "." the answer stays ".")
//   score = 0 if no answer, `score` if answer == ground_truth (exact string equality), else `format_score`.
#pragma once

#include <optional>
#include <string>

namespace verl::reward {

enum class Gsm8kMethod { kStrict, kFlexible };

// verl's _SOLUTION_CLIP_CHARS: only the last 300 code points are searched.
constexpr size_t kGsm8kSolutionClipChars = 300;

// extract_solution(solution_str, method): the answer text, or nullopt where verl returns None.
std::optional<std::string> gsm8k_extract_solution(const std::string& solution_str,
                                                  Gsm8kMethod method = Gsm8kMethod::kStrict);

// compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0).
double gsm8k_compute_score(const std::string& solution_str, const std::string& ground_truth,
                           Gsm8kMethod method = Gsm8kMethod::kStrict, double format_score = 0.0,
                           double score = 1.0);

// "strict" / "flexible" (an error names any other value).
Gsm8kMethod parse_gsm8k_method(const std::string& name);

}  // namespace verl::reward
