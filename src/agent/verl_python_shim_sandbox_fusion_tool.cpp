// verl.tools.sandbox_fusion_tools of the built-in `verl` package (agent/verl_python_shim.h): the code interpreter
// tool of verl's multi-turn examples (examples/sglang_multiturn/config/tool_config/sandbox_fusion_tool_config.yaml,
// the ReTool recipe), backed by a SandboxFusion service. verl's source tree has it (its 0.9.1 wheel does not); it
// schedules the requests with Ray actors, which a thread pool and a process-wide semaphore replace here.
// tests/oracle/test_sandbox_fusion_tool_oracle.cpp compares the responses with verl's request code.
#include "verl_python_shim_sources.h"

namespace verl::agent::shim_sources {

const char* const kSandboxFusionTool = R"PY(
"""verl.tools.sandbox_fusion_tools without Ray: SandboxFusionTool runs the code the model sends on a SandboxFusion
service (https://github.com/bytedance/SandboxFusion, POST run_code).

Config keys and defaults are verl's: sandbox_fusion_url (required), num_workers 10 (requests one tool runs at
once), rate_limit 10 (requests in flight over every tool of the process: the first tool's value, as verl's one
named Ray rate limiter), enable_global_rate_limit true, default_timeout 30, default_language "python",
memory_limit_mb 1024.

execute(parameters) takes "code" (str() of anything else), and optionally "timeout" and "language", and sends
one request with verl's body (compile and run timeout both `timeout`, no stdin; a 504 retried after 1 s, then 2 s;
a language SandboxFusion does not list is not sent). The response text is the run's stdout + stderr when the run
finished (also when the program failed: the model sees its traceback), else "no stdout here"; a reply verl's code
cannot read gives an empty response. The step reward is None (0): the tool does not score. calc_reward gives 0.0
(verl's returns its unused reward list []; verl 0.9.1's agent loop never calls it).
"""
import asyncio
import concurrent.futures
import json
import logging
import threading
from uuid import uuid4

from verl.utils.rollout_trace import rollout_trace_op

from ._sandbox_fusion_request import post_run_code
from .base_tool import BaseTool
from .schemas import ToolResponse

logger = logging.getLogger(__name__)

# SandboxFusion's languages, as verl lists them.
SUPPORTED_LANGUAGES = [
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust", "cuda",
    "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest", "verilog",
    "python_gpu", "lean", "swift", "racket",
]
REQUEST_SLACK_S = 10

_rate_limiter = None
_rate_limiter_lock = threading.Lock()


def _global_rate_limiter(rate_limit):
    """One semaphore for the process, sized by the first tool that asks (verl: a named Ray actor)."""
    global _rate_limiter
    with _rate_limiter_lock:
        if _rate_limiter is None:
            _rate_limiter = threading.BoundedSemaphore(rate_limit)
        return _rate_limiter


def run_code_request(url, code, timeout, memory_limit_mb, language):
    """The service's reply (parsed JSON), or None when the request failed: verl's call_sandbox_api."""
    if language not in SUPPORTED_LANGUAGES:
        logger.error("Unsupported language: %s", language)
        return None
    body = json.dumps({"compile_timeout": timeout, "run_timeout": timeout, "code": code, "stdin": None,
                       "memory_limit_MB": memory_limit_mb, "language": language, "files": {}, "fetch_files": []})
    request_timeout = timeout + timeout + REQUEST_SLACK_S
    _, text, error = post_run_code(url, body, request_timeout, on_gateway_timeout=on_gateway_timeout)
    if error:
        logger.error("sandbox fusion: request to %s failed: %s", url, error)
        return None
    try:
        return json.loads(text)
    except ValueError as not_json:
        logger.error("sandbox fusion: the reply of %s is not JSON: %s", url, not_json)
        return None


def on_gateway_timeout(message):
    logger.warning("sandbox fusion: %s", message)


def response_text(reply):
    """The tool's text for a reply, as verl's execute_code reads _process_single_case's metadata; raises (an empty
    response, as verl's execution worker gives) where verl's code raises."""
    if not reply:
        return "no stdout here"
    compile_result, run_result = reply.get("compile_result"), reply.get("run_result")
    if compile_result:
        compile_result.get("status")  # verl reads it: a reply whose compile_result is not a mapping raises there
    if not run_result or run_result.get("status") != "Finished":
        return "no stdout here"
    stdout, stderr = run_result.get("stdout"), run_result.get("stderr")
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        raise TypeError(f"the run's stdout / stderr are {type(stdout).__name__} / {type(stderr).__name__}")
    return stdout + stderr


class SandboxFusionTool(BaseTool):
    """Schema (from the tool config), e.g. code_interpreter(code: string)."""

    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self._instance_dict = {}
        self.num_workers = config.get("num_workers", 10)
        self.rate_limit = config.get("rate_limit", 10)
        self.default_timeout = config.get("default_timeout", 30)
        self.default_language = config.get("default_language", "python")
        self.enable_global_rate_limit = config.get("enable_global_rate_limit", True)
        self.sandbox_fusion_url = config.get("sandbox_fusion_url", "")
        self.memory_limit_mb = config.get("memory_limit_mb", 1024)
        if self.sandbox_fusion_url == "":
            raise ValueError("sandbox_fusion_url is not set")
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.num_workers,
                                                           thread_name_prefix="sandbox_fusion_tool")
        self._rate_limiter = _global_rate_limiter(self.rate_limit) if self.enable_global_rate_limit else None

    def get_openai_tool_schema(self):
        return self.tool_schema

    async def create(self, instance_id=None, ground_truth=None, **kwargs):
        if instance_id is None:
            instance_id = str(uuid4())
        self._instance_dict[instance_id] = {"response": "", "ground_truth": ground_truth, "reward": []}
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id, parameters, **kwargs):
        code = parameters.get("code", "")
        timeout = parameters.get("timeout", self.default_timeout)
        language = parameters.get("language", self.default_language)
        if not isinstance(code, str):
            code = str(code)
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(self._pool, self._run_limited, instance_id, code, timeout, language)
        return ToolResponse(text=text), None, None

    def _run_limited(self, instance_id, code, timeout, language):
        if self._rate_limiter is not None:
            self._rate_limiter.acquire()
        try:
            return self.execute_code(instance_id, code, timeout, language)
        except Exception as error:  # verl's execution worker: a warning and no text
            logger.warning("Error when executing code: %s", error)
            return None
        finally:
            if self._rate_limiter is not None:
                self._rate_limiter.release()

    def execute_code(self, instance_id, code, timeout=30, language="python"):
        try:
            reply = run_code_request(self.sandbox_fusion_url, code, timeout, self.memory_limit_mb, language)
        except Exception as error:  # e.g. a timeout that is not a number
            logger.error("sandbox fusion: %s", error)
            reply = None
        return response_text(reply)

    async def calc_reward(self, instance_id, **kwargs):
        return 0.0

    async def release(self, instance_id, **kwargs):
        self._instance_dict.pop(instance_id, None)
)PY";

}  // namespace verl::agent::shim_sources
