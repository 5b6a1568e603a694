"""verl 0.9.1 as the oracle for `verl demo --tools` (tests/oracle/test_calculator_tool_oracle.cpp). Runs under the
test-only Python (.venv/test), offline.

  tool CONFIG.yaml EXPRESSIONS.jsonl OUT.jsonl
        builds the tools of CONFIG.yaml with verl's initialize_tools_from_config (the YAML's folder on sys.path, as
        verl.cpp's tool runtime puts it), writes {"schema": model_dump(exclude_unset=True, exclude_none=True)} and,
        per expression line {"expression"}, {"text", "reward"} from create(create_kwargs=...) / execute / calc_reward /
        release, the calls verl's tool agent loop makes.
  tokens TOKENIZER_DIR CASES.jsonl OUT.jsonl
        per case {"messages": [system, user], "tools", "turns": [assistant text, tool text, assistant text, ...]}:
        verl's Continuous Token builder for qwen2 (create_continuous_token_builder) builds the first prompt, then
        appends each assistant turn (its text encoded without special tokens, ending with <|im_end|>) and each tool
        response (a "tool" message); writes {"prompt": ids, "response": ids after the prompt}.

Import stubs: verl_oracle (tests/golden/algo) stands in for ray, which `verl/__init__.py` imports.
"""

import asyncio
import json
import os
import sys

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


def tool(config_path, expressions_path, out_path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(config_path)))
    registry = verl_oracle.load_verl("verl.tools.tool_registry")
    tools = registry.initialize_tools_from_config(config_path)
    assert len(tools) == 1, tools
    calculator = tools[0]
    rows = [{"schema": calculator.tool_schema.model_dump(exclude_unset=True, exclude_none=True)}]

    async def run(expression):
        instance_id, _ = await calculator.create(create_kwargs={"ground_truth": "0"})
        response, _, _ = await calculator.execute(instance_id, {"expression": expression})
        reward = await calculator.calc_reward(instance_id)
        await calculator.release(instance_id)
        return {"text": response.text, "reward": reward}

    for line in read_lines(expressions_path):
        rows.append(asyncio.run(run(line["expression"])))
    write_lines(out_path, rows)


def tokens(tokenizer_dir, cases_path, out_path):
    wiring = verl_oracle.load_verl("verl.utils.tokenizer.continuous_token_wiring")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    out = []
    for case in read_lines(cases_path):
        builder = wiring.create_continuous_token_builder(tokenizer, hf_model_type="qwen2", chat_template_kwargs={})
        tools = case["tools"]
        messages = list(case["messages"])
        ids = builder.build_initial_tokens(messages, tools=tools)
        prompt = list(ids)
        for k, text in enumerate(case["turns"]):
            if k % 2 == 0:  # the policy's turn
                ids = builder.merge_assistant_tokens(ids, tokenizer.encode(text, add_special_tokens=False)).token_ids
                messages.append({"role": "assistant", "content": text})
            else:
                updated = messages + [{"role": "tool", "content": text}]
                ids = builder.merge_context_tokens(messages, updated, ids, tools=tools).token_ids
                messages = updated
        out.append({"prompt": prompt, "response": list(ids)[len(prompt):]})
    write_lines(out_path, out)


if __name__ == "__main__":
    import logging

    logging.disable(logging.CRITICAL)
    if len(sys.argv) == 5 and sys.argv[1] == "tool":
        tool(*sys.argv[2:5])
    elif len(sys.argv) == 5 and sys.argv[1] == "tokens":
        tokens(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
