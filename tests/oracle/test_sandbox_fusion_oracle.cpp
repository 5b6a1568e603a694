// The code data sources' reward through a SandboxFusion service (sandbox_fusion.h) against verl 0.9.1's
// sandbox_fusion.compute_score, both sending to one tests/support/fake_sandbox_fusion.py: the cases of
// tests/oracle/sandbox_fusion_oracle.py (prime_code's programs and problems, the fences only sandbox_fusion reads,
// assert cases, inputs that are not strings, malformed test cases and every failure of the service).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/code_score_cases.h"
#include "support/fake_sandbox_fusion.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/reward/scorers/sandbox_fusion.h"

namespace verl::reward {
namespace {

const std::string kSandboxFusionOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/sandbox_fusion_oracle.py";

TEST(SandboxFusionOracle, ScoresEqualVerls) {
  test::FakeSandboxFusion service("--memory-limit-mb 1024");
  const test::CommandResult r =
      test::run_command(test::test_python() + "'" + kSandboxFusionOracle + "' cases '" + service.url() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test::test_python_missing_hint();
  const nlohmann::json cases = nlohmann::json::parse(r.out);
  ASSERT_GT(cases.size(), 150u);

  // As a run scores them: one batch, 4 rows at a time.
  auto client = std::make_shared<const SandboxFusionClient>(SandboxFusionOptions{service.url(), 64, 1024});
  std::vector<ScoreCall> calls;
  for (const nlohmann::json& c : cases) {
    calls.push_back({"taco", c["completion"].get<std::string>(), c["ground_truth"], nlohmann::json()});
  }
  testing::internal::CaptureStderr();  // the service's failures are logged
  const std::vector<ScoreOutcome> outcomes = default_score_batch(4, client)(calls, nullptr);
  const std::string log = testing::internal::GetCapturedStderr();
  const test::CodeScoreTally tally = test::compare_code_scores(cases, outcomes);
  EXPECT_EQ(tally.differing, 0) << log;
  // Every branch is reached: all tests pass, some do, none do.
  EXPECT_GT(tally.full, 50);
  EXPECT_GT(tally.partial, 15);
  EXPECT_GT(tally.zero, 50);
}

}  // namespace
}  // namespace verl::reward
