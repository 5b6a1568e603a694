"""Multi-turn oracle: verl 0.9.1's own Continuous Token builder and Hermes tool parser, for
tests/oracle/test_conversation_tokens_oracle.cpp. Runs under the test-only Python (.venv/test), offline.

  tokens DIR MODEL_TYPE CASES OUT   per case line {"messages", "tools", "kwargs", "steps"}: verl's
                                    create_continuous_token_builder(AutoTokenizer(DIR), hf_model_type=MODEL_TYPE,
                                    chat_template_kwargs=kwargs) builds the first prompt
                                    (build_initial_tokens), then walks the steps: {"assistant": text} encodes the
                                    text without special tokens and appends it (merge_assistant_tokens);
                                    {"append": [messages]} merges them (merge_context_tokens) and records the
                                    tokens added after the running ids (inserted boundary + appended context).
                                    Writes {"builder", "initial", "steps": [{"ids"} | {"context"} | {"error"}]};
                                    after an error the case stops.
  hermes TEXTS OUT                  per line {"text"}: verl's HermesToolParser.extract_tool_calls on the text
                                    (its tokenizer.decode is the identity here: the caller passes decoded text):
                                    {"content", "calls": [{"name", "arguments"}], "blocks"} where "arguments" is
                                    verl's json.dumps string and "blocks" the <tool_call> blocks the regex found.

Import stubs (none replaces code under test): verl_oracle (tests/golden/algo) stands in for ray, which
`verl/__init__.py` imports. verl.experimental.agent_loop's __init__ imports the whole agent loop (hydra, vLLM
clients, ...); a bare package module with the same __path__ lets `tool_parser` be imported without running it.
"""

import asyncio
import importlib
import json
import os
import sys
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_lines(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def tokens(model_dir, model_type, cases_path, out_path):
    wiring = verl_oracle.load_verl("verl.utils.tokenizer.continuous_token_wiring")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out = []
    for case in read_lines(cases_path):
        builder = wiring.create_continuous_token_builder(
            tokenizer, hf_model_type=model_type, chat_template_kwargs=case.get("kwargs") or {})
        tools = case.get("tools")
        messages = list(case["messages"])
        runtime = builder.build_initial_tokens(messages, tools=tools)
        row = {"builder": type(builder).__name__, "initial": list(runtime), "steps": []}
        for step in case["steps"]:
            try:
                if "assistant" in step:
                    ids = tokenizer.encode(step["assistant"], add_special_tokens=False)
                    runtime = builder.merge_assistant_tokens(runtime, ids).token_ids
                    messages.append({"role": "assistant", "content": step["assistant"]})
                    row["steps"].append({"ids": ids})
                else:
                    updated = messages + step["append"]
                    merged = builder.merge_context_tokens(messages, updated, runtime, tools=tools)
                    assert merged.removed_prefix_token_count == 0
                    row["steps"].append({"context": merged.token_ids[len(runtime):]})
                    runtime, messages = merged.token_ids, updated
            except Exception as e:  # noqa: BLE001  (the C++ side must raise where verl raises)
                row["steps"].append({"error": f"{type(e).__name__}: {e}"})
                break
        out.append(row)
    write_lines(out_path, out)


def hermes(texts_path, out_path):
    verl_oracle.load_verl("verl.experimental")
    import verl.experimental

    package = types.ModuleType("verl.experimental.agent_loop")
    package.__path__ = [os.path.join(verl.experimental.__path__[0], "agent_loop")]
    sys.modules["verl.experimental.agent_loop"] = package
    tool_parser = importlib.import_module("verl.experimental.agent_loop.tool_parser")

    class TextTokenizer:  # the texts are already decoded
        def decode(self, text):
            return text

    parser = tool_parser.ToolParser.get_tool_parser("hermes", TextTokenizer())
    out = []
    for line in read_lines(texts_path):
        text = line["text"]
        content, calls = asyncio.run(parser.extract_tool_calls(text))
        both_tags = parser.tool_call_start_token in text and parser.tool_call_end_token in text
        out.append({"content": content,
                    "calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
                    "blocks": len(parser.tool_call_regex.findall(text)) if both_tags else 0})
    write_lines(out_path, out)


if __name__ == "__main__":
    import logging

    logging.disable(logging.CRITICAL)  # verl logs each skipped block / family fallback; the results say it all
    if sys.argv[1] == "tokens":
        tokens(*sys.argv[2:6])
    elif sys.argv[1] == "hermes":
        hermes(*sys.argv[2:4])
    else:
        sys.exit(f"unknown mode {sys.argv[1]!r}")
