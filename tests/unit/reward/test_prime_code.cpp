// The code data sources' reward (prime_code.h) and its Python code runner (python_code_runner.h): what verl runs,
// the test cases it takes, and a runner that survives what a solution does. tests/oracle/test_prime_code_oracle.cpp
// compares the scores with verl's own prime_code.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/prime_code.h"
#include "verl/reward/scorers/python_code_runner.h"

namespace verl::reward {
namespace {

using Json = nlohmann::json;

const Json kSumTests = {{"inputs", {"1 2\n", "3 4\n", "5 -5\n"}}, {"outputs", {"3\n", "7\n", "0\n"}}};
const std::string kSumProgram = "a, b = map(int, input().split())\nprint(a + b)";

std::string prime_code_error_of(const Json& ground_truth) {
  try {
    default_compute_score_json("apps", "```python\nprint(1)\n```", ground_truth, nullptr);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PrimeCode, TheCodeIsAfterTheLastPythonFence) {
  EXPECT_EQ(prime_code_extract_solution("```python\nprint(1)\n```"), "\nprint(1)\n");
  EXPECT_EQ(prime_code_extract_solution("print(1)"), "print(1)");
  EXPECT_EQ(prime_code_extract_solution("```python\na\n```\nthen\n```python\nb\n```\nend"), "\nb\n");
  EXPECT_EQ(prime_code_extract_solution("text ```python\nc"), "\nc");
  EXPECT_EQ(prime_code_extract_solution("```py\nd\n```"), "");  // not a python fence: cut at the first ```
  EXPECT_EQ(prime_code_extract_solution(""), "");
}

TEST(PrimeCode, CodeDataSourcesScoreByRunningTheTests) {
  const std::string right = "```python\n" + kSumProgram + "\n```";
  for (const char* source : {"codecontests", "apps", "codeforces", "taco"}) {
    EXPECT_TRUE(has_rule_scorer(source));
    EXPECT_TRUE(rule_scorer_runs_code(source));
    EXPECT_EQ(default_compute_score_json(source, right, kSumTests.dump(), nullptr).score, 1.0) << source;
  }
  EXPECT_FALSE(rule_scorer_runs_code("openai/gsm8k"));
  // The test cases as an object (a parquet struct) or as verl's JSON string; a string ground truth through the
  // string overload too.
  EXPECT_EQ(default_compute_score_json("apps", right, kSumTests, nullptr).score, 1.0);
  EXPECT_EQ(default_compute_score("apps", right, kSumTests.dump()).score, 1.0);
  // Two of three tests pass one by one; a wrong program passes none.
  const std::string partly = "a, b = map(int, input().split())\nprint(a + b if b > 0 else 1)";
  EXPECT_DOUBLE_EQ(prime_code_compute_score(partly, kSumTests), 2.0 / 3.0);
  EXPECT_EQ(prime_code_compute_score(partly, kSumTests, /*continuous=*/false), 0.0);
  EXPECT_EQ(prime_code_compute_score("print(-1)", kSumTests), 0.0);
  // A function (fn_name): each input line is an argument.
  const Json add = {{"fn_name", "add2"}, {"inputs", {"1\n2", "[1]\n[2]"}}, {"outputs", {"3", "[1, 2]"}}};
  EXPECT_EQ(prime_code_compute_score("def add2(a, b):\n    return a + b", add), 1.0);
  EXPECT_EQ(prime_code_compute_score("def add2(a, b):\n    return a - b", add), 0.0);
  // No tests: the first check passes vacuously, unless the solution does not load or its process ends first.
  const Json none = {{"inputs", Json::array()}, {"outputs", Json::array()}};
  EXPECT_EQ(prime_code_compute_score("print(1)", none), 1.0);
  EXPECT_EQ(prime_code_compute_score("print(", none), 0.0);
  EXPECT_EQ(prime_code_compute_score("import os; os._exit(0)", none), 0.0);  // an import line runs as it loads
}

TEST(PrimeCode, TestCasesVerlCannotRunAreOneError) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {Json("not json"), "reward_model.ground_truth is not JSON"},
      {Json("[1, 2]"), "reward_model.ground_truth is [1,2]"},
      {Json{{"inputs", {"1"}}}, "has no 'outputs'"},
      {Json{{"inputs", "1"}, {"outputs", {"1"}}}, "has a non-list 'inputs'"},
      {Json{{"inputs", {"1", "2"}}, {"outputs", {"1"}}}, "has 2 inputs and 1 outputs"},
      {Json{{"inputs", {Json::array({1, 2})}}, {"outputs", {"3"}}}, "inputs[0] is [1,2], not a string"},
      {Json{{"inputs", {"1"}}, {"outputs", {3}}}, "outputs[0] is 3, not a string"},
      {Json{{"inputs", {"1"}}, {"outputs", {"1"}}, {"fn_name", 5}}, "fn_name is 5"},
  };
  for (const auto& [truth, expected] : cases) {
    const std::string message = prime_code_error_of(truth);
    EXPECT_NE(message.find(expected), std::string::npos) << truth.dump() << " -> " << message;
    EXPECT_NE(message.find("verl's code test cases"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // A long ground truth is shown cut.
  const std::string long_text(5000, 'x');
  EXPECT_LT(prime_code_error_of(Json(long_text)).size(), 600u);
  // In a batch the error names the row.
  std::vector<ScoreCall> calls = {{"apps", "print(1)", kSumTests, nullptr}, {"apps", "print(1)", "[]", nullptr}};
  try {
    default_score_batch(2)(calls, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 (data_source 'apps')"), std::string::npos) << e.what();
  }
}

TEST(PythonCodeRunner, ASolutionThatCrashesOrAttacksTheRunnerFailsOnlyItsCheck) {
  PythonCodeRunner runner;
  const pid_t pid = runner.pid();
  const Json one = {{"inputs", {"1 2\n"}}, {"outputs", {"3\n"}}};
  // A segmentation fault, the runner's own pid killed (os.kill is disabled, as in
  // verl), os._exit before a reply, a syntax error.
  const std::vector<std::string> bad = {
      "import faulthandler\nfaulthandler._sigsegv()",
      "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
      "import os\nos._exit(3)",
      "print(",
  };
  for (const std::string& code : bad) {
    const CodeCheckResult result = runner.run({code, one, 5});
    EXPECT_FALSE(result.all_passed()) << code;
    EXPECT_EQ(runner.pid(), pid) << code;
  }
  const CodeCheckResult crashed = runner.run({bad[0], one, 5});
  EXPECT_NE(crashed.error.find("signal"), std::string::npos) << crashed.error;
  EXPECT_FALSE(crashed.replied);
  EXPECT_EQ(crashed.verdicts, std::vector<bool>{false});  // every test failed, as verl's -1s
  const CodeCheckResult not_loaded = runner.run({bad[3], Json{{"inputs", {"1", "2"}}, {"outputs", {"1", "2"}}}, 5});
  EXPECT_TRUE(not_loaded.replied);
  EXPECT_EQ(not_loaded.verdicts, std::vector<bool>{false});  // one verdict, as verl's -2
  EXPECT_TRUE(runner.run({kSumProgram, one, 5}).all_passed());
  EXPECT_EQ(runner.pid(), pid);
}

TEST(PythonCodeRunner, AnEndlessCheckIsKilledAtTheTimeoutPlusOneSecond) {
  PythonCodeRunner runner;
  const CodeCheckResult result = runner.run({"while True:\n    pass", Json{{"inputs", {""}}, {"outputs", {""}}}, 1});
  EXPECT_TRUE(result.killed || !result.error.empty());
  EXPECT_FALSE(result.all_passed());
  // A program that ignores SIGALRM's default (it installs a handler) is killed by the runner's own limit.
  const CodeCheckResult ignores_alarm =
      runner.run({"import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nwhile True:\n    pass",
                  Json{{"inputs", {""}}, {"outputs", {""}}}, 1});
  EXPECT_TRUE(ignores_alarm.killed) << ignores_alarm.error;
  EXPECT_TRUE(runner.run({"print(1)", Json{{"inputs", {""}}, {"outputs", {"1"}}}, 1}).all_passed());
}

TEST(PythonCodeRunner, ARunnerKilledFromOutsideIsStartedAgain) {
  PythonCodeRunner runner;
  const pid_t first = runner.pid();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  // Once it has exited (a zombie until the runner reaps it), its end of the channel is closed: writing the next
  // request meets a dead peer, which must restart the server, not end this process with SIGPIPE.
  const std::string status_file = "/proc/" + std::to_string(first) + "/status";
  for (int wait_ms = 0; wait_ms <= 10000 && test::read_file(status_file).find("State:\tZ") == std::string::npos;
       wait_ms += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(test::read_file(status_file).find("State:\tZ"), std::string::npos);
  const Json one = {{"inputs", {"1 2\n"}}, {"outputs", {"3\n"}}};
  EXPECT_TRUE(runner.run({kSumProgram, one, 5}).all_passed());
  EXPECT_NE(runner.pid(), first);
}

TEST(PythonCodeRunner, ChecksRunInAScratchFolderAndLeaveNoProcessBehind) {
  // The solution records its folder and starts a process that would outlive it (posix_spawn is not among the calls
  // verl disables), then passes.
  const std::string dir = test::make_temp_dir("code_runner_scratch");
  const std::string code =
      "import os\n"
      "open('" +
      dir +
      "/cwd', 'w').write(os.readlink('/proc/self/cwd'))\n"
      "pid = os.posix_spawn('/bin/sleep', ['sleep', '60'], dict(os.environ))\n"
      "open('" +
      dir +
      "/pid', 'w').write(str(pid))\n"
      "print(input())";
  std::string scratch;
  {
    PythonCodeRunner runner;
    EXPECT_TRUE(runner.run({code, Json{{"inputs", {"ok"}}, {"outputs", {"ok"}}}, 5}).all_passed());
    scratch = test::read_file(dir + "/cwd");
    EXPECT_NE(scratch.find("verl-code-runner-"), std::string::npos) << scratch;
    EXPECT_TRUE(std::filesystem::is_directory(scratch));
    // The spawned process was sent SIGKILL: it is gone (or a zombie waiting for init to reap it) once the signal
    // is delivered, which a loaded machine may take a moment to do.
    const std::string status_file = "/proc/" + test::read_file(dir + "/pid") + "/status";
    std::string status;
    for (int wait_ms = 0; wait_ms <= 10000; wait_ms += 50) {
      status = std::filesystem::exists(status_file) ? test::read_file(status_file) : "";
      if (status.empty() || status.find("State:\tZ") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(status.empty() || status.find("State:\tZ") != std::string::npos) << status;
  }
  EXPECT_FALSE(std::filesystem::exists(scratch)) << "the scratch folder outlived its runner";
}

TEST(PrimeCode, ABatchChecksCodeInSeveralRunnersAtOnce) {
  // Three calls whose programs sleep 1 s as they load, and a wrong one: run together, each takes a runner of its
  // own. (Unfenced: an import line before any other stays at module level; a fence's newline comes first.) The
  // gsm8k call in between scores on the calling thread.
  const std::string sleepy = "import time; time.sleep(1)\n" + kSumProgram;
  std::vector<ScoreCall> calls = {{"apps", sleepy, kSumTests, nullptr},
                                  {"openai/gsm8k", "#### 5", "5", nullptr},
                                  {"taco", sleepy, kSumTests, nullptr},
                                  {"codeforces", "print(-1)", kSumTests, nullptr},
                                  {"codecontests", sleepy, kSumTests, nullptr}};
  const size_t started_before = python_code_runners_started(), idle_before = python_code_runners_idle();
  const std::vector<ScoreOutcome> outcomes = default_score_batch(4)(calls, nullptr);
  ASSERT_EQ(outcomes.size(), calls.size());
  const std::vector<double> expected = {1.0, 1.0, 1.0, 0.0, 1.0};
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(outcomes[i].result->score, expected[i]) << i;
  // The four code calls ran side by side in four runners: those idle before and new ones.
  EXPECT_EQ(python_code_runners_started() - started_before, 4u - std::min<size_t>(idle_before, 4));
  // One worker: one runner, reused.
  const size_t started_serial = python_code_runners_started();
  const std::vector<ScoreOutcome> serial = default_score_batch(1)(calls, nullptr);
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(serial[i].result->score, expected[i]) << i;
  EXPECT_EQ(python_code_runners_started(), started_serial);
}

}  // namespace
}  // namespace verl::reward
