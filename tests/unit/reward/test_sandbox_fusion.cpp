// The code data sources' reward through a SandboxFusion service (sandbox_fusion.h), against
// tests/support/fake_sandbox_fusion.py: the code verl sends, the request body, the scores, the service's failures,
// the limit on requests in flight, and the config keys. tests/oracle/test_sandbox_fusion_oracle.cpp compares the
// scores with verl's own sandbox_fusion.compute_score against the same service.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/config_overrides.h"
#include "support/fake_sandbox_fusion.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/sandbox_fusion.h"

namespace verl::reward {
namespace {

using Json = nlohmann::json;
using test::FakeSandboxFusion;

const Json kSquareTests = {{"inputs", {"2\n", "5\n", "-3\n", "10\n"}}, {"outputs", {"4\n", "25\n", "9\n", "100\n"}}};
const std::string kSquare = "n = int(input())\nprint(n * n)";

std::string fenced(const std::string& code) { return "```python\n" + code + "\n```"; }

std::string extract(const std::string& completion) {
  bool found = false;
  std::string code = sandbox_fusion_extract_solution(completion, &found);
  return found ? code : "<no code>";
}

TEST(SandboxFusion, ExtractsTheCodeAsVerlDoes) {
  EXPECT_EQ(extract("```python\nA\n```"), "\nA\n");
  EXPECT_EQ(extract("```python\nA\n``` then ```python\nB\n```"), "\nB\n");  // the last python fence
  EXPECT_EQ(extract("```python3\nA\n```"), "3\nA\n");                       // "```python" is all verl looks for
  EXPECT_EQ(extract("```py\nA\n```"), "A\n");                               // a language line is dropped
  EXPECT_EQ(extract("``` Rust \nA```"), "A");
  EXPECT_EQ(extract("```\nA\n```"), "\nA\n");        // an empty first line is not a language name
  EXPECT_EQ(extract("```c++\nA\n```"), "c++\nA\n");  // nor is c++
  EXPECT_EQ(extract("```déjà\nA```"), "A");          // Unicode letters are
  EXPECT_EQ(extract("```A```"), "A");                // one line: kept
  EXPECT_EQ(extract("x ```A"), "A");                 // an open fence: the rest
  EXPECT_EQ(extract("print(1)"), "<no code>");
}

TEST(SandboxFusion, RequestsCarryVerlsBodyAndTheTestsAsStdin) {
  const std::string dir = test::make_temp_dir("sandbox_fusion_requests");
  FakeSandboxFusion service("--log " + dir + "/requests.jsonl --memory-limit-mb 512");
  SandboxFusionClient client({service.url(), 4, 512});
  // Inputs that are not strings go as Python's str() of them; a null input sends no stdin.
  const Json tests = {{"inputs", {"7\n", 5, 1.5, Json::array({1, "a", nullptr}), true, nullptr}},
                      {"outputs", {"7\n", "5", "1.5", "[1, 'a', None]", "True", ""}}};
  const std::string echo = "import sys\nprint(sys.stdin.read(), end='')";
  EXPECT_EQ(client.compute_score(fenced(echo), tests), 1.0);
  std::vector<Json> requests = test::read_json_lines(dir + "/requests.jsonl");
  ASSERT_EQ(requests.size(), 6u);
  std::vector<Json> stdins;
  for (const Json& r : requests) {
    EXPECT_EQ(r["compile_timeout"], 10);
    EXPECT_EQ(r["run_timeout"], 10);
    EXPECT_EQ(r["memory_limit_MB"], 512);
    EXPECT_EQ(r["language"], "python");
    stdins.push_back(r["stdin"]);
  }
  std::sort(stdins.begin(), stdins.end());
  EXPECT_EQ(stdins, (std::vector<Json>{nullptr, "1.5", "5", "7\n", "True", "[1, 'a', None]"}));
}

TEST(SandboxFusion, ScoresTheFractionOfTheFirstTenTests) {
  FakeSandboxFusion service;
  SandboxFusionClient client({service.url(), 64, 1024});
  EXPECT_EQ(client.compute_score(fenced(kSquare), kSquareTests), 1.0);
  EXPECT_EQ(client.compute_score(fenced(kSquare), kSquareTests.dump()), 1.0);  // verl's JSON string
  EXPECT_EQ(client.compute_score(fenced("n = int(input())\nprint(n * n if n > 0 else 0)"), kSquareTests), 0.75);
  EXPECT_EQ(client.compute_score(fenced("n = int(input())\nassert n > 0\nprint(n * n)"), kSquareTests), 0.75);
  EXPECT_EQ(client.compute_score(fenced("print("), kSquareTests), 0.0);
  EXPECT_EQ(client.compute_score("n = int(input())\nprint(n * n)", kSquareTests), 0.0);  // no fence
  EXPECT_EQ(client.compute_score(fenced("n = int(input())\nprint(n * n, end='\\n\\n\\n')"), kSquareTests), 1.0);
  EXPECT_EQ(client.compute_score(fenced("n = int(input())\nprint(n * n, end=' ')"), kSquareTests), 0.0);
  // 12 tests: the first 10 count (continuous), all 12 otherwise.
  Json twelve = {{"inputs", Json::array()}, {"outputs", Json::array()}};
  for (int i = 0; i < 12; ++i) {
    twelve["inputs"].push_back(std::to_string(i) + "\n");
    twelve["outputs"].push_back(std::to_string(i < 10 ? i * i : -1) + "\n");
  }
  EXPECT_EQ(client.compute_score(fenced(kSquare), twelve), 1.0);
  EXPECT_DOUBLE_EQ(client.compute_score(fenced(kSquare), twelve, /*continuous=*/false), 10.0 / 12.0);
}

TEST(SandboxFusion, FunctionsAndAssertCasesRunInVerlsHarness) {
  FakeSandboxFusion service;
  SandboxFusionClient client({service.url(), 64, 1024});
  const Json add = {{"fn_name", "add"}, {"inputs", {"1\n2", "3\n4", "[1]\n[2]"}}, {"outputs", {"3", "7", "[1, 2]"}}};
  EXPECT_EQ(client.compute_score(fenced("def add(a, b):\n    return a + b"), add), 1.0);
  EXPECT_EQ(client.compute_score(fenced("class Solution:\n    def add(self, a, b):\n        return a + b"), add), 1.0);
  // The harness's star imports are there for the code (reduce, operator).
  EXPECT_EQ(client.compute_score(fenced("def add(a, b):\n    return reduce(operator.add, [a, b])"), add), 1.0);
  EXPECT_DOUBLE_EQ(client.compute_score(fenced("def add(a, b):\n    return a + b if a != 3 else 0"), add), 2.0 / 3);
  // A missing function prints nothing (and exits 0)... unless the harness's star imports hold the name, as
  // operator's add does here, in verl's harness too.
  EXPECT_EQ(client.compute_score(fenced("def plus(a, b):\n    return a + b"), add), 1.0);
  Json add_up = add;
  add_up["fn_name"] = "add_up";
  EXPECT_EQ(client.compute_score(fenced("def plus(a, b):\n    return a + b"), add_up), 0.0);
  // A tuple prints as JSON, a bool as JSON's true.
  const Json pair = {{"fn_name", "pair"}, {"inputs", {"1\n2"}}, {"outputs", {"[1, 2]"}}};
  EXPECT_EQ(client.compute_score(fenced("def pair(a, b):\n    return (a, b)"), pair), 1.0);
  const Json truth = {{"fn_name", "t"}, {"inputs", {"1"}}, {"outputs", {"true"}}};
  EXPECT_EQ(client.compute_score(fenced("def t(a):\n    return a == 1"), truth), 1.0);
  // assert_case alone: each entry is appended to the code, and any output passes.
  const Json asserts = {{"assert_case", {"assert f(2) == 4", "assert f(3) == 9", "assert f(0) == 1"}}};
  EXPECT_DOUBLE_EQ(client.compute_score(fenced("def f(x):\n    return x * x"), asserts), 2.0 / 3);
}

TEST(SandboxFusion, TheServicesFailuresFailTheTestNotTheRun) {
  FakeSandboxFusion service;
  SandboxFusionClient client({service.url(), 64, 1024});
  const auto score_with = [&](const std::string& directive) {
    return client.compute_score(fenced(kSquare + "\n# sandbox: " + directive), kSquareTests);
  };
  EXPECT_EQ(score_with("http_504_once"), 1.0);  // retried
  for (const std::string directive : {"http_504", "http_500", "not_json", "reply_list", "reply_empty", "sandbox_error",
                                      "compile_timeout", "run_error", "success_no_run"}) {
    EXPECT_EQ(score_with(directive), 0.0) << directive;
  }
  EXPECT_EQ(score_with("http_500 -3"), 0.75) << "only the test whose stdin holds -3";
  // A stdout sent as a JSON number compares as Python's str() of it.
  EXPECT_EQ(score_with("stdout_number"), 1.0);
  // A compile error fails that test and every later one.
  EXPECT_EQ(score_with("compile_error -3"), 0.5);
  // Nothing listening: every test fails.
  SandboxFusionClient nowhere({"http://127.0.0.1:9/run_code", 64, 1024});
  EXPECT_EQ(nowhere.compute_score(fenced(kSquare), kSquareTests), 0.0);
}

TEST(SandboxFusion, TestCasesVerlCannotReadScoreZero) {
  FakeSandboxFusion service;
  SandboxFusionClient client({service.url(), 64, 1024});
  const std::string code = fenced(kSquare);
  for (const Json& tests :
       {Json("not json"), Json("[1, 2]"), Json(nullptr), Json::object(), Json{{"inputs", {"2\n"}}},
        Json{{"inputs", {"2\n"}}, {"outputs", {"4\n", "5\n"}}}, Json{{"inputs", {"2\n"}}, {"outputs", 4}},
        Json{{"inputs", {{"2\n", 1}}}, {"outputs", {{"4\n", 1}}}},
        Json{{"inputs", Json::array()}, {"outputs", Json::array()}},
        Json{{"inputs", {"2\n"}}, {"outputs", {"4\n"}}, {"assert_case", nullptr}},
        Json{{"inputs", {"2\n"}}, {"outputs", {"4\n"}}, {"assert_case", {"x = 1", "y = 2"}}},
        Json{{"inputs", {"2\n"}}, {"outputs", {"4\n"}}, {"assert_case", {7}}}}) {
    EXPECT_EQ(client.compute_score(code, tests), 0.0) << tests.dump();
  }
  // Strings where lists belong: verl runs each character as a test ("2" passes, "\n" does not).
  EXPECT_EQ(client.compute_score(code, Json{{"inputs", "2\n"}, {"outputs", "4\n"}}), 0.5);
}

TEST(SandboxFusion, AtMostMaxConcurrentRequestsAreInFlight) {
  // 3 rows of 4 tests, each held 0.3 s by the service, scored as a run scores them (3 rows at once).
  const std::string slow = fenced(kSquare + "\n# sandbox: sleep_0.3");
  std::vector<ScoreCall> calls(3, ScoreCall{"codeforces", slow, kSquareTests, Json()});
  for (const int64_t limit : {2, 12}) {
    FakeSandboxFusion service;
    auto client = std::make_shared<const SandboxFusionClient>(SandboxFusionOptions{service.url(), limit, 1024});
    for (const ScoreOutcome& outcome : default_score_batch(3, client)(calls, nullptr)) {
      ASSERT_TRUE(outcome.result.has_value()) << outcome.error;
      EXPECT_EQ(outcome.result->score, 1.0);
    }
    const Json stats = Json::parse(service.stats());
    EXPECT_EQ(stats["requests"], 12);
    if (limit == 2) {
      EXPECT_EQ(stats["max_in_flight"], 2);
    } else {
      EXPECT_GT(stats["max_in_flight"].get<int>(), 4) << "rows and their tests run at once";
    }
  }
}

TEST(SandboxFusionConfig, KeysAndTheirLegacySection) {
  using test::config_error_of;
  using test::load_with_overrides;
  const config::SandboxFusionConfig defaults = load_with_overrides({}).ppo.reward_model.sandbox_fusion;
  EXPECT_FALSE(defaults.url.has_value());
  EXPECT_EQ(defaults.max_concurrent, 64);
  EXPECT_EQ(defaults.memory_limit_mb, 1024);
  const config::SandboxFusionConfig set =
      load_with_overrides({"reward.sandbox_fusion.url=http://sandbox:8080/run_code",
                           "reward.sandbox_fusion.max_concurrent=8", "reward.sandbox_fusion.memory_limit_mb=256"})
          .ppo.reward_model.sandbox_fusion;
  EXPECT_EQ(set.url, "http://sandbox:8080/run_code");
  EXPECT_EQ(set.max_concurrent, 8);
  EXPECT_EQ(set.memory_limit_mb, 256);
  // verl's migration: the legacy section replaces the new one when any of its keys is set.
  const config::SandboxFusionConfig legacy = load_with_overrides({"sandbox_fusion.url=https://faas.example/run_code",
                                                                  "reward.sandbox_fusion.max_concurrent=8"})
                                                 .ppo.reward_model.sandbox_fusion;
  EXPECT_EQ(legacy.url, "https://faas.example/run_code");
  EXPECT_EQ(legacy.max_concurrent, 64);
  EXPECT_EQ(config_error_of({"reward.sandbox_fusion.url=localhost:8080"}),
            "[config] config key 'reward.sandbox_fusion.url' expects the sandbox's run_code URL (http://... or "
            "https://...), got 'localhost:8080'");
  EXPECT_EQ(config_error_of({"sandbox_fusion.max_concurrent=0"}),
            "[config] config key 'sandbox_fusion.max_concurrent' must be >= 1, got 0");
}

}  // namespace
}  // namespace verl::reward
