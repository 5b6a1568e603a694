#!/usr/bin/python3
"""Reference for one step of verl's SFT trainer on a tiny model made by `verl model init`.

usage: sft_step_reference.py CASE.json OUT.json

CASE.json: {"model_dir", "rows": [{"prompt_ids": [...], "response_ids": [...]}, ...], "max_length",
"truncation" ("left"|"right"|"error"), "pad_id", "micro_batch_size", "lr", "betas", "weight_decay", "clip_grad"}.

Written from verl's fsdp_sft_trainer.py / sft_dataset.py, independently of the C++ code: each row is
prompt + response (response already ends with eos), truncated and right-padded to max_length; verl's loss mask
marks positions prompt_len-1 .. prompt_len+response_len-2 (the positions whose next token is a response token)
and is used with logits[:, :-1] / labels input_ids[:, 1:]; per micro batch the loss is
sum(CE * mask) / (sum(mask) + 1e-8) / n_micro, summed over micro batches (train/loss). Then
clip_grad_norm_(clip_grad), one torch.optim.AdamW step (eps 1e-8, constant LR), and the loss of the whole batch
as one micro batch after the step. The forward is gen_model_golden.py's float64 HF forward, one row at a time
over its unpadded tokens (padding is masked and causal, so it does not change real positions).
Output: {"loss_before", "grad_norm", "loss_after"}.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import st_format  # noqa: E402
from gen_model_golden import forward  # noqa: E402


def build_row(prompt, response, max_length, truncation):
    ids = prompt + response
    p, r = len(prompt), len(response)
    mask = [0] * len(ids)
    for t in range(max(p - 1, 0), p + r - 1):  # predicts tokens p .. p+r-1
        mask[t] = 1
    if len(ids) > max_length:
        if truncation == "error":
            raise SystemExit("row longer than max_length")
        if truncation == "left":
            ids, mask = ids[-max_length:], mask[-max_length:]
        else:
            ids, mask = ids[:max_length], mask[:max_length]
    return ids, mask


def batch_loss(cfg, W, rows, n_micro):
    total = torch.zeros((), dtype=torch.float64)
    count = 0.0
    for ids, mask in rows:
        logits = forward(cfg, W, ids)  # [T, V]
        logp = torch.log_softmax(logits[:-1], dim=-1)
        labels = torch.tensor(ids[1:])
        nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        m = torch.tensor(mask[:-1], dtype=torch.float64)
        total = total + (nll * m).sum()
        count += float(sum(mask[:-1]))
    return total / (count + 1e-8) / n_micro


def main():
    case_path, out_path = sys.argv[1:3]
    with open(case_path) as f:
        case = json.load(f)
    model_dir = case["model_dir"]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    W = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in st_format.read_checkpoint(model_dir).items()}
    rows = [build_row(r["prompt_ids"], r["response_ids"], case["max_length"], case["truncation"]) for r in case["rows"]]
    mb = case["micro_batch_size"]
    micro = [rows[i:i + mb] for i in range(0, len(rows), mb)]
    loss_before = 0.0
    for chunk in micro:
        loss = batch_loss(cfg, W, chunk, len(micro))
        loss.backward()
        loss_before += loss.item()
    params = list(W.values())
    grad_norm = torch.nn.utils.clip_grad_norm_(params, case["clip_grad"]).item()
    opt = torch.optim.AdamW(params, lr=case["lr"], betas=tuple(case["betas"]), eps=1e-8,
                            weight_decay=case["weight_decay"])
    opt.step()
    with torch.no_grad():
        loss_after = batch_loss(cfg, W, rows, 1).item()
    with open(out_path, "w") as f:
        json.dump({"loss_before": loss_before, "grad_norm": grad_norm, "loss_after": loss_after}, f)


if __name__ == "__main__":
    main()
