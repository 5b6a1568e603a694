// The built-in verl.tools.sandbox_fusion_tools.SandboxFusionTool (agent/verl_python_shim_sandbox_fusion_tool.cpp)
// from verl's example tool config, against tests/support/fake_sandbox_fusion.py: what the model reads back for a
// program that prints, fails, runs too long or is in a language the service does not have, the service's
// failures, num_workers, and a config without the URL. tests/oracle/test_sandbox_fusion_tool_oracle.cpp compares
// the texts with verl's request code.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_sandbox_fusion.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "verl/agent/tools.h"
#include "verl/common/error.h"

namespace verl::agent {
namespace {

using Json = nlohmann::json;

// examples/sglang_multiturn/config/tool_config/sandbox_fusion_tool_config.yaml of verl, with `url` and `workers`.
std::string tool_config(const std::string& url, int workers, bool global_limit = true) {
  return "tools:\n"
         "  - class_name: \"verl.tools.sandbox_fusion_tools.SandboxFusionTool\"\n"
         "    config:\n"
         "      sandbox_fusion_url: \"" +
         url +
         "\"\n"
         "      num_workers: " +
         std::to_string(workers) +
         "\n"
         "      enable_global_rate_limit: " +
         (global_limit ? "true" : "false") +
         "\n"
         "      rate_limit: 10\n"
         "      default_timeout: 30\n"
         "      default_language: \"python\"\n"
         "      memory_limit_mb: 1024\n"
         "      type: native\n"
         "    tool_schema:\n"
         "      type: \"function\"\n"
         "      function:\n"
         "        name: \"code_interpreter\"\n"
         "        description: \"A tool for executing code.\"\n"
         "        parameters:\n"
         "          type: \"object\"\n"
         "          properties:\n"
         "            code:\n"
         "              type: \"string\"\n"
         "              description: \"The code to execute.\"\n"
         "          required: [\"code\"]\n";
}

ToolCallRequest code_call(const std::string& code, Json extra = Json::object()) {
  extra["code"] = code;
  return {"code_interpreter", nlohmann::ordered_json::parse(extra.dump())};
}

TEST(SandboxFusionTool, TheModelReadsTheRunsOutput) {
  const std::string dir = test::make_temp_dir("sandbox_fusion_tool");
  test::FakeSandboxFusion service("--log " + dir + "/requests.jsonl");
  test::write_file(dir + "/tools.yaml", tool_config(service.url(), 10));
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 60);
  EXPECT_EQ(tools->names(), std::vector<std::string>{"code_interpreter"});
  auto session = tools->start_session(Json::object());
  const std::vector<ToolCallResult> results = session->execute({
      code_call("print(6 * 7)"),
      code_call("print('before')\n1 / 0"),                   // stdout, then the traceback on stderr
      code_call("while True:\n    pass", {{"timeout", 1}}),  // the run's time limit
      code_call("print(1)", {{"language", "cobol"}}),        // not sent
      code_call("print(2)\n# sandbox: http_504_once"),       // retried
      code_call("print(3)\n# sandbox: compile_error"),
      code_call("print(4)\n# sandbox: reply_list"),     // verl's code raises on it: no text
      code_call("print(5)\n# sandbox: stdout_number"),  // a number where the text belongs: no text
      code_call("print(6)", {{"timeout", "30"}}),       // a timeout that is not a number: not sent
  });
  ASSERT_EQ(results.size(), 9u);
  EXPECT_EQ(results[0].text, "42\n");
  EXPECT_EQ(results[1].text.rfind("before\nTraceback", 0), 0u) << results[1].text;
  EXPECT_NE(results[1].text.find("ZeroDivisionError: division by zero"), std::string::npos) << results[1].text;
  EXPECT_EQ(results[2].text, "no stdout here");
  EXPECT_EQ(results[3].text, "no stdout here");
  EXPECT_EQ(results[4].text, "2\n");
  EXPECT_EQ(results[5].text, "no stdout here");
  EXPECT_EQ(results[6].text, "");
  EXPECT_EQ(results[7].text, "");
  EXPECT_EQ(results[8].text, "no stdout here");
  for (const ToolCallResult& r : results) {
    EXPECT_FALSE(r.error) << r.text;
    EXPECT_EQ(r.reward, 0.0);
  }
  EXPECT_EQ(session->finish(), (std::map<std::string, double>{{"code_interpreter", 0.0}}));
  // One request per call that was sent (the retried one twice), with verl's body: no stdin, the call's timeout.
  const std::vector<Json> requests = test::read_json_lines(dir + "/requests.jsonl");
  EXPECT_EQ(requests.size(), 8u);
  for (const Json& r : requests) {
    EXPECT_TRUE(r["stdin"].is_null());
    EXPECT_EQ(r["compile_timeout"], r["run_timeout"]);
    EXPECT_TRUE(r["run_timeout"] == 30 || r["run_timeout"] == 1) << r.dump();
  }
}

TEST(SandboxFusionTool, NumWorkersBoundsOneToolsRequests) {
  for (const int workers : {1, 4}) {
    test::FakeSandboxFusion service;
    const std::string dir = test::make_temp_dir("sandbox_fusion_tool_workers");
    test::write_file(dir + "/tools.yaml", tool_config(service.url(), workers, /*global_limit=*/false));
    auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 60);
    auto session = tools->start_session(Json::object());
    const std::vector<ToolCallResult> results =
        session->execute(std::vector<ToolCallRequest>(4, code_call("print('x')\n# sandbox: sleep_0.3")));
    for (const ToolCallResult& r : results) EXPECT_EQ(r.text, "x\n");
    const Json stats = Json::parse(service.stats());
    if (workers == 1) {
      EXPECT_EQ(stats["max_in_flight"], 1);
    } else {
      EXPECT_GT(stats["max_in_flight"].get<int>(), 1);
    }
  }
}

TEST(SandboxFusionTool, AConfigWithoutTheUrlIsAnError) {
  const std::string dir = test::make_temp_dir("sandbox_fusion_tool_no_url");
  test::write_file(dir + "/tools.yaml", tool_config("", 10));
  try {
    ToolSet::from_config_file(dir + "/tools.yaml", 60);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sandbox_fusion_url is not set"), std::string::npos) << what;
    EXPECT_NE(what.find("tools[0]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace verl::agent
