// verl-style tools and interactions in the embedded interpreter (verl/agent/tools.h): tool files written as for
// verl (BaseTool, async methods) with verl's YAML, the built-in GSM8K tool and interaction, and every way user code
// can fail (raise, hang, block the event loop, return garbage) turning into an error text for the model.
//
// Each test writes its Python modules under names of its own: a module imported once stays in sys.modules.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <chrono>
#include <thread>

#include "support/run_command.h"
#include "verl/agent/tools.h"
#include "verl/agent/verl_python_shim.h"
#include "verl/common/error.h"
#include "verl/python/interpreter.h"

namespace verl::agent {
namespace {

namespace py = pybind11;
using test::make_temp_dir;
using test::write_file;

// Drops a test module imported by an earlier run in this process (--gtest_repeat), so its lists start empty.
void forget_module(const std::string& module) {
  python::with_gil("test", [&] {
    py::module_::import("sys").attr("modules").attr("pop")(py::str(module), py::none());
    py::module_::import("importlib").attr("invalidate_caches")();
  });
}

// A tool written as for verl: execute adds a and b, logs its start and end to a shared list, rewards 0.5.
const char* const kCalcTools = R"PY(
import asyncio
import time

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

EVENTS = []


class CalcTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self.instances = {}
        self.scale = config.get("scale", 1)

    async def create(self, instance_id=None, **kwargs):
        instance_id = f"calc-{len(self.instances)}"
        self.instances[instance_id] = {"create_kwargs": kwargs.get("create_kwargs"), "sum": 0}
        EVENTS.append(("create", instance_id, kwargs.get("create_kwargs")))
        return instance_id, ToolResponse()

    async def execute(self, instance_id, parameters, **kwargs):
        EVENTS.append(("start", parameters["a"]))
        await asyncio.sleep(parameters.get("sleep", 0))
        EVENTS.append(("end", parameters["a"]))
        value = (parameters["a"] + parameters["b"]) * self.scale
        self.instances[instance_id]["sum"] += value
        return ToolResponse(text=f"{value}"), 0.5, {"kwargs": kwargs}

    async def calc_reward(self, instance_id, **kwargs):
        return self.instances[instance_id]["sum"] / 100.0

    async def release(self, instance_id, **kwargs):
        EVENTS.append(("release", instance_id))
        del self.instances[instance_id]
)PY";

const char* const kCalcConfig = R"YAML(
tools:
  - class_name: calc_tools_a.CalcTool
    config:
      type: native
      scale: 2
    tool_schema:
      type: function
      function:
        name: add
        description: Adds two integers
        parameters:
          type: object
          properties:
            a:
              description: first
              type: integer
            b:
              type: integer
          required: [a, b]
)YAML";

// Tools that fail in every way, and a sync one; `{name}` in their schemas comes from the YAML.
const char* const kBadTools = R"PY(
import asyncio
import time

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

RELEASED = []


class Raises(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        raise ValueError("the tool broke")


class Hangs(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        await asyncio.sleep(60)
        return "never", 0.0, {}

    async def release(self, instance_id, **kwargs):
        RELEASED.append(self.name)


class BlocksLoop(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        time.sleep(60)  # blocks the event loop: only the backstop stops it
        return "never", 0.0, {}


class Garbage(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        return 42


class BadReward(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        return ToolResponse(text="ok"), "a lot", {}


class Sync(BaseTool):
    def create(self, instance_id=None, ground_truth=None):
        self.ground_truth = ground_truth
        return "sync-1"

    def execute(self, instance_id, parameters, **kwargs):
        return f"{instance_id} got {parameters['x']} for {self.ground_truth}", None

    def calc_reward(self, instance_id, **kwargs):
        return 0.25

    def release(self, instance_id, **kwargs):
        RELEASED.append(self.name)


class OtherForms(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        if parameters.get("media"):
            return ToolResponse(text="with a picture", image=["png bytes"]), 1, {"m": float("nan")}
        return {"text": "from a dict"}, 0.5, None


class Exits(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        raise SystemExit(3)
)PY";

std::string tool_entry(const std::string& class_name, const std::string& name) {
  return "  - class_name: " + class_name + "\n    config: {type: native}\n    tool_schema:\n      type: function\n" +
         "      function: {name: " + name + ", description: d, parameters: {type: object, properties: {}}}\n";
}

std::string bad_tools_config(const std::string& dir) {
  write_file(dir + "/bad_tools_b.py", kBadTools);
  forget_module("bad_tools_b");
  std::string yaml = "tools:\n";
  for (const char* cls : {"Raises", "Hangs", "BlocksLoop", "Garbage", "BadReward", "Sync", "Exits"}) {
    std::string name = cls;
    for (auto& c : name) c = static_cast<char>(std::tolower(c));
    yaml += tool_entry(std::string("bad_tools_b.") + cls, name);
  }
  write_file(dir + "/tools.yaml", yaml);
  return dir + "/tools.yaml";
}

py::object python_global(const std::string& module, const std::string& name) {
  return py::module_::import(module.c_str()).attr(name.c_str());
}

std::string events_text(const std::string& module, const std::string& name) {
  return python::with_gil("test", [&] { return py::str(python_global(module, name)).cast<std::string>(); });
}

TEST(Tools, VerlStyleToolFromItsYaml) {
  const std::string dir = make_temp_dir("tools_calc");
  write_file(dir + "/calc_tools_a.py", kCalcTools);
  forget_module("calc_tools_a");
  write_file(dir + "/tools.yaml", kCalcConfig);
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 30);
  EXPECT_EQ(tools->names(), std::vector<std::string>{"add"});
  // verl's model_dump(exclude_unset=True, exclude_none=True): field order, unset defaults (strict) left out.
  EXPECT_EQ(tools->schemas().dump(),
            R"([{"type":"function","function":{"name":"add","description":"Adds two integers","parameters":)"
            R"({"type":"object","properties":{"a":{"type":"integer","description":"first"},"b":{"type":"integer"}},)"
            R"("required":["a","b"]}}}])");

  auto session = tools->start_session({{"add", {{"create_kwargs", {{"seed", 7}}}, {"execute_kwargs", {{"k", 1}}}}}});
  auto results = session->execute({{"add", {{"a", 1}, {"b", 2}}}, {"add", {{"a", 10}, {"b", 20}}}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].text, "6");  // (1 + 2) * scale 2 from config
  EXPECT_EQ(results[1].text, "60");
  EXPECT_FALSE(results[0].error);
  EXPECT_DOUBLE_EQ(results[0].reward, 0.5);
  EXPECT_EQ(results[0].metrics, (nlohmann::json{{"kwargs", {{"k", 1}}}}));  // execute_kwargs passed through
  // Arguments given as JSON text, as some models write them.
  results = session->execute({{"add", "{\"a\": 2, \"b\": 2}"}});
  EXPECT_EQ(results.at(0).text, "8");

  // One instance for the trajectory, created with create_kwargs; finish gives calc_reward, then releases.
  const auto rewards = session->finish();
  EXPECT_EQ(rewards, (std::map<std::string, double>{{"add", (6 + 60 + 8) / 100.0}}));
  EXPECT_EQ(events_text("calc_tools_a", "EVENTS"),
            "[('create', 'calc-0', {'seed': 7}), ('start', 1), ('start', 10), ('end', 1), ('end', 10), "
            "('start', 2), ('end', 2), ('release', 'calc-0')]");
  // A second session gets its own instance.
  auto second = tools->start_session(nlohmann::json::object());
  EXPECT_EQ(second->execute({{"add", {{"a", 0}, {"b", 1}}}}).at(0).text, "2");
}

// Two calls of one execute run concurrently: both start before either ends (order, not timing).
TEST(Tools, CallsOfOneExecuteRunConcurrently) {
  const std::string dir = make_temp_dir("tools_parallel");
  std::string source = kCalcTools;
  write_file(dir + "/calc_tools_c.py", source);
  forget_module("calc_tools_c");
  std::string yaml = kCalcConfig;
  yaml.replace(yaml.find("calc_tools_a"), 12, "calc_tools_c");
  write_file(dir + "/tools.yaml", yaml);
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 30);
  auto session = tools->start_session(nlohmann::json::object());
  auto results = session->execute({{"add", {{"a", 1}, {"b", 0}, {"sleep", 0.3}}}, {"add", {{"a", 2}, {"b", 0}}}});
  EXPECT_EQ(results.at(0).text, "2");
  EXPECT_EQ(results.at(1).text, "4");
  // The second call started (and ended) while the first slept.
  EXPECT_EQ(events_text("calc_tools_c", "EVENTS"),
            "[('create', 'calc-0', {}), ('start', 1), ('start', 2), ('end', 2), ('end', 1)]");
}

TEST(Tools, BuiltInGsm8kToolFromVerlsYaml) {
  const std::string dir = make_temp_dir("tools_gsm8k");
  // examples/sglang_multiturn/config/tool_config/gsm8k_tool_config.yaml of verl.
  write_file(dir + "/gsm8k_tool_config.yaml", R"YAML(
tools:
  - class_name: "verl.tools.gsm8k_tool.Gsm8kTool"
    config:
      type: native
    tool_schema:
      type: "function"
      function:
        name: "calc_gsm8k_reward"
        description: "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)"
        parameters:
          type: "object"
          properties:
            answer:
              type: "string"
              description: "The model's answer to the GSM8K math problem, must be a digits"
          required: ["answer"]
)YAML");
  auto tools = ToolSet::from_config_file(dir + "/gsm8k_tool_config.yaml", 30);
  EXPECT_EQ(tools->names(), std::vector<std::string>{"calc_gsm8k_reward"});
  EXPECT_EQ(tools->schemas().at(0).at("function").at("parameters").at("required").dump(), "[\"answer\"]");
  auto session = tools->start_session({{"calc_gsm8k_reward", {{"create_kwargs", {{"ground_truth", "72"}}}}}});
  auto first = session->execute({{"calc_gsm8k_reward", {{"answer", "71"}}}}).at(0);
  EXPECT_EQ(first.text, "Current parsed answer='71' reward=0.0");
  EXPECT_DOUBLE_EQ(first.reward, -0.05);  // no improvement
  auto second = session->execute({{"calc_gsm8k_reward", {{"answer", "72"}}}}).at(0);
  EXPECT_EQ(second.text, "Current parsed answer='72' reward=1.0");
  EXPECT_DOUBLE_EQ(second.reward, 0.0);
  auto third = session->execute({{"calc_gsm8k_reward", {{"answer", 72}}}}).at(0);  // a number: str() of it
  EXPECT_EQ(third.text, "Current parsed answer='72' reward=1.0");
  EXPECT_DOUBLE_EQ(third.reward, -0.05);  // correct again, but not better
  EXPECT_EQ(session->finish(), (std::map<std::string, double>{{"calc_gsm8k_reward", 1.0}}));
}

TEST(Tools, FailuresBecomeErrorTextsForTheModel) {
  const std::string dir = make_temp_dir("tools_bad");
  auto tools = ToolSet::from_config_file(bad_tools_config(dir), 1.0);
  auto session = tools->start_session(nlohmann::json::object());
  const auto started = std::chrono::steady_clock::now();
  auto results = session->execute({{"raises", nlohmann::ordered_json::object()},
                                   {"hangs", nlohmann::ordered_json::object()},
                                   {"garbage", nlohmann::ordered_json::object()},
                                   {"badreward", nlohmann::ordered_json::object()},
                                   {"exits", nlohmann::ordered_json::object()},
                                   {"no_such_tool", nlohmann::ordered_json::object()},
                                   {"raises", nlohmann::ordered_json::array({1, 2})}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(results.size(), 7u);
  for (const auto& result : results) EXPECT_TRUE(result.error) << result.text;
  EXPECT_EQ(results[0].text, "Error executing tool 'raises': ValueError: the tool broke");
  EXPECT_EQ(results[1].text,
            "Error executing tool 'hangs': did not return within 1 s "
            "(actor_rollout_ref.rollout.multi_turn.tool_timeout)");
  EXPECT_EQ(results[2].text,
            "Error executing tool 'garbage': malformed return 42 (int); "
            "expected (ToolResponse | str, reward, metrics)");
  EXPECT_NE(results[3].text.find("Error executing tool 'badreward': malformed return (ToolResponse(text='ok'"),
            std::string::npos)
      << results[3].text;
  EXPECT_EQ(results[4].text, "Error executing tool 'exits': SystemExit: 3");
  EXPECT_EQ(results[5].text,
            "Unknown function 'no_such_tool'. Available tools: ['raises', 'hangs', 'blocksloop', 'garbage', "
            "'badreward', 'sync', 'exits']");
  EXPECT_EQ(results[6].text, "Error executing tool 'raises': the arguments must be a JSON object, got [1, 2]");
  EXPECT_LT(seconds, 30.0);  // the hang was cut at 1 s (generous: a loaded machine)
  // The session is still usable, and finish still releases the timed-out tool's instance.
  EXPECT_TRUE(session->execute({{"raises", nlohmann::ordered_json::object()}}).at(0).error);
  const auto rewards = session->finish();
  EXPECT_EQ(rewards.size(), 5u);  // every tool with an instance (not no_such_tool, not the bad-arguments call's)
  EXPECT_EQ(rewards.at("hangs"), 0.0);
  EXPECT_EQ(events_text("bad_tools_b", "RELEASED"), "['hangs']");
}

// time.sleep in an async def blocks the event loop, so asyncio's timeout cannot fire: the backstop
// (python::UserCallLimit) raises TimeoutError in it a little later.
TEST(Tools, CodeBlockingTheEventLoopIsStoppedByTheBackstop) {
  const std::string dir = make_temp_dir("tools_block");
  write_file(dir + "/block_tools_d.py", kBadTools);
  forget_module("block_tools_d");
  write_file(dir + "/tools.yaml", "tools:\n" + tool_entry("block_tools_d.BlocksLoop", "blocksloop") +
                                      tool_entry("block_tools_d.Garbage", "garbage"));
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 1.0);
  auto session = tools->start_session(nlohmann::json::object());
  const auto started = std::chrono::steady_clock::now();
  auto results = session->execute(
      {{"blocksloop", nlohmann::ordered_json::object()}, {"garbage", nlohmann::ordered_json::object()}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 30.0);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].error);
  EXPECT_EQ(results[0].text.rfind("Error executing tool 'blocksloop': tool calls did not return within 3 s", 0), 0u)
      << results[0].text;
  // The other call ran around the blocked one; whether its own 1 s timer fired first depends on the loop's order.
  EXPECT_TRUE(results[1].error);
  EXPECT_TRUE(results[1].text.find("malformed return 42") != std::string::npos ||
              results[1].text.find("did not return within") != std::string::npos)
      << results[1].text;
  // The interpreter and the loop are usable afterwards.
  EXPECT_NE(session->execute({{"garbage", nlohmann::ordered_json::object()}}).at(0).text.find("malformed"),
            std::string::npos);
}

// The rollout may call from a thread other than the interpreter's main one: asyncio's own timeout still applies.
TEST(Tools, SessionsRunFromAnotherThread) {
  const std::string dir = make_temp_dir("tools_thread");
  write_file(dir + "/thread_tools_h.py", kBadTools);
  forget_module("thread_tools_h");
  write_file(dir + "/tools.yaml", "tools:\n" + tool_entry("thread_tools_h.Hangs", "hangs") +
                                      tool_entry("thread_tools_h.Sync", "sync"));
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 1.0);
  std::vector<ToolCallResult> results;
  std::map<std::string, double> rewards;
  std::thread worker([&] {
    auto session = tools->start_session({{"sync", {{"create_kwargs", {{"ground_truth", "t"}}}}}});
    results = session->execute({{"hangs", nlohmann::ordered_json::object()}, {"sync", {{"x", 3}}}});
    rewards = session->finish();
  });
  worker.join();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].text,
            "Error executing tool 'hangs': did not return within 1 s "
            "(actor_rollout_ref.rollout.multi_turn.tool_timeout)");
  EXPECT_EQ(results[1].text, "sync-1 got 3 for t");
  EXPECT_EQ(rewards, (std::map<std::string, double>{{"hangs", 0.0}, {"sync", 0.25}}));
  EXPECT_EQ(events_text("thread_tools_h", "RELEASED"), "['hangs', 'sync']");
}

TEST(Tools, SyncMethodsAndOlderCreateSignatures) {
  const std::string dir = make_temp_dir("tools_sync");
  write_file(dir + "/sync_tools_e.py", kBadTools);
  forget_module("sync_tools_e");
  write_file(dir + "/tools.yaml",
             "tools:\n" + tool_entry("sync_tools_e.Sync", "sync") + tool_entry("sync_tools_e.OtherForms", "forms"));
  auto tools = ToolSet::from_config_file(dir + "/tools.yaml", 5.0);
  {
    // A dict with "text" and metrics None; a ToolResponse with an image (only the text is used), an int reward and
    // a NaN metric (as text: JSON has no NaN).
    auto session = tools->start_session(nlohmann::json::object());
    auto results = session->execute({{"forms", nlohmann::ordered_json::object()}, {"forms", {{"media", true}}}});
    EXPECT_FALSE(results.at(0).error);
    EXPECT_EQ(results[0].text, "from a dict");
    EXPECT_EQ(results[0].reward, 0.5);
    EXPECT_EQ(results[0].metrics, nlohmann::json::object());
    EXPECT_FALSE(results.at(1).error);
    EXPECT_EQ(results[1].text, "with a picture");
    EXPECT_EQ(results[1].reward, 1.0);
    EXPECT_EQ(results[1].metrics, (nlohmann::json{{"m", "nan"}}));
  }
  {
    // create(instance_id=None, ground_truth=None): the create_kwargs entry that names a parameter is passed.
    auto session = tools->start_session({{"sync", {{"create_kwargs", {{"ground_truth", "9"}, {"other", 1}}}}}});
    auto result = session->execute({{"sync", {{"x", "hello"}}}}).at(0);
    EXPECT_FALSE(result.error) << result.text;
    EXPECT_EQ(result.text, "sync-1 got hello for 9");
    EXPECT_EQ(result.reward, 0.0);  // None -> 0.0
    EXPECT_EQ(session->finish(), (std::map<std::string, double>{{"sync", 0.25}}));
    EXPECT_EQ(events_text("sync_tools_e", "RELEASED"), "['sync']");
    // Destroyed after finish: not released twice.
  }
  EXPECT_EQ(events_text("sync_tools_e", "RELEASED"), "['sync']");
  {
    // Destroyed without finish: still released.
    auto session = tools->start_session(nlohmann::json::object());
    EXPECT_FALSE(session->execute({{"sync", {{"x", 1}}}}).at(0).error);
  }
  EXPECT_EQ(events_text("sync_tools_e", "RELEASED"), "['sync', 'sync']");
}

void expect_config_error(const std::string& path, const std::vector<std::string>& parts) {
  try {
    ToolSet::from_config_file(path, 5.0);
    ADD_FAILURE() << "expected an error for " << path;
  } catch (const Error& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Tools, ConfigErrorsNameTheFileAndTheEntry) {
  const std::string dir = make_temp_dir("tools_errors");
  expect_config_error(dir + "/missing.yaml", {dir + "/missing.yaml", "does not exist"});

  write_file(dir + "/bad.yaml", "tools: [\n  - class_name: x\n");
  expect_config_error(dir + "/bad.yaml", {dir + "/bad.yaml"});

  write_file(dir + "/no_list.yaml", "tool: []\n");
  expect_config_error(dir + "/no_list.yaml", {dir + "/no_list.yaml", "tools:"});

  write_file(dir + "/no_class.yaml", "tools:\n" + tool_entry("verl.tools.gsm8k_tool.Gsm8kTool", "a") +
                                         "  - config: {type: native}\n");
  expect_config_error(dir + "/no_class.yaml", {dir + "/no_class.yaml", "tools[1]", "class_name"});

  write_file(dir + "/not_a_map.yaml", "tools:\n  - just_a_name\n");
  expect_config_error(dir + "/not_a_map.yaml", {"tools[0]: expected a map with class_name, config, tool_schema"});

  write_file(dir + "/no_module.yaml", "tools:\n" + tool_entry("not_a_module_f.Tool", "a"));
  expect_config_error(dir + "/no_module.yaml",
                      {dir + "/no_module.yaml", "tools[0]", "not_a_module_f.Tool", "No module named 'not_a_module_f'"});

  write_file(dir + "/no_class_in_module.yaml", "tools:\n" + tool_entry("verl.tools.gsm8k_tool.NoSuchTool", "a"));
  expect_config_error(dir + "/no_class_in_module.yaml", {"tools[0]", "NoSuchTool", "has no 'NoSuchTool'"});

  write_file(dir + "/mcp.yaml", "tools:\n  - class_name: verl.tools.gsm8k_tool.Gsm8kTool\n    config: {type: mcp}\n");
  expect_config_error(dir + "/mcp.yaml", {"tools[0]", "mcp"});

  write_file(dir + "/bad_schema.yaml",
             "tools:\n  - class_name: verl.tools.gsm8k_tool.Gsm8kTool\n    config: {type: native}\n"
             "    tool_schema: {type: function, function: {description: no name}}\n");
  expect_config_error(dir + "/bad_schema.yaml", {"tools[0]", "field 'name' is required"});

  write_file(dir + "/twice.yaml", "tools:\n" + tool_entry("verl.tools.gsm8k_tool.Gsm8kTool", "a") +
                                      tool_entry("verl.tools.base_tool.BaseTool", "a"));
  expect_config_error(dir + "/twice.yaml", {"tools[1]", "a second tool named 'a'"});
}

TEST(Tools, ShimServesVerlWhenNoVerlIsInstalled) {
  python::with_gil("test", [] {
    install_verl_python_shim();
    const std::string file = py::module_::import("verl.tools.schemas").attr("__file__").cast<std::string>();
    EXPECT_EQ(file, "<verl.cpp shim>/verl/tools/schemas.py");
    // Async methods stay async through rollout_trace_op.
    py::object inspect = py::module_::import("inspect");
    py::object base = python_global("verl.tools.base_tool", "BaseTool");
    EXPECT_TRUE(inspect.attr("iscoroutinefunction")(base.attr("execute")).cast<bool>());
    py::object response = python_global("verl.tools.schemas", "ToolResponse")(py::arg("text") = "t");
    EXPECT_EQ(py::str(response.attr("model_dump")(py::arg("exclude_none") = true)).cast<std::string>(),
              "{'text': 't'}");
  });
  EXPECT_EQ(verl_python_shim_modules().size(), 18u);
  EXPECT_THROW(verl_python_shim_source("verl.workers"), Error);
}

// ------------------------------------------------------------------------------------------------ interactions

const char* const kUserInteraction = R"PY(
import asyncio

from verl.interactions.base import BaseInteraction

LOG = []


class CountingUser(BaseInteraction):
    """Asks for another try until the third turn."""

    def __init__(self, config):
        super().__init__(config)
        self.turns = {}

    async def start_interaction(self, instance_id=None, **kwargs):
        self.turns[instance_id] = 0
        LOG.append(("start", self.name, self.config.get("limit"), kwargs.get("query")))
        return instance_id

    async def generate_response(self, instance_id, messages, **kwargs):
        self.turns[instance_id] += 1
        done = self.turns[instance_id] >= self.config["limit"]
        turn = self.turns[instance_id]
        return done, f"turn {turn} after {messages[-1]['content']}", 0.1, {"turn": turn}

    async def finalize_interaction(self):  # the older signature: no instance id
        LOG.append(("finalize",))


class Slow(BaseInteraction):
    async def generate_response(self, instance_id, messages, **kwargs):
        await asyncio.sleep(60)


class Broken(BaseInteraction):
    async def generate_response(self, instance_id, messages, **kwargs):
        return "not a tuple"
)PY";

TEST(Interactions, BuiltInGsm8kInteraction) {
  const std::string dir = make_temp_dir("interaction_gsm8k");
  write_file(dir + "/interaction_config.yaml", R"YAML(
interaction:
  - name: "gsm8k"
    class_name: "verl.interactions.gsm8k_interaction.Gsm8kInteraction"
    config: {}
)YAML");
  auto interactions = InteractionSet::from_config_file(dir + "/interaction_config.yaml", 30);
  EXPECT_EQ(interactions->names(), std::vector<std::string>{"gsm8k"});
  auto session = interactions->start_session({{"name", "gsm8k"}, {"query", "2+2?"}, {"ground_truth", "4"}});
  nlohmann::ordered_json messages = {{{"role", "user"}, {"content", "2+2?"}},
                                     {{"role", "assistant"}, {"content", "It is 5"}}};
  InteractionTurn turn = session->respond(messages);
  EXPECT_FALSE(turn.error);
  EXPECT_FALSE(turn.should_terminate);
  EXPECT_EQ(turn.content, "Your response is incorrect! You need to reflect on your answer and try again.");
  EXPECT_EQ(turn.score, 0.0);
  messages.push_back({{"role", "user"}, {"content", turn.content}});
  messages.push_back({{"role", "assistant"}, {"content", "Sorry: 2 + 2 = 4"}});
  turn = session->respond(messages);
  EXPECT_TRUE(turn.should_terminate);
  EXPECT_EQ(turn.content, "Your response is correct!");
  EXPECT_EQ(turn.score, 1.0);
  session->finish();
}

TEST(Interactions, UserInteractionClassAndErrors) {
  const std::string dir = make_temp_dir("interaction_user");
  write_file(dir + "/user_interactions_g.py", kUserInteraction);
  forget_module("user_interactions_g");
  write_file(dir + "/interactions.yaml", R"YAML(
interaction:
  - class_name: user_interactions_g.CountingUser
    config: {limit: 2}
  - name: broken
    class_name: user_interactions_g.Broken
)YAML");
  auto interactions = InteractionSet::from_config_file(dir + "/interactions.yaml", 30);
  EXPECT_EQ(interactions->names(), (std::vector<std::string>{"countinguser", "broken"}));  // verl's default name
  {
    auto session = interactions->start_session({{"name", "countinguser"}, {"query", "q"}});
    nlohmann::ordered_json messages = {{{"role", "assistant"}, {"content", "a1"}}};
    InteractionTurn turn = session->respond(messages);
    EXPECT_EQ(turn.content, "turn 1 after a1");
    EXPECT_FALSE(turn.should_terminate);
    EXPECT_DOUBLE_EQ(turn.score, 0.1);
    EXPECT_EQ(turn.metrics, (nlohmann::json{{"turn", 1}}));
    turn = session->respond(messages);
    EXPECT_TRUE(turn.should_terminate);
    session->finish();
  }
  EXPECT_EQ(events_text("user_interactions_g", "LOG"), "[('start', 'countinguser', 2, 'q'), ('finalize',)]");

  auto broken = interactions->start_session({{"name", "broken"}});
  InteractionTurn turn = broken->respond(nlohmann::ordered_json::array());
  EXPECT_TRUE(turn.error);
  EXPECT_TRUE(turn.should_terminate);
  EXPECT_EQ(turn.content.rfind("Error in interaction 'broken': generate_response returned 'not a tuple'", 0), 0u)
      << turn.content;

  try {
    interactions->start_session({{"name", "nobody"}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nobody' is not an interaction"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[\"countinguser\",\"broken\"]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(interactions->start_session(nlohmann::json::object()), Error);

  // A reply that does not come within the time limit ends the conversation with an error text.
  write_file(dir + "/slow.yaml", "interaction:\n  - name: slow\n    class_name: user_interactions_g.Slow\n");
  auto slow = InteractionSet::from_config_file(dir + "/slow.yaml", 1.0)->start_session({{"name", "slow"}});
  turn = slow->respond(nlohmann::ordered_json::array());
  EXPECT_TRUE(turn.error);
  EXPECT_TRUE(turn.should_terminate);
  EXPECT_EQ(turn.content,
            "Error in interaction 'slow': did not return within 1 s "
            "(actor_rollout_ref.rollout.multi_turn.tool_timeout)");

  write_file(dir + "/bad.yaml", "interaction:\n  - name: x\n    class_name: user_interactions_g.Nope\n");
  try {
    InteractionSet::from_config_file(dir + "/bad.yaml", 30);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/bad.yaml': interaction[0] (user_interactions_g.Nope)"),
              std::string::npos)
        << e.what();
  }
  for (const auto& [file, entries, expected] : std::vector<std::array<std::string, 3>>{
           {"no_class.yaml", "  - name: x\n", "interaction[0]: class_name (module.Class) is missing"},
           {"not_a_map.yaml", "  - x\n", "interaction[0]: expected a map with name, class_name, config"}}) {
    write_file(dir + "/" + file, "interaction:\n" + entries);
    try {
      InteractionSet::from_config_file(dir + "/" + file, 30);
      ADD_FAILURE() << "expected an error for " << file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace verl::agent
