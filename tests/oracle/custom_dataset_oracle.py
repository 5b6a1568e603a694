"""verl's side of tests/oracle/test_custom_dataset_oracle.cpp: a data.custom_cls class constructed as verl 0.9.1's
create_rl_dataset constructs it (verl's own hf_tokenizer, an OmegaConf data config, processor None), under
.venv/test through tests/golden/algo/verl_oracle.py, and every row as verl's agent loop sees it.

usage: custom_dataset_oracle.py SPEC OUT
SPEC (JSON): {"path", "name", "data_files", "tokenizer_dir", "config" (the data section), "max_samples"}.
OUT (JSON): {"rows": [{"fields": the row dict without tensors (numpy values as lists), "prompt_ids": the
tokenizer's chat template over raw_prompt with add_generation_prompt=True and config.apply_chat_template_kwargs,
tokenized, as verl's agent loop renders it}]}. verl prints progress to stdout; it goes to stderr here.
"""
import contextlib
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402

tokenizer_module = verl_oracle.load_verl("verl.utils.tokenizer")


def plain(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main():
    spec_path, out_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    from omegaconf import OmegaConf

    spec_module = importlib.util.spec_from_file_location("custom_dataset_under_test", spec["path"])
    module = importlib.util.module_from_spec(spec_module)
    spec_module.loader.exec_module(module)
    cls = getattr(module, spec["name"])
    tokenizer = tokenizer_module.hf_tokenizer(spec["tokenizer_dir"])
    config = OmegaConf.create(spec["config"])
    with contextlib.redirect_stdout(sys.stderr):
        dataset = cls(data_files=spec["data_files"], tokenizer=tokenizer, processor=None, config=config,
                      max_samples=spec["max_samples"])
        rows = []
        for i in range(len(dataset)):
            row = dataset[i]
            ids = tokenizer.apply_chat_template(row["raw_prompt"], add_generation_prompt=True, tokenize=True,
                                                **spec["config"].get("apply_chat_template_kwargs", {}))
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            fields = {k: plain(v) for k, v in row.items() if type(v).__module__.split(".")[0] != "torch"}
            rows.append({"fields": fields, "prompt_ids": [int(t) for t in ids]})
    with open(out_path, "w") as f:
        json.dump({"rows": rows}, f)


main()
