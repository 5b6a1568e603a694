"""verl's own MultiTurnSFTDataset as the oracle for verl.cpp's multi-turn SFT dataset (verl 0.9.1 under .venv/test,
through tests/golden/algo/verl_oracle.py): verl.utils.dataset.multiturn_sft_dataset.MultiTurnSFTDataset built over
parquet files with a Hugging Face tokenizer (transformers.AutoTokenizer), and dataset[i] for every row.

Usage: multiturn_sft_reference.py SPEC OUT. SPEC (JSON):
  "tokenizer_dir": a Hugging Face tokenizer folder (tokenizer.json + tokenizer_config.json with a chat_template),
  "cases": [{"name", "tokenizer_dir" (optional: this case's own), "files": [parquet paths], "max_samples" (-1: all),
             "config": verl data-config keys (messages_key, tools_key, enable_thinking_key, enable_thinking_default,
                       max_length, truncation, pad_mode, apply_chat_template_kwargs, ignore_input_ids_mismatch),
                       passed to the dataset as an OmegaConf config}].
OUT (JSON): {"cases": {name: {"system_prompt": [ids], "generation_prompt": [ids],
                              "rows": [{"input_ids", "loss_mask", "position_ids", "attention_mask" (only when the
                                        dataset returns it, i.e. pad_mode right)} or {"error": "Type: message"}]}
                       or {"error": "Type: message"} when the dataset itself cannot be built}},
all lists of ints. A row's error is what dataset[i] raised: ValueError for a row over max_length under
truncation=error, AssertionError when the per-turn concatenation differs from the whole-conversation template.
verl prints progress to stdout; it is sent to stderr here.
"""
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "algo"))
import verl_oracle  # noqa: E402

multiturn_sft_dataset = verl_oracle.load_verl("verl.utils.dataset.multiturn_sft_dataset")


def _error(e):
    return {"error": f"{type(e).__name__}: {e}"}


def _ids(x):
    return [int(v) for v in (x.tolist() if hasattr(x, "tolist") else x)]


def run_case(case, tokenizer):
    from omegaconf import OmegaConf

    try:
        dataset = multiturn_sft_dataset.MultiTurnSFTDataset(
            parquet_files=list(case["files"]), tokenizer=tokenizer, config=OmegaConf.create(case.get("config", {})),
            max_samples=case.get("max_samples", -1))
    except Exception as e:  # noqa: BLE001  (the case's own outcome)
        return _error(e)
    rows = []
    for i in range(len(dataset)):
        try:
            item = dataset[i]
        except Exception as e:  # noqa: BLE001
            rows.append(_error(e))
            continue
        row = {k: _ids(item[k]) for k in ("input_ids", "loss_mask", "position_ids")}
        if "attention_mask" in item:
            row["attention_mask"] = _ids(item["attention_mask"])
        rows.append(row)
    return {"system_prompt": _ids(dataset.system_prompt), "generation_prompt": _ids(dataset.generation_prompt),
            "rows": rows}


def main():
    spec_path, out_path = sys.argv[1:3]
    with open(spec_path) as f:
        spec = json.load(f)
    from transformers import AutoTokenizer

    tokenizers = {}

    def tokenizer_of(case):  # a case's own "tokenizer_dir", else the spec's
        path = case.get("tokenizer_dir", spec.get("tokenizer_dir"))
        if path not in tokenizers:
            tokenizers[path] = AutoTokenizer.from_pretrained(path)
        return tokenizers[path]

    with contextlib.redirect_stdout(sys.stderr):
        out = {"cases": {c["name"]: run_case(c, tokenizer_of(c)) for c in spec["cases"]}}
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
