"""verl 0.9.1's @function_tool in .venv/test, for test_function_tool_oracle.cpp.

  function_tool_oracle.py schemas CASES.py   transformers.utils.get_json_schema (what verl's @function_tool calls)
                                              of each function in CASES.py's CASES: [{"name", "schema"} |
                                              {"name", "error"}], the error as "Type: message"
  function_tool_oracle.py tools FILE.py      verl's load_function_tools_from_path(FILE.py): each tool's name and
                                              tool_schema.model_dump(exclude_unset=True, exclude_none=True)
  function_tool_oracle.py returns FILE.py    verl's normalize_function_tool_return of each of FILE.py's
                                              RETURN_CASES: [{"text", "reward", "metrics"} | {"error": "Type"}]
  function_tool_oracle.py calls FILE.py CALLS.json   each call [name, arguments] as verl's tool agent loop makes
                                              it (await tool.call(arguments), then normalize_function_tool_return):
                                              [{"text", "reward", "metrics"} | {"error": "Type"}]
  function_tool_oracle.py examples -          the path of verl's own @function_tool examples in its wheel
                                              (tests/experimental/agent_loop/function_tool_examples.py)

verl's modules are loaded from its installed files without running verl/__init__.py (which needs Ray).
"""
import importlib.util
import json
import os
import sys
import types


def verl_packages_without_init():
    """verl and verl.tools as bare packages over verl's installed folders, so their modules load without running
    verl/__init__.py."""
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    root = list(spec.submodule_search_locations)[0]
    for name, folder in (("verl", root), ("verl.tools", os.path.join(root, "tools"))):
        module = types.ModuleType(name)
        module.__path__ = [folder]
        sys.modules[name] = module


def load_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def schemas(path):
    from transformers.utils import get_json_schema

    out = []
    for fn in load_file(path, "function_tool_schema_cases").CASES:
        try:
            out.append({"name": fn.__name__, "schema": get_json_schema(fn)})
        except Exception as e:
            out.append({"name": fn.__name__, "error": f"{type(e).__name__}: {e}"})
    return out


def tools(path):
    from verl.tools.function_tool import load_function_tools_from_path

    return [{"name": tool.name, "schema": tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)}
            for tool in load_function_tools_from_path(path)]


def returns(path):
    from verl.tools.function_tool import load_function_tools_from_path, normalize_function_tool_return

    load_function_tools_from_path(path)
    module = next(m for name, m in sys.modules.items() if name.startswith("_verl_function_tools_"))
    out = []
    for case in module.RETURN_CASES:
        try:
            response, reward, metrics = normalize_function_tool_return(
                eval(case, {"ToolResponse": module.ToolResponse}))
            out.append({"text": response.text, "reward": reward, "metrics": metrics})
        except Exception as e:
            out.append({"error": type(e).__name__})
    return out


def calls(path):
    import asyncio

    from verl.tools.function_tool import load_function_tools_from_path, normalize_function_tool_return

    registered = {tool.name: tool for tool in load_function_tools_from_path(path)}

    async def one(name, arguments):
        try:
            response, reward, metrics = normalize_function_tool_return(await registered[name].call(arguments))
            return {"text": response.text, "reward": reward, "metrics": metrics}
        except Exception as e:
            return {"error": type(e).__name__}

    async def run_all():
        return [await one(name, arguments) for name, arguments in json.load(open(sys.argv[3]))]

    return asyncio.run(run_all())


def examples(_):
    root = sys.modules["verl"].__path__[0]  # verl's installed folder
    return os.path.join(os.path.dirname(root), "tests", "experimental", "agent_loop", "function_tool_examples.py")


if __name__ == "__main__":
    verl_packages_without_init()
    mode, path = sys.argv[1], sys.argv[2]
    modes = {"schemas": schemas, "tools": tools, "returns": returns, "calls": calls, "examples": examples}
    print(json.dumps(modes[mode](path), ensure_ascii=False))
