"""verl 0.9.1's sandbox_fusion reward (the codecontests / apps / codeforces / taco data sources with
reward.sandbox_fusion.url set) in .venv/test, for test_sandbox_fusion_oracle.cpp.

  sandbox_fusion_oracle.py cases URL    prints [{"name", "completion", "ground_truth", "score"}, ...]: completions
                                        and test cases scored by verl's sandbox_fusion.compute_score(URL, None, 1024,
                                        completion, test_cases, continuous=True)[0], as default_compute_score calls it

URL is a running tests/support/fake_sandbox_fusion.py, which runs the code it is sent and acts out the real
service's failures (`# sandbox: ...` lines in the code). The programs and problems are prime_code_oracle.py's, with
the ways a response fences its code that only sandbox_fusion reads, test cases only it takes (assert_case, null
outputs, inputs that are not strings, malformed ones) and every failure of the service.

verl's sandbox_fusion package is loaded from its installed folder (it needs requests), without verl's __init__
(which needs ray). What verl logs on the way goes to stderr.
"""
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prime_code_oracle  # noqa: E402  (the programs and problems)


def verl_sandbox_fusion():
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    folder = os.path.join(list(spec.submodule_search_locations)[0], "utils", "reward_score", "sandbox_fusion")
    module_spec = importlib.util.spec_from_file_location("verl_sandbox_fusion_reference",
                                                         os.path.join(folder, "__init__.py"),
                                                         submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


fenced = prime_code_oracle.fenced


def completions(code, index):
    """The ways a response holds its code, two per program: verl reads the last ```python block, else the first
    fenced block without its language line, and scores 0 without a fence."""
    forms = prime_code_oracle.completion_forms(code) + [
        "```\n" + code + "\n```",
        "``` Python3\n" + code + "\n```",
        "Here:\n```Python\n" + code + "\n```\nand a note ```x```",
        "```python3\n" + code + "\n```",
    ]
    return [forms[0], forms[1 + index % (len(forms) - 1)]]


SQUARE = {"inputs": ["2\n", "5\n", "-3\n", "10\n"], "outputs": ["4\n", "25\n", "9\n", "100\n"]}
SQUARE_CODE = "n = int(input())\nprint(n * n)"
SUM_CODE = prime_code_oracle.SUM_PROGRAMS["input"]
SUM = prime_code_oracle.SUM


def cases(url):
    module = verl_sandbox_fusion()
    out = []

    def score(name, completion, ground_truth):
        result = module.compute_score(url, None, 1024, completion,
                                      json.loads(json.dumps(ground_truth)) if isinstance(ground_truth, dict)
                                      else ground_truth, continuous=True)
        out.append({"name": name, "completion": completion, "ground_truth": ground_truth,
                    "score": float(result[0])})

    for problem, tests, programs in prime_code_oracle.PROBLEMS:
        for index, (variant, code) in enumerate(programs.items()):
            for form, completion in enumerate(completions(code, index)):
                ground_truth = json.dumps(tests) if (index + form) % 3 else tests
                score("%s/%s/%d" % (problem, variant, form), completion, ground_truth)

    # The service's failures, on the 12 sum tests (the first 10 count).
    for directive in ["http_504_once", "http_504", "http_500", "not_json", "reply_list", "reply_empty",
                      "sandbox_error", "compile_timeout", "run_error", "success_no_run", "stdout_number",
                      "compile_error", "compile_error 10 20", "compile_error 8 0", "http_500 -5 5",
                      "http_504 123456789"]:
        score("service/" + directive, fenced(SUM_CODE + "\n# sandbox: " + directive), SUM)

    # Test cases only sandbox_fusion takes.
    f = "def f(x):\n    return x * x"
    score("assert/alone", fenced(f), {"assert_case": ["assert f(2) == 4", "assert f(3) == 9", "assert f(0) == 1"]})
    score("assert/with_tests", fenced(SQUARE_CODE),
          {"inputs": ["2\n", "3\n"], "outputs": ["4\n", "9\n"], "assert_case": ["assert n > 0", "assert n > 5"]})
    score("assert/with_fn_name", fenced(f),
          {"fn_name": "f", "inputs": ["3", "4"], "outputs": ["9", "16"], "assert_case": ["", "assert f(1) == 2"]})
    score("assert/string_json", fenced(f), json.dumps({"assert_case": ["assert f(1) == 1"]}))
    score("outputs/null", fenced(SQUARE_CODE), {"inputs": ["2\n", "x\n"], "outputs": [None, None]})
    score("outputs/numbers", fenced(SQUARE_CODE), {"inputs": ["2\n", "5\n"], "outputs": [4, 25.0]})
    score("outputs/empty", fenced("input()"), {"inputs": ["2\n"], "outputs": [""]})
    score("inputs/numbers", fenced(SQUARE_CODE), {"inputs": [2, 5, 1.5], "outputs": ["4", "25", "2.25"]})
    score("inputs/lists", fenced("print(input())"), {"inputs": [[1, "a", None], {"k": True}], "outputs":
                                                      ["[1, 'a', None]", "{'k': True}"]})
    score("inputs/null", fenced("import sys\nprint(len(sys.stdin.read()))"), {"inputs": [None], "outputs": ["0"]})
    score("inputs/strings", fenced(SQUARE_CODE), {"inputs": "2\n", "outputs": "4\n"})
    score("fn_name/bad_json_input", fenced("def g(a):\n    return a"), {"fn_name": "g", "inputs": ["{x"], "outputs":
                                                                          [""]})
    score("fn_name/no_input", fenced("def g():\n    return 7"), {"fn_name": "g", "inputs": [""], "outputs": ["7"]})
    score("fn_name/not_found_prints_nothing", fenced("x = 1"), {"fn_name": "g", "inputs": ["1"], "outputs": [""]})
    score("fn_name/set_result", fenced("def g(a):\n    return {a}"), {"fn_name": "g", "inputs": ["1"],
                                                                      "outputs": ["{1}"]})
    score("fn_name/none_result", fenced("def g(a):\n    pass"), {"fn_name": "g", "inputs": ["1"], "outputs": ["null"]})
    score("fn_name/empty_is_stdin", fenced(SQUARE_CODE), {"fn_name": "", "inputs": ["3\n"], "outputs": ["9"]})

    # Test cases verl cannot read: 0.
    for name, tests in [("not_json", "{inputs"), ("a_list", "[1, 2]"), ("null", "null"), ("empty", {}),
                        ("no_outputs", {"inputs": ["2\n"]}), ("unequal", {"inputs": ["2\n"], "outputs": []}),
                        ("no_tests", {"inputs": [], "outputs": []}), ("number_outputs", {"inputs": ["2\n"],
                                                                                          "outputs": 4}),
                        ("mapping_outputs", {"inputs": {"2\n": 1}, "outputs": {"4\n": 1}}),
                        ("null_assert", {"inputs": ["2\n"], "outputs": ["4\n"], "assert_case": None}),
                        ("short_assert", {"inputs": ["2\n"], "outputs": ["4\n"], "assert_case": ["x = 1", "y"]}),
                        ("number_assert", {"inputs": ["2\n"], "outputs": ["4\n"], "assert_case": [7]})]:
        score("malformed/" + name, fenced(SQUARE_CODE), tests)
    return out


if __name__ == "__main__":
    assert len(sys.argv) == 3 and sys.argv[1] == "cases", "usage: sandbox_fusion_oracle.py cases URL"
    json.dump(cases(sys.argv[2]), sys.stdout, ensure_ascii=False)
