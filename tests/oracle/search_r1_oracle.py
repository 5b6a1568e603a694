"""verl 0.9.1's search_r1_like_qa_em (the searchR1_* data sources' reward) in .venv/test, for
test_search_r1_oracle.cpp.

  search_r1_oracle.py cases     prints [{"solution", "ground_truth", "answer", "normalized", "score"}, ...]: generated
                                responses and targets (fixed seed) with what verl's module makes of them
  search_r1_oracle.py unicode   prints the code point sets behind the scorer's text handling, from this Python:
                                {"assigned", "word", "sigma_after", "sigma_after_a", "sigma_before"} as [first, last]
                                ranges and "lower" as [code point, str.lower()] where it changes the code point

verl's module is loaded from its installed file (it imports only random, re and string), without verl's __init__.
compute_score prints a sample now and then; that output is swallowed.
"""
import contextlib
import importlib.util
import io
import json
import os
import random
import re
import sys
import unicodedata


def verl_search_r1():
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    path = os.path.join(list(spec.submodule_search_locations)[0], "utils", "reward_score", "search_r1_like_qa_em.py")
    module_spec = importlib.util.spec_from_file_location("verl_search_r1_reference", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


FRAGMENTS = [
    "<answer>", "</answer>", "<answer>", "</answer>", "<answer", "answer>", "<Answer>", "<think>", "</think>",
    "<search>", "</search>", "The", "the", "THE", "A", "a", "an", "An", "AN", "theatre", "another", "ant", "_the_",
    "the_", "a\u0301", "\u0301", "Paris", "paris", "New York", "new-york", "U.S.A.", "1984", "3.5", "\u0663", "\u00b2",
    "\u216b", "\u00e9", "\u00c9", "\u65e5\u672c", "\U0001d400", "\U0001F600", "\u0130", "\u00df", "\u00aa", "\u24b6",
    "\u24d0", "\u039f\u0394\u039f\u03a3", "\u03a3", "\u03c3", "\u03c2", "\u03a3'", "'s", "don't", "\u2019", "'", ".",
    ",", "!", "?", "-", "(", ")", "\"", "$", "@", "[", "]", "{", "}", "~", "`", "|", "\\", "^", ":", ";", "*", "+", "=",
    "\u00bf", "\u2014", "\u201c", " ", "  ", "\n", "\t", "\r", "\x0b", "\x1c", "\x1f", "\u00a0", "\u3000", "\u2028",
    "\u200b", "\u0085", "\ufeff", "Answer: 5", "is", "Berlin", "\u00c5ngstr\u00f6m", "K\u00d8BENHAVN",
]


def text(rng, pieces):
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, pieces)))


def variant(rng, answer):
    """The answer as a dataset might hold it: other case, articles, punctuation, spacing."""
    choice = rng.randrange(6)
    if choice == 0:
        return answer.upper()
    if choice == 1:
        return "The " + answer + "."
    if choice == 2:
        return "  " + answer.replace(" ", "\t") + "!"
    if choice == 3:
        return "an " + answer.title()
    if choice == 4:
        return answer + "s"
    return answer


def cases():
    module = verl_search_r1()
    rng = random.Random(20251128)
    out = []
    for index in range(2500):
        solution = text(rng, 4 if index % 50 else 40)
        if index % 4 == 0:
            solution += "<answer>" + text(rng, 3) + "</answer>" + text(rng, 2)
        if index % 97 == 0:
            solution += "<answer>x</answer>" * rng.randint(9, 12)
        answer = module.extract_solution(solution)
        targets = [text(rng, 3) for _ in range(rng.randint(0, 2))]
        if answer is not None and index % 3:
            targets.insert(rng.randint(0, len(targets)), variant(rng, answer))
        target = targets[0] if index % 11 == 0 and targets else targets
        ground_truth = {"target": target}
        with contextlib.redirect_stdout(io.StringIO()):
            score = module.compute_score(solution, ground_truth)
        out.append({
            "solution": solution,
            "ground_truth": ground_truth,
            "answer": answer,
            "normalized": None if answer is None else module.normalize_answer(answer),
            "score": float(score),  # default_compute_score's float(res)
        })
    return out


def ranges(code_points):
    out = []
    for c in code_points:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def unicode_sets():
    assigned = [c for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]
    word = re.compile(r"\w")
    return {
        "unidata_version": unicodedata.unidata_version,
        "assigned": ranges(assigned),
        "word": ranges(c for c in assigned if word.fullmatch(chr(c))),
        # U+03A3 lowers to the final sigma after c / after "A" + c / before c (after "A")
        "sigma_after": ranges(c for c in assigned if (chr(c) + "\u03a3").lower()[-1] == "\u03c2"),
        "sigma_after_a": ranges(c for c in assigned if ("A" + chr(c) + "\u03a3").lower()[-1] == "\u03c2"),
        "sigma_before": ranges(c for c in assigned if ("A\u03a3" + chr(c)).lower()[1] == "\u03c2"),
        "lower": [[c, chr(c).lower()] for c in assigned if chr(c).lower() != chr(c)],
    }


if __name__ == "__main__":
    what = sys.argv[1]
    result = cases() if what == "cases" else unicode_sets()
    json.dump(result, sys.stdout, ensure_ascii=False)
