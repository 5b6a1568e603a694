#include "verl/reward/scorers/default_compute_score.h"

#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/reward/scorers/digit_completion.h"
#include "verl/reward/scorers/gsm8k.h"
#include "verl/reward/scorers/math_dapo.h"
#include "verl/reward/scorers/math_reward.h"

namespace verl::reward {

namespace {

enum class Scorer { kNone, kGsm8k, kMath, kMathDapo, kDigitCompletion };

Scorer scorer_for(const std::string& data_source) {
  if (data_source == "openai/gsm8k" || data_source == "arithmetic") return Scorer::kGsm8k;
  if (data_source == "lighteval/MATH" || data_source == "DigitalLearningGmbH/MATH-lighteval" ||
      data_source == "HuggingFaceH4/MATH-500") {
    return Scorer::kMath;
  }
  if (data_source == "math_dapo" || data_source == "math" || data_source == "math_dapo_reasoning" ||
      starts_with(data_source, "aime")) {
    return Scorer::kMathDapo;
  }
  if (data_source == "digit_completion") return Scorer::kDigitCompletion;
  return Scorer::kNone;
}

// The verl scorer a data source verl knows but verl.cpp does not port, or "" for an unknown source.
std::string unported_verl_scorer(const std::string& data_source) {
  static const char* const kPrimeMath[] = {"numina_aops_forum", "numina_synthetic_math", "numina_amc_aime",
                                           "numina_synthetic_amc", "numina_cn_k12", "numina_olympiads"};
  static const char* const kCode[] = {"codecontests", "apps", "codeforces", "taco"};
  static const char* const kSearch[] = {"searchR1_nq", "searchR1_triviaqa", "searchR1_popqa",
                                        "searchR1_hotpotqa", "searchR1_2wikimultihopqa", "searchR1_musique",
                                        "searchR1_bamboogle"};
  for (const char* name : kPrimeMath) {
    if (data_source == name) return "prime_math";
  }
  for (const char* name : kCode) {
    if (data_source == name) return "sandbox_fusion / prime_code";
  }
  for (const char* name : kSearch) {
    if (data_source == name) return "search_r1_like_qa_em";
  }
  if (data_source == "hiyouga/geometry3k") return "geo3k";
  return "";
}

}  // namespace

const std::vector<std::string>& rule_scorer_data_sources() {
  static const std::vector<std::string> names = {
      "openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500",
      "math_dapo",    "math",           "math_dapo_reasoning",                "aime*",
      "arithmetic",   "digit_completion"};
  return names;
}

bool has_rule_scorer(const std::string& data_source) { return scorer_for(data_source) != Scorer::kNone; }

ScoreResult default_compute_score(const std::string& data_source, const std::string& solution_str,
                                  const std::string& ground_truth, const nlohmann::json& extra_info) {
  switch (scorer_for(data_source)) {
    case Scorer::kGsm8k:
      return ScoreResult::scalar(gsm8k_compute_score(solution_str, ground_truth));
    case Scorer::kMath:
      return ScoreResult::scalar(math_compute_score(solution_str, ground_truth));
    case Scorer::kMathDapo:
      return math_dapo_compute_score(solution_str, ground_truth);
    case Scorer::kDigitCompletion:
      return ScoreResult::scalar(digit_completion_compute_score(solution_str, ground_truth));
    case Scorer::kNone:
      break;
  }
  const std::string verl_scorer = unported_verl_scorer(data_source);
  VERL_FAIL("reward", "no rule reward for data_source '", data_source, "'",
            verl_scorer.empty() ? std::string()
                                : " (verl scores it with " + verl_scorer + ", which verl.cpp does not implement)",
            "; data sources with a built-in scorer: ", join(rule_scorer_data_sources(), ", "),
            " (aime* = any name starting with 'aime'); for others set custom_reward_function.path");
}

ScoreResult default_compute_score(const std::string& data_source, const std::string& solution_str,
                                  const std::string& ground_truth) {
  return default_compute_score(data_source, solution_str, ground_truth, nlohmann::json());
}

}  // namespace verl::reward
