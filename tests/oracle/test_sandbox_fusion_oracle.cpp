// The code data sources' reward through a SandboxFusion service (sandbox_fusion.h) against verl 0.9.1's
// sandbox_fusion.compute_score, both sending to one tests/support/fake_sandbox_fusion.py: the cases of
// tests/oracle/sandbox_fusion_oracle.py (prime_code's programs and problems, the fences only sandbox_fusion reads,
// assert cases, inputs that are not strings, malformed test cases and every failure of the service).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

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
  ASSERT_EQ(outcomes.size(), cases.size());
  int differing = 0, full = 0, partial = 0, zero = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(outcomes[i].result.has_value()) << outcomes[i].error;
    const double score = outcomes[i].result->score, expected = cases[i]["score"].get<double>();
    if (score != expected) {
      ++differing;
      ADD_FAILURE() << cases[i]["name"].get<std::string>() << ": verl.cpp " << score << ", verl " << expected << "\n"
                    << cases[i]["completion"].get<std::string>() << "\n"
                    << cases[i]["ground_truth"].dump();
    }
    full += expected == 1.0;
    zero += expected == 0.0;
    partial += expected > 0.0 && expected < 1.0;
  }
  EXPECT_EQ(differing, 0) << log;
  // Every branch is reached: all tests pass, some do, none do.
  EXPECT_GT(full, 50);
  EXPECT_GT(partial, 15);
  EXPECT_GT(zero, 50);
}

}  // namespace
}  // namespace verl::reward
