// The code data sources' reward (prime_code.h) against verl 0.9.1's prime_code, run by
// tests/oracle/prime_code_oracle.py in .venv/test: completions of stdin programs and functions (right, wrong,
// partly right, crashing, endless, and the ways verl reads stdin, prints and compares) scored by both.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/code_score_cases.h"
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
  const test::CodeScoreTally tally = test::compare_code_scores(cases, outcomes);
  EXPECT_EQ(tally.differing, 0);
  // Every branch is reached: all tests pass, some pass one by one, none pass.
  EXPECT_GT(tally.full, 40);
  EXPECT_GT(tally.partial, 8);
  EXPECT_GT(tally.zero, 20);
}

}  // namespace
}  // namespace verl::reward
