#!/usr/bin/env python3
"""Collects the override lists of verl's example run scripts (`python3 -m verl.trainer.main_ppo key=value ...`).

Reads the scripts from a git directory (the `fetch` mirror of github:volcengine/verl) or a checkout, expands the
shell variables the scripts assign before the launch line (`NAME=value`, `${NAME:-default}`, `$HOME`), joins the
backslash continuations and splits the launch line as bash would (quotes removed). Nothing in the scripts is run.

    python3 scripts/verl_examples/extract_overrides.py --git-dir /path/to/verl.git > overrides.json

Output: a JSON object {script path: {"args": [...], "config_name": ..., "megatron": bool, "trainer": ppo | sft |
sft_engine}} for every script with a `verl.trainer.main_ppo`, `fsdp_sft_trainer` or `sft_trainer` launch line (the
first one when a script has several).
"""
import argparse
import json
import os
import re
import subprocess
import sys

# verl's trainers: python3 -m verl.trainer.main_ppo, and the SFT trainers (usually under torchrun).
LAUNCH = re.compile(r"(?:^|\s)(?:(?:python3?|\$\{?PYTHON\w*\}?)\s+|torchrun\s(?:.*?\s)?)-m\s+"
                    r"verl\.trainer\.(main_ppo|fsdp_sft_trainer|sft_trainer)(?=\s|$)")
TRAINERS = {"main_ppo": "ppo", "fsdp_sft_trainer": "sft", "sft_trainer": "sft_engine"}
ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


SEP = "\x00"  # between the elements of an expanded array


class Shell:
    """Just enough of bash's word expansion for verl's example scripts."""

    def __init__(self):
        # What the launcher provides: a home, and one node where a script reads SLURM's count.
        self.vars = {"HOME": "/root", "SLURM_JOB_NUM_NODES": "1", "SLURM_NNODES": "1"}
        self.arrays = {}

    def expand_param(self, text, i):
        """text[i] == '$'. Returns (expansion, next index)."""
        if i + 1 < len(text) and text[i + 1] == "{":
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            body = text[i + 2 : j - 1]
            array = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]$", body)
            if array:  # "${NAME[@]}": one word per element (split apart in words())
                return SEP.join(self.arrays.get(array.group(1), [])), j
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(:?[-=+])?(.*)$", body, re.S)
            if not m:
                return "", j
            name, op, rest = m.group(1), m.group(2), m.group(3)
            value = self.vars.get(name)
            if op in (":-", "-", ":=", "="):
                if value is None or (op.startswith(":") and value == ""):
                    value = self.words(rest, split=False)[0] if rest else ""
            elif op in (":+", "+"):
                value = self.words(rest, split=False)[0] if value else ""
            return value or "", j
        if text.startswith("$((", i):  # arithmetic: integers and + - * / % ( ) after expanding names
            depth, j = 2, i + 3
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            expr = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: self.vars.get(m.group(1), "0"), text[i + 3 : j - 2])
            expr = expr.replace("/", "//")
            if re.fullmatch(r"[0-9+\-*/%() \t]*", expr):
                try:
                    return str(eval(expr)), j  # only digits and operators reach eval
                except (SyntaxError, ZeroDivisionError):
                    pass
            return "ARITH", j
        if i + 1 < len(text) and text[i + 1] == "(":
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            return "CMD_SUBST", j  # a command substitution is not run
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[@*#?0-9]", text[i + 1 :])
        if not m:
            return "$", i + 1
        name = m.group(0)
        if name in ("@", "*"):
            return "", i + 1 + len(name)
        return self.vars.get(name, ""), i + 1 + len(name)

    def words(self, text, split=True):
        """Splits and expands like bash (no globbing). With split=False the whole text is one word."""
        out, cur, has, i = [], [], False, 0
        while i < len(text):
            c = text[i]
            if c == "'":
                j = text.index("'", i + 1) if "'" in text[i + 1 :] else len(text)
                cur.append(text[i + 1 : j])
                has, i = True, j + 1
            elif c == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\':
                        cur.append(text[i + 1])
                        i += 2
                    elif text[i] == "$":
                        value, i = self.expand_param(text, i)
                        cur.append(value)
                    else:
                        cur.append(text[i])
                        i += 1
                has, i = True, i + 1
            elif c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                has, i = True, i + 2
            elif c == "$":
                value, i = self.expand_param(text, i)
                if split and not value.strip() and not has and not cur:
                    continue
                if split:  # an unquoted expansion is split on whitespace
                    parts = value.split()
                    if value[:1].isspace() and (cur or has):
                        out.append("".join(cur))
                        cur, has = [], False
                    for k, part in enumerate(parts):
                        cur.append(part)
                        has = True
                        if k + 1 < len(parts):
                            out.append("".join(cur))
                            cur = []
                    if value[-1:].isspace() and (cur or has):
                        out.append("".join(cur))
                        cur, has = [], False
                else:
                    cur.append(value)
                    has = True
            elif split and c.isspace():
                if cur or has:
                    out.append("".join(cur))
                cur, has = [], False
                i += 1
            elif split and c == "#" and not cur and not has:
                break  # a comment
            else:
                cur.append(c)
                has, i = True, i + 1
        if cur or has or not split:
            out.append("".join(cur))
        if split:  # array elements are words of their own; an empty element from an empty array is none
            out = [w for word in out for w in word.split(SEP)] if any(SEP in w for w in out) else out
        return out


def logical_lines(text):
    lines, cur = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        lines.append(cur + raw)
        cur = ""
    if cur:
        lines.append(cur)
    return lines


def extract(text):
    shell = Shell()
    lines = logical_lines(text)
    pending_array = None  # (name, text so far) of a NAME=( ... ) spanning lines
    for line in lines:
        if pending_array:
            name, body = pending_array
            if line.strip().startswith(")"):
                shell.arrays[name] = [w for w in shell.words(body) if w]
                pending_array = None
            else:
                pending_array = (name, body + " " + line.split(" #")[0] if not line.strip().startswith("#") else body)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = LAUNCH.search(line)
        if m:
            words = shell.words(line[m.end() :])
            args, config_name = [], None
            for w in words:
                if w in ("&", ";", "|", "&&", "||") or w.startswith(("2>", ">", "|")):
                    break
                if w == "":
                    continue  # an empty quoted expansion ("$EXTRA" unset)
                if w.startswith("--config-name"):
                    config_name = w.split("=", 1)[1] if "=" in w else None
                args.append(w)
            return {"args": args, "config_name": config_name, "trainer": TRAINERS[m.group(1)]}
        a = ASSIGN.match(line)
        if a and " " not in a.group(1):
            value = a.group(2).strip()
            if value.startswith("("):  # bash arrays
                if value.rstrip().endswith(")"):
                    shell.arrays[a.group(1)] = [w for w in shell.words(value.strip()[1:-1]) if w]
                else:
                    pending_array = (a.group(1), value[1:])
            else:
                words = shell.words(value)
                shell.vars[a.group(1)] = " ".join(words) if len(words) != 1 else words[0]
    return None


def is_megatron(entry):
    name = entry["config_name"] or ""
    if "megatron" in name:
        return True
    return any(re.match(r"^((actor_rollout_ref\.actor|critic)\.strategy|model_engine)=megatron$", a) for a in entry["args"])


def list_scripts(git_dir, root):
    if git_dir:
        names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD", "examples"],
                               check=True, capture_output=True, text=True).stdout.split()
        for name in names:
            if name.endswith(".sh"):
                yield name, subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{name}"], check=True,
                                           capture_output=True, text=True).stdout
    else:
        for d, _, files in os.walk(os.path.join(root, "examples")):
            for f in files:
                if f.endswith(".sh"):
                    path = os.path.join(d, f)
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        yield os.path.relpath(path, root), fh.read()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--git-dir", help="a bare git directory of verl (e.g. the fetch mirror)")
    p.add_argument("--root", help="a verl checkout")
    a = p.parse_args()
    if not a.git_dir and not a.root:
        p.error("give --git-dir or --root")
    out = {}
    for name, text in sorted(list_scripts(a.git_dir, a.root)):
        entry = extract(text)
        if entry is None:
            continue
        entry["megatron"] = is_megatron(entry)
        out[name] = entry
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
