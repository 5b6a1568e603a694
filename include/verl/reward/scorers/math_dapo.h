// DAPO math reward, as verl/utils/reward_score/math_dapo.py (Minerva-style answer checking; used for the
// data sources math_dapo, math, math_dapo_reasoning and aime*):
//
//   s = solution_str[-300:]
//   default:            pred = normalize_final_answer(last match of (?i)Answer\s*:\s*([^\n]+) in s,
//                                                     or "[INVALID]" when there is none)
//                       correct = pred == normalize_final_answer(ground_truth)
//   strict_box_verify:  pred = content of the last \boxed{...} in s[-100:] (or after a pause token),
//                       correct = pred == ground_truth (no normalisation)
//   result:             {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verl/reward/scorers/score_result.h"

namespace verl::reward {

struct MathDapoOptions {
  bool strict_box_verify = false;
  // Python's pause_tokens_index (exactly 4 indices when set); only used with strict_box_verify.
  std::optional<std::vector<long long>> pause_tokens_index;
};

// compute_score(solution_str, ground_truth, strict_box_verify=False, pause_tokens_index=None).
// `pred` is a string, or None (std::monostate) when strict_box_verify finds no box.
ScoreResult math_dapo_compute_score(const std::string& solution_str, const std::string& ground_truth,
                                    const MathDapoOptions& options = {});

// normalize_final_answer: text after the last "=", verl's substitution and removal lists, the TeX regex
// rewrites (\text{}, \textbf{}, \overline{}, \boxed{}, $...$, \fracab, \sqrta), commas dropped from pure
// digit strings, then strip().
std::string math_dapo_normalize_final_answer(const std::string& final_answer);

// is_correct_minerva(solution_str, gt) with gt_need_extract=False: (pred == normalized gt, pred).
std::pair<bool, std::string> math_dapo_is_correct_minerva(const std::string& solution_str,
                                                          const std::string& ground_truth);

// The math_dapo variant of last_boxed_only_string: only "\boxed{" counts (no "\boxed " or "\fbox" forms).
std::optional<std::string> math_dapo_last_boxed_only_string(const std::string& text);

}  // namespace verl::reward
