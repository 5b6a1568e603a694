// verl.tools.function_tool of the built-in `verl` package (agent/verl_python_shim.h): @function_tool tools, the
// files multi_turn.function_tool_path names. verl 0.9.1 infers each tool's schema with
// transformers.utils.get_json_schema; the same rules are written anew here so that no transformers is needed, and
// tests/oracle/test_function_tool_oracle.cpp compares the two on tests/oracle/function_tool_schema_cases.py.
#include "verl_python_shim_sources.h"

namespace verl::agent::shim_sources {

const char* const kFunctionTool = R"PY(
"""verl.tools.function_tool without transformers: verl 0.9.1's @function_tool tools.

A plain (or async) Python function decorated with @function_tool is a stateless tool: its name is the function's
(or the decorator's argument), its OpenAI schema is inferred from the Google-style docstring and the type hints
(the rules of transformers.utils.get_json_schema, which verl calls, written anew here: get_json_schema below), and
multi_turn.function_tool_path names the file that defines them. The registry, the loader and the return
normalisation keep verl's names and behaviour.
"""
from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import inspect
import json
import os
import re
import sys
import types
import typing
from typing import Any, Callable, Optional

from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

FUNCTION_TOOL_REGISTRY = {}
_LOADED_FUNCTION_TOOL_PATHS = {}


class TypeHintParsingException(Exception):
    """A parameter's type hint has no JSON schema (transformers' exception of the same name)."""


class DocstringParsingException(Exception):
    """The docstring lacks what the schema needs (transformers' exception of the same name)."""


# ------------------------------------------------------------------------------------------- schema inference

_SCALAR_SCHEMAS = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _scalar_schema(hint):
    """A hint with no type arguments: its JSON type; Any is unconstrained, any other class an object."""
    if hint is Any:
        return {}
    name = _SCALAR_SCHEMAS.get(hint) if isinstance(hint, type) else None
    return {"type": name} if name is not None else {"type": "object"}


def _hint_schema(hint):
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None:
        return _scalar_schema(hint)
    if origin is typing.Union or origin is types.UnionType:
        members = [_hint_schema(arg) for arg in args if arg is not type(None)]
        if len(members) == 1:
            schema = members[0]
        elif all(isinstance(member.get("type"), str) for member in members):
            schema = {"type": sorted(member["type"] for member in members)}
        else:
            schema = {"anyOf": members}
        if type(None) in args:
            schema["nullable"] = True
        return schema
    if origin is typing.Literal and args:
        kinds = []
        for value in args:
            if type(value) not in (int, float, str, bool, type(None)):
                raise TypeHintParsingException("Only the valid python literals can be listed in typing.Literal.")
            kind = _SCALAR_SCHEMAS[type(value)]
            if kind not in kinds:
                kinds.append(kind)
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _hint_schema(args[0])} if args else {"type": "array"}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1:
            raise TypeHintParsingException(
                f"The type hint {str(hint).replace('typing.', '')} is a Tuple with a single element; use list[] "
                "for several elements or the element's own type for one")
        if Ellipsis in args:
            raise TypeHintParsingException(
                "Conversion of '...' is not supported in Tuple type hints; use list[] for variable-length inputs")
        return {"type": "array", "prefixItems": [_hint_schema(arg) for arg in args]}
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _hint_schema(args[1])
        return schema
    raise TypeHintParsingException("Couldn't parse this type hint, likely due to a custom class or object: ", hint)


def _parameters_schema(fn, fn_name):
    hints = typing.get_type_hints(fn)
    parameters = inspect.signature(fn).parameters
    # A method's receiver (self / cls without an annotation) is not an argument of the tool.
    receiver = next(iter(parameters), None)
    if receiver not in ("self", "cls") or parameters[receiver].annotation is not inspect.Parameter.empty:
        receiver = None
    required = []
    for name, parameter in parameters.items():
        if name == receiver:
            continue
        if parameter.annotation is inspect.Parameter.empty:
            raise TypeHintParsingException(f"Argument {name} is missing a type hint in function {fn_name}")
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    properties = {name: _hint_schema(hint) for name, hint in hints.items() if name != receiver}
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


# Section headers of a Google-style docstring. The summary ends at the first header wherever it stands; the Args
# and Returns blocks start at a header that opens a line and ends it.
_SUMMARY_END = re.compile(r"Args:|Returns:|Raises:")
_ARGS_BLOCK = re.compile(r"\n\s*Args:\n\s*(.*?)\s*(?:Returns:|Raises:|\Z)", re.DOTALL)
_RETURNS_BLOCK = re.compile(r"\n\s*Returns:\n\s*(.*?)\s*(?:Raises:|\Z)", re.DOTALL)
# One argument: `name: text` at the start of a line; its text runs on until the next such line.
_ARGUMENT = re.compile(r"(?:\A|\n)\s*(\w+):\s*(.*?)\s*(?=\n\s*\w+:|\Z)", re.DOTALL)
_CHOICES = re.compile(r"\(choices:\s*(.*?)\)\s*$", re.IGNORECASE)


def _parse_docstring(doc):
    """(summary, {argument: description}, returns description or None)."""
    end = _SUMMARY_END.search(doc)
    summary = (doc[: end.start()] if end else doc).strip()
    block = _ARGS_BLOCK.search(doc)
    arguments = {}
    if block:
        lines = [line for line in block.group(1).strip().split("\n") if line.strip()]
        for name, text in _ARGUMENT.findall("\n".join(lines)):
            arguments[name] = re.sub(r"\s*\n+\s*", " ", text.strip())
    returns = _RETURNS_BLOCK.search(doc)
    return summary, arguments, returns.group(1).strip() if returns else None


def get_json_schema(fn):
    """The OpenAI tool schema of `fn` from its docstring and type hints, as transformers.utils.get_json_schema."""
    fn_name = getattr(fn, "__name__", "operation")
    doc = inspect.getdoc(fn)
    if not doc:
        raise DocstringParsingException(f"Cannot generate JSON schema for {fn_name} because it has no docstring!")
    summary, descriptions, returns_text = _parse_docstring(doc.strip())
    parameters = _parameters_schema(fn, fn_name)
    returns = parameters["properties"].pop("return", None)
    if returns is not None and returns_text is not None:
        returns["description"] = returns_text
    for name, schema in parameters["properties"].items():
        if name not in descriptions:
            raise DocstringParsingException(
                f"Cannot generate JSON schema for {fn_name} because the docstring has no description for the "
                f"argument '{name}'")
        text = descriptions[name]
        choices = _CHOICES.search(text)
        if choices:
            schema["enum"] = [choice.strip() for choice in json.loads(choices.group(1))]
            text = text[: choices.start()].strip()
        schema["description"] = text
    function = {"name": fn_name, "description": summary, "parameters": parameters}
    if returns is not None:
        function["return"] = returns
    return {"type": "function", "function": function}


# ------------------------------------------------------------------------------------------------ the registry

@dataclasses.dataclass
class FunctionTool:
    """A registered function: its tool name, the function, its schema, whether it is a coroutine function."""

    name: str
    fn: Callable[..., Any]
    tool_schema: OpenAIFunctionToolSchema
    is_async: bool = False

    async def call(self, parameters):
        """The function called with the model's arguments (a plain function on a worker thread)."""
        if self.is_async:
            return await self.fn(**parameters)
        return await asyncio.to_thread(self.fn, **parameters)


def _build_schema_from_fn(fn, tool_name):
    variadic = [name for name, p in inspect.signature(fn).parameters.items()
                if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if variadic:
        raise ValueError(
            f"@function_tool '{tool_name}' ({fn.__module__}.{fn.__qualname__}) declares variadic parameter(s) "
            f"{variadic}, which an OpenAI tool schema cannot express; use named parameters")
    raw = get_json_schema(fn)
    raw["function"]["name"] = tool_name
    return OpenAIFunctionToolSchema.model_validate(raw)


def function_tool(name: Optional[str | Callable] = None, *, schema=None):
    """Registers a function as a tool: `@function_tool`, `@function_tool("name")` or `@function_tool(schema={...})`.

    The function needs a docstring with an Args: entry for every parameter and a type hint on each, unless `schema`
    (an OpenAIFunctionToolSchema or a dict of that shape) is given.
    """

    def decorator_named(override):
        def decorator(fn):
            tool_name = override or fn.__name__
            if isinstance(schema, OpenAIFunctionToolSchema):
                tool_schema = schema
            elif isinstance(schema, dict):
                tool_schema = OpenAIFunctionToolSchema.model_validate(schema)
            else:
                tool_schema = _build_schema_from_fn(fn, tool_name)
            existing = FUNCTION_TOOL_REGISTRY.get(tool_name)
            if existing is not None and existing.fn is not fn:
                raise ValueError(
                    f"Function tool '{tool_name}' is already registered to {existing.fn.__module__}."
                    f"{existing.fn.__qualname__}; refusing to overwrite with {fn.__module__}.{fn.__qualname__}.")
            FUNCTION_TOOL_REGISTRY[tool_name] = FunctionTool(
                name=tool_name, fn=fn, tool_schema=tool_schema, is_async=inspect.iscoroutinefunction(fn))
            return fn

        return decorator

    if callable(name) and schema is None:
        return decorator_named(None)(name)
    return decorator_named(name)


def get_function_tool(name):
    """The registered tool `name`; KeyError when there is none."""
    if name not in FUNCTION_TOOL_REGISTRY:
        raise KeyError(f"Function tool '{name}' not found in registry. Make sure its defining file is referenced "
                       "via the rollout `function_tool_path` config.")
    return FUNCTION_TOOL_REGISTRY[name]


def load_function_tools_from_path(path):
    """Runs the file once per process and returns the tools it registered, sorted by name."""
    abs_path = os.path.abspath(path)
    if not os.path.isfile(abs_path):
        raise FileNotFoundError(f"function_tool_path does not exist: {path}")
    if abs_path in _LOADED_FUNCTION_TOOL_PATHS:
        return _LOADED_FUNCTION_TOOL_PATHS[abs_path]
    before = set(FUNCTION_TOOL_REGISTRY)
    # A name derived from the path, so that the file's siblings can import it through sys.modules.
    module_name = "_verl_function_tools_" + abs_path.replace(os.sep, "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(module_name, abs_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Cannot create import spec for function_tool_path: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    # A file that registers nothing is warned about by verl.cpp's tool loader (verl logs it).
    names = sorted(set(FUNCTION_TOOL_REGISTRY) - before)
    tools = [FUNCTION_TOOL_REGISTRY[name] for name in names]
    _LOADED_FUNCTION_TOOL_PATHS[abs_path] = tools
    return tools


# ------------------------------------------------------------------------------------------ return normalisation

def _as_response(value):
    if isinstance(value, ToolResponse):
        return value
    if isinstance(value, str):
        return ToolResponse(text=value)
    if isinstance(value, dict):
        return ToolResponse(text=json.dumps(value, ensure_ascii=False))
    return ToolResponse(text=str(value))


def normalize_function_tool_return(ret):
    """(ToolResponse, reward, metrics) from what the function returned.

    ToolResponse / str / dict (as JSON text) / anything else (its str()) alone: reward 0.0, no metrics; a tuple
    (response,), (response, reward) or (response, reward, metrics), a None reward 0.0 and None metrics {}; a
    tuple of another length is a TypeError.
    """
    if isinstance(ret, tuple):
        if not 1 <= len(ret) <= 3:
            raise TypeError(
                f"@function_tool return tuple must have length 1, 2, or 3 (got length {len(ret)}: {ret!r}). Use "
                "(response,), (response, reward), or (response, reward, metrics).")
        reward = 0.0 if len(ret) < 2 or ret[1] is None else float(ret[1])
        metrics = {} if len(ret) < 3 or ret[2] is None else dict(ret[2])
        return _as_response(ret[0]), reward, metrics
    return _as_response(ret), 0.0, {}
)PY";

}  // namespace verl::agent::shim_sources
