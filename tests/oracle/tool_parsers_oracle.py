"""Tool-call parsing oracle: verl 0.9.1's own ToolParser registry (verl/experimental/agent_loop/tool_parser.py),
for tests/oracle/test_tool_parsers_oracle.cpp. Runs under the test-only Python (.venv/test), offline.

  cases OUT SEED N     writes N generated texts per format plus the hand-written ones, each parsed by verl's parser
                       of that format: per line {"format", "text", "tools", "pad_token", "content", "calls":
                       [{"name", "arguments", "value" | "not_json", "tool_call_id"}], "stop_tokens"}. "arguments"
                       is verl's string; "value" its json.loads with NaN / inf as {"$nonfinite": repr}; "not_json"
                       true instead when it is not JSON (gpt-oss passes the text on unchecked).

The generated texts join random pieces: each format's tags and whole calls, values of every type its conversions
meet (numbers in Python's spellings, JSON, Python literals, null / true in any case), whitespace (Unicode and
\\x1c..\\x1f, where Python's str.strip and the regex package's \\s differ) and other text, so that malformed,
unclosed, nested and repeated calls all occur. The tokenizer is a stand-in whose decode returns the text itself
(the caller passes decoded text) and whose convert_tokens_to_ids numbers the tokens asked for.

Imports (nothing replaces code under test): verl_oracle (tests/golden/algo) stands in for ray; a bare
verl.experimental.agent_loop package lets tool_parser be imported without the whole agent loop.
"""

import asyncio
import importlib
import json
import os
import random
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402

FORMATS = ["hermes", "gpt-oss", "qwen3_coder", "glm", "seed", "minimax", "kimi", "deepseek_v4", "gemma4"]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}, "temp": {"type": "number"},
            "metric": {"type": "boolean"}, "opts": {"type": "object"}, "tags": {"type": "array"},
            "maybe": {"type": ["integer", "null"]}, "kind": {"type": "enum", "enum": ["a", "b"]},
            "count": {"type": " UInt64 "}, "ratio": {"type": "float32"}, "map": {"type": "dict[str, int]"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "calc_gsm8k_reward", "description": "GSM8K reward.", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "int"}},
        "required": ["query", "top_k"]}}},
]

VALUES = ["72", "-3", " 12 ", "1_000", "2.5", "3.0", "1e3", "-0.0", "inf", "NaN", "nan", "Infinity", "0x1F", "١٢",
          "null", "NULL", "Null", "true", "True", "FALSE", "yes", "\"str\"", "[1, 2]", "(1, 2)", "{1, 2}", "b'x'",
          "{\"k\": [1, {\"z\": null}]}", "{'k': 1}", "{1: 2}", "1+2j", "'quoted'", "Paris", "巴黎 ✓", "a,b",
          "x}y", "\n5\n", "\n\n7\n\n", " \u3000 9 \x1c", "\x1c8\x1d", "", "[1, 2", "None", "-Infinity",
          "\ufeff1", "\ufeff{}", "1e400", "\"\\u00e9\""]
NAMES = ["get_weather", "calc_gsm8k_reward", "search", "unknown_tool", "翻译", "functions.get_weather:0",
         "functions.Search-Tool:1", "get-weather", "f_1",
         "f\u00b2", "cafe\u0301", "get\u203fw", "\u24b6b", "a\u200db"]
KEYS = ["city", "days", "temp", "metric", "opts", "tags", "maybe", "kind", "count", "ratio", "map", "answer",
        "query", "top_k", "extra", "名", "x\u00b2", "k\u0301"]
SPACE = [" ", "\n", "\t", "\u3000", "\x1c", "\x1f", "\u00a0", "\r\n", ""]
FILLER = ["Let me check.", "<think>\nreason\n</think>\n\n", "</think>", "\n", " ", "<|im_end|>", "text", "é",
          "中文", ">", "<", "\"", "{", "}", ",", ":", "=", "\n\n", "<|end|>", "<|endoftext|>"]


def call_piece(fmt, rng):
    name, key, value = rng.choice(NAMES), rng.choice(KEYS), rng.choice(VALUES)
    key2, value2 = rng.choice(KEYS), rng.choice(VALUES)
    sp = rng.choice(SPACE)
    if fmt == "hermes":
        args = rng.choice(["{\"%s\": %s}" % (key, json.dumps(value)), "{\"%s\": %s}" % (key, value or "1"), "[]",
                           "\"raw\"", "{}"])
        return rng.choice(["<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>" % (name, args),
                           "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>", "</tool_call>"])
    if fmt == "gpt-oss":
        args = rng.choice(["{\"%s\": %s}" % (key, json.dumps(value)), value, "{bad"])
        channel = rng.choice(["commentary", "analysis", "commentary x to=functions.a", ""])
        return rng.choice([
            "<|start|>assistant<|channel|>%s to=functions.%s <|constrain|>json<|message|>%s<|call|>"
            % (channel, name, args),
            "<|start|>assistant<|channel|>analysis<|message|>%s<|end|>" % rng.choice(FILLER + [value]),
            "<|channel|>analysis<|message|>thinking<|end|>", "<|start|>assistant<|channel|>final<|message|>hi",
            "<|start|>assistant<|channel|>commentary to=functions. <|constrain|>json<|message|>{}<|call|>",
            "<|call|>", "<|constrain|>json<|message|>", " to=functions.%s " % name, "<|pad|>"])
    if fmt == "qwen3_coder":
        param = "<parameter=%s>%s%s%s</parameter>" % (key, rng.choice(["\n", ""]), value, rng.choice(["\n", ""]))
        return rng.choice([
            "<tool_call>\n<function=%s>\n%s\n%s\n</function>\n</tool_call>" % (name, param,
                                                                           "<parameter=%s>%s</parameter>" % (key2, value2)),
            "<tool_call>", "</tool_call>", "<function=%s>" % name, "</function>", param, "<parameter=%s>%s" % (key, value),
            "<parameter=noarrow", "<function=noarrow"])
    if fmt == "glm":
        pair = "<arg_key>%s%s</arg_key>%s<arg_value>%s</arg_value>" % (sp, key, rng.choice(SPACE), value)
        return rng.choice(["<tool_call>%s%s\n%s%s</tool_call>" % (sp, name, pair, rng.choice(SPACE)),
                           "<tool_call>%s</tool_call>" % name, "<tool_call>", "</tool_call>", pair, "<arg_key>",
                           "</arg_key>", "<arg_value>", "</arg_value>"])
    if fmt == "seed":
        param = "<parameter=%s>%s</parameter>" % (key + rng.choice(["", " ", "\n"]), value)
        return rng.choice(["<seed:tool_call>\n<function=%s>%s%s\n</function>\n</seed:tool_call>" % (name, sp, param),
                           "<seed:tool_call>", "</seed:tool_call>", "<function=%s>" % name, "</function>", param,
                           "<function=a\nb>", "<parameter=>x</parameter>"])
    if fmt == "minimax":
        param = "<parameter name=\"%s\">%s</parameter>" % (key, value)
        return rng.choice(["<minimax:tool_call>\n<invoke name=\"%s\">%s%s\n</invoke>\n</minimax:tool_call>"
                           % (name, sp, param), "<minimax:tool_call>", "</minimax:tool_call>",
                           "<invoke name=\"%s\">" % name, "</invoke>", param, "<invoke name=\"\">", "\">"])
    if fmt == "kimi":
        args = rng.choice(["{\"%s\": %s}" % (key, json.dumps(value)), "{\"query\": \"q\", \"top_k\": 1}",
                           "{\"city\": \"x\"}", "[1]", value, "{}"])
        return rng.choice(["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                           "<|tool_call_begin|>%s%s<|tool_call_argument_begin|>%s<|tool_call_end|>" % (sp, name, args),
                           "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"])
    if fmt == "deepseek_v4":
        string = rng.choice(["true", "false", "maybe"])
        param = "<｜DSML｜parameter name=\"%s\" string=\"%s\">%s</｜DSML｜parameter>" % (key, string, value)
        return rng.choice(["<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"%s\">\n%s\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
                           % (name, param), "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>",
                           "<｜DSML｜invoke name=\"%s\">" % name, "</｜DSML｜invoke>", param,
                           "<｜end▁of▁sentence｜>", "</think>", "\n\n", "\" string=\"true\">"])
    if fmt == "gemma4":
        arg = rng.choice(["%s:<|\"|>%s<|\"|>" % (key, value), "%s:%s" % (key, value), "%s:" % key, "<|\"|>",
                          "%s-%s:1" % (key, key2)])
        return rng.choice(["<|tool_call>call:%s{%s,%s}<tool_call|>" % (name.split(".")[0], arg,
                                                                     rng.choice(["n:5", "%s:%s" % (key2, value2)])),
                           "<|tool_call>", "<tool_call|>", "<|tool_call>call:%s{" % rng.choice(NAMES), "}<tool_call|>",
                           arg, "<pad>"])
    raise ValueError(fmt)


def generated_text(fmt, rng):
    pieces = []
    for _ in range(rng.randint(1, 7)):
        pieces.append(call_piece(fmt, rng) if rng.random() < 0.6 else rng.choice(FILLER + SPACE))
    return "".join(pieces)


HAND_WRITTEN = {
    "qwen3_coder": [
        "I will check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n<parameter=temp>\n21.5\n</parameter>\n<parameter=metric>\nTrue\n"
        "</parameter>\n<parameter=opts>\n{\"a\": 1}\n</parameter>\n<parameter=tags>\n['x', 'y']\n</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=tags>\n{1, 2}\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nunclosed\n",
        "<function=search>\n<parameter=query>\nno tool_call tag\n</parameter>\n</function>",
        # an unclosed match's lazy `$` stops before a final "\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\n",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n<parameter=days>\n7\n\n\n",
    ],
    "gpt-oss": [
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
        "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>",
    ],
    "glm": ["<think>plan</think>Checking.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
            "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"],
    "seed": ["<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>3"
             "</parameter>\n</function>\n</seed:tool_call>"],
    "minimax": ["Sure.<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n"
                "</invoke>\n<invoke name=\"search\">\n<parameter name=\"top_k\">5</parameter>\n</invoke>\n"
                "</minimax:tool_call>"],
    "kimi": ["Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
             "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.lookup:1"
             "<|tool_call_argument_begin|>{\"query\": \"q\", \"top_k\": 3}<|tool_call_end|><|tool_calls_section_end|>"],
    "deepseek_v4": ["Reasoning.</think>Let me look.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
                    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter "
                    "name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
                    "<｜end▁of▁sentence｜>"],
    "gemma4": ["Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,temp:2.5,metric:true,"
               "note:null,big:1e3}<tool_call|>"],
    "hermes": ["<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>"],
}

PAD = {"gpt-oss": "<|pad|>", "gemma4": "<pad>", "deepseek_v4": "<｜end▁of▁sentence｜>"}


def load_registry():
    verl_oracle.load_verl("verl.experimental")
    import verl.experimental

    package = types.ModuleType("verl.experimental.agent_loop")
    package.__path__ = [os.path.join(verl.experimental.__path__[0], "agent_loop")]
    sys.modules["verl.experimental.agent_loop"] = package
    tool_parser = importlib.import_module("verl.experimental.agent_loop.tool_parser")
    schemas = importlib.import_module("verl.tools.schemas")
    return tool_parser, schemas


class TextTokenizer:
    """The texts are already decoded; token ids are handed out in the order tokens are asked for."""

    def __init__(self, pad_token):
        self.pad_token = pad_token
        self.ids = {}

    def decode(self, text, skip_special_tokens=False):
        return text

    def convert_tokens_to_ids(self, token):
        return self.ids.setdefault(token, len(self.ids))


def normalized(value):
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return {"$nonfinite": repr(value)}
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def value_of(arguments):
    try:
        return {"value": normalized(json.loads(arguments))}
    except json.JSONDecodeError:
        return {"not_json": True}


def cases(out_path, seed, n):
    tool_parser, schemas = load_registry()
    tools = [schemas.OpenAIFunctionToolSchema.model_validate(t) for t in TOOLS]
    rng = random.Random(int(seed))
    rows = []
    for fmt in FORMATS:
        texts = list(HAND_WRITTEN.get(fmt, [])) + [generated_text(fmt, rng) for _ in range(int(n))]
        for text in texts:
            pad = PAD.get(fmt, "<|endoftext|>")
            tokenizer = TextTokenizer(pad)
            parser = tool_parser.ToolParser.get_tool_parser(fmt, tokenizer)
            content, calls = asyncio.run(parser.extract_tool_calls(text, tools))
            stop_ids = parser.stop_token_ids
            by_id = {v: k for k, v in tokenizer.ids.items()}
            rows.append({"format": fmt, "text": text, "tools": TOOLS, "pad_token": pad, "content": content,
                         "calls": [{"name": c.name, "arguments": c.arguments, **value_of(c.arguments),
                                    "tool_call_id": c.tool_call_id}
                                   for c in calls],
                         "stop_tokens": [by_id[i] for i in stop_ids]})
    with open(out_path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    import logging

    logging.disable(logging.CRITICAL)  # verl logs every skipped call; the results say it all
    if sys.argv[1] == "cases":
        cases(*sys.argv[2:5])
    else:
        sys.exit(f"unknown mode {sys.argv[1]!r}")
