"""A small SandboxFusion service (POST /run_code, https://github.com/bytedance/SandboxFusion) for the tests of the
sandbox_fusion reward: it runs the Python it is sent, as the real service does, and can act out the service's
failures. Standard library only.

  fake_sandbox_fusion.py [--log FILE] [--memory-limit-mb N]

prints its URL (http://127.0.0.1:PORT/run_code) on the first line of stdout and serves until stdin closes.

A request must be SandboxFusion's run_code body as verl sends it: exactly the keys compile_timeout, run_timeout
(positive numbers), code (str), stdin (str or null), memory_limit_MB (an int; with --memory-limit-mb, that one),
language ("python"), files ({}), fetch_files ([]); anything else is answered 400. Each accepted request is appended
to --log as one JSON line (the body, without code).

The code runs as `python -c CODE` (in a scratch folder) with the request's stdin, its run_timeout and an address-space limit of
memory_limit_MB. The reply has the real service's fields: status "Success" (ran and exited 0) or "Failed",
run_result {status "Finished" | "TimeLimitExceeded", return_code, stdout, stderr, execution_time}, compile_result
null.

A line `# sandbox: BEHAVIOUR [STDIN_PART]` in the code makes the service act out BEHAVIOUR instead (for requests
whose stdin contains STDIN_PART, when given):
  http_504         a 504 Gateway Timeout
  http_504_once    a 504 for the first request of each pair with this code and stdin (then the normal reply)
  http_500         a 500
  not_json         a 200 whose body is not JSON
  reply_list       a 200 with the JSON [1]
  reply_empty      a 200 with {}
  sandbox_error    status SandboxError
  compile_error    status Failed, compile_result {status Finished, return_code 1}
  compile_timeout  status Failed, compile_result {status TimeLimitExceeded}
  run_error        status Failed, run_result {status Error}
  success_no_run   status Success, run_result null
  stdout_number    the normal run, with stdout sent as the JSON number the program printed
  sleep_0.3        waits that many seconds, then the normal run

GET /stats answers {"requests": n, "max_in_flight": n}: how many run_code requests came, and the most at once.
"""
import argparse
import http.server
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time

KEYS = {"compile_timeout", "run_timeout", "code", "stdin", "memory_limit_MB", "language", "files", "fetch_files"}


class State:
    def __init__(self, log_path, memory_limit_mb):
        self.lock = threading.Lock()
        self.log_path = log_path
        self.memory_limit_mb = memory_limit_mb
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.seen = {}


def request_problem(body, memory_limit_mb):
    if not isinstance(body, dict) or set(body) != KEYS:
        return f"expected the keys {sorted(KEYS)}, got {sorted(body) if isinstance(body, dict) else body!r}"
    for key in ("compile_timeout", "run_timeout"):
        if isinstance(body[key], bool) or not isinstance(body[key], (int, float)) or body[key] <= 0:
            return f"{key} must be a positive number, got {body[key]!r}"
    if not isinstance(body["code"], str):
        return "code must be a string"
    if body["stdin"] is not None and not isinstance(body["stdin"], str):
        return f"stdin must be a string or null, got {body['stdin']!r}"
    if isinstance(body["memory_limit_MB"], bool) or not isinstance(body["memory_limit_MB"], int):
        return f"memory_limit_MB must be an int, got {body['memory_limit_MB']!r}"
    if memory_limit_mb is not None and body["memory_limit_MB"] != memory_limit_mb:
        return f"memory_limit_MB must be {memory_limit_mb}, got {body['memory_limit_MB']}"
    if body["language"] != "python" or body["files"] != {} or body["fetch_files"] != []:
        return "expected language python, files {} and fetch_files []"
    return None


def behaviour_of(code, stdin):
    for line in code.splitlines():
        text = line.strip()
        if not text.startswith("# sandbox:"):
            continue
        parts = text[len("# sandbox:"):].split(None, 1)
        if parts and (len(parts) == 1 or parts[1] in (stdin or "")):
            return parts[0]
    return None


def run(body):
    limit = body["memory_limit_MB"] * 1024 * 1024

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory() as folder:
        start = time.time()
        try:  # python -c: tracebacks name "<string>", the same in every run
            done = subprocess.run([sys.executable, "-c", body["code"]], input=(body["stdin"] or "").encode("utf-8"),
                                  capture_output=True, timeout=body["run_timeout"], cwd=folder,
                                  preexec_fn=limit_memory)
        except subprocess.TimeoutExpired as expired:
            return {"status": "Failed", "message": "", "compile_result": None,
                    "run_result": {"status": "TimeLimitExceeded", "execution_time": time.time() - start,
                                   "return_code": None, "stdout": (expired.stdout or b"").decode("utf-8", "replace"),
                                   "stderr": (expired.stderr or b"").decode("utf-8", "replace")},
                    "executor_pod_name": None, "files": {}}
        run_result = {"status": "Finished", "execution_time": time.time() - start, "return_code": done.returncode,
                      "stdout": done.stdout.decode("utf-8", "replace"),
                      "stderr": done.stderr.decode("utf-8", "replace")}
        return {"status": "Success" if done.returncode == 0 else "Failed", "message": "", "compile_result": None,
                "run_result": run_result, "executor_pod_name": None, "files": {}}


def make_handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

        def reply(self, code, payload):
            # A request stops counting as in flight before its reply goes out: once the client has the reply it
            # may send the next one, which must not find this one still counted.
            if getattr(self, "counted", False):
                self.counted = False
                with state.lock:
                    state.in_flight -= 1
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path != "/stats":
                return self.reply(404, {"detail": "not found"})
            with state.lock:
                self.reply(200, {"requests": state.requests, "max_in_flight": state.max_in_flight})

        def do_POST(self):
            if self.path != "/run_code":
                return self.reply(404, {"detail": "not found"})
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError as error:
                return self.reply(400, {"detail": f"body is not JSON: {error}"})
            problem = request_problem(body, state.memory_limit_mb)
            if problem:
                return self.reply(400, {"detail": problem})
            with state.lock:
                state.requests += 1
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
                self.counted = True
                if state.log_path:
                    with open(state.log_path, "a", encoding="utf-8") as log:
                        log.write(json.dumps({k: v for k, v in body.items() if k != "code"}) + "\n")
            try:
                self.answer(body)
            finally:
                if self.counted:  # answer() raised before replying
                    self.counted = False
                    with state.lock:
                        state.in_flight -= 1

        def answer(self, body):
            behaviour = behaviour_of(body["code"], body["stdin"])
            if behaviour == "http_504":
                return self.reply(504, {"detail": "Gateway Timeout"})
            if behaviour == "http_504_once":
                key = (body["code"], body["stdin"])
                with state.lock:
                    state.seen[key] = state.seen.get(key, 0) + 1
                    first = state.seen[key] % 2 == 1
                if first:
                    return self.reply(504, {"detail": "Gateway Timeout"})
            if behaviour == "http_500":
                return self.reply(500, {"detail": "Internal Server Error"})
            if behaviour == "not_json":
                return self.reply(200, b"<html>not json</html>")
            if behaviour == "reply_list":
                return self.reply(200, [1])
            if behaviour == "reply_empty":
                return self.reply(200, {})
            if behaviour == "sandbox_error":
                return self.reply(200, {"status": "SandboxError", "message": "no executor", "compile_result": None,
                                        "run_result": None})
            if behaviour == "compile_error":
                return self.reply(200, {"status": "Failed", "message": "", "run_result": None,
                                        "compile_result": {"status": "Finished", "return_code": 1, "stdout": "",
                                                           "stderr": "error", "execution_time": 0.1}})
            if behaviour == "compile_timeout":
                return self.reply(200, {"status": "Failed", "message": "", "run_result": None,
                                        "compile_result": {"status": "TimeLimitExceeded", "return_code": None}})
            if behaviour == "run_error":
                return self.reply(200, {"status": "Failed", "message": "", "compile_result": None,
                                        "run_result": {"status": "Error", "return_code": None, "stdout": "",
                                                       "stderr": ""}})
            if behaviour == "success_no_run":
                return self.reply(200, {"status": "Success", "message": "", "compile_result": None,
                                        "run_result": None})
            if behaviour is not None and behaviour.startswith("sleep_"):
                time.sleep(float(behaviour[len("sleep_"):]))
            result = run(body)
            if behaviour == "stdout_number" and result["run_result"]["stdout"].strip():
                result["run_result"]["stdout"] = json.loads(result["run_result"]["stdout"])
            self.reply(200, result)

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    parser.add_argument("--memory-limit-mb", type=int)
    args = parser.parse_args()
    state = State(args.log, args.memory_limit_mb)
    http.server.ThreadingHTTPServer.request_queue_size = 256  # a real service's backlog, not socketserver's 5
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}/run_code", flush=True)
    sys.stdin.read()  # serve until the test closes our stdin (or ends)
    server.shutdown()


if __name__ == "__main__":
    main()
