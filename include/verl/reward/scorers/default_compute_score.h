// default_compute_score: the rule scorer for a sample picked by its data_source, as verl's
// verl/utils/reward_score/__init__.py (reference spec §6.2), for the scorers verl.cpp implements:
//
//   openai/gsm8k                                               -> gsm8k (strict)
//   lighteval/MATH, DigitalLearningGmbH/MATH-lighteval,
//   HuggingFaceH4/MATH-500                                     -> math_reward
//   math_dapo, math, math_dapo_reasoning, aime* (prefix)       -> math_dapo ({score: +-1.0, acc, pred})
//   arithmetic                 (verl.cpp synthetic, "#### N")  -> gsm8k (strict)
//   digit_completion           (verl.cpp synthetic, spec §12)  -> digit_completion
//   searchR1_nq, _triviaqa, _popqa, _hotpotqa, _2wikimultihopqa,
//   _musique, _bamboogle                                       -> search_r1_like_qa_em (ground truth {"target": [..]})
//   codecontests, apps, codeforces, taco                       -> sandbox_fusion when a SandboxFusion client is given
//                                                                 (reward.sandbox_fusion.url), else prime_code (the
//                                                                 response's Python run here against the ground
//                                                                 truth's tests)
//
// verl's other sources (prime_math, geo3k) and unknown ones are errors that name the source and list the supported
// ones; custom_reward_function covers them.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "verl/reward/scorers/score_result.h"

namespace verl::reward {

class SandboxFusionClient;

// `ground_truth` is reward_model.ground_truth as the data hold it: a string for every scorer but search-R1's and
// prime_code's (an error names the data source otherwise); prime_code takes its tests as a JSON string or object.
// `extra_info` is the sample's extra_info (a JSON object or null); the built-in scorers do not read it.
// `sandbox`, when given, scores the code data sources (verl's sandbox_fusion_url) instead of prime_code.
ScoreResult default_compute_score_json(const std::string& data_source, const std::string& solution_str,
                                       const nlohmann::json& ground_truth, const nlohmann::json& extra_info,
                                       const SandboxFusionClient* sandbox = nullptr);
// The same with a string ground truth.
ScoreResult default_compute_score(const std::string& data_source, const std::string& solution_str,
                                  const std::string& ground_truth, const nlohmann::json& extra_info);
ScoreResult default_compute_score(const std::string& data_source, const std::string& solution_str,
                                  const std::string& ground_truth);

// Whether default_compute_score has a scorer for this data source.
bool has_rule_scorer(const std::string& data_source);

// Whether its scorer runs the response as code (seconds per call, spent waiting on child processes).
bool rule_scorer_runs_code(const std::string& data_source);

// The supported data sources, for messages ("aime*" stands for the prefix).
const std::vector<std::string>& rule_scorer_data_sources();

}  // namespace verl::reward
