// verl's @function_tool tools (multi_turn.function_tool_path) through ToolSet: the schemas the template gets, the
// calls (async and plain functions, the return shapes verl's normalize_function_tool_return takes), plain
// functions running concurrently on threads of their own, a time limit that stops a call that never returns, tools
// of a YAML and of a function file together, and the load errors that name the file.
//
// Function tools register in a process-wide registry by name: each test uses names of its own and forgets them
// first, so that --gtest_repeat runs again.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/config_overrides.h"
#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/agent/tools.h"
#include "verl/agent/verl_python_shim.h"
#include "verl/common/error.h"
#include "verl/python/interpreter.h"
#include "verl/workers/multi_turn_rollout.h"

namespace verl::agent {
namespace {

namespace py = pybind11;
using nlohmann::json;
using nlohmann::ordered_json;
using test::error_of;
using test::make_temp_dir;
using test::write_file;

// Removes function tools left by an earlier run in this process from the registry.
void forget_function_tools(const std::vector<std::string>& names) {
  python::with_gil("test", [&] {
    install_verl_python_shim();
    py::object module = py::module_::import("verl.tools.function_tool");
    for (const auto& name : names) module.attr("FUNCTION_TOOL_REGISTRY").attr("pop")(py::str(name), py::none());
    module.attr("_LOADED_FUNCTION_TOOL_PATHS").attr("clear")();
  });
}

// Python's threading.enumerate() names.
std::vector<std::string> python_thread_names() {
  return python::with_gil("test", [] {
    std::vector<std::string> names;
    for (const auto& thread : py::module_::import("threading").attr("enumerate")()) {
      names.push_back(py::str(thread.attr("name")).cast<std::string>());
    }
    return names;
  });
}

const char* const kShapes = R"PY(
from typing import Literal, Optional

from verl.tools.function_tool import function_tool
from verl.tools.schemas import ToolResponse


@function_tool
def ft_add(a: int, b: Optional[int] = 0) -> int:
    """Adds two integers.

    Args:
        a: The first
        b: The second, or none
    """
    return a + (b or 0)


@function_tool("ft_lookup")
async def find(key: Literal["x", "y"]):
    """Looks a key up.

    Args:
        key: Which one
    """
    return {"key": key, "value": "\u00fc"}


@function_tool(schema={"type": "function", "function": {"name": "ft_scored", "description": "Scores",
                       "parameters": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}})
def ft_scored(x):
    if x < 0:
        return ("too", "many", "items", "here")
    return ToolResponse(text=f"x={x}"), x / 2, [("half", True)]


@function_tool
def ft_tuple(kind: str):
    """Returns one of verl's tuple shapes.

    Args:
        kind: one, two or none
    """
    if kind == "one":
        return ("alone",)
    if kind == "two":
        return {"a": [1, 2]}, True
    return "text", None, None
)PY";

TEST(FunctionTools, SchemasCallsAndReturnShapes) {
  forget_function_tools({"ft_add", "ft_lookup", "ft_scored", "ft_tuple"});
  const std::string dir = make_temp_dir("function_tools_shapes");
  write_file(dir + "/shapes.py", kShapes);
  auto tools = ToolSet::load(std::nullopt, dir + "/shapes.py", 30);
  // verl's load_function_tools_from_path: sorted by name.
  EXPECT_EQ(tools->names(), (std::vector<std::string>{"ft_add", "ft_lookup", "ft_scored", "ft_tuple"}));
  EXPECT_EQ(tools->class_name("ft_add"), "");
  // Inferred from the docstring and hints, then verl's schema model: the return type, the union's nullable flag
  // and unset defaults are not in the dump.
  EXPECT_EQ(tools->schemas().at(0).dump(),
            R"({"type":"function","function":{"name":"ft_add","description":"Adds two integers.","parameters":)"
            R"({"type":"object","properties":{"a":{"type":"integer","description":"The first"},)"
            R"("b":{"type":"integer","description":"The second, or none"}},"required":["a"]}}})");
  EXPECT_EQ(tools->schemas().at(1).at("function").at("parameters").at("properties").dump(),
            R"({"key":{"type":"string","description":"Which one","enum":["x","y"]}})");
  EXPECT_EQ(tools->schemas().at(2).dump(),
            R"({"type":"function","function":{"name":"ft_scored","description":"Scores","parameters":)"
            R"({"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}})");

  auto session = tools->start_session({{"ft_add", {{"create_kwargs", {{"ignored", 1}}}}}});
  const auto results = session->execute({{"ft_add", {{"a", 1}, {"b", 2}}},
                                         {"ft_add", "{\"a\": 5}"},
                                         {"ft_lookup", {{"key", "x"}}},
                                         {"ft_scored", {{"x", 3}}},
                                         {"ft_tuple", {{"kind", "one"}}},
                                         {"ft_tuple", {{"kind", "two"}}},
                                         {"ft_tuple", {{"kind", "none"}}}});
  ASSERT_EQ(results.size(), 7u);
  for (const auto& result : results) EXPECT_FALSE(result.error) << result.text;
  EXPECT_EQ(results[0].text, "3");  // str() of a number
  EXPECT_EQ(results[1].text, "5");
  EXPECT_EQ(results[2].text, "{\"key\": \"x\", \"value\": \"\u00fc\"}");  // json.dumps(ensure_ascii=False)
  EXPECT_EQ(results[3].text, "x=3");
  EXPECT_DOUBLE_EQ(results[3].reward, 1.5);
  EXPECT_EQ(results[3].metrics, (json{{"half", true}}));  // dict() of the pairs
  EXPECT_EQ(results[4].text, "alone");
  EXPECT_DOUBLE_EQ(results[4].reward, 0.0);
  EXPECT_EQ(results[5].text, "{\"a\": [1, 2]}");
  EXPECT_DOUBLE_EQ(results[5].reward, 1.0);
  EXPECT_EQ(results[6].text, "text");
  EXPECT_EQ(results[6].metrics, json::object());

  const auto failures = session->execute({{"ft_add", {{"a", 1}, {"c", 2}}},
                                          {"ft_scored", {{"x", -1}}},
                                          {"ft_add", ordered_json::array({1})},
                                          {"ft_missing", ordered_json::object()}});
  for (const auto& result : failures) EXPECT_TRUE(result.error) << result.text;
  EXPECT_EQ(failures[0].text,
            "Error executing tool 'ft_add': TypeError: ft_add() got an unexpected keyword argument 'c'");
  EXPECT_EQ(failures[1].text.rfind("Error executing tool 'ft_scored': TypeError: @function_tool return tuple must "
                                   "have length 1, 2, or 3 (got length 4",
                                   0),
            0u)
      << failures[1].text;
  EXPECT_EQ(failures[2].text, "Error executing tool 'ft_add': the arguments must be a JSON object, got [1]");
  EXPECT_EQ(failures[3].text,
            "Unknown function 'ft_missing'. Available tools: ['ft_add', 'ft_lookup', 'ft_scored', 'ft_tuple']");
  // Stateless: no instances, so no calc_reward.
  EXPECT_TRUE(session->finish().empty());
}

const char* const kThreads = R"PY(
import threading
import time

from verl.tools.function_tool import function_tool

EVENTS = []


@function_tool
def ft_wait(seconds: float, tag: str) -> str:
    """Sleeps, noting when it starts and ends.

    Args:
        seconds: How long
        tag: A name for the events
    """
    EVENTS.append(("start", tag))
    time.sleep(seconds)
    EVENTS.append(("end", tag))
    return tag


@function_tool
def ft_events() -> str:
    """The events so far."""
    return str(EVENTS)


@function_tool
def ft_exit(code: int) -> str:
    """Tries to end the process from its thread.

    Args:
        code: The status
    """
    import os
    os._exit(code)


@function_tool
def ft_spin(n: int) -> str:
    """Never returns.

    Args:
        n: A start
    """
    while True:
        n += 1
)PY";

// Plain functions run on threads of their own, so the calls of a round overlap (order, not timing); a call that
// never returns is cut at the time limit and its thread told to stop.
TEST(FunctionTools, PlainFunctionsRunConcurrentlyAndTimeOut) {
  forget_function_tools({"ft_wait", "ft_events", "ft_exit", "ft_spin"});
  const std::string dir = make_temp_dir("function_tools_threads");
  write_file(dir + "/threads.py", kThreads);
  auto tools = ToolSet::load(std::nullopt, dir + "/threads.py", 2.0);
  auto session = tools->start_session(json::object());
  auto results =
      session->execute({{"ft_wait", {{"seconds", 0.5}, {"tag", "a"}}}, {"ft_wait", {{"seconds", 0.0}, {"tag", "b"}}}});
  EXPECT_EQ(results.at(0).text, "a");
  EXPECT_EQ(results.at(1).text, "b");
  const std::string events = session->execute({{"ft_events", ordered_json::object()}}).at(0).text;
  // b started and ended while a slept.
  EXPECT_TRUE(events == "[('start', 'a'), ('start', 'b'), ('end', 'b'), ('end', 'a')]" ||
              events == "[('start', 'b'), ('start', 'a'), ('end', 'b'), ('end', 'a')]")
      << events;

  // os._exit in a tool's thread raises SystemExit there (python/user_code.h's guard): an error for the model.
  EXPECT_EQ(session->execute({{"ft_exit", {{"code", 3}}}}).at(0).text,
            "Error executing tool 'ft_exit': SystemExit: os._exit(3) called by user code; verl.cpp does not let it end "
            "the process");

  const auto started = std::chrono::steady_clock::now();
  results = session->execute({{"ft_spin", {{"n", 0}}}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(results.at(0).text,
            "Error executing tool 'ft_spin': did not return within 2 s "
            "(actor_rollout_ref.rollout.multi_turn.tool_timeout)");
  EXPECT_LT(seconds, 30.0);  // cut at 2 s (generous: a loaded machine)
  // The spinning thread got a TimeoutError and ended.
  bool alive = true;
  for (int i = 0; i < 100 && alive; ++i) {
    const auto names = python_thread_names();
    alive = std::find(names.begin(), names.end(), "function tool ft_spin") != names.end();
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(alive) << "the timed-out function's thread is still running";
}

const char* const kMixedYamlTool = R"PY(
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse


class EchoTool(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        return ToolResponse(text="echo " + parameters.get("text", "")), 0.0, {}
)PY";

std::string echo_yaml(const std::string& name) {
  return "tools:\n  - class_name: ft_echo_tool.EchoTool\n    config: {type: native}\n    tool_schema:\n"
         "      type: function\n      function:\n        name: " +
         name +
         "\n        description: Echoes\n        parameters: {type: object, properties: {text: {type: string}}}\n";
}

TEST(FunctionTools, AfterTheYamlsToolsAndNamesMustNotCollide) {
  forget_function_tools({"ft_mul", "ft_echo"});
  const std::string dir = make_temp_dir("function_tools_mixed");
  write_file(dir + "/ft_echo_tool.py", kMixedYamlTool);
  write_file(dir + "/tools.yaml", echo_yaml("ft_echo"));
  write_file(dir + "/functions.py", R"PY(
from verl.tools.function_tool import function_tool


@function_tool
def ft_mul(a: int, b: int) -> int:
    """Multiplies.

    Args:
        a: x
        b: y
    """
    return a * b
)PY");
  auto tools = ToolSet::load(dir + "/tools.yaml", dir + "/functions.py", 30);
  EXPECT_EQ(tools->names(), (std::vector<std::string>{"ft_echo", "ft_mul"}));
  EXPECT_EQ(tools->class_name("ft_echo"), "EchoTool");
  auto session = tools->start_session(json::object());
  const auto results = session->execute({{"ft_echo", {{"text", "hi"}}}, {"ft_mul", {{"a", 6}, {"b", 7}}}});
  EXPECT_EQ(results.at(0).text, "echo hi");
  EXPECT_EQ(results.at(1).text, "42");

  // A YAML tool named like a function tool.
  write_file(dir + "/clash.yaml", echo_yaml("ft_mul"));
  EXPECT_EQ(error_of([&] { ToolSet::load(dir + "/clash.yaml", dir + "/functions.py", 30); }),
            "[tools] function tool name(s) ['ft_mul'] in '" + dir +
                "/functions.py' collide with tools already "
                "declared in '" +
                dir +
                "/clash.yaml'; each tool name must be unique across tool_config_path and "
                "function_tool_path");
}

TEST(FunctionTools, LoadErrorsNameTheFile) {
  forget_function_tools({"ft_nodoc", "ft_any", "ft_star", "ft_dup"});
  const std::string dir = make_temp_dir("function_tools_errors");
  const auto load_error = [&](const std::string& file, const std::string& source) {
    write_file(dir + "/" + file, source);
    return error_of([&] { ToolSet::load(std::nullopt, dir + "/" + file, 30); });
  };
  const std::string prefix = "[tools] function tool file '" + dir + "/";
  const std::string key = "' (actor_rollout_ref.rollout.multi_turn.function_tool_path): cannot load its tools: ";
  const std::string header = "from typing import Any\nfrom verl.tools.function_tool import function_tool\n";

  EXPECT_EQ(error_of([&] { ToolSet::load(std::nullopt, dir + "/absent.py", 30); }),
            prefix +
                "absent.py' does not exist or is not a file "
                "(actor_rollout_ref.rollout.multi_turn.function_tool_path)");
  EXPECT_EQ(load_error("nodoc.py", header + "@function_tool\ndef ft_nodoc(x: int):\n    return x\n"),
            prefix + "nodoc.py" + key +
                "DocstringParsingException: Cannot generate JSON schema for ft_nodoc because it has no docstring!");
  // Any has no JSON type, and verl's schema model needs one.
  const std::string any_error =
      load_error("any.py", header +
                               "@function_tool\ndef ft_any(x: Any):\n    \"\"\"Any.\n\n    Args:\n        x: a value\n"
                               "    \"\"\"\n");
  EXPECT_EQ(any_error.rfind(prefix + "any.py" + key +
                                "ValueError: OpenAIFunctionPropertySchema: field 'type' is "
                                "required",
                            0),
            0u)
      << any_error;
  const std::string star_error = load_error(
      "star.py", header +
                     "@function_tool\ndef ft_star(*xs: int):\n    \"\"\"Star.\n\n    Args:\n        xs: values\n"
                     "    \"\"\"\n");
  EXPECT_NE(star_error.find("declares variadic parameter(s) ['xs']"), std::string::npos) << star_error;
  const std::string raising = load_error("raising.py", header + "raise RuntimeError('no tools today')\n");
  EXPECT_EQ(raising, prefix + "raising.py" + key + "RuntimeError: no tools today");
  const std::string dup =
      "@function_tool\ndef ft_dup(x: int):\n    \"\"\"Dup.\n\n    Args:\n        x: a value\n"
      "    \"\"\"\n";
  EXPECT_NE(load_error("dup.py", header + dup + dup).find("Function tool 'ft_dup' is already registered"),
            std::string::npos);

  // A file without a decorated function loads (verl warns) and gives no tools.
  write_file(dir + "/plain.py", "def helper(x):\n    return x\n");
  EXPECT_TRUE(ToolSet::load(std::nullopt, dir + "/plain.py", 30)->names().empty());
}

// The overlong-prompt filter renders the tools of data.tool_config_path / function_tool_path, which follow the
// rollout's keys: loaded only when the filter is on.
TEST(FunctionTools, TheDatasetFilterLoadsTheRolloutsTools) {
  forget_function_tools({"ft_filter_probe"});
  const std::string dir = make_temp_dir("function_tools_filter");
  write_file(dir + "/probe.py",
             "from verl.tools.function_tool import function_tool\n\n\n@function_tool\ndef ft_filter_probe(q: str):\n"
             "    \"\"\"Probes.\n\n    Args:\n        q: A query\n    \"\"\"\n");
  const std::string key = "actor_rollout_ref.rollout.multi_turn.function_tool_path=" + dir + "/probe.py";
  const auto on = test::load_with_overrides({key, "data.filter_overlong_prompts=true"});
  EXPECT_EQ(on.ppo.data.function_tool_path, dir + "/probe.py");
  const auto schemas = workers::dataset_filter_tool_schemas(on.ppo);
  ASSERT_TRUE(schemas.is_array());
  ASSERT_EQ(schemas.size(), 1u);
  EXPECT_EQ(schemas[0]["function"]["name"], "ft_filter_probe");
  EXPECT_TRUE(
      workers::dataset_filter_tool_schemas(test::load_with_overrides({key, "data.filter_overlong_prompts=false"}).ppo)
          .is_null());
  EXPECT_TRUE(workers::dataset_filter_tool_schemas(test::load_with_overrides({}).ppo).is_null());
  // data.function_tool_path set alone feeds the filter, not the rollout.
  const auto data_only =
      test::load_with_overrides({"data.function_tool_path=" + dir + "/probe.py", "data.filter_overlong_prompts=true"});
  EXPECT_FALSE(data_only.ppo.actor_rollout_ref.rollout.multi_turn.function_tool_path.has_value());
  EXPECT_EQ(workers::dataset_filter_tool_schemas(data_only.ppo).size(), 1u);
}

// examples/multi_turn/calculator_function_tool.py is the YAML's calculator class as one function: the same schema
// (so the same prompts) and the same answers.
TEST(FunctionTools, ExampleCalculatorEqualsTheClassTool) {
  forget_function_tools({"calculator"});
  const std::string examples = VERL_SOURCE_DIR_FOR_TESTS "/examples/multi_turn/";
  auto function_tools = ToolSet::load(std::nullopt, examples + "calculator_function_tool.py", 30);
  auto class_tools = ToolSet::from_config_file(examples + "calculator_tool_config.yaml", 30);
  EXPECT_EQ(function_tools->schemas().dump(), class_tools->schemas().dump());
  const std::vector<ToolCallRequest> calls = {{"calculator", {{"expression", "12*34+5"}}},
                                              {"calculator", {{"expression", "(2-7)*3"}}},
                                              {"calculator", {{"expression", "2**8"}}},
                                              {"calculator", {{"expression", "1/0"}}}};
  const auto ours = function_tools->start_session(json::object())->execute(calls);
  const auto theirs = class_tools->start_session(json::object())->execute(calls);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].text, theirs[i].text) << i;
    EXPECT_EQ(ours[i].metrics, theirs[i].metrics) << i;
    EXPECT_EQ(ours[i].error, theirs[i].error) << i;
  }
  EXPECT_EQ(ours[0].text, "413");
  EXPECT_EQ(ours[1].text, "-15");
}

}  // namespace
}  // namespace verl::agent
