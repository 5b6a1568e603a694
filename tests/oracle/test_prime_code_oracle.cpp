// The code data sources' reward (prime_code.h) against verl 0.9.1's prime_code, run by
// tests/oracle/prime_code_oracle.py in .venv/test: completions of stdin programs and functions (right, wrong,
// partly right, crashing, endless, and the ways verl reads stdin, prints and compares) scored by both.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/reward/scorers/default_compute_score.h"

namespace verl::reward {
namespace {

const std::string kPrimeCodeOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/prime_code_oracle.py";

TEST(PrimeCodeOracle, ScoresEqualVerls) {
  const test::CommandResult r = test::run_command(test::test_python() + "'" + kPrimeCodeOracle + "' cases");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test::test_python_missing_hint();
  const nlohmann::json cases = nlohmann::json::parse(r.out);
  ASSERT_GT(cases.size(), 100u);

  // As a run scores them: one batch, the code checks of 4 calls at a time.
  std::vector<ScoreCall> calls;
  for (const nlohmann::json& c : cases) {
    calls.push_back({"codecontests", c["completion"].get<std::string>(), c["ground_truth"], nlohmann::json()});
  }
  const std::vector<ScoreOutcome> outcomes = default_score_batch(4)(calls, nullptr);
  ASSERT_EQ(outcomes.size(), cases.size());
  int differing = 0, full = 0, partial = 0, zero = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(outcomes[i].result.has_value()) << outcomes[i].error;
    const double score = outcomes[i].result->score, expected = cases[i]["score"].get<double>();
    if (score != expected) {
      ++differing;
      ADD_FAILURE() << cases[i]["name"].get<std::string>() << ": verl.cpp " << score << ", verl " << expected << "\n"
                    << cases[i]["completion"].get<std::string>();
    }
    full += expected == 1.0;
    zero += expected == 0.0;
    partial += expected > 0.0 && expected < 1.0;
  }
  EXPECT_EQ(differing, 0);
  // Every branch is reached: all tests pass, some pass one by one, none pass.
  EXPECT_GT(full, 40);
  EXPECT_GT(partial, 8);
  EXPECT_GT(zero, 20);
}

}  // namespace
}  // namespace verl::reward
