// verl's tools and interactions in the embedded interpreter (verl/agent/tools.h).
//
// Each ToolSet / InteractionSet owns one asyncio event loop, run from the calling thread with
// loop.run_until_complete, one caller at a time (a mutex taken before the GIL). The Python side (kDriverSource)
// builds the objects and runs the calls (with python/async_calls.h's helpers); it returns plain JSON text, which is
// all C++ reads back.
//
// Function tools (@function_tool): an async def runs on the loop like a tool method; a plain def on a daemon thread
// of its own (verl's asyncio.to_thread), so that a round's calls overlap, and a TimeoutError is raised inside that
// thread when its call times out.
//
// Time limits: every call is awaited with asyncio.wait under the timeout; code that blocks the event loop
// (time.sleep in an async def, a plain def that never returns) is stopped by python::UserCallLimit, a backstop
// kBackstopSlackSeconds after the last timeout the batch could legitimately reach.
#include "verl/agent/tools.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "verl/agent/verl_python_shim.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/config/node_json.h"
#include "verl/config/yaml_io.h"
#include "verl/python/async_calls.h"
#include "verl/python/interpreter.h"
#include "verl/python/user_code.h"

namespace py = pybind11;

namespace verl::agent {

namespace {

constexpr const char* kToolTimeoutKey = "actor_rollout_ref.rollout.multi_turn.tool_timeout";
constexpr double kBackstopSlackSeconds = 2.0;

const char* const kDriverSource = R"PY(
import asyncio
import importlib
import inspect
import json
import math
import os
import sys
import uuid

from _verl_cpp_async import CallTimeout, describe, in_daemon_thread, invoke, with_timeout


async def run_all(coroutines):
    """Every coroutine concurrently (the calls of several trajectories at once)."""
    await asyncio.gather(*coroutines)


def add_import_paths(folder):
    for path in (folder, os.getcwd()):
        if path and path not in sys.path:
            sys.path.append(path)


def import_class(class_name):
    module_name, dot, attr = class_name.rpartition(".")
    if not dot or not module_name or not attr:
        raise ImportError(f"'{class_name}' is not of the form module.Class")
    module = importlib.import_module(module_name)
    if not hasattr(module, attr):
        raise ImportError(f"module '{module_name}' ({getattr(module, '__file__', '?')}) has no '{attr}'")
    return getattr(module, attr)


def jsonable(value):
    """Plain JSON data: dict keys as strings, numpy scalars as numbers, non-finite floats and others as text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if hasattr(value, "item") and hasattr(value, "dtype"):
        try:
            return jsonable(value.item())
        except Exception:
            pass
    return str(value)


def dump(value):
    """JSON text as UTF-8 bytes (lone surrogates replaced)."""
    return json.dumps(jsonable(value), ensure_ascii=False).encode("utf-8", "replace")


def parameter_names(fn):
    """(named parameters, accepts **kwargs, accepts a positional argument); permissive when not inspectable."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), True, True
    names, var_kw, positional = set(), False, False
    for p in signature.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
        elif p.kind == p.VAR_POSITIONAL:
            positional = True
        else:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional = True
            if p.kind != p.POSITIONAL_ONLY:
                names.add(p.name)
    return names, var_kw, positional


def is_number(value):
    if isinstance(value, (str, bytes)):
        return False
    return isinstance(value, (bool, int, float)) or hasattr(value, "__float__")


def timeout_text(timeout):
    return f"did not return within {timeout:g} s ({TIMEOUT_KEY})"


# ---------------------------------------------------------------------------------------------------------- tools

class FunctionToolEntry:
    """A @function_tool tool (verl.tools.function_tool.FunctionTool): stateless, called with the arguments alone."""

    def __init__(self, tool):
        self.tool = tool


def load_function_tools(path):
    """verl's load_function_tools_from_path: [(entry, name, schema JSON as the template gets it)], sorted by name."""
    from verl.tools.function_tool import load_function_tools_from_path

    add_import_paths(os.path.dirname(os.path.abspath(path)))
    return [(FunctionToolEntry(tool), tool.name,
             dump(tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)))
            for tool in load_function_tools_from_path(path)]


async def call_function_tool(tool, arguments):
    """verl's FunctionTool.call, then its normalize_function_tool_return (from the module that made the tool)."""
    if tool.is_async:
        raw = await invoke(tool.fn, **arguments)
    else:
        raw = await in_daemon_thread(tool.fn, arguments, f"function tool {getattr(tool.fn, '__name__', '?')}")
    return sys.modules[type(tool).__module__].normalize_function_tool_return(raw)


def build_tool(class_name, config_json, schema_json):
    """verl's initialize_tools_from_config for one native tool: (tool, name, schema JSON as the template gets it)."""
    from verl.tools.schemas import OpenAIFunctionToolSchema

    cls = import_class(class_name)
    schema_dict = json.loads(schema_json)
    schema = None if schema_dict is None else OpenAIFunctionToolSchema.model_validate(schema_dict)
    tool = cls(config=json.loads(config_json), tool_schema=schema)
    schema = getattr(tool, "tool_schema", None) or tool.get_openai_tool_schema()
    if schema is None:
        raise ValueError(f"{class_name} has no tool schema")
    name = getattr(tool, "name", None) or schema.function.name
    if not isinstance(name, str) or not name:
        raise ValueError(f"{class_name} has no tool name (tool_schema.function.name)")
    return tool, name, dump(schema.model_dump(exclude_unset=True, exclude_none=True))


def response_text(name, response):
    """(text, has_media) of a tool response, or None when it is not one of verl's forms."""
    if isinstance(response, str):
        return response, False
    if isinstance(response, dict):
        if "text" not in response and not ("image" in response or "video" in response):
            return None
        text, media = response.get("text"), bool(response.get("image") or response.get("video"))
    elif hasattr(response, "text") and hasattr(response, "image"):
        text, media = response.text, bool(getattr(response, "image", None) or getattr(response, "video", None))
    else:
        return None
    if text is None:
        text = ""
    if not isinstance(text, str):
        return None
    return text, media


def short_repr(value, limit=200):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def error_result(text, exc_type=""):
    return {"text": text, "reward": 0.0, "metrics": {}, "error": True, "exc_type": exc_type, "media": False}


def normalize(name, result):
    """verl's (ToolResponse | str, reward, metrics); also (response, reward) and a response alone."""
    malformed = error_result(
        f"Error executing tool '{name}': malformed return {short_repr(result)} ({type(result).__name__}); "
        "expected (ToolResponse | str, reward, metrics)"
    )
    response, reward, metrics = result, 0.0, {}
    if isinstance(result, tuple):
        if len(result) == 3:
            response, reward, metrics = result
        elif len(result) == 2:
            response, reward = result
        else:
            return malformed
    text = response_text(name, response)
    if text is None:
        return malformed
    if reward is None:
        reward = 0.0
    if not is_number(reward):
        return malformed
    reward = float(reward)
    if not math.isfinite(reward):
        return malformed
    if metrics is None:
        metrics = {}
    if not isinstance(metrics, dict):
        return malformed
    return {"text": text[0], "reward": reward, "metrics": metrics, "error": False, "exc_type": "",
            "media": text[1]}


class ToolSession:
    """One trajectory's tool instances: created on first use, released by finish()."""

    def __init__(self, tools, tools_kwargs_json, selected_json):
        selected = json.loads(selected_json)  # null: every tool; else ToolSet::selected_names of the selection
        self.tools = tools if selected is None else {name: tools[name] for name in selected}
        kwargs = json.loads(tools_kwargs_json)
        self.tools_kwargs = kwargs if isinstance(kwargs, dict) else {}
        self.instances = {}  # name -> task giving the instance id, in creation order

    def kwargs_for(self, name, key):
        entry = self.tools_kwargs.get(name)
        value = entry.get(key) if isinstance(entry, dict) else None
        return dict(value) if isinstance(value, dict) else {}

    async def create(self, name):
        tool = self.tools[name]
        create_kwargs = self.kwargs_for(name, "create_kwargs")
        names, var_kw, _ = parameter_names(tool.create)
        kwargs = {}
        if var_kw or "create_kwargs" in names:  # verl 0.9.1: create(create_kwargs=...)
            kwargs["create_kwargs"] = create_kwargs
        for key, value in create_kwargs.items():  # older verl: create(**create_kwargs), e.g. ground_truth=
            if key in names and key not in ("self", "instance_id", "create_kwargs"):
                kwargs[key] = value
        result = await invoke(tool.create, **kwargs)
        instance_id = result[0] if isinstance(result, tuple) and result else result
        return str(uuid.uuid4()) if instance_id is None else instance_id

    async def instance(self, name):
        task = self.instances.get(name)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            self.instances.pop(name, None)
            task = asyncio.ensure_future(self.create(name))
            self.instances[name] = task
        return await asyncio.shield(task)  # a timed-out call does not cancel a creation another call awaits

    async def call(self, name, arguments_json, timeout):
        if name not in self.tools:
            return error_result(f"Unknown function '{name}'. Available tools: {list(self.tools)}")
        try:
            try:
                arguments = json.loads(arguments_json)
            except json.JSONDecodeError as exc:  # verl's _call_tool reply
                return error_result(f"Invalid JSON in arguments for '{name}': {exc}", "JSONDecodeError")
            if isinstance(arguments, str):  # arguments given as JSON text
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    pass
            if not isinstance(arguments, dict):
                return error_result(
                    f"Error executing tool '{name}': the arguments must be a JSON object, got "
                    f"{short_repr(arguments)}")

            tool = self.tools[name]

            async def run():
                if isinstance(tool, FunctionToolEntry):  # no instance; tools_kwargs do not reach it (verl's design)
                    return await call_function_tool(tool.tool, arguments)
                instance_id = await self.instance(name)
                return await invoke(tool.execute, instance_id, arguments, **self.kwargs_for(name, "execute_kwargs"))

            return normalize(name, await with_timeout(run(), timeout))
        except CallTimeout:
            return error_result(f"Error executing tool '{name}': {timeout_text(timeout)}", "CallTimeout")
        except (Exception, asyncio.CancelledError) as exc:  # nothing cancels a call but the tool itself
            return error_result(f"Error executing tool '{name}': {describe(exc)}", type(exc).__name__)

    def start_execute(self, calls_json, timeout):
        """(results list filled as the calls finish, the coroutine running them all concurrently)."""
        calls = json.loads(calls_json)
        results = [None] * len(calls)

        async def one(i, call):
            results[i] = await self.call(call["name"], call["arguments"], timeout)

        async def main():
            await asyncio.gather(*(one(i, call) for i, call in enumerate(calls)))

        return results, main()

    async def finish_one(self, name, task, timeout):
        """(reward, [error texts]): calc_reward, then release, of one created instance."""
        if not task.done() or task.cancelled() or task.exception() is not None:
            task.cancel()
            return 0.0, []
        tool, instance_id, errors, reward = self.tools[name], task.result(), [], 0.0
        try:
            value = await with_timeout(
                invoke(tool.calc_reward, instance_id, **self.kwargs_for(name, "calc_reward_kwargs")), timeout)
            if value is None:
                value = 0.0
            if not is_number(value) or not math.isfinite(float(value)):
                errors.append(f"calc_reward of tool '{name}' returned {short_repr(value)}, expected a number")
            else:
                reward = float(value)
        except CallTimeout:
            errors.append(f"calc_reward of tool '{name}' {timeout_text(timeout)}")
        except (Exception, asyncio.CancelledError) as exc:
            errors.append(f"calc_reward of tool '{name}' raised {describe(exc)}")
        try:
            await with_timeout(invoke(tool.release, instance_id, **self.kwargs_for(name, "release_kwargs")), timeout)
        except CallTimeout:
            errors.append(f"release of tool '{name}' {timeout_text(timeout)}")
        except (Exception, asyncio.CancelledError) as exc:
            errors.append(f"release of tool '{name}' raised {describe(exc)}")
        return reward, errors

    def start_finish(self, timeout):
        """(results: [name, reward, errors] per created instance, the coroutine); forgets the instances."""
        instances = list(self.instances.items())
        self.instances = {}
        results = [[name, 0.0, [f"finishing tool '{name}' did not complete"]] for name, _ in instances]

        async def one(i, name, task):
            reward, errors = await self.finish_one(name, task, timeout)
            results[i] = [name, reward, errors]

        async def main():
            await asyncio.gather(*(one(i, name, task) for i, (name, task) in enumerate(instances)))

        return results, main()


def collect_execute(results, names, timeout, backstop_text):
    """The results as JSON; calls without one (the loop was stopped) or stopped by the backstop time out."""
    out = []
    for result, name in zip(results, names):
        if result is None or (backstop_text and result.get("exc_type") == "TimeoutError"):
            text = backstop_text or timeout_text(timeout)
            result = error_result(f"Error executing tool '{name}': {text}", "CallTimeout")
        out.append(result)
    return dump(out)


# --------------------------------------------------------------------------------------------------- interactions

def interaction_name(item_name, class_name):
    """verl's default: the class name without "Interaction", lower-cased (Gsm8kInteraction -> gsm8k)."""
    if item_name:
        return item_name
    simple = class_name.rsplit(".", 1)[-1]
    if simple.endswith("Interaction") and len(simple) > len("Interaction"):
        simple = simple[: -len("Interaction")]
    return simple.lower()


def build_interaction(class_name, config_json, name):
    cls = import_class(class_name)
    config = json.loads(config_json)
    config["name"] = name
    return cls(config)


class InteractionSession:
    def __init__(self, interaction, name, kwargs_json):
        self.interaction = interaction
        self.name = name
        self.kwargs = json.loads(kwargs_json)
        self.instance_id = str(uuid.uuid4())
        self.outcome = None

    def run(self, coro_fn, timeout):
        """(outcome holder, coroutine): outcome[0] is ("ok", value) or ("error", text, exc_type) when done."""
        outcome = [None]

        async def main():
            try:
                outcome[0] = ("ok", await with_timeout(coro_fn(), timeout))
            except CallTimeout:
                outcome[0] = ("error", timeout_text(timeout), "CallTimeout")
            except (Exception, asyncio.CancelledError) as exc:
                outcome[0] = ("error", describe(exc), type(exc).__name__)

        return outcome, main()

    def start(self, timeout):
        return self.run(lambda: invoke(self.interaction.start_interaction, self.instance_id, **self.kwargs), timeout)

    def respond(self, messages_json, timeout):
        messages = json.loads(messages_json)
        return self.run(
            lambda: invoke(self.interaction.generate_response, self.instance_id, messages, **self.kwargs), timeout)

    def finish(self, timeout):
        _, _, positional = parameter_names(self.interaction.finalize_interaction)
        args = (self.instance_id,) if positional else ()
        return self.run(lambda: invoke(self.interaction.finalize_interaction, *args), timeout)


def turn_result(name, outcome, backstop_text):
    """The InteractionTurn as JSON from generate_response's (should_terminate, content, score, metrics)."""
    def error(text):
        return dump({"should_terminate": True, "content": f"Error in interaction '{name}': {text}", "score": 0.0,
                     "metrics": {}, "error": True})

    state = outcome[0]
    if state is None or (backstop_text and state[0] == "error" and state[2] == "TimeoutError"):
        return error(backstop_text or "did not finish")
    if state[0] == "error":
        return error(state[1])
    value = state[1]
    expected = "expected (should_terminate_sequence, response_content, score, additional_data)"
    if not isinstance(value, tuple) or len(value) != 4:
        return error(f"generate_response returned {short_repr(value)}; {expected}")
    terminate, content, score, metrics = value
    if content is None:
        content = ""
    if score is None:
        score = 0.0
    if metrics is None:
        metrics = {}
    if not isinstance(content, str) or not is_number(score) or not isinstance(metrics, dict):
        return error(f"generate_response returned {short_repr(value)}; {expected}")
    score = float(score)
    if not math.isfinite(score):
        return error(f"generate_response returned the score {score}")
    return dump({"should_terminate": bool(terminate), "content": content, "score": score, "metrics": metrics,
                 "error": False})


def outcome_error(outcome, backstop_text):
    """The error text of a finished start / finish, or None."""
    state = outcome[0]
    if state is None:
        return backstop_text or "did not finish"
    if state[0] == "error":
        return backstop_text if (backstop_text and state[2] == "TimeoutError") else state[1]
    return None
)PY";

// The driver module, made once per process (kept in sys.modules; GIL held).
py::object driver() {
  py::module_ sys = py::module_::import("sys");
  py::dict modules = sys.attr("modules");
  if (modules.contains("_verl_cpp_agent")) return modules["_verl_cpp_agent"];
  install_verl_python_shim();
  python::async_calls_module();  // its helpers; installs the exit guards before any tool file runs
  py::module_ module = py::module_::import("types").attr("ModuleType")("_verl_cpp_agent");
  module.attr("__builtins__") = py::module_::import("builtins");
  module.attr("TIMEOUT_KEY") = py::str(kToolTimeoutKey);
  py::exec(kDriverSource, module.attr("__dict__"));
  modules["_verl_cpp_agent"] = module;
  return std::move(module);
}

std::string bytes_text(const py::handle& value) { return value.cast<py::bytes>().cast<std::string>(); }

// JSON text for Python; invalid UTF-8 (model output) replaced rather than thrown on.
template <typename Json>
std::string json_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The YAML file as JSON; errors name the file.
nlohmann::ordered_json read_yaml(const std::string& path, const std::string& what) {
  VERL_CHECK(std::filesystem::is_regular_file(path), "tools", what, " '", path, "' does not exist or is not a file");
  try {
    return config::node_to_json(config::load_yaml_file(path));
  } catch (const Error& e) {
    VERL_FAIL("tools", what, " '", path, "': ", e.message());
  }
}

std::string folder_of(const std::string& path) {
  return std::filesystem::absolute(std::filesystem::path(path)).parent_path().string();
}

// One event loop and the Python objects around it, shared by a set and its sessions; used by one caller at a time.
struct LoopRunner {
  std::mutex mutex;  // taken before the GIL
  double timeout_s = 0;
  py::object loop;
  py::object driver;
  py::object objects;  // dict name -> tool / interaction object

  LoopRunner() = default;
  LoopRunner(const LoopRunner&) = delete;
  LoopRunner& operator=(const LoopRunner&) = delete;
  ~LoopRunner() {
    if (!loop && !driver && !objects) return;
    py::gil_scoped_acquire gil;
    objects = py::object();
    if (loop) {
      try {
        loop.attr("close")();  // its selector and self-pipe
      } catch (py::error_already_set&) {
      }
    }
    loop = py::object();
    driver = py::object();
  }

  // Runs the coroutine to completion under the backstop (GIL and mutex held); "" or the backstop's message.
  std::string run(py::object coroutine, double backstop_s, const std::string& what) {
    python::UserCallLimit limit(backstop_s, what, kToolTimeoutKey);
    try {
      loop.attr("run_until_complete")(coroutine);
    } catch (py::error_already_set& error) {
      // Only the backstop's TimeoutError can land outside the calls' own handlers.
      if (!limit.expired()) {
        VERL_LOG(Warn, "tools") << what << ": the event loop stopped: " << python::describe_python_error(error);
        return "the event loop stopped: " + python::describe_python_error(error);
      }
    }
    return limit.expired() ? limit.timeout_message() : std::string();
  }

  double backstop(int sequential_steps) const {
    return timeout_s > 0 ? timeout_s * sequential_steps + kBackstopSlackSeconds : 0.0;
  }
};

std::shared_ptr<LoopRunner> make_runner(double timeout_s) {
  auto runner = std::make_shared<LoopRunner>();
  runner->timeout_s = timeout_s;
  runner->driver = driver();
  runner->loop = py::module_::import("asyncio").attr("new_event_loop")();
  return runner;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------- tools

struct ToolSet::Impl {
  std::shared_ptr<LoopRunner> runner;  // its objects: the tools by name
  nlohmann::ordered_json schemas = nlohmann::ordered_json::array();
  std::vector<std::string> names;
  std::map<std::string, std::string> class_names;  // by tool name, without the module
};

namespace {

class PythonToolSession final : public ToolSession {
 public:
  // `selected`: null for every tool, else the names the sample may use (ToolSet::selected_names).
  PythonToolSession(std::shared_ptr<LoopRunner> runner, const nlohmann::json& tools_kwargs,
                    const nlohmann::json& selected)
      : runner_(std::move(runner)) {
    session_ = runner_->driver.attr("ToolSession")(
        runner_->objects, py::str(tools_kwargs.is_object() ? json_text(tools_kwargs) : std::string("{}")),
        py::str(json_text(selected)));
  }

  ~PythonToolSession() override {
    try {
      finish_instances(/*log_errors=*/false);
    } catch (...) {
    }
    py::gil_scoped_acquire gil;
    session_ = py::object();
  }

  std::vector<ToolCallResult> execute(const std::vector<ToolCallRequest>& calls) override {
    if (calls.empty()) return {};
    std::lock_guard<std::mutex> lock(runner_->mutex);
    const std::string text = python::with_gil("tools", [&] {
      py::tuple started = start(calls);
      const std::string backstop = runner_->run(started[1], runner_->backstop(1), "tool calls");
      return collect(started[0], calls, backstop);
    });
    return parse(text, calls);
  }

  // With the runner's mutex and the GIL held: (results list, coroutine running the calls).
  py::tuple start(const std::vector<ToolCallRequest>& calls) {
    nlohmann::json call_list = nlohmann::json::array();
    for (const auto& call : calls) {
      const std::string arguments = call.arguments_text ? *call.arguments_text : json_text(call.arguments);
      call_list.push_back({{"name", call.name}, {"arguments", arguments}});
    }
    return session_.attr("start_execute")(py::str(json_text(call_list)), runner_->timeout_s);
  }

  std::string collect(py::handle results, const std::vector<ToolCallRequest>& calls, const std::string& backstop) {
    py::list py_names;
    for (const auto& call : calls) py_names.append(py::str(call.name));
    return bytes_text(runner_->driver.attr("collect_execute")(results, py_names, runner_->timeout_s, py::str(backstop)));
  }

  LoopRunner& runner() { return *runner_; }

  std::vector<ToolCallResult> parse(const std::string& text, const std::vector<ToolCallRequest>& calls) const {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    std::vector<ToolCallResult> out;
    for (size_t i = 0; i < parsed.size(); ++i) {
      const auto& item = parsed[i];
      ToolCallResult result;
      result.text = item.at("text").get<std::string>();
      result.reward = item.at("reward").get<double>();
      result.metrics = item.at("metrics");
      result.error = item.at("error").get<bool>();
      if (result.error) {
        VERL_LOG(Warn, "tools") << result.text;
      }
      if (item.value("media", false)) {
        VERL_LOG(Warn, "tools") << "tool '" << calls[i].name
                                << "' returned images or videos; only the text reaches the model";
      }
      out.push_back(std::move(result));
    }
    return out;
  }

  std::map<std::string, double> finish() override { return finish_instances(/*log_errors=*/true); }

 private:
  std::map<std::string, double> finish_instances(bool log_errors) {
    std::lock_guard<std::mutex> lock(runner_->mutex);
    const std::string text = python::with_gil("tools", [&] {
      if (py::len(session_.attr("instances")) == 0) return std::string("[]");
      py::tuple started = session_.attr("start_finish")(runner_->timeout_s);
      const std::string backstop = runner_->run(started[1], runner_->backstop(2), "tool calc_reward / release");
      if (!backstop.empty() && log_errors) {
        VERL_LOG(Warn, "tools") << backstop;
      }
      return bytes_text(runner_->driver.attr("dump")(started[0]));
    });
    std::map<std::string, double> rewards;
    for (const auto& item : nlohmann::json::parse(text)) {
      const std::string name = item.at(0).get<std::string>();
      rewards[name] = item.at(1).get<double>();
      if (!log_errors) continue;
      for (const auto& error : item.at(2)) {
        VERL_LOG(Warn, "tools") << error.get<std::string>();
      }
    }
    return rewards;
  }

  std::shared_ptr<LoopRunner> runner_;
  py::object session_;
};

}  // namespace

namespace {

constexpr const char* kFunctionToolKey = "actor_rollout_ref.rollout.multi_turn.function_tool_path";

// The class_name (module.Class) of a tool or interaction config entry, a map with `keys`; errors name `where`.
std::string config_entry_class_name(const nlohmann::ordered_json& entry, const std::string& where, const char* keys) {
  VERL_CHECK(entry.is_object(), "tools", where, ": expected a map with ", keys);
  VERL_CHECK(entry.contains("class_name") && entry["class_name"].is_string() &&
                 !entry["class_name"].get<std::string>().empty(),
             "tools", where, ": class_name (module.Class) is missing");
  return entry["class_name"].get<std::string>();
}

// The tools of verl's tool YAML (already read into `root`) into `tools` and `impl` (GIL held).
void add_config_tools(ToolSet::Impl& impl, py::dict& tools, const nlohmann::ordered_json& root,
                      const std::string& path) {
  VERL_CHECK(root.is_object() && root.contains("tools") && root["tools"].is_array(), "tools", "tool config '", path,
             "': expected a list under `tools:` (verl's format: tools: [{class_name, config, tool_schema}])");
  impl.runner->driver.attr("add_import_paths")(py::str(folder_of(path)));
  const auto& entries = root["tools"];
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& entry = entries[i];
    const std::string where = str_cat("tool config '", path, "': tools[", i, "]");
    const std::string class_name = config_entry_class_name(entry, where, "class_name, config, tool_schema");
    const std::string who = str_cat(where, " (", class_name, ")");
    const nlohmann::ordered_json config = entry.value("config", nlohmann::ordered_json::object());
    VERL_CHECK(config.is_object(), "tools", who, ": config must be a map ({type: native, ...})");
    VERL_CHECK(config.contains("type") && config["type"].is_string(), "tools", who,
               ": config.type is missing (native)");
    const std::string type = config["type"].get<std::string>();
    VERL_CHECK(type != "mcp", "tools", who, ": MCP tools (config.type: mcp) are not supported; use native tools");
    VERL_CHECK(type == "native", "tools", who, ": unknown config.type '", type, "' (native)");
    const nlohmann::ordered_json schema = entry.value("tool_schema", nlohmann::ordered_json());
    VERL_CHECK(schema.is_null() || schema.is_object(), "tools", who, ": tool_schema must be a map");
    py::tuple built;
    try {
      built =
          impl.runner->driver.attr("build_tool")(py::str(class_name), py::str(config.dump()), py::str(schema.dump()));
    } catch (py::error_already_set& error) {
      VERL_FAIL("tools", who, ": cannot build the tool: ", python::describe_python_error(error));
    }
    const std::string name = built[1].cast<std::string>();
    VERL_CHECK(!tools.contains(py::str(name)), "tools", who, ": a second tool named '", name, "'");
    tools[py::str(name)] = built[0];
    impl.names.push_back(name);
    impl.class_names[name] = class_name.substr(class_name.rfind('.') + 1);
    impl.schemas.push_back(nlohmann::ordered_json::parse(bytes_text(built[2])));
  }
}

// The @function_tool tools the file registers, after those of the YAML (verl's load_all_tools order; GIL held).
void add_function_tools(ToolSet::Impl& impl, py::dict& tools, const std::string& path,
                        const std::optional<std::string>& tool_config_path) {
  VERL_CHECK(std::filesystem::is_regular_file(path), "tools", "function tool file '", path,
             "' does not exist or is not a file (", kFunctionToolKey, ")");
  py::list built;
  try {
    built = impl.runner->driver.attr("load_function_tools")(py::str(path));
  } catch (py::error_already_set& error) {
    VERL_FAIL("tools", "function tool file '", path, "' (", kFunctionToolKey,
              "): cannot load its tools: ", python::describe_python_error(error));
  }
  if (py::len(built) == 0) {
    VERL_LOG(Warn, "tools") << "function tool file '" << path << "' (" << kFunctionToolKey
                            << ") registers no tool: decorate its functions with @function_tool "
                               "(from verl.tools.function_tool import function_tool)";
  }
  std::vector<std::string> collisions;
  for (const auto& item : built) {
    const std::string name = item.cast<py::tuple>()[1].cast<std::string>();
    if (tools.contains(py::str(name))) collisions.push_back("'" + name + "'");
  }
  VERL_CHECK(collisions.empty(), "tools", "function tool name(s) [", join(collisions, ", "), "] in '", path,
             "' collide with tools already declared in '", tool_config_path.value_or(""),
             "'; each tool name must be unique across tool_config_path and function_tool_path");
  for (const auto& item : built) {
    const py::tuple entry = item.cast<py::tuple>();
    const std::string name = entry[1].cast<std::string>();
    tools[py::str(name)] = entry[0];
    impl.names.push_back(name);
    impl.class_names[name] = "";  // no class, no execute trace span (verl traces BaseTool.execute only)
    impl.schemas.push_back(nlohmann::ordered_json::parse(bytes_text(entry[2])));
  }
}

}  // namespace

std::shared_ptr<ToolSet> ToolSet::from_config_file(const std::string& path, double timeout_s) {
  return load(path, std::nullopt, timeout_s);
}

std::shared_ptr<ToolSet> ToolSet::load(const std::optional<std::string>& tool_config_path,
                                       const std::optional<std::string>& function_tool_path, double timeout_s) {
  VERL_CHECK(tool_config_path || function_tool_path, "tools", "no tool_config_path or function_tool_path to load");
  const nlohmann::ordered_json root =
      tool_config_path ? read_yaml(*tool_config_path, "tool config") : nlohmann::ordered_json();
  auto set = std::shared_ptr<ToolSet>(new ToolSet());
  set->impl_ = std::make_unique<Impl>();
  Impl& impl = *set->impl_;
  python::with_gil("tools", [&] {
    impl.runner = make_runner(timeout_s);
    py::dict tools;
    if (tool_config_path) add_config_tools(impl, tools, root, *tool_config_path);
    if (function_tool_path) add_function_tools(impl, tools, *function_tool_path, tool_config_path);
    impl.runner->objects = std::move(tools);
  });
  return set;
}

ToolSet::~ToolSet() = default;

const nlohmann::ordered_json& ToolSet::schemas() const { return impl_->schemas; }

std::vector<std::string> ToolSet::names() const { return impl_->names; }

std::string ToolSet::class_name(const std::string& name) const {
  const auto it = impl_->class_names.find(name);
  return it == impl_->class_names.end() ? std::string() : it->second;
}

std::vector<std::string> ToolSet::selected_names(const std::vector<std::string>& selection) const {
  if (selection.empty()) return impl_->names;
  std::vector<std::string> names;
  for (const auto& name : selection) {
    const bool known = std::find(impl_->names.begin(), impl_->names.end(), name) != impl_->names.end();
    if (known && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

nlohmann::ordered_json ToolSet::selected_schemas(const std::vector<std::string>& selection) const {
  if (selection.empty()) return impl_->schemas;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& name : selected_names(selection)) {
    const auto at = std::find(impl_->names.begin(), impl_->names.end(), name) - impl_->names.begin();
    out.push_back(impl_->schemas[static_cast<size_t>(at)]);
  }
  return out;
}

std::unique_ptr<ToolSession> ToolSet::start_session(const nlohmann::json& tools_kwargs,
                                                    const std::vector<std::string>& selection) {
  return python::with_gil("tools", [&]() -> std::unique_ptr<ToolSession> {
    const nlohmann::json selected = selection.empty() ? nlohmann::json() : nlohmann::json(selected_names(selection));
    return std::make_unique<PythonToolSession>(impl_->runner, tools_kwargs, selected);
  });
}

std::vector<std::vector<ToolCallResult>> ToolSet::execute_concurrently(const std::vector<SessionCalls>& work) {
  std::vector<PythonToolSession*> sessions;
  for (const auto& [session, calls] : work) {
    auto* python_session = dynamic_cast<PythonToolSession*>(session);
    VERL_CHECK(python_session != nullptr && &python_session->runner() == impl_->runner.get(), "tools",
               "execute_concurrently needs sessions started by this tool set");
    sessions.push_back(python_session);
  }
  std::vector<std::string> texts(work.size());
  {
    std::lock_guard<std::mutex> lock(impl_->runner->mutex);
    python::with_gil("tools", [&] {
      std::vector<py::object> results(work.size());
      py::list coroutines;
      for (size_t i = 0; i < work.size(); ++i) {
        if (work[i].second.empty()) continue;
        py::tuple started = sessions[i]->start(work[i].second);
        results[i] = started[0];
        coroutines.append(started[1]);
      }
      if (py::len(coroutines) == 0) return 0;
      const std::string backstop =
          impl_->runner->run(impl_->runner->driver.attr("run_all")(coroutines), impl_->runner->backstop(1), "tool calls");
      for (size_t i = 0; i < work.size(); ++i) {
        if (!work[i].second.empty()) texts[i] = sessions[i]->collect(results[i], work[i].second, backstop);
      }
      return 0;
    });
  }
  std::vector<std::vector<ToolCallResult>> out(work.size());
  for (size_t i = 0; i < work.size(); ++i) {
    if (!work[i].second.empty()) out[i] = sessions[i]->parse(texts[i], work[i].second);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ interactions

struct InteractionSet::Impl {
  std::shared_ptr<LoopRunner> runner;  // its objects: the interactions by name
  std::vector<std::string> names;
  std::string path;
};

namespace {

class PythonInteractionSession final : public InteractionSession {
 public:
  PythonInteractionSession(std::shared_ptr<LoopRunner> runner, py::object session, std::string name)
      : runner_(std::move(runner)), session_(std::move(session)), name_(std::move(name)) {}

  ~PythonInteractionSession() override {
    try {
      if (!finished_) finish_impl(/*log_errors=*/false);
    } catch (...) {
    }
    py::gil_scoped_acquire gil;
    session_ = py::object();
  }

  InteractionTurn respond(const nlohmann::ordered_json& messages) override {
    std::lock_guard<std::mutex> lock(runner_->mutex);
    const std::string text = python::with_gil("interaction", [&] {
      py::tuple started = session_.attr("respond")(py::str(json_text(messages)), runner_->timeout_s);
      const std::string backstop = runner_->run(started[1], runner_->backstop(1), "interaction '" + name_ + "'");
      return bytes_text(runner_->driver.attr("turn_result")(py::str(name_), started[0], py::str(backstop)));
    });
    const nlohmann::json parsed = nlohmann::json::parse(text);
    InteractionTurn turn;
    turn.should_terminate = parsed.at("should_terminate").get<bool>();
    turn.content = parsed.at("content").get<std::string>();
    turn.score = parsed.at("score").get<double>();
    turn.metrics = parsed.at("metrics");
    turn.error = parsed.at("error").get<bool>();
    if (turn.error) {
      VERL_LOG(Warn, "tools") << turn.content;
    }
    return turn;
  }

  void finish() override { finish_impl(/*log_errors=*/true); }

 private:
  void finish_impl(bool log_errors) {
    finished_ = true;
    std::lock_guard<std::mutex> lock(runner_->mutex);
    python::with_gil("interaction", [&] {
      py::tuple started = session_.attr("finish")(runner_->timeout_s);
      const std::string backstop = runner_->run(started[1], runner_->backstop(1), "interaction '" + name_ + "'");
      py::object error = runner_->driver.attr("outcome_error")(started[0], py::str(backstop));
      if (!error.is_none() && log_errors) {
        VERL_LOG(Warn, "tools") << "finalize_interaction of interaction '" << name_
                                << "': " << error.cast<std::string>();
      }
    });
  }

  std::shared_ptr<LoopRunner> runner_;
  py::object session_;
  std::string name_;
  bool finished_ = false;
};

}  // namespace

std::shared_ptr<InteractionSet> InteractionSet::from_config_file(const std::string& path, double timeout_s) {
  const nlohmann::ordered_json root = read_yaml(path, "interaction config");
  VERL_CHECK(root.is_object() && root.contains("interaction") && root["interaction"].is_array(), "tools",
             "interaction config '", path,
             "': expected a list under `interaction:` (verl's format: interaction: [{name, class_name, config}])");
  auto set = std::shared_ptr<InteractionSet>(new InteractionSet());
  set->impl_ = std::make_unique<Impl>();
  Impl& impl = *set->impl_;
  impl.path = path;
  python::with_gil("interaction", [&] {
    impl.runner = make_runner(timeout_s);
    impl.runner->driver.attr("add_import_paths")(py::str(folder_of(path)));
    py::dict interactions;
    const auto& entries = root["interaction"];
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& entry = entries[i];
      const std::string where = str_cat("interaction config '", path, "': interaction[", i, "]");
      const std::string class_name = config_entry_class_name(entry, where, "name, class_name, config");
      const std::string who = str_cat(where, " (", class_name, ")");
      VERL_CHECK(!entry.contains("name") || entry["name"].is_string() || entry["name"].is_null(), "tools", who,
                 ": name must be a string");
      const std::string item_name =
          entry.contains("name") && entry["name"].is_string() ? entry["name"].get<std::string>() : std::string();
      nlohmann::ordered_json config = entry.value("config", nlohmann::ordered_json::object());
      if (config.is_null()) config = nlohmann::ordered_json::object();
      VERL_CHECK(config.is_object(), "tools", who, ": config must be a map");
      const std::string name =
          impl.runner->driver.attr("interaction_name")(py::str(item_name), py::str(class_name)).cast<std::string>();
      VERL_CHECK(!interactions.contains(py::str(name)), "tools", who, ": a second interaction named '", name, "'");
      py::object built;
      try {
        built = impl.runner->driver.attr("build_interaction")(py::str(class_name), py::str(config.dump()),
                                                              py::str(name));
      } catch (py::error_already_set& error) {
        VERL_FAIL("tools", who, ": cannot build the interaction: ", python::describe_python_error(error));
      }
      interactions[py::str(name)] = built;
      impl.names.push_back(name);
    }
    impl.runner->objects = std::move(interactions);
  });
  return set;
}

InteractionSet::~InteractionSet() = default;

std::vector<std::string> InteractionSet::names() const { return impl_->names; }

std::unique_ptr<InteractionSession> InteractionSet::start_session(const nlohmann::json& interaction_kwargs) {
  VERL_CHECK(interaction_kwargs.is_object() && interaction_kwargs.contains("name") &&
                 interaction_kwargs["name"].is_string(),
             "tools", "extra_info.interaction_kwargs.name is missing; the interactions of '", impl_->path,
             "' are: ", nlohmann::json(impl_->names).dump());
  const std::string name = interaction_kwargs["name"].get<std::string>();
  VERL_CHECK(std::find(impl_->names.begin(), impl_->names.end(), name) != impl_->names.end(), "tools",
             "extra_info.interaction_kwargs.name '", name, "' is not an interaction of '", impl_->path,
             "' (", nlohmann::json(impl_->names).dump(), ")");
  std::lock_guard<std::mutex> lock(impl_->runner->mutex);
  return python::with_gil("interaction", [&]() -> std::unique_ptr<InteractionSession> {
    py::object session = impl_->runner->driver.attr("InteractionSession")(
        impl_->runner->objects[py::str(name)], py::str(name), py::str(json_text(interaction_kwargs)));
    py::tuple started = session.attr("start")(impl_->runner->timeout_s);
    const std::string backstop =
        impl_->runner->run(started[1], impl_->runner->backstop(1), "interaction '" + name + "'");
    py::object error = impl_->runner->driver.attr("outcome_error")(started[0], py::str(backstop));
    VERL_CHECK(error.is_none(), "tools", "start_interaction of interaction '", name,
               "': ", error.is_none() ? std::string() : error.cast<std::string>());
    return std::make_unique<PythonInteractionSession>(impl_->runner, std::move(session), name);
  });
}

}  // namespace verl::agent
