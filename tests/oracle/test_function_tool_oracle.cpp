// verl's @function_tool against verl.cpp's (the built-in verl.tools.function_tool of agent/verl_python_shim.h,
// through ToolSet as the multi-turn rollout uses it), with tests/oracle/function_tool_oracle.py running verl 0.9.1
// and transformers in .venv/test:
//  - the schema inferred from docstrings and type hints, transformers.utils.get_json_schema (what verl calls) against
//    the built-in rewrite, over tests/oracle/function_tool_schema_cases.py (the failing cases must fail alike);
//  - the tools a file registers, verl's load_function_tools_from_path against ToolSet::load: names, order, schemas;
//  - what each return value becomes, verl's normalize_function_tool_return against a ToolSet call;
//  - verl's own examples (its wheel's tests/experimental/agent_loop/function_tool_examples.py: sync, async, a dict
//    return), loaded and called by verl's loader and FunctionTool.call and by ToolSet.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/agent/tools.h"
#include "verl/agent/verl_python_shim.h"
#include "verl/python/interpreter.h"

namespace verl::test {
namespace {

namespace py = pybind11;
using nlohmann::ordered_json;

const std::string kOracleDir = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle";

ordered_json function_tool_oracle(const std::string& mode, const std::string& file) {
  const CommandResult r =
      run_command(test_python() + "'" + kOracleDir + "/function_tool_oracle.py' " + mode + " '" + file + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  return r.exit_code == 0 ? ordered_json::parse(r.out) : ordered_json::array();
}

// The built-in get_json_schema of every case, in the embedded interpreter: as the oracle prints transformers'.
const char* const kBuiltInSchemas = R"PY(
import importlib.util
import json
import sys

from verl.tools.function_tool import get_json_schema


def run(path):
    spec = importlib.util.spec_from_file_location("function_tool_schema_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    out = []
    for fn in module.CASES:
        try:
            out.append({"name": fn.__name__, "schema": get_json_schema(fn)})
        except Exception as e:
            out.append({"name": fn.__name__, "error": f"{type(e).__name__}: {e}"})
    return json.dumps(out, ensure_ascii=False)
)PY";

std::string error_type(const ordered_json& entry) {
  const std::string text = entry.at("error").get<std::string>();
  return text.substr(0, text.find(':'));
}

TEST(FunctionToolOracle, InferredSchemasEqualTransformersGetJsonSchema) {
  const std::string cases = kOracleDir + "/function_tool_schema_cases.py";
  const ordered_json expected = function_tool_oracle("schemas", cases);
  const ordered_json ours = ordered_json::parse(python::with_gil("test", [&] {
    agent::install_verl_python_shim();
    py::dict scope;
    scope["__builtins__"] = py::module_::import("builtins");
    py::exec(kBuiltInSchemas, scope);
    return scope["run"](cases).cast<std::string>();
  }));
  ASSERT_EQ(ours.size(), expected.size());
  ASSERT_GE(expected.size(), 25u);
  int failing = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string name = expected[i].at("name").get<std::string>();
    EXPECT_EQ(ours[i].at("name"), name);
    if (expected[i].contains("error")) {
      ++failing;
      ASSERT_TRUE(ours[i].contains("error"))
          << name << ": transformers raised " << expected[i]["error"] << ", verl.cpp gave " << ours[i].dump();
      EXPECT_EQ(error_type(ours[i]), error_type(expected[i])) << name;
    } else {
      ASSERT_TRUE(ours[i].contains("schema")) << name << ": " << ours[i].dump();
      EXPECT_EQ(ours[i]["schema"].dump(), expected[i]["schema"].dump()) << name;  // key order too
    }
  }
  EXPECT_GE(failing, 8);  // the cases meant to fail did, in transformers
}

TEST(FunctionToolOracle, RegisteredToolsAndReturnValuesEqualVerls) {
  const std::string file = kOracleDir + "/function_tool_registry_cases.py";
  const ordered_json expected_tools = function_tool_oracle("tools", file);
  auto tools = agent::ToolSet::load(std::nullopt, file, 30);
  const auto names = tools->names();
  ASSERT_EQ(names.size(), expected_tools.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(names[i], expected_tools[i].at("name").get<std::string>());
    EXPECT_EQ(tools->schemas().at(i).dump(), expected_tools[i].at("schema").dump()) << names[i];
  }

  const ordered_json expected = function_tool_oracle("returns", file);
  ASSERT_GE(expected.size(), 20u);
  std::vector<agent::ToolCallRequest> calls;
  for (size_t i = 0; i < expected.size(); ++i) calls.push_back({"oracle_return", {{"case", i}}});
  auto session = tools->start_session(nlohmann::json::object());
  const auto results = session->execute(calls);
  ASSERT_EQ(results.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& want = expected[i];
    if (want.contains("error")) {
      EXPECT_TRUE(results[i].error) << "case " << i << ": " << results[i].text;
      EXPECT_EQ(
          results[i].text.rfind("Error executing tool 'oracle_return': " + want["error"].get<std::string>() + ": ", 0),
          0u)
          << "case " << i << ": " << results[i].text;
      continue;
    }
    EXPECT_FALSE(results[i].error) << "case " << i << ": " << results[i].text;
    EXPECT_EQ(results[i].text, want["text"].is_null() ? "" : want["text"].get<std::string>()) << "case " << i;
    EXPECT_EQ(results[i].reward, want["reward"].get<double>()) << "case " << i;
    EXPECT_EQ(results[i].metrics.dump(), nlohmann::json(want["metrics"]).dump()) << "case " << i;
  }
}

TEST(FunctionToolOracle, VerlsOwnExamplesLoadAndAnswerAlike) {
  const ordered_json path = function_tool_oracle("examples", "-");
  ASSERT_TRUE(path.is_string()) << path.dump();
  const std::string file = path.get<std::string>();
  ASSERT_TRUE(std::filesystem::is_regular_file(file)) << file << " (verl's wheel ships its examples)";
  const ordered_json expected_tools = function_tool_oracle("tools", file);
  auto tools = agent::ToolSet::load(std::nullopt, file, 30);
  ASSERT_EQ(tools->names().size(), expected_tools.size());
  ASSERT_EQ(expected_tools.size(), 3u);
  for (size_t i = 0; i < expected_tools.size(); ++i) {
    EXPECT_EQ(tools->names()[i], expected_tools[i].at("name").get<std::string>());
    EXPECT_EQ(tools->schemas().at(i).dump(), expected_tools[i].at("schema").dump());
  }

  const ordered_json calls = ordered_json::parse(R"([
    ["get_weather", {"city": "Tokyo"}], ["get_weather", {"city": "Paris"}],
    ["calculator", {"expression": "(3+4)*5"}], ["calculator", {"expression": "2**10/4"}],
    ["calculator", {"expression": "import os"}], ["fetch_url", {"url": "https://example.com/a?b=c"}],
    ["get_weather", {"town": "Tokyo"}]])");
  const std::string dir = make_temp_dir("function_tool_examples_oracle");
  write_file(dir + "/calls.json", calls.dump());
  const ordered_json expected = function_tool_oracle("calls", file + "' '" + dir + "/calls.json");
  ASSERT_EQ(expected.size(), calls.size());
  std::vector<agent::ToolCallRequest> requests;
  for (const auto& call : calls) requests.push_back({call[0].get<std::string>(), call[1]});
  const auto results = tools->start_session(nlohmann::json::object())->execute(requests);
  ASSERT_EQ(results.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].contains("error")) {  // verl's loop answers "Error executing tool 'x': <message>"
      EXPECT_TRUE(results[i].error) << i << ": " << results[i].text;
      EXPECT_NE(results[i].text.find(expected[i]["error"].get<std::string>()), std::string::npos) << results[i].text;
      continue;
    }
    EXPECT_FALSE(results[i].error) << i << ": " << results[i].text;
    EXPECT_EQ(results[i].text, expected[i]["text"].get<std::string>()) << i;
    EXPECT_EQ(results[i].reward, expected[i]["reward"].get<double>()) << i;
    EXPECT_EQ(results[i].metrics.dump(), nlohmann::json(expected[i]["metrics"]).dump()) << i;
  }
}

}  // namespace
}  // namespace verl::test
