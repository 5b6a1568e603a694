#!/usr/bin/python3
"""Reference for verl's critic update (verl 0.9.1's engine TrainingWorker.train_mini_batch with value_loss).

usage: gen_critic_golden.py MODEL_DIR BATCH.safetensors SETTINGS.json OUT_PREFIX

An independent float64 plain-PyTorch computation, written from verl's description (spec sections 3.4, 3.6,
4.5, 4.6), of `calls` consecutive update_critic calls on the same batch:
  * the value model is the HF decoder forward of tests/golden/model/gen_model_golden.py (each row alone,
    unpadded) followed by the `score` head, read at the position before each response token;
  * value loss: vclip = clip(vpred, old - c, old + c); 0.5 * agg(max((vpred-R)^2, (vclip-R)^2)),
    clipfrac = masked mean of (clipped loss > unclipped loss);
  * mini-batches of `mini` rows (contiguous), micro-batches of `micro`, each micro-batch's loss aggregated against
    the whole mini-batch (verl 0.9.1's global batch: token-mean divides by the mini-batch's tokens, the seq-mean
    modes by its rows), so the micro-batch losses add up to the mini-batch's loss; `epochs` passes;
    torch.nn.utils.clip_grad_norm_(grad_clip), step skipped when the norm is not finite;
  * metrics as verl 0.9.1's engine aggregates them: vf_loss one number per mini-batch (the sum over its
    micro-batches), vf_clipfrac and vpred_mean one per micro-batch, grad_norm one per mini-batch;
  * torch.optim.<optimizer> (AdamW by default) as verl's build_optimizer makes it (lr, weight_decay, betas for
    *adam* classes, then optimizer_kwargs) with a LambdaLR schedule (constant or cosine with linear warmup)
    stepped once per call; the lr reported is the one the call used.
Writes OUT_PREFIX.json (per-call metrics) and OUT_PREFIX.safetensors (final parameters, float64).
"""
import importlib.util
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import st_format  # noqa: E402

_spec = importlib.util.spec_from_file_location("gen_model_golden", os.path.join(HERE, "..", "model", "gen_model_golden.py"))
gen_model_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_model_golden)


def row_values(cfg, W, ids):
    """Value head over every position of one unpadded row: [T]."""
    head_cfg = dict(cfg, tie_word_embeddings=False)
    head_W = dict(W)
    head_W["lm_head.weight"] = W["score.weight"]  # hidden @ score.weight.T: the value head's matrix
    return gen_model_golden.forward(head_cfg, head_W, ids)[:, 0] + W["score.bias"][0]


def response_values(cfg, W, input_ids, attention_mask, P, R):
    """[b, R]: value for response token t from the position just before it; masked positions hold 0."""
    out = []
    for i in range(input_ids.shape[0]):
        valid = attention_mask[i].bool()
        ids = input_ids[i][valid].tolist()
        p = int(attention_mask[i, :P].sum())
        r = int(attention_mask[i, P:].sum())
        v = row_values(cfg, W, ids)
        row = [v[p + t - 1] if t < r else torch.zeros((), dtype=torch.float64) for t in range(R)]
        out.append(torch.stack(row))
    return torch.stack(out)


def agg(L, m, mode, mini_tokens, mini_rows):
    """A micro-batch's share of the mini-batch's aggregate (one data-parallel rank)."""
    if mode == "token-mean":
        return (L * m).sum() / mini_tokens
    if mode == "token-sum":
        return (L * m).sum()
    if mode in ("seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
        seq = (L * m).sum(-1)
        if mode == "seq-mean-token-mean":
            seq = seq / (m.sum(-1) + 1e-8)
        has = (m.sum(-1) > 0).to(L.dtype)
        loss = (seq * has).sum() / mini_rows
        return loss / m.shape[-1] if mode == "seq-mean-token-sum-norm" else loss
    raise SystemExit("unknown loss_agg_mode " + mode)


def value_loss(vpred, returns, old, m, c, mode, mini_tokens, mini_rows):
    vclip = torch.max(torch.min(vpred, old + c), old - c)
    l1 = (vpred - returns) ** 2
    l2 = (vclip - returns) ** 2
    loss = 0.5 * agg(torch.max(l1, l2), m, mode, mini_tokens, mini_rows)
    clipfrac = ((l2 > l1).to(vpred.dtype) * m).sum() / (m.sum() + 1e-8)
    return loss, clipfrac


def lr_lambda(s):
    def f(step):
        warm = s["warmup_steps"]
        if step < warm:
            return step / max(1, warm)
        if s["schedule"] == "constant":
            return 1.0
        total = s["total_steps"]
        progress = (step - warm) / max(1, total - warm)
        lo = s["min_lr_ratio"]
        return max(lo, math.cos(math.pi * s["num_cycles"] * 2.0 * progress) * (1 - lo) / 2 + (1 + lo) / 2)
    return f


def build_optimizer(params, s):
    # verl's build_optimizer: torch.optim's class by name; lr and weight_decay, betas for *adam* classes, then the
    # override_optimizer_config arguments, which win.
    name = s.get("optimizer", "AdamW")
    args = {"lr": s["lr"], "weight_decay": s["weight_decay"]}
    if "adam" in name.lower():
        args["betas"] = tuple(s["betas"])
    args.update(s.get("optimizer_kwargs", {}))
    return getattr(torch.optim, name)(params, **args)


def main():
    model_dir, batch_path, settings_path, out_prefix = sys.argv[1:5]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(settings_path) as f:
        s = json.load(f)
    W = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in st_format.read_checkpoint(model_dir).items()
         if k != "lm_head.weight"}
    batch, _ = st_format.read(batch_path)
    P, R = s["prompt_length"], s["response_length"]
    params = [W[k] for k in sorted(W)]
    opt = build_optimizer(params, s)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(s))
    B = batch["input_ids"].shape[0]
    mini, micro = s["mini"], s["micro"]
    calls = []
    for _ in range(s["calls"]):
        lr_used = opt.param_groups[0]["lr"]
        vf_losses, clipfracs, vpred_means, grad_norms = [], [], [], []
        for _epoch in range(s["epochs"]):
            for m0 in range(0, B, mini):
                opt.zero_grad()
                mini_tokens = batch["response_mask"][m0:m0 + mini].to(torch.float64).sum()
                vf_loss_sum = 0.0
                for u0 in range(m0, min(m0 + mini, B), micro):
                    sl = slice(u0, min(u0 + micro, m0 + mini, B))
                    mask = batch["response_mask"][sl].to(torch.float64)
                    vpred = response_values(cfg, W, batch["input_ids"][sl], batch["attention_mask"][sl], P, R)
                    loss, clipfrac = value_loss(vpred, batch["returns"][sl].to(torch.float64),
                                                batch["values"][sl].to(torch.float64), mask, s["cliprange_value"],
                                                s["loss_agg_mode"], mini_tokens, mini)
                    loss.backward()
                    vf_loss_sum += loss.item()
                    clipfracs.append(clipfrac.item())
                    vpred_means.append(((vpred * mask).sum() / (mask.sum() + 1e-8)).item())
                norm = torch.nn.utils.clip_grad_norm_(params, s["grad_clip"])
                if torch.isfinite(norm):
                    opt.step()
                else:
                    opt.zero_grad()
                grad_norms.append(norm.item())
                vf_losses.append(vf_loss_sum)
        sched.step()
        calls.append({"critic/vf_loss": vf_losses, "critic/vf_clipfrac": clipfracs,
                      "critic/vpred_mean": vpred_means, "critic/grad_norm": grad_norms, "critic/lr": [lr_used]})
    with open(out_prefix + ".json", "w") as f:
        json.dump(calls, f)
    st_format.write(out_prefix + ".safetensors", {k: v.detach() for k, v in W.items()})


if __name__ == "__main__":
    main()
