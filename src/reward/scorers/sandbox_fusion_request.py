"""One SandboxFusion run_code request with verl's retries (verl's call_sandbox_api): the code reward
(reward/scorers/sandbox_fusion.cpp) and the code interpreter tool (the built-in verl.tools.sandbox_fusion_tools, which
imports this file as verl.tools._sandbox_fusion_request) both send their requests through post_run_code.

urllib, not requests: https and proxies from the environment come with the standard library.
"""
import time
import urllib.error
import urllib.request

MAX_ATTEMPTS = 3  # a 504 is retried after 1 s, then 2 s: verl's MAX_RETRIES and back-off


def post_run_code(url, body, timeout, on_gateway_timeout=None):
    """POSTs the JSON text `body` to `url`. Returns (HTTP status, reply text, error): error is "" when the service
    answered with a 2xx, else one line (the HTTP error, or why there was no answer: unreachable, timed out).
    on_gateway_timeout(message) is called for each 504."""
    error = ""
    for attempt in range(MAX_ATTEMPTS):
        request = urllib.request.Request(url, data=body.encode("utf-8"), method="POST",
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode("utf-8", "replace"), ""
        except urllib.error.HTTPError as http_error:
            if http_error.code != 504:
                return http_error.code, "", f"HTTP {http_error.code} {http_error.reason}"
            error = f"Gateway Timeout (504) on attempt {attempt + 1}/{MAX_ATTEMPTS}"
            if on_gateway_timeout is not None:
                on_gateway_timeout(error)
            if attempt + 1 < MAX_ATTEMPTS:
                time.sleep(attempt + 1)
        except Exception as other:  # unreachable, refused, timed out
            return 0, "", f"{type(other).__name__}: {other}"
    return 504, "", error
