// The built-in `verl` package of verl/agent/verl_python_shim.h: module sources and the sys.meta_path finder.
#include "verl/agent/verl_python_shim.h"

#include <pybind11/embed.h>

#include <map>

#include "verl/common/error.h"
#include "verl_python_shim_sources.h"

namespace py = pybind11;

extern const char verl_embedded_sandbox_fusion_request_py[];  // src/reward/scorers/sandbox_fusion_request.py

namespace verl::agent {

namespace {

const char* const kVerlInit = R"PY(
"""verl.cpp's built-in stand-in for the verl package: the modules tool and interaction files import."""
__version__ = "0.9.1"
VERL_CPP_SHIM = True
)PY";

const char* const kPackageInit = R"PY(
"""Part of verl.cpp's built-in verl stand-in."""
)PY";

// pydantic-free models with the fields, defaults and dump order of verl 0.9.1's schemas.
const char* const kSchemas = R"PY(
"""verl.tools.schemas without pydantic.

The classes, fields and defaults of verl 0.9.1's models, with the part of pydantic's interface tool code uses:
construction by keywords, model_validate(dict), model_dump(exclude_unset=..., exclude_none=...) in field order,
model_dump_json, model_fields_set and attribute access (schema.function.name). As with pydantic's defaults,
keys that are not fields are ignored.
"""
import json
from collections.abc import Mapping

_REQUIRED = object()


def _expect(condition, where, what, value):
    if not condition:
        raise ValueError(f"{where}: expected {what}, got {type(value).__name__} {value!r}")


def _str(value, where):
    _expect(isinstance(value, str), where, "a string", value)
    return value


def _optional_str(value, where):
    return None if value is None else _str(value, where)


def _str_or_str_list(value, where):
    if isinstance(value, (list, tuple)):
        return [_str(item, f"{where}[{i}]") for i, item in enumerate(value)]
    return _str(value, where)


def _str_list(value, where):
    _expect(isinstance(value, (list, tuple)), where, "a list", value)
    return [_str(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _optional_list(value, where):
    if value is None:
        return None
    _expect(isinstance(value, (list, tuple)), where, "a list", value)
    return list(value)


def _bool(value, where):
    if isinstance(value, bool):
        return value
    _expect(isinstance(value, int) and value in (0, 1), where, "a bool", value)
    return bool(value)


def _any(value, where):
    return value


def _model(cls):
    def convert(value, where):
        return cls.model_validate(value)
    return convert


def _dict_of_models(cls):
    def convert(value, where):
        _expect(isinstance(value, Mapping), where, "a mapping", value)
        return {_str(key, where): cls.model_validate(item) for key, item in value.items()}
    return convert


def _dump(value, exclude_unset, exclude_none):
    if isinstance(value, _Model):
        return value.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none)
    if isinstance(value, dict):
        return {key: _dump(item, exclude_unset, exclude_none) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(item, exclude_unset, exclude_none) for item in value]
    return value


class _Model:
    # name -> (convert, default, default_factory); in dump order. Subclasses fill it.
    _fields = {}

    def __init__(self, **data):
        object.__setattr__(self, "_fields_set", set())
        cls = type(self).__name__
        for name, (convert, default, factory) in self._fields.items():
            if name in data:
                object.__setattr__(self, name, convert(data[name], f"{cls}.{name}"))
                self._fields_set.add(name)
            elif factory is not None:
                object.__setattr__(self, name, factory())
            elif default is not _REQUIRED:
                object.__setattr__(self, name, default)
            else:
                raise ValueError(f"{cls}: field '{name}' is required")

    def __setattr__(self, name, value):
        if name in self._fields:
            value = self._fields[name][0](value, f"{type(self).__name__}.{name}")
            self._fields_set.add(name)
        object.__setattr__(self, name, value)

    @classmethod
    def model_validate(cls, obj):
        if isinstance(obj, cls):
            return obj
        if hasattr(obj, "model_dump") and not isinstance(obj, Mapping):
            obj = obj.model_dump(exclude_unset=True)
        if not isinstance(obj, Mapping):
            raise ValueError(f"{cls.__name__}: expected a mapping, got {type(obj).__name__} {obj!r}")
        return cls(**{str(key): value for key, value in obj.items()})

    @property
    def model_fields_set(self):
        return set(self._fields_set)

    def model_dump(self, *, exclude_unset=False, exclude_none=False, **ignored):
        out = {}
        for name in self._fields:
            if exclude_unset and name not in self._fields_set:
                continue
            value = getattr(self, name)
            if exclude_none and value is None:
                continue
            out[name] = _dump(value, exclude_unset, exclude_none)
        return out

    def model_dump_json(self, *, exclude_unset=False, exclude_none=False, indent=None, **ignored):
        return json.dumps(self.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none), indent=indent)

    def __eq__(self, other):
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"


class OpenAIFunctionPropertySchema(_Model):
    """The schema of a parameter in OpenAI format."""

    _fields = {
        "type": (_str_or_str_list, _REQUIRED, None),
        "description": (_optional_str, None, None),
        "enum": (_optional_list, None, None),
    }


class OpenAIFunctionParametersSchema(_Model):
    """The schema of parameters in OpenAI format."""

    _fields = {
        "type": (_str, _REQUIRED, None),
        "properties": (_dict_of_models(OpenAIFunctionPropertySchema), _REQUIRED, None),
        "required": (_str_list, None, list),
    }


class OpenAIFunctionSchema(_Model):
    """The schema of a function in OpenAI format."""

    _fields = {
        "name": (_str, _REQUIRED, None),
        "description": (_str, _REQUIRED, None),
        "parameters": (
            _model(OpenAIFunctionParametersSchema),
            None,
            lambda: OpenAIFunctionParametersSchema(type="object", properties={}, required=[]),
        ),
        "strict": (_bool, False, None),
    }


class OpenAIFunctionToolSchema(_Model):
    """The schema of a tool in OpenAI format."""

    _fields = {
        "type": (_str, _REQUIRED, None),
        "function": (_model(OpenAIFunctionSchema), _REQUIRED, None),
    }


class OpenAIFunctionParsedSchema(_Model):
    """A tool call as the model wrote it: the arguments still a JSON string."""

    _fields = {
        "name": (_str, _REQUIRED, None),
        "arguments": (_str, _REQUIRED, None),
    }


class OpenAIFunctionCallSchema(_Model):
    """A tool call with decoded arguments."""

    _fields = {
        "name": (_str, _REQUIRED, None),
        "arguments": (_any, _REQUIRED, None),
    }

    @staticmethod
    def from_openai_function_parsed_schema(parsed_schema):
        """(call, has_decode_error): arguments that are not a JSON object become {} with the flag set."""
        try:
            arguments = json.loads(parsed_schema.arguments)
        except json.JSONDecodeError:
            return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments={}), True
        if not isinstance(arguments, dict):
            return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments={}), True
        return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments=arguments), False


class OpenAIFunctionToolCall(_Model):
    """A tool call in OpenAI format."""

    _fields = {
        "id": (_str, _REQUIRED, None),
        "type": (_str, "function", None),
        "function": (_model(OpenAIFunctionCallSchema), _REQUIRED, None),
    }


def _media_list(kind):
    def convert(value, where):
        if value is None:
            return None
        if not isinstance(value, list):
            raise ValueError(
                f"{kind.capitalize()} must be a list, but got {type(value)}. Please check the tool.execute(). "
                f"For a single {kind}, wrap it in a list: [{kind}]."
            )
        return value
    return convert


class ToolResponse(_Model):
    """What a tool returns: text and/or images and videos (lists)."""

    _fields = {
        "text": (_optional_str, None, None),
        "image": (_media_list("image"), None, None),
        "video": (_media_list("video"), None, None),
    }

    def __init__(self, text=None, image=None, video=None, **ignored):
        data = {}
        if text is not None:
            data["text"] = text
        if image is not None:
            data["image"] = image
        if video is not None:
            data["video"] = video
        super().__init__(**data)

    def is_empty(self):
        return not self.text and not self.image and not self.video

    def is_text_only(self):
        return self.text and not self.image and not self.video
)PY";

const char* const kBaseTool = R"PY(
"""verl.tools.base_tool.BaseTool: the interface of verl 0.9.1's tools.

A tool class is built as cls(config=dict, tool_schema=OpenAIFunctionToolSchema | None) and, per trajectory,
create -> execute (any number of times) -> calc_reward -> release. Every method may be async (verl's are).
"""
from uuid import uuid4

from verl.utils.rollout_trace import rollout_trace_op

from .schemas import OpenAIFunctionToolSchema, ToolResponse


class BaseTool:
    """A tool: get_openai_tool_schema, create, execute, calc_reward and release."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        self.config = config
        if tool_schema is None:
            tool_schema = self.get_openai_tool_schema()
        if tool_schema is None:
            raise ValueError(f"{type(self).__name__}: no tool schema (give tool_schema in the tool config)")
        self.tool_schema = OpenAIFunctionToolSchema.model_validate(tool_schema)
        self.name = self.tool_schema.function.name

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return getattr(self, "tool_schema", None)

    async def create(self, instance_id=None, **kwargs):
        """Starts the tool's state for one trajectory: (instance id, the response to creating it)."""
        return (str(uuid4()) if instance_id is None else instance_id), ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id, parameters, **kwargs):
        """Runs one call: (ToolResponse, step reward, metrics dict)."""
        return ToolResponse(text="Updated the tool state."), 0.0, {}

    async def calc_reward(self, instance_id, **kwargs):
        """The reward of the instance's final state."""
        return 0.0

    async def release(self, instance_id, **kwargs):
        """Frees the instance's state."""
        return None
)PY";

const char* const kGsm8kTool = R"PY(
"""verl.tools.gsm8k_tool.Gsm8kTool: verl's demo tool that scores a GSM8K answer.

create(ground_truth=...) (or create_kwargs={"ground_truth": ...}) starts an instance; each execute takes
{"answer": ...} (a dict or its JSON text), scores "#### <answer>" with gsm8k.compute_score(method="flexible") and
returns the step reward 0.0 when the score went up, else -0.05; calc_reward is the last score.
"""
import json
from uuid import uuid4

from verl.utils.reward_score import gsm8k
from verl.utils.rollout_trace import rollout_trace_op

from .base_tool import BaseTool
from .schemas import ToolResponse


class Gsm8kTool(BaseTool):
    """Schema (from the tool config): calc_gsm8k_reward(answer: string)."""

    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self._instance_dict = {}

    def get_openai_tool_schema(self):
        return getattr(self, "tool_schema", None)

    async def create(self, instance_id=None, ground_truth=None, **kwargs):
        if ground_truth is None:
            ground_truth = (kwargs.get("create_kwargs") or {}).get("ground_truth")
        if instance_id is None:
            instance_id = str(uuid4())
        self._instance_dict[instance_id] = {"response": "", "ground_truth": ground_truth, "reward": 0.0}
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id, parameters, **kwargs):
        if isinstance(parameters, str):
            try:
                parameters = json.loads(parameters)
            except json.JSONDecodeError:
                parameters = {}
        answer = parameters.get("answer", "") if isinstance(parameters, dict) else ""
        if not isinstance(answer, str):
            answer = str(answer)
        state = self._instance_dict[instance_id]
        state["response"] = answer if answer.startswith("#### ") else "#### " + answer
        reward = await self.calc_reward(instance_id)
        tool_reward = 0.0 if reward > state["reward"] else -0.05  # a submission that did not improve
        state["reward"] = reward
        return ToolResponse(text=f"Current parsed {answer=} {reward=}"), tool_reward, {}

    async def calc_reward(self, instance_id, **kwargs):
        state = self._instance_dict[instance_id]
        return gsm8k.compute_score(
            state["response"], state["ground_truth"], method="flexible", format_score=0.0, score=1.0
        )

    async def release(self, instance_id, **kwargs):
        self._instance_dict.pop(instance_id, None)
)PY";

const char* const kRolloutTrace = R"PY(
"""verl.utils.rollout_trace without a tracing backend: the decorator leaves functions as they are."""
import contextlib


def rollout_trace_op(func):
    """verl's tracing decorator; here the function itself (an async function stays async)."""
    return func


@contextlib.contextmanager
def rollout_trace_attr(**kwargs):
    """verl's trace attributes context; here nothing."""
    yield
)PY";

// verl's GSM8K scorer, rewritten from its behaviour; tests/oracle/test_gsm8k_shim_oracle.cpp compares the two.
const char* const kGsm8kScore = R"PY(
"""verl.utils.reward_score.gsm8k: the GSM8K answer check.

Only the last 300 characters are searched. "strict": the last "#### <number>" (commas and '$' dropped).
"flexible": the last number-like run of digits, '.', ',' (optionally '-') that is not "." (kept as written).
compute_score: 0 without an answer, `score` when it equals the ground truth (as strings), else `format_score`.
"""
import re

_SOLUTION_CLIP_CHARS = 300
_STRICT_ANSWER = re.compile(r"#### (\-?[0-9\.\,]+)")
_NUMBER = re.compile(r"(\-?[0-9\.\,]+)")


def extract_solution(solution_str, method="strict"):
    assert method in ("strict", "flexible"), f"unknown method {method!r} (strict, flexible)"
    tail = solution_str[-_SOLUTION_CLIP_CHARS:]
    if method == "strict":
        answers = _STRICT_ANSWER.findall(tail)
        return answers[-1].replace(",", "").replace("$", "") if answers else None
    numbers = _NUMBER.findall(tail)
    if not numbers:
        return None
    meaningful = [number for number in numbers if number not in ("", ".")]
    # With no meaningful number the search ends on the first one found.
    return meaningful[-1] if meaningful else numbers[0]


def compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
    answer = extract_solution(solution_str=solution_str, method=method)
    if answer is None:
        return 0
    return score if answer == ground_truth else format_score
)PY";

const char* const kBaseInteraction = R"PY(
"""verl.interactions.base.BaseInteraction: a simulated user that answers the model between turns.

Built as cls(config) (config["name"] set), then per trajectory start_interaction(instance_id, **interaction_kwargs),
generate_response(instance_id, messages, **interaction_kwargs) -> (should_terminate_sequence, response_content,
turn_score, additional_data) each turn, and finalize_interaction(instance_id).
"""
from uuid import uuid4


class BaseInteraction:
    def __init__(self, config):
        self.config = config
        self.name = config.get("name", "interaction_agent")

    async def start_interaction(self, instance_id=None, **kwargs):
        return str(uuid4()) if instance_id is None else instance_id

    async def generate_response(self, instance_id, messages, **kwargs):
        return False, "Your current result seems acceptable.", 0.8, {}

    async def calculate_score(self, instance_id=None, **kwargs):
        return 0.0

    async def finalize_interaction(self, instance_id=None, **kwargs):
        return None
)PY";

const char* const kGsm8kInteraction = R"PY(
"""verl.interactions.gsm8k_interaction.Gsm8kInteraction: checks the model's last answer against the GSM8K ground
truth (gsm8k.compute_score, method "flexible"): correct ends the conversation, incorrect asks for another try."""
from uuid import uuid4

from verl.utils.reward_score import gsm8k

from .base import BaseInteraction


class Gsm8kInteraction(BaseInteraction):
    def __init__(self, config):
        super().__init__(config)
        self._instance_dict = {}

    async def start_interaction(self, instance_id=None, ground_truth=None, **kwargs):
        if instance_id is None:
            instance_id = str(uuid4())
        self._instance_dict[instance_id] = {"response": "", "ground_truth": ground_truth, "reward": 0.0}
        return instance_id

    async def generate_response(self, instance_id, messages, **kwargs):
        content = ""
        for message in reversed(messages):
            if message.get("role") == "assistant":
                content = message.get("content")
                break
        content = content or ""
        state = self._instance_dict[instance_id]
        state["response"] = content if content.startswith("#### ") else "#### " + content
        reward = await self.calculate_score(instance_id)
        if reward == 1.0:
            return True, "Your response is correct!", reward, {}
        return False, "Your response is incorrect! You need to reflect on your answer and try again.", reward, {}

    async def calculate_score(self, instance_id, **kwargs):
        state = self._instance_dict[instance_id]
        return gsm8k.compute_score(
            state["response"], state["ground_truth"], method="flexible", format_score=0.0, score=1.0
        )

    async def finalize_interaction(self, instance_id, **kwargs):
        self._instance_dict.pop(instance_id, None)
)PY";

// The finder: appended last to sys.meta_path, it serves a module only when no other finder found it.
const char* const kFinderSource = R"PY(
import importlib.abc
import importlib.machinery
import linecache
import sys


class _VerlShimLoader(importlib.abc.Loader):
    def __init__(self, sources):
        self._sources = sources

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source, _ = self._sources[module.__spec__.name]
        filename = module.__spec__.origin
        # Tracebacks through the built-in modules show their lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), module.__dict__)


class VerlShimFinder(importlib.abc.MetaPathFinder):
    """verl.cpp's built-in verl modules, for the names no other finder serves."""

    def __init__(self, sources):
        self._sources = sources  # dotted name -> (source, is_package)
        self._loader = _VerlShimLoader(sources)

    def find_spec(self, fullname, path=None, target=None):
        entry = self._sources.get(fullname)
        if entry is None:
            return None
        is_package = entry[1]
        spec = importlib.machinery.ModuleSpec(fullname, self._loader, is_package=is_package)
        spec.origin = "<verl.cpp shim>/" + fullname.replace(".", "/") + ("/__init__.py" if is_package else ".py")
        spec.has_location = True  # __file__ = origin
        spec.cached = None
        if is_package:
            spec.submodule_search_locations = []
        return spec


def install(sources):
    if any(type(finder).__name__ == "VerlShimFinder" for finder in sys.meta_path):
        return
    sys.meta_path.append(VerlShimFinder(sources))
)PY";

struct ShimModule {
  std::string source;
  bool is_package = false;
};

const std::map<std::string, ShimModule>& shim_modules() {
  static const std::map<std::string, ShimModule> modules = {
      {"verl", {kVerlInit, true}},
      {"verl.tools", {kPackageInit, true}},
      {"verl.tools.schemas", {kSchemas, false}},
      {"verl.tools.base_tool", {kBaseTool, false}},
      {"verl.tools.function_tool", {shim_sources::kFunctionTool, false}},
      {"verl.tools.gsm8k_tool", {kGsm8kTool, false}},
      {"verl.tools.sandbox_fusion_tools", {shim_sources::kSandboxFusionTool, false}},
      {"verl.tools._sandbox_fusion_request", {verl_embedded_sandbox_fusion_request_py, false}},  // verl.cpp's
      {"verl.interactions", {kPackageInit, true}},
      {"verl.interactions.base", {kBaseInteraction, false}},
      {"verl.interactions.gsm8k_interaction", {kGsm8kInteraction, false}},
      {"verl.trainer", {kPackageInit, true}},
      {"verl.trainer.ppo", {kPackageInit, true}},
      {"verl.trainer.ppo.checkpoint_callback", {shim_sources::kCheckpointCallback, false}},
      {"verl.utils", {kPackageInit, true}},
      {"verl.utils.rollout_trace", {kRolloutTrace, false}},
      {"verl.utils.reward_score", {kPackageInit, true}},
      {"verl.utils.reward_score.gsm8k", {kGsm8kScore, false}},
  };
  return modules;
}

}  // namespace

std::vector<std::string> verl_python_shim_modules() {
  std::vector<std::string> names;
  for (const auto& [name, module] : shim_modules()) names.push_back(name);
  return names;
}

const std::string& verl_python_shim_source(const std::string& module) {
  const auto& modules = shim_modules();
  auto it = modules.find(module);
  VERL_CHECK(it != modules.end(), "tools", "'", module, "' is not a built-in verl module");
  return it->second.source;
}

void install_verl_python_shim() {
  py::module_ sys = py::module_::import("sys");
  for (const auto& finder : sys.attr("meta_path")) {
    if (py::str(py::type::of(finder).attr("__name__")).cast<std::string>() == "VerlShimFinder") return;
  }
  py::dict sources;
  for (const auto& [name, module] : shim_modules()) {
    sources[py::str(name)] = py::make_tuple(py::str(module.source), py::bool_(module.is_package));
  }
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  scope["__name__"] = py::str("verl_cpp_shim_finder");
  py::exec(kFinderSource, scope);
  scope["install"](sources);
}

}  // namespace verl::agent
