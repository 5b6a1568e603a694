"""What verl's SandboxFusionTool (verl/tools/sandbox_fusion_tools.py of verl's source tree) gives the model for a
code_interpreter call, for test_sandbox_fusion_tool_oracle.cpp.

  sandbox_fusion_tool_oracle.py URL CASES.json    prints [text, ...]: for each case {"code", "timeout",
                                                 "language"}, the response text

verl's tool runs `_process_single_case(0, None, None, url, code, timeout, memory_limit_mb, language)` of
verl.utils.reward_score.sandbox_fusion.utils (verl 0.9.1's, in .venv/test, loaded from its file) and answers the
metadata's stdout + stderr when run_status is "Finished", else "no stdout here", as a verl ToolResponse; its Ray
execution worker turns an exception into no text. verl 0.9.1's wheel does not ship sandbox_fusion_tools.py (it
needs Ray), so those few lines around the real request code are written here from that file: a golden written
from the source, around verl's own request and reply handling. No text is printed as "".
"""
import importlib.util
import json
import os
import sys


def load(relative, name):
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    path = os.path.join(list(spec.submodule_search_locations)[0], *relative)
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def main():
    url, cases_path = sys.argv[1], sys.argv[2]
    utils = load(["utils", "reward_score", "sandbox_fusion", "utils.py"], "verl_sandbox_fusion_utils_reference")
    schemas = load(["tools", "schemas.py"], "verl_tool_schemas_reference")
    texts = []
    for case in json.load(open(cases_path)):
        try:  # SandboxFusionTool.execute_code inside ExecutionWorker.execute
            _, metadata = utils._process_single_case(0, None, None, url, case["code"], case["timeout"], 1024,
                                                     case["language"])
            if metadata["run_status"] == "Finished":
                response = schemas.ToolResponse(text=metadata["stdout"] + metadata["stderr"])
            else:
                response = schemas.ToolResponse(text="no stdout here")
        except Exception:
            response = None
        texts.append("" if response is None or response.text is None else response.text)
    json.dump(texts, sys.stdout)


if __name__ == "__main__":
    main()
