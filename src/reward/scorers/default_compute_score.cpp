#include "verl/reward/scorers/default_compute_score.h"

#include <iterator>
#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/reward/scorers/digit_completion.h"
#include "verl/reward/scorers/gsm8k.h"
#include "verl/reward/scorers/math_dapo.h"
#include "verl/reward/scorers/math_reward.h"
#include "verl/reward/scorers/prime_code.h"
#include "verl/reward/scorers/sandbox_fusion.h"
#include "verl/reward/scorers/search_r1_qa_em.h"

namespace verl::reward {

namespace {

enum class Scorer { kNone, kGsm8k, kMath, kMathDapo, kDigitCompletion, kSearchR1, kPrimeCode };

const char* const kSearchR1Sources[] = {"searchR1_nq",      "searchR1_triviaqa",        "searchR1_popqa",
                                        "searchR1_hotpotqa", "searchR1_2wikimultihopqa", "searchR1_musique",
                                        "searchR1_bamboogle"};

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
  for (const char* name : kSearchR1Sources) {
    if (data_source == name) return Scorer::kSearchR1;
  }
  if (is_prime_code_data_source(data_source)) return Scorer::kPrimeCode;
  return Scorer::kNone;
}

// The verl scorer a data source verl knows but verl.cpp does not port, or "" for an unknown source.
std::string unported_verl_scorer(const std::string& data_source) {
  static const char* const kPrimeMath[] = {"numina_aops_forum", "numina_synthetic_math", "numina_amc_aime",
                                           "numina_synthetic_amc", "numina_cn_k12", "numina_olympiads"};
  for (const char* name : kPrimeMath) {
    if (data_source == name) return "prime_math";
  }
  if (data_source == "hiyouga/geometry3k") return "geo3k";
  return "";
}

}  // namespace

const std::vector<std::string>& rule_scorer_data_sources() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out = {
        "openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500",
        "math_dapo",    "math",           "math_dapo_reasoning",                "aime*",
        "arithmetic",   "digit_completion"};
    out.insert(out.end(), std::begin(kSearchR1Sources), std::end(kSearchR1Sources));
    out.insert(out.end(), prime_code_data_sources().begin(), prime_code_data_sources().end());
    return out;
  }();
  return names;
}

bool has_rule_scorer(const std::string& data_source) { return scorer_for(data_source) != Scorer::kNone; }

bool rule_scorer_runs_code(const std::string& data_source) { return scorer_for(data_source) == Scorer::kPrimeCode; }

ScoreResult default_compute_score_json(const std::string& data_source, const std::string& solution_str,
                                       const nlohmann::json& ground_truth, const nlohmann::json& extra_info,
                                       const SandboxFusionClient* sandbox) {
  const Scorer scorer = scorer_for(data_source);
  if (scorer == Scorer::kSearchR1) return ScoreResult::scalar(search_r1_compute_score(solution_str, ground_truth));
  if (scorer == Scorer::kPrimeCode) {
    return ScoreResult::scalar(sandbox != nullptr ? sandbox->compute_score(solution_str, ground_truth)
                                                  : prime_code_compute_score(solution_str, ground_truth));
  }
  if (scorer != Scorer::kNone) {
    VERL_CHECK(ground_truth.is_string(), "reward",
               "reward_model.ground_truth must be a string for the built-in scorer of data_source '", data_source,
               "', got ", ground_truth.type_name(), " ", ground_truth.dump(),
               " (set custom_reward_function.path for other ground truths)");
  }
  static const std::string kNone;
  return default_compute_score(data_source, solution_str,
                               ground_truth.is_string() ? ground_truth.get_ref<const std::string&>() : kNone,
                               extra_info);
}

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
    case Scorer::kSearchR1:
      return ScoreResult::scalar(search_r1_compute_score(solution_str, nlohmann::json(ground_truth)));  // an error
    case Scorer::kPrimeCode:
      return ScoreResult::scalar(prime_code_compute_score(solution_str, nlohmann::json(ground_truth)));
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
