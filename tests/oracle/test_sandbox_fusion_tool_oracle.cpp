// The built-in verl.tools.sandbox_fusion_tools.SandboxFusionTool against verl's request and reply code
// (tests/oracle/sandbox_fusion_tool_oracle.py): the texts of code_interpreter calls, both sent to one
// tests/support/fake_sandbox_fusion.py, for programs that print, fail, run too long, and every failure of the service.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_sandbox_fusion.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/agent/tools.h"

namespace verl::agent {
namespace {

const std::string kToolOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/sandbox_fusion_tool_oracle.py";

nlohmann::json oracle_cases() {
  nlohmann::json cases = nlohmann::json::array();
  const auto add = [&](const std::string& code, nlohmann::json timeout = 30, const std::string& language = "python") {
    cases.push_back({{"code", code}, {"timeout", timeout}, {"language", language}});
  };
  add("print(6 * 7)");
  add("print('a', end='')");
  add("");
  add("import sys\nsys.stderr.write('warn\\n')\nprint('out')");
  add("print('before')\n1 / 0");
  add("raise SystemExit(3)");
  add("print('é ☃ 𝔘')");
  add("print(input())");  // no stdin: EOFError
  add("while True:\n    pass", 1);
  add("import time\nprint('started', flush=True)\ntime.sleep(5)", 1);
  add("print(1)", 30, "cobol");
  add("echo hi", 30, "bash");  // listed by SandboxFusion; the fake runs every language as Python
  add("print(2)", "30");
  add("print(2)", 2.5);
  add("def f(:\n    pass");
  for (const std::string directive :
       {"http_504_once", "http_504", "http_500", "not_json", "reply_list", "reply_empty", "sandbox_error",
        "compile_error", "compile_timeout", "run_error", "success_no_run", "stdout_number"}) {
    add("print(7)\n# sandbox: " + directive);
  }
  return cases;
}

std::string tool_yaml(const std::string& url) {
  return "tools:\n  - class_name: verl.tools.sandbox_fusion_tools.SandboxFusionTool\n"
         "    config: {sandbox_fusion_url: \"" +
         url +
         "\", type: native}\n"
         "    tool_schema:\n      type: function\n      function:\n        name: code_interpreter\n"
         "        description: runs code\n"
         "        parameters: {type: object, properties: {code: {type: string}}, required: [code]}\n";
}

TEST(SandboxFusionToolOracle, TextsEqualVerls) {
  test::FakeSandboxFusion service("--memory-limit-mb 1024");
  const nlohmann::json cases = oracle_cases();
  const std::string dir = test::make_temp_dir("sandbox_fusion_tool_oracle");
  test::write_file(dir + "/cases.json", cases.dump());
  const test::CommandResult r =
      test::run_command(test::test_python() + "'" + kToolOracle + "' '" + service.url() + "' '" + dir + "/cases.json'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test::test_python_missing_hint();
  const nlohmann::json expected = nlohmann::json::parse(r.out);
  ASSERT_EQ(expected.size(), cases.size());

  test::write_file(dir + "/tools.yaml", tool_yaml(service.url()));
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 120);
  auto session = tools->start_session(nlohmann::json::object());
  std::vector<ToolCallRequest> calls;
  for (const nlohmann::json& c : cases) {
    nlohmann::ordered_json arguments;
    arguments["code"] = c["code"];
    arguments["timeout"] = c["timeout"];
    arguments["language"] = c["language"];
    calls.push_back({"code_interpreter", arguments});
  }
  const std::vector<ToolCallResult> results = session->execute(calls);
  ASSERT_EQ(results.size(), cases.size());
  int differing = 0, no_stdout = 0, empty = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string want = expected[i].get<std::string>();
    if (results[i].text != want) {
      ++differing;
      ADD_FAILURE() << cases[i].dump() << "\nverl.cpp: " << results[i].text << "\nverl: " << want;
    }
    no_stdout += want == "no stdout here";
    empty += want.empty();
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(no_stdout, 8);  // every branch is reached
  EXPECT_GT(empty, 2);
}

}  // namespace
}  // namespace verl::agent
