// `verl score --input FILE.jsonl` end to end: the binary, real files, exact output lines and error lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"
#include "support/fake_sandbox_fusion.h"
#include "support/fixtures.h"

namespace verl::test {
namespace {

std::string score_command(const std::string& input) { return verl_binary() + " score --input '" + input + "'"; }

bool is_one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

TEST(CliScore, ScoresEachLineWithItsDataSource) {
  const std::string dir = make_temp_dir("cli_score");
  write_file(dir + "/in.jsonl",
             R"({"data_source":"openai/gsm8k","solution_str":"3+4=7\n#### 7","ground_truth":"7"})"
             "\n"
             R"({"data_source":"lighteval/MATH","solution_str":"so $\\boxed{\\dfrac{1}{2}}$","ground_truth":"0.5"})"
             "\n\n"  // a blank line is skipped
             R"({"data_source":"math_dapo","solution_str":"Answer: 42","ground_truth":"42","extra_info":{"index":1}})"
             "\n"
             R"({"data_source":"aime2024","solution_str":"Answer: 41","ground_truth":"42","other":"ignored"})"
             "\n"
             R"({"data_source":"digit_completion","solution_str":"11","ground_truth":"11,12"})"
             "\n"
             R"({"data_source":"arithmetic","solution_str":"#### 1,000","ground_truth":"1000","extra_info":null})");
  CommandResult r = run_command(score_command(dir + "/in.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "{\"score\":1.0}\n"
            "{\"score\":1.0}\n"
            "{\"score\":1.0,\"acc\":true,\"pred\":\"42\"}\n"
            "{\"score\":-1.0,\"acc\":false,\"pred\":\"41\"}\n"
            "{\"score\":0.5}\n"
            "{\"score\":1.0}\n");
}

TEST(CliScore, ReadsStandardInput) {
  const std::string dir = make_temp_dir("cli_score_stdin");
  write_file(dir + "/in.jsonl", R"({"data_source":"openai/gsm8k","solution_str":"#### 8","ground_truth":"9"})"
                                "\n");
  CommandResult r = run_command("( cat '" + dir + "/in.jsonl' | " + verl_binary() + " score --input - )");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"score\":0.0}\n");
}

TEST(CliScore, EveryGsm8kGoldAnswerScoresOne) {
  // The fixture's reference solutions as verl rows (ground truth: the text after "#### ", commas removed).
  const std::string dir = make_temp_dir("cli_score_gsm8k");
  const std::string fixture = fixtures_dir() + "/gsm8k/test.jsonl";
  std::ifstream in(fixture);
  ASSERT_TRUE(in.is_open()) << fixture << "";
  std::ofstream out(dir + "/rows.jsonl");
  std::string line;
  size_t rows = 0;
  while (std::getline(in, line)) {
    const std::string answer = nlohmann::json::parse(line).at("answer").get<std::string>();
    std::string truth;
    for (char c : answer.substr(answer.rfind("#### ") + 5)) {
      if (c != ',') truth += c;
    }
    out << nlohmann::json{{"data_source", "openai/gsm8k"}, {"solution_str", answer}, {"ground_truth", truth}}.dump()
        << "\n";
    ++rows;
  }
  out.close();
  CommandResult r = run_command(score_command(dir + "/rows.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected;
  for (size_t i = 0; i < rows; ++i) expected += "{\"score\":1.0}\n";
  EXPECT_EQ(rows, 1319u);
  EXPECT_EQ(r.out, expected);
}

TEST(CliScore, RewardFunctionFileAndPlugin) {
  const std::string dir = make_temp_dir("cli_score_custom");
  write_file(dir + "/reward.py",
             "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    return {'score': float(solution_str == str(ground_truth)), 'n': extra_info.get('n'), 'src': data_source}\n"
             "def boom(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    raise KeyError('x')\n");
  write_file(dir + "/in.jsonl",
             R"({"data_source":"mine","solution_str":"[1, 2]","ground_truth":[1,2],"extra_info":{"n":3}})"
             "\n"
             R"({"data_source":"other","solution_str":"7","ground_truth":"8"})"
             "\n");
  CommandResult r = run_command(score_command(dir + "/in.jsonl") + " --reward-function " + dir + "/reward.py");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"score\":1.0,\"n\":3,\"src\":\"mine\"}\n"
            "{\"score\":0.0,\"n\":null,\"src\":\"other\"}\n");
  r = run_command(score_command(dir + "/in.jsonl") + " --reward-function " + dir + "/reward.py --reward-name boom");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(dir + "/in.jsonl:1: the reward function raised: KeyError: 'x' (at " + dir + "/reward.py:4)"),
            std::string::npos)
      << r.err;
  r = run_command(score_command(dir + "/in.jsonl") + " --reward-function " + dir + "/reward.py --reward-name nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("reward function 'nope' not found in '" + dir + "/reward.py'"), std::string::npos) << r.err;
  r = run_command(score_command(dir + "/in.jsonl") + " --reward-function " + dir + "/missing.py");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("reward function file '" + dir + "/missing.py' not found"), std::string::npos) << r.err;
  r = run_command(score_command(dir + "/in.jsonl") + " --reward-name boom");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--reward-name needs --reward-function"), std::string::npos) << r.err;
  // A C ABI plugin (tests/plugins/reward_plugin.cpp): 1.0 when the solution contains the ground truth.
  write_file(dir + "/plain.jsonl", R"({"data_source":"s","solution_str":"so 8","ground_truth":"8"})"
                                   "\n");
  r = run_command(score_command(dir + "/plain.jsonl") + " --reward-function " + VERL_TEST_REWARD_PLUGIN);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"score\":1.0}\n");
}

TEST(CliScore, UserCodeThatHangsExitsOrReturnsNaNIsAnErrorLine) {
  const std::string dir = make_temp_dir("cli_score_hostile");
  write_file(dir + "/reward.py",
             "import os, time\n"
             "def loop(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    while True: pass\n"
             "def sleep(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    time.sleep(1000)\n"
             "def os_exit(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    os._exit(0)\n"
             "def nan(data_source, solution_str, ground_truth, extra_info=None):\n"
             "    return float('nan')\n");
  write_file(dir + "/in.jsonl", R"({"data_source":"s","solution_str":"so 8","ground_truth":"8"})"
                                "\n");
  // `timeout 60`: on code without a time limit the test fails instead of hanging.
  const std::string base = "timeout 60 " + score_command(dir + "/in.jsonl") + " --reward-function ";
  for (const char* name : {"loop", "sleep"}) {
    CommandResult r = run_command(base + dir + "/reward.py --reward-timeout 1 --reward-name " + name);
    EXPECT_EQ(r.exit_code, 1) << name;
    EXPECT_TRUE(is_one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(dir + "/in.jsonl:1: the reward function raised: reward function '" + std::string(name) +
                         "' from '" + dir + "/reward.py' did not return within 1 s (--reward-timeout)"),
              std::string::npos)
        << r.err;
  }
  CommandResult r = run_command(base + dir + "/reward.py --reward-name os_exit");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in.jsonl:1: the reward function raised: SystemExit: os._exit(0) called by user code"),
            std::string::npos)
      << r.err;
  r = run_command(base + dir + "/reward.py --reward-name nan");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");  // not {"score":null}
  EXPECT_NE(r.err.find("returned a non-finite score nan"), std::string::npos) << r.err;
  r = run_command(base + dir + "/reward.py --reward-timeout=-1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--reward-timeout expects a number of seconds >= 0"), std::string::npos) << r.err;
  // Native code cannot be interrupted: the process ends with one line after the limit and the grace period.
  const auto start = std::chrono::steady_clock::now();
  r = run_command(base + VERL_TEST_REWARD_PLUGIN + " --reward-timeout 0.5 --reward-name spin_forever");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("error: [reward] reward plugin function 'spin_forever' from '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not return within 0.5 s (--reward-timeout)"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 30.0);
  r = run_command(base + VERL_TEST_REWARD_PLUGIN + " --reward-name call_exit");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("called exit() during a reward function call"), std::string::npos) << r.err;
}

struct BadLineCase {
  const char* second_line;
  const char* expected_message;
};

TEST(CliScore, BadLineIsOneErrorNamingFileAndLine) {
  const BadLineCase cases[] = {
      {R"({"data_source":"openai/gsm8k","solution_str":"#### 1")", "not valid JSON"},
      {R"([1, 2])", "expected a JSON object, got array"},
      {R"({"data_source":"openai/gsm8k","solution_str":"#### 1"})", "missing \"ground_truth\""},
      {R"({"data_source":"openai/gsm8k","solution_str":"#### 1","ground_truth":1})",
       "ground_truth must be a string for the built-in scorer of data_source 'openai/gsm8k', got number 1"},
      {R"({"data_source":"openai/gsm8k","solution_str":"#### 1","ground_truth":"1","extra_info":[1]})",
       "\"extra_info\" must be an object or null"},
      {R"({"data_source":"my_source","solution_str":"#### 1","ground_truth":"1"})",
       "no rule reward for data_source 'my_source'"},
  };
  const std::string dir = make_temp_dir("cli_score_bad");
  for (const BadLineCase& c : cases) {
    const std::string path = dir + "/bad.jsonl";
    write_file(path, std::string(R"({"data_source":"openai/gsm8k","solution_str":"#### 1","ground_truth":"1"})") +
                         "\n" + c.second_line + "\n");
    CommandResult r = run_command(score_command(path));
    EXPECT_EQ(r.exit_code, 1) << c.second_line;
    EXPECT_EQ(r.out, "") << "nothing is printed when a line is bad";
    EXPECT_TRUE(is_one_line(r.err)) << r.err;
    EXPECT_EQ(r.err.rfind("error: [score] " + path + ":2: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.expected_message), std::string::npos) << r.err;
  }
}

TEST(CliScore, CodeRowsGoToTheSandboxServiceWithItsUrl) {
  // prime_code runs the unfenced program here; the sandbox_fusion policy scores a response without a fence 0.
  const std::string dir = make_temp_dir("cli_score_sandbox");
  write_file(dir + "/in.jsonl",
             R"({"data_source":"taco","solution_str":"```python\nprint(2 * int(input()))\n```",)"
             R"("ground_truth":{"inputs":["2\n","3\n"],"outputs":["4\n","7\n"]}})"
             "\n"
             R"J({"data_source":"apps","solution_str":"print(2 * int(input()))",)J"
             R"("ground_truth":"{\"inputs\": [\"2\\n\"], \"outputs\": [\"4\\n\"]}"})"
             "\n"
             R"({"data_source":"openai/gsm8k","solution_str":"#### 7","ground_truth":"7"})"
             "\n");
  FakeSandboxFusion service("--log " + dir + "/requests.jsonl");
  CommandResult r = run_command(score_command(dir + "/in.jsonl") + " --sandbox-fusion-url " + service.url());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"score\":0.5}\n{\"score\":0.0}\n{\"score\":1.0}\n");
  const std::string requests = read_file(dir + "/requests.jsonl");
  EXPECT_EQ(std::count(requests.begin(), requests.end(), '\n'), 2);  // the fenced row's two tests
  r = run_command(score_command(dir + "/in.jsonl"));  // without it, prime_code
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"score\":0.5}\n{\"score\":1.0}\n{\"score\":1.0}\n");

  r = run_command(score_command(dir + "/in.jsonl") + " --sandbox-fusion-url localhost:8080");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sandbox-fusion-url expects the service's run_code URL"), std::string::npos) << r.err;
  r = run_command(score_command(dir + "/in.jsonl") + " --sandbox-fusion-url http://x --reward-function f.py");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not go with --reward-function"), std::string::npos) << r.err;
}

TEST(CliScore, UsageErrors) {
  CommandResult r = run_command(verl_binary() + " score");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs --input"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " score --input x.jsonl --bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unexpected argument '--bogus'"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " score --input /nonexistent/rows.jsonl");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("cannot open --input file '/nonexistent/rows.jsonl'"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " score --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: verl score --input FILE.jsonl"), std::string::npos);
  r = run_command(verl_binary() + " --help");
  // Names are padded to the longest command name.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  score +Score responses"))) << r.out;
}

}  // namespace
}  // namespace verl::test
