"""verl 0.9.1's prime_code reward (the codecontests / apps / codeforces / taco data sources without a sandbox) in
.venv/test, for test_prime_code_oracle.cpp.

  prime_code_oracle.py cases    prints [{"name", "completion", "ground_truth", "score"}, ...]: model-like completions
                                of a few problems (stdin programs and functions) with the test cases verl's datasets
                                hold, and the score verl's default_compute_score makes of prime_code's result
                                (float of its first element)

verl's prime_code package is loaded from its installed folder (it imports numpy and the standard library), without
verl's __init__ (which needs ray). Its checks fork processes and take a global 6 s / 11 s limit; one case here runs
into it on purpose. What verl prints on the way is sent to stderr.
"""
import contextlib
import importlib.util
import json
import os
import sys


def verl_prime_code():
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    folder = os.path.join(list(spec.submodule_search_locations)[0], "utils", "reward_score", "prime_code")
    module_spec = importlib.util.spec_from_file_location("verl_prime_code_reference", os.path.join(folder, "__init__.py"),
                                                         submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


def fenced(code):
    return "```python\n" + code + "\n```"


# Sum of two integers per test, 12 tests (more than the 10 verl scores one by one).
SUM_INPUTS = ["1 2\n", "10 20\n", "-5 5\n", "100 1\n", "0 0\n", "7 -9\n", "123456789 987654321\n", "3 4\n",
              "2 2\n", "50 50\n", "-1 -1\n", "8 0\n"]
SUM_OUTPUTS = [str(sum(map(int, x.split()))) + "\n" for x in SUM_INPUTS]
SUM = {"inputs": SUM_INPUTS, "outputs": SUM_OUTPUTS}

SUM_PROGRAMS = {
    "input": "a, b = map(int, input().split())\nprint(a + b)",
    "sys_readline": "import sys\na, b = map(int, sys.stdin.readline().split())\nprint(a + b)",
    "module_stdin": "a, b = map(int, stdin.readline().split())\nprint(a + b)",
    "read_all": "import sys\nprint(sum(map(int, sys.stdin.read().split())))",
    "readlines": "import sys\nprint(sum(map(int, sys.stdin.readlines()[0].split())))",
    "open0": "print(sum(map(int, open(0).read().split())))",
    "buffer": "import sys\nprint(sum(map(int, sys.stdin.buffer.readline().split())))",
    "main_guard": "import sys\ndef main():\n    a, b = map(int, input().split())\n    print(a + b)\n\n"
                  "if __name__ == '__main__':\n    main()",
    "main_guard_double_quotes": "def solve():\n    a, b = map(int, input().split())\n    print(a + b)\n"
                                "if __name__ == \"__main__\":\n    solve()",
    "import_after_code": "a, b = input().split()\nimport math\nprint(math.floor(int(a) + int(b)))",
    "trailing_space": "a, b = map(int, input().split())\nprint(a + b, end=' \\n')",
    "blank_lines": "a, b = map(int, input().split())\nprint()\nprint(a + b)\nprint()",
    "stderr": "import sys\na, b = map(int, input().split())\nprint(a + b, file=sys.stderr)",
    "sys_stdout_write": "import sys\na, b = map(int, input().split())\nsys.stdout.write(str(a + b))",
    "module_stdout_write": "a, b = map(int, input().split())\nstdout.write(str(a + b))",
    "exit_builtin": "a, b = map(int, input().split())\nprint(a + b)\nexit()",
    "sys_exit": "import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(0)",
    "float_print": "a, b = map(int, input().split())\nprint(float(a + b))",
    "difference": "a, b = map(int, input().split())\nprint(a - b)",
    "raises_on_negative": "a, b = map(int, input().split())\nassert a >= 0\nprint(a + b)",
    "syntax_error": "a, b = map(int, input().split()\nprint(a + b)",
    "preamble_names": "q = deque(map(int, input().split()))\nprint(reduce(add, q))",
    "state_across_tests": "import sys\nsys.runs = getattr(sys, 'runs', 0) + 1\na, b = map(int, input().split())\n"
                          "print(a + b if sys.runs == 1 else -1)",
    "wrong_last": "a, b = map(int, input().split())\nprint(a + b + (1 if (a, b) == (8, 0) else 0))",
    "wrong_first": "a, b = map(int, input().split())\nprint(a + b + (1 if (a, b) == (1, 2) else 0))",
    "only_imports": "import sys\nimport math",
    "close_stdout": "import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.stdout.close()",
    "getcwd": "import os\nos.getcwd()\na, b = map(int, input().split())\nprint(a + b)",
    "words_on_lines": "a, b = map(int, input().split())\nprint(*str(a + b))",
    "deep_recursion": "import sys\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
                      "a, b = map(int, input().split())\nprint(a + b + f(100000) - 100000)",
    "crlf": "a, b = map(int, input().split())\nprint(a + b, end='\\r\\n')",
    "tab_indented": "a, b = map(int, input().split())\nif a >= 0:\n\tprint(a + b)\nelse:\n\tprint(a + b)",
    "os_exit": "import os\na, b = map(int, input().split())\nprint(a + b)\nos._exit(0)",
}

# Floats: 1 / n, written with 10 digits.
DIV_INPUTS = ["3\n", "7\n", "8\n", "1\n"]
DIV = {"inputs": DIV_INPUTS, "outputs": ["%.10f\n" % (1 / int(x)) for x in DIV_INPUTS]}
DIV_PROGRAMS = {
    "exact": "print('%.10f' % (1 / int(input())))",
    "repr": "print(1 / int(input()))",
    "six_digits": "print('%.6f' % (1 / int(input())))",
    "three_digits": "print('%.3f' % (1 / int(input())))",
    "inf": "input()\nprint('inf')",
}

# Several output lines: the numbers 1..n, one per line, or on one line.
LIST_INPUTS = ["3\n", "1\n", "5\n"]
LIST = {"inputs": LIST_INPUTS, "outputs": ["\n".join(str(i) for i in range(1, int(x) + 1)) + "\n" for x in LIST_INPUTS]}
LIST_PROGRAMS = {
    "lines": "n = int(input())\nfor i in range(1, n + 1):\n    print(i)",
    "one_line": "n = int(input())\nprint(*range(1, n + 1))",
    "indented_lines": "n = int(input())\nfor i in range(1, n + 1):\n    print('  ', i)",
    "blank_between": "n = int(input())\nfor i in range(1, n + 1):\n    print(i)\n    print()",
    "reversed": "n = int(input())\nfor i in range(n, 0, -1):\n    print(i)",
}

# Functions (fn_name): each input line is one JSON argument.
ADD = {"fn_name": "add", "inputs": ["1\n2", "3\n4", "-1\n1"], "outputs": ["3", "7", "0"]}
ADD_PROGRAMS = {
    "function": "def add(a, b):\n    return a + b",
    "solution_class": "class Solution:\n    def add(self, a, b):\n        return a + b",
    "wrong_one": "def add(a, b):\n    return a + b if a != 3 else 0",
    "bool_result": "def add(a, b):\n    return (a + b) if a + b else False",
    "missing_function": "def plus(a, b):\n    return a + b",
    "raises": "def add(a, b):\n    raise ValueError(a)",
    "prints_instead": "def add(a, b):\n    print(a + b)",
    "uses_preamble": "def add(a, b):\n    return reduce(operator.add, [a, b])",
}
PAIR = {"fn_name": "pair", "inputs": ["1\n2", "[3]\n4"], "outputs": ["[1, 2]", "[[3], 4]"]}
PAIR_PROGRAMS = {
    "tuple": "def pair(a, b):\n    return (a, b)",
    "list": "def pair(a, b):\n    return [a, b]",
    "set": "def pair(a, b):\n    return {str(a), str(b)}",
    "nested_tuple": "def pair(a, b):\n    return ((a, b),)",
}
WRAPPED = {"fn_name": "f", "inputs": ["5", "6"], "outputs": ["[10]", "[12]"]}
WRAPPED_PROGRAMS = {"scalar": "def f(x):\n    return 2 * x", "list": "def f(x):\n    return [2 * x]"}
TUPLES = {"fn_name": "f", "inputs": ["2"], "outputs": ["[[[0, 0], [1, 1]]]"]}
TUPLES_PROGRAMS = {"list_of_tuples": "def f(n):\n    return [(i, i) for i in range(n)]",
                   "list_of_lists": "def f(n):\n    return [[i, i] for i in range(n)]"}
DICTS = {"fn_name": "f", "inputs": ["{\"1\": 5}"], "outputs": ["{\"1\": 10}"]}
DICTS_PROGRAMS = {"int_keys": "def f(d):\n    return {k: 2 * v for k, v in d.items()}",
                  "str_keys": "def f(d):\n    return {str(k): 2 * v for k, v in d.items()}"}
FLOATS = {"fn_name": "f", "inputs": ["0.1\n0.2"], "outputs": ["0.3"]}
FLOATS_PROGRAMS = {"sum": "def f(a, b):\n    return a + b", "rounded": "def f(a, b):\n    return round(a + b, 6)"}

PROBLEMS = [("sum", SUM, SUM_PROGRAMS), ("div", DIV, DIV_PROGRAMS), ("list", LIST, LIST_PROGRAMS),
            ("add", ADD, ADD_PROGRAMS), ("pair", PAIR, PAIR_PROGRAMS), ("wrapped", WRAPPED, WRAPPED_PROGRAMS),
            ("tuples", TUPLES, TUPLES_PROGRAMS), ("dicts", DICTS, DICTS_PROGRAMS), ("floats", FLOATS, FLOATS_PROGRAMS)]


def completion_forms(code):
    """The ways a response holds its code: verl scores the text between the last ```python and the next ```."""
    return [
        fenced(code),
        "Let me think.\n```python\n" + code + "\n```\nThis reads the input and prints the answer.",
        code,
        "```python\nprint('draft')\n```\nBetter:\n```python\n" + code + "\n```",
        "```python\n" + code,
        "```py\n" + code + "\n```",
    ]


def completions(code, index):
    """Two forms per program: fenced, and one of the others in turn."""
    forms = completion_forms(code)
    return [forms[0], forms[1 + index % (len(forms) - 1)]]


def cases():
    module = verl_prime_code()
    out = []

    def score(name, completion, ground_truth):
        with contextlib.redirect_stdout(sys.stderr):
            result = module.compute_score(completion, json.loads(json.dumps(ground_truth))
                                          if isinstance(ground_truth, dict) else ground_truth, continuous=True)
        out.append({"name": name, "completion": completion, "ground_truth": ground_truth,
                    "score": float(result[0]) if isinstance(result, tuple) else float(result)})

    for problem, tests, programs in PROBLEMS:
        for index, (variant, code) in enumerate(programs.items()):
            for form, completion in enumerate(completions(code, index)):
                # verl's datasets hold the test cases as a JSON string; a parquet struct arrives as an object.
                ground_truth = json.dumps(tests) if (index + form) % 3 else tests
                score("%s/%s/%d" % (problem, variant, form), completion, ground_truth)
    # No test cases: verl's first check passes vacuously, unless the code does not load or its process ends first
    # (unfenced, the import line runs as the module loads).
    no_tests = json.dumps({"inputs": [], "outputs": []})
    score("empty/any", fenced("print(1)"), no_tests)
    score("empty/syntax_error", fenced("print("), no_tests)
    score("empty/exits_while_loading", "import os; os._exit(0)", no_tests)
    # One test that never ends: killed at verl's global limits (6 s, then 11 s for the test alone).
    score("sum/endless_on_one", fenced("a, b = map(int, input().split())\nwhile a == 7:\n    pass\nprint(a + b)"),
          json.dumps({"inputs": SUM_INPUTS[:6], "outputs": SUM_OUTPUTS[:6]}))
    return out


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, ensure_ascii=False)
