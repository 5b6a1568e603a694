// Test helper for the code rewards' oracles (prime_code, sandbox_fusion): verl's scores of a list of cases
// ({"name", "completion", "ground_truth", "score"}) against verl.cpp's outcomes for them, in the same order.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/reward/scorers/custom_reward_function.h"

namespace verl::test {

struct CodeScoreTally {
  int differing = 0;
  int full = 0;     // verl scored 1
  int partial = 0;  // between 0 and 1
  int zero = 0;
};

// Fails the test once per case scored differently (naming it, with both scores and the completion) and counts
// verl's scores by kind, so that a test can check every branch was reached.
inline CodeScoreTally compare_code_scores(const nlohmann::json& cases,
                                          const std::vector<reward::ScoreOutcome>& outcomes) {
  CodeScoreTally tally;
  EXPECT_EQ(outcomes.size(), cases.size());
  for (size_t i = 0; i < cases.size() && i < outcomes.size(); ++i) {
    if (!outcomes[i].result.has_value()) {
      ADD_FAILURE() << cases[i]["name"].get<std::string>() << ": " << outcomes[i].error;
      ++tally.differing;
      continue;
    }
    const double score = outcomes[i].result->score, expected = cases[i]["score"].get<double>();
    if (score != expected) {
      ++tally.differing;
      ADD_FAILURE() << cases[i]["name"].get<std::string>() << ": verl.cpp " << score << ", verl " << expected << "\n"
                    << cases[i]["completion"].get<std::string>() << "\n"
                    << cases[i]["ground_truth"].dump();
    }
    tally.full += expected == 1.0;
    tally.zero += expected == 0.0;
    tally.partial += expected > 0.0 && expected < 1.0;
  }
  return tally;
}

}  // namespace verl::test
