"""verl.cpp's Python code runner: runs a model-written Python solution against test cases the way verl's prime_code
scorer does (verl/utils/reward_score/prime_code, the reward of the codecontests / apps / codeforces / taco data
sources), for python_code_runner.cpp.

It is a small server: one JSON request per line on stdin, one JSON reply per line on stdout (both one Unix socket).
  request  {"code": str, "in_outs": {"inputs": [...], "outputs": [...], "fn_name"?: str}, "timeout": seconds}
  reply    {"results": [true | false, ...], "replied": bool, "killed": bool, "error": str}
Each request runs in a forked child, in its own session, so that it cannot touch this server: the child writes its
results to a pipe; past timeout + 1 seconds (verl's global limit per check) the child's session is killed and the
check fails as a whole. After each check, whatever the child left running in its session is killed too. The checks
run in a scratch folder, removed when the server ends (verl leaves them in the trainer's folder).

"results" holds one verdict per test run; like verl, a check stops at its first failing test. "error" says why a
check failed as a whole: the code did not load (one false verdict, as verl's -2), or a test case verl cannot run,
or the child was killed or died (a false verdict for every test, as verl's -1s). A check passes when every verdict
is true, as verl's `all(x is True for x in results)`, so a check of no tests passes. "replied" is false when the
child was killed or died before it answered (verl then has no metadata and goes on to its one-by-one checks).

The rules are verl's, including the ones that look accidental, because the reward must be the one verl computes:
  - the solution runs in a module named tmp_sol after verl's preamble of star imports (deque, sqrt, ... are there
    without an import) and a recursion limit of 600,000; destructive os / shutil / subprocess calls are disabled
    first, exit() and quit() included;
  - with fn_name, the function (or the method of a `class Solution` instance) is called with each input line as a
    JSON value and its result compared with the JSON output by Python's ==; the result must also be JSON-serializable;
  - without fn_name, the program is wrapped into a function `code` (top-level lines indented by a tab, a trailing
    `if __name__ == '__main__':` block unwrapped) and run with the input as stdin; sys.stdin is a StringIO holding
    the input, the module-level names `stdin` / `stdout` are the process's own streams (the null device, with
    stdin's read methods answering from the input), open() stays the real one, and what is printed is compared
    with the output as verl compares it (whitespace-insensitive forms, then numbers by numpy.allclose's rule);
  - SIGALRM after `timeout` seconds (while the module loads and during each test) kills the child: Python leaves
    SIGALRM at its default action, as verl does.
"""
import ast
import contextlib
import io
import json
import math
import os
import select
import signal
import sys
import time
import types
from unittest import mock

_STAR_IMPORTS = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                 "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")
_PLAIN_IMPORTS = _STAR_IMPORTS[:-2]  # not builtins, typing
PREAMBLE = ("".join("from %s import *\n" % name for name in _STAR_IMPORTS) +
            "".join("import %s\n" % name for name in _PLAIN_IMPORTS) + "sys.setrecursionlimit(6*10**5)\n")

_DISABLED_OS = ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
                "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir")
_BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter", "subprocess", "ctypes")


def disable_destructive_calls():
    """What verl disables before it runs a solution. Not a security boundary: the child's session and the global
    kill are what keep a solution in bounds."""
    import builtins
    import faulthandler
    import shutil
    import subprocess

    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in _DISABLED_OS:
        setattr(os, name, None)
    for name in ("rmtree", "move", "chown"):
        setattr(shutil, name, None)
    subprocess.Popen = None
    builtins.help = None
    for name in _BLOCKED_MODULES:
        sys.modules[name] = None


def load_module(source):
    module = types.ModuleType("tmp_sol")
    exec(compile(source, "<string>", "exec"), module.__dict__)
    sys.modules["tmp_sol"] = module
    return module


def unwrap_main_guard(code):
    """A program whose last statement is `if __name__ == '__main__':` gets that block's body at top level (through
    ast.unparse, which drops comments and normalizes the rest, as in verl)."""
    try:
        tree = ast.parse(code)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            return ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)
    except Exception:
        pass
    return code


def as_code_function(code):
    """verl's wrapping of a stdin program into `def code():`. Lines that start with `from ` / `import ` before the
    first other line stay at module level; every other line is indented by one tab."""
    parts = []
    started = False
    for line in code.split("\n"):
        if line.startswith("from ") or line.startswith("import "):
            parts.append(("\t" if started else "") + line + "\n")
            continue
        if not started:
            parts.append("stdin = sys.stdin\nstdout = sys.stdout\ndef code():\n")
            started = True
        parts.append("\t" + line + "\n")
    return "".join(parts)


def int_keys(value):
    return {int(k): v for k, v in value.items()}


def call_verdict(function, line_args, output_text):
    """One test of a function: its arguments are the input's lines as JSON values."""
    args = [json.loads(line) for line in line_args.split("\n")]
    expected = json.loads(output_text)
    # JSON object keys are strings; verl turns them into ints where it can (a dict becomes a one-item list).
    with contextlib.suppress(Exception):
        if isinstance(args[0], dict):
            args = [int_keys(args[0])]
    with contextlib.suppress(Exception):
        if isinstance(expected, dict):
            expected = [int_keys(expected)]
    with contextlib.suppress(Exception):
        if isinstance(expected[0], dict):
            expected = [int_keys(expected[0])]
    try:
        output = function(*args)
        json.dumps(output)
        if isinstance(output, tuple):
            output = list(output)
        same = output == expected
        if isinstance(expected, list) and expected:
            same = same or output == expected[0]
        with contextlib.suppress(Exception):
            if isinstance(output[0], tuple):
                same = same or [list(x) for x in output] == expected[0]
        return same is True
    except Exception:
        return False


def run_with_input(function, text):
    """Calls `code()` with `text` as its input and returns what it printed."""
    lines = iter(text.split("\n"))
    buffer = io.StringIO()
    buffer.close = lambda x: 1  # as verl's capture: close() takes an argument, so a program's close() raises
    saved_stdout = sys.stdout
    sys.stdout = buffer
    try:
        with contextlib.ExitStack() as patches:
            # In the order verl's stacked mock.patch decorators apply them: the first three replace methods of the
            # process's own sys.stdin (the module's `stdin`), which the StringIO then takes the place of.
            patches.enter_context(mock.patch("sys.stdin.read", lambda *a: text))
            patches.enter_context(mock.patch("sys.stdin.readlines", lambda *a: text.split("\n")))
            patches.enter_context(mock.patch("sys.stdin.readline", lambda *a: next(lines)))
            patches.enter_context(mock.patch("sys.stdin", io.StringIO(text)))
            patches.enter_context(mock.patch("builtins.open", mock.mock_open(read_data=text)))
            try:
                function()
            except SystemExit:
                pass
    finally:
        sys.stdout = saved_stdout
    return buffer.getvalue()


def allclose(got, want):
    """numpy.allclose(got, want) with its defaults (rtol 1e-5, atol 1e-8): infinities equal only themselves, NaN
    nothing."""
    for a, b in zip(got, want):
        if math.isfinite(a) and math.isfinite(b):
            if not abs(a - b) <= 1e-8 + 1e-5 * abs(b):
                return False
        elif not a == b:
            return False
    return True


def printed_matches(printed, expected):
    """verl's comparison of a program's output with the expected text, its forms in its order."""
    lines = printed.splitlines()
    if "\n".join(lines).strip() == expected.strip():
        return True
    if "\n".join(line.strip() for line in lines).strip() == expected.strip():
        return True
    if lines == [expected]:
        return True
    wanted = [line.strip() for line in expected.split("\n") if line]  # empty lines dropped before the strip
    if lines == wanted:
        return True
    kept = [line for line in lines if line]
    if kept == wanted:
        return True
    if len(kept) != len(wanted) or all(a.isdigit() and b.isdigit() for a, b in zip(kept, wanted)):
        return False
    try:
        return allclose([float(x) for x in kept], [float(x) for x in wanted])
    except Exception:
        return False


def check(request):
    """The verdicts of one check, in the forked child."""
    disable_destructive_calls()
    in_outs, code, timeout = request["in_outs"], request["code"], request["timeout"]
    calls_function = in_outs.get("fn_name") is not None
    if calls_function:
        source, fn_name = PREAMBLE + code, in_outs["fn_name"]
    else:
        source, fn_name = PREAMBLE + as_code_function(unwrap_main_guard(code)), "code"
    signal.alarm(timeout)
    try:
        module = load_module(source)
        target = module.Solution() if calls_function and "class Solution" in code else module
    except Exception as e:
        signal.alarm(0)
        return {"results": [False], "error": "the solution does not load: " + repr(e)}
    signal.alarm(0)
    try:
        function = getattr(target, fn_name)
    except Exception as e:
        return {"results": [False], "error": "the solution has no %s: %r" % (fn_name, e)}
    results = []
    for index, test_input in enumerate(in_outs["inputs"]):
        expected = in_outs["outputs"][index]
        if calls_function:
            signal.alarm(timeout)
            passed = call_verdict(function, test_input, expected)
        else:
            if not isinstance(test_input, str) or not isinstance(expected, str):
                raise TypeError("test %d: a stdin test's input and output must be strings" % index)
            signal.alarm(timeout)
            try:
                printed = run_with_input(function, test_input)
                passed = None
            except Exception:
                passed = False
            signal.alarm(0)
            if passed is None:
                passed = printed_matches(printed, expected)
        signal.alarm(0)
        results.append(passed)
        if not passed:
            break
    return {"results": results}


def every_test_failed(request):
    return [False] * len(request["in_outs"]["inputs"])


def run_in_child(request, write_end):
    try:
        os.setsid()
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a solution that crashes leaves no core file behind
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.stdin = open(os.devnull)
        sys.stdout = sys.stderr = open(os.devnull, "w")
        try:
            reply = check(request)
        except Exception as e:
            reply = {"results": every_test_failed(request), "error": "the test case cannot run: " + repr(e)}
        payload = json.dumps(reply).encode()
        while payload:
            payload = payload[os.write(write_end, payload):]
    finally:
        os._exit(0)


def run_isolated(request):
    """One check in a forked child: its reply, or why it has none."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        run_in_child(request, write_end)
    os.close(write_end)
    deadline = time.monotonic() + request["timeout"] + 1
    chunks, killed = [], False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            killed = True
            break
        if not select.select([read_end], [], [], left)[0]:
            continue
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    # The child ends right after its reply; one that closed the pipe and ran on is killed at the deadline too.
    # Whatever the child left running in its session (a process it spawned) goes with it: the group is killed while
    # the child, exited but unreaped, still holds the group's id.
    while not killed and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() > deadline:
            killed = True
        else:
            time.sleep(0.002)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if killed:
        return {"results": every_test_failed(request), "replied": False, "killed": True,
                "error": "killed after %g s" % (request["timeout"] + 1)}
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        how = ("signal %d" % -os.waitstatus_to_exitcode(status)) if os.WIFSIGNALED(status) else "no reply"
        return {"results": every_test_failed(request), "replied": False, "killed": False,
                "error": "the check's process ended (%s)" % how}
    reply["replied"] = True
    reply["killed"] = False
    return reply


def serve():
    # VERL_PYTHON_SITE_PACKAGES: the site-packages the embedded interpreter uses, so a solution imports the same.
    import shutil
    import site
    import tempfile
    before = list(sys.path)
    for folder in os.environ.get("VERL_PYTHON_SITE_PACKAGES", "").split(":"):
        if folder:
            site.addsitedir(os.path.expanduser(folder))
    sys.path[:] = [p for p in sys.path if p not in before] + before
    # The checks run in a scratch folder, removed when the server ends: a solution that writes files (verl's guard
    # leaves open() alone) writes them there, not among the run's outputs in the trainer's folder.
    scratch = tempfile.mkdtemp(prefix="verl-code-runner-")
    os.chdir(scratch)
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    try:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin.buffer:
            reply = run_isolated(json.loads(line))
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    serve()
