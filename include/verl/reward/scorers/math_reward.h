// MATH rule reward, as verl/utils/reward_score/math_reward.py (lm-eval-harness hendrycks_math; reference
// spec §6.4): the last \boxed{...} of the solution, normalised by strip_string, compared with the ground
// truth normalised the same way. Where the Python raises (an assert or an IndexError), these functions
// return std::nullopt, and the callers react as verl's try/except blocks do.
#pragma once

#include <optional>
#include <string>

namespace verl::reward {

// compute_score(solution_str, ground_truth): 1.0 when the last boxed answer is_equiv to the ground truth,
// else 0.0 (also 0.0 where verl catches an exception, e.g. an \fbox answer).
double math_compute_score(const std::string& solution_str, const std::string& ground_truth);

// last_boxed_only_string: with a "\boxed " (space form) anywhere, "\boxed " + the text after the last one up
// to the next "$"; else the last "\boxed" (or, failing that, "\fbox") through its balanced closing brace.
std::optional<std::string> math_last_boxed_only_string(const std::string& text);

// The brace scan both boxed extractors share: text[start..] through the "}" that brings the count of open
// braces back to zero (a "}" before any "{" drives the count negative and is passed over); nullopt if none.
std::optional<std::string> math_through_balanced_brace(const std::string& text, size_t start);

// remove_boxed: the content of "\boxed ..." / "\boxed{...}"; nullopt where verl's asserts fail.
std::optional<std::string> math_remove_boxed(const std::string& boxed);

// is_equiv(a, b): strip_string(a) == strip_string(b); a == b when strip_string raises for either.
// nullopt arguments are Python's None (both None: true; one None: false).
bool math_is_equiv(const std::optional<std::string>& a, const std::optional<std::string>& b);

// strip_string: the 16 normalisation steps in verl's order; nullopt where the Python raises.
std::optional<std::string> math_strip_string(const std::string& text);

// The helpers strip_string calls (nullopt where the Python raises).
std::optional<std::string> math_fix_fracs(const std::string& text);
std::optional<std::string> math_fix_sqrt(const std::string& text);
std::string math_fix_a_slash_b(const std::string& text);
std::optional<std::string> math_remove_right_units(const std::string& text);

}  // namespace verl::reward
