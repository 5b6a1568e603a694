#!/usr/bin/python3
"""Golden cases for verl.cpp's rule reward scorers, computed with Python's own `re` and `str`.

An independent re-implementation, written from the behaviour described in the reference spec (§6.3 gsm8k,
§6.4 MATH) and verl's documented math_dapo normalisation; it does not import or copy verl. Its point is that
the Python-side semantics the C++ port must emulate (re.findall / re.sub scanning, code-point slicing,
str.isdigit / str.strip on Unicode, IndexError / assert paths) come from the real Python here.

Usage: /usr/bin/python3 gen_reward_golden.py > reward_cases.jsonl   (deterministic: fixed seed)
"""
import json
import random
import re
import sys

FORMAT_VERSION = 1
CLIP = 300


# ---- gsm8k ------------------------------------------------------------------------------------------
def gsm8k_extract(text, flexible):
    if len(text) > CLIP:
        text = text[-CLIP:]
    if not flexible:
        found = re.findall(r"#### (\-?[0-9\.\,]+)", text)
        return found[-1].replace(",", "").replace("$", "") if found else None
    found = re.findall(r"(\-?[0-9\.\,]+)", text)
    if not found:
        return None
    candidates = [m for m in found if m not in ("", ".")]
    # when nothing qualifies, the reversed scan ends on the first element
    return candidates[-1] if candidates else found[0]


def gsm8k_score(text, truth, flexible=False):
    answer = gsm8k_extract(text, flexible)
    if answer is None:
        return 0.0
    return 1.0 if answer == truth else 0.0


# ---- MATH (hendrycks) --------------------------------------------------------------------------------
def last_boxed(text):
    if "\\boxed " in text:
        return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    depth = 0
    for pos in range(start, len(text)):
        if text[pos] == "{":
            depth += 1
        elif text[pos] == "}":
            depth -= 1
            if depth == 0:
                return text[start:pos + 1]
    return None


def unbox(boxed):
    if "\\boxed " in boxed:
        assert boxed.startswith("\\boxed ")
        return boxed[7:]
    assert boxed.startswith("\\boxed{") and boxed.endswith("}")
    return boxed[7:-1]


def fracs(text):
    head, *rest = text.split("\\frac")
    out = head
    for piece in rest:
        out += "\\frac"
        if piece[0] == "{":  # IndexError on an empty piece, as in verl
            out += piece
            continue
        if len(piece) < 2:
            return text
        first, second, tail = piece[0], piece[1], piece[2:]
        out += "{" + first + "}" + ("{" + second + "}" if second != "{" else second) + tail
    return out


def sqrts(text):
    if "\\sqrt" not in text:
        return text
    head, *rest = text.split("\\sqrt")
    out = head
    for piece in rest:
        out += ("\\sqrt{" + piece[0] + "}" + piece[1:]) if piece[0] != "{" else ("\\sqrt" + piece)
    return out


def slash(text):
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        num, den = int(parts[0]), int(parts[1])
        if text != f"{num}/{den}":
            return text
        return "\\frac{" + str(num) + "}{" + str(den) + "}"
    except ValueError:
        return text


def units(text):
    if "\\text{ " in text:
        parts = text.split("\\text{ ")
        assert len(parts) == 2
        return parts[0]
    return text


def strip_math(text):
    for old, new in [("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"),
                     ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", "")]:
        text = text.replace(old, new)
    text = units(text)
    for old, new in [("\\\\%", ""), ("\\%", ""), (" .", " 0."), ("{.", "{0.")]:
        text = text.replace(old, new)
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        text = sides[1]
    text = sqrts(text).replace(" ", "")
    text = fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return slash(text)


def strip_or_none(text):
    try:
        return strip_math(text)
    except (AssertionError, IndexError):
        return None


def equiv(a, b):
    sa, sb = strip_or_none(a), strip_or_none(b)
    if sa is None or sb is None:
        return a == b
    return sa == sb


def math_score(text, truth):
    try:
        boxed = last_boxed(text)
        if boxed is None:
            return 0.0
        return 1.0 if equiv(unbox(boxed), truth) else 0.0
    except AssertionError:
        return 0.0


# ---- math_dapo ---------------------------------------------------------------------------------------
DAPO_SUBSTITUTIONS = [("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""),
                      ("mbox", "text"), (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}")]
DAPO_REMOVED = ["square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units", "\\ldots",
                "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters",
                "meals", "edges", "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}",
                "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", "\\mathrm{th}", "^\\circ",
                "^{\\circ}", "\\;", ",\\!", "{,}", "\"", "\\dots"]


def dapo_normalize(answer):
    answer = answer.split("=")[-1]
    for old, new in DAPO_SUBSTITUTIONS:
        answer = answer.replace(old, new)
    for old in DAPO_REMOVED:
        answer = answer.replace(old, "")
    answer = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", r"$\3$", answer)
    for command in ("text", "textbf", "overline"):
        answer = re.sub(r"(\\" + command + r"\{)(.*?)(\})", r"\2", answer)
    answer = re.sub(r"(\\boxed\{)(.*)(\})", r"\2", answer)
    answer = re.sub(r"(frac)([^{])(.)", r"frac{\2}{\3}", answer)
    answer = re.sub(r"(sqrt)([^{])", r"sqrt{\2}", answer)
    answer = answer.replace("$", "")
    if answer.replace(",", "").isdigit():
        answer = answer.replace(",", "")
    return answer.strip()


def dapo_score(text, truth):
    text = text[-CLIP:]
    found = re.findall(r"(?i)Answer\s*:\s*([^\n]+)", text)
    pred = dapo_normalize(found[-1] if found else "[INVALID]")
    correct = pred == dapo_normalize(truth)
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}


# ---- case generation ---------------------------------------------------------------------------------
FRAGMENTS = [
    "#### ", "####", "#### -", "#### $", "Answer:", "answer :", "ANSWER: ", "An\u017fwer:", "Answer:\u00a0",
    "\\boxed{", "\\boxed ", "\\fbox{", "}", "{", "$", "\\$", "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\left(",
    "\\right)", "^\\circ", "^{\\circ}", "\\%", "\\\\%", "%", "\\text{ cm}", "\\text{ m}", "\\text{m}", "\\text{",
    "\\textbf{", "\\overline{", "\\mathrm{th}", "\\!", "\\\\", "\\;", ",\\!", "{,}", "\\ldots", "\\dots", " = ",
    "=", "/", "-", ".", ",", " .", "{.", " ", "  ", "\n", "\t", "\x1c", "\u2028", "\u3000", "an ", "a ", "Jan ",
    "dollars", "units", "degrees", "apples", "x", "k", "\u00e9", "\u03c0", "\u0661", "\u00b2", "\U0001F600",
    "0", "1", "2", "3", "5", "7", "12", "42", "0.5", ".5", "1,000", "-3", "03", "3/4", "1/2", "10", "100",
]


def random_text(rng, max_pieces):
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, max_pieces)))


def derived_truth(text):
    """A ground truth taken from the text itself, so that matches (score 1) are common too."""
    strict = gsm8k_extract(text, False)
    if strict is not None:
        return strict
    boxed = last_boxed(text)
    if boxed is not None:
        try:
            return unbox(boxed)
        except AssertionError:
            pass
    found = re.findall(r"(?i)Answer\s*:\s*([^\n]+)", text[-CLIP:])
    return found[-1] if found else None


def main():
    rng = random.Random(20240611)
    out = sys.stdout
    out.write(json.dumps({"format_version": FORMAT_VERSION}) + "\n")
    truths = ["5", "42", "12", "1000", "-3", "\\frac{1}{2}", "\\frac{3}{4}", "0.5", "7", "\\sqrt{2}", "10", "."]
    for index in range(3000):
        # Mostly short texts; some long enough that the 300-character clip matters.
        text = random_text(rng, 12 if index % 20 else 120)
        truth = derived_truth(text) if index % 3 == 2 else None
        if truth is None:
            truth = rng.choice(truths) if index % 3 else random_text(rng, 4)
        case = {
            "text": text,
            "truth": truth,
            "gsm8k_strict": gsm8k_extract(text, False),
            "gsm8k_flexible": gsm8k_extract(text, True),
            "gsm8k_score": gsm8k_score(text, truth),
            "math_last_boxed": last_boxed(text),
            "math_strip": strip_or_none(text),
            "math_equiv": equiv(text, truth),
            "math_score": math_score(text, truth),
            "dapo_normalize": dapo_normalize(text),
            "dapo": dapo_score(text, truth),
        }
        out.write(json.dumps(case, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
