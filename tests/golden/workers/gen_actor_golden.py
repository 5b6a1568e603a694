#!/usr/bin/python3
"""Reference PPO actor updates for a tiny model made by `verl model init`.

usage: gen_actor_golden.py MODEL_DIR SPEC_JSON OUTPUT.safetensors

An independent float64 implementation of verl's actor side, written from the spec
(/work/shared/reference/verl-ppo-spec.md §3.3-3.5, §3.7, §4.2-4.3), not from the C++ code:
  * the forward is tests/golden/model/gen_model_golden.py's plain-PyTorch HF decoder, run per row on the
    row's valid tokens only (no padding), so the C++ side's padded batch, masks and positions are checked too;
  * log-probs of response token t are read from the logits at the position before it, divided by the
    temperature; entropy is that of softmax(logits / T);
  * update_policy: contiguous mini-batches, the ratio against the batch's old_log_probs (verl 0.9.1's engine has
    no on-policy shortcut), vanilla PPO clip with dual clip, token-mean
    aggregation against the whole mini-batch (verl 0.9.1's engine: each micro-batch's sum over its tokens divided
    by the mini-batch's token count, so the micro-batches' losses add up to the mini-batch's token-mean), entropy
    bonus, low_var_kl KL loss, torch.nn.utils.clip_grad_norm_, skip on a non-finite norm, torch.optim.AdamW
    (eps 1e-8). Metrics as verl 0.9.1's engine aggregates them: the losses summed over a mini-batch's
    micro-batches, pg_clipfrac / ppo_kl / pg_clipfrac_lower averaged over them, one number per mini-batch.

SPEC_JSON: {input_ids, attention_mask, response_mask, advantages, delta: B x (P+R) / B x R lists,
            prompt_length, temperature, updates, config: {ppo_mini_batch_size, ppo_micro_batch_size_per_gpu,
            ppo_epochs, clip_ratio_low, clip_ratio_high, clip_ratio_c, entropy_coeff, use_kl_loss,
            kl_loss_coef, grad_clip, lr, weight_decay, betas}}
The batch of every update holds old_log_probs = logp_0 + delta and ref_log_prob = logp_0, where logp_0 are
the initial policy's log-probs (written as old_log_probs0 together with entropy0).
Output: old_log_probs0, entropy0 [B,R]; per update k (1-based), one number per mini-batch: u{k}.pg_loss,
u{k}.kl_loss, u{k}.entropy_loss, u{k}.pg_clipfrac, u{k}.ppo_kl, u{k}.pg_clipfrac_lower, u{k}.grad_norm; final
parameters as param.<name>. All float64.
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import st_format  # noqa: E402
from gen_model_golden import forward  # noqa: E402


def row_log_probs(cfg, W, ids, amask, P, R, temperature):
    """log-probs and entropies [R] of one row (zeros past its valid response)."""
    valid = [int(t) for t, m in zip(ids, amask) if m]
    prompt_len = int(sum(amask[:P]))
    resp_len = len(valid) - prompt_len
    logits = forward(cfg, W, valid) / temperature
    lp = torch.zeros(R, dtype=torch.float64)
    ent = torch.zeros(R, dtype=torch.float64)
    lps, ents = [], []
    for t in range(resp_len):
        z = logits[prompt_len + t - 1]
        logsm = torch.log_softmax(z, -1)
        lps.append(logsm[valid[prompt_len + t]])
        ents.append(-(logsm.exp() * logsm).sum())
    if resp_len:
        lp = torch.cat([torch.stack(lps), torch.zeros(R - resp_len, dtype=torch.float64)])
        ent = torch.cat([torch.stack(ents), torch.zeros(R - resp_len, dtype=torch.float64)])
    return lp, ent


def batch_log_probs(cfg, W, spec, rows, P, R, T):
    lps, ents = [], []
    for i in rows:
        lp, ent = row_log_probs(cfg, W, spec["input_ids"][i], spec["attention_mask"][i], P, R, T)
        lps.append(lp)
        ents.append(ent)
    return torch.stack(lps), torch.stack(ents)


def masked_mean(v, m):
    return (v * m).sum() / (m.sum() + 1e-8)


def token_share(v, m, mini_tokens):
    """A micro-batch's part of the mini-batch's token-mean."""
    return (v * m).sum() / mini_tokens


def main():
    model_dir, spec_path, out_path = sys.argv[1:4]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(spec_path) as f:
        spec = json.load(f)
    c = spec["config"]
    W = {k: v.to(torch.float64).clone().requires_grad_(True) for k, v in st_format.read_checkpoint(model_dir).items()}
    if cfg.get("tie_word_embeddings"):
        raise SystemExit("tied embeddings are not supported by this reference")
    params = [W[k] for k in sorted(W)]
    opt = torch.optim.AdamW(params, lr=c["lr"], betas=tuple(c["betas"]), eps=1e-8, weight_decay=c["weight_decay"])

    P = spec["prompt_length"]
    T = spec["temperature"]
    am = torch.tensor(spec["attention_mask"], dtype=torch.float64)
    R = am.shape[1] - P
    B = am.shape[0]
    m_all = torch.tensor(spec["response_mask"], dtype=torch.float64)
    A_all = torch.tensor(spec["advantages"], dtype=torch.float64)
    delta = torch.tensor(spec["delta"], dtype=torch.float64)

    out = {}
    with torch.no_grad():
        lp0, ent0 = batch_log_probs(cfg, W, spec, range(B), P, R, T)
    out["old_log_probs0"] = lp0 * m_all
    out["entropy0"] = ent0 * m_all
    old_all = lp0 + delta
    ref_all = lp0

    mini = c["ppo_mini_batch_size"]
    micro = c["ppo_micro_batch_size_per_gpu"]
    lo, hi, cc = c["clip_ratio_low"], c["clip_ratio_high"], c["clip_ratio_c"]
    minis = [list(range(s, min(s + mini, B))) for s in range(0, B, mini)]
    calc_entropy = c["entropy_coeff"] != 0

    for k in range(1, spec["updates"] + 1):
        lists = {name: [] for name in ("pg_loss", "kl_loss", "entropy_loss", "pg_clipfrac", "ppo_kl",
                                       "pg_clipfrac_lower", "grad_norm")}
        for _ in range(c["ppo_epochs"]):
            for rows in minis:
                opt.zero_grad()
                mini_tokens = m_all[rows].sum()
                sums = {"pg_loss": 0.0, "kl_loss": 0.0, "entropy_loss": 0.0}
                means = {"pg_clipfrac": [], "ppo_kl": [], "pg_clipfrac_lower": []}
                for s in range(0, len(rows), micro):
                    mrows = rows[s:s + micro]
                    logp, ent = batch_log_probs(cfg, W, spec, mrows, P, R, T)
                    m = m_all[mrows]
                    A = A_all[mrows]
                    old = old_all[mrows]
                    neg = torch.clamp(logp - old, -20.0, 20.0)
                    ratio = torch.exp(neg)
                    ppo_kl = masked_mean(-neg, m)
                    l1 = -A * ratio
                    l2 = -A * torch.clamp(ratio, 1 - lo, 1 + hi)
                    lclip = torch.maximum(l1, l2)
                    clipfrac = masked_mean((l2 > l1).double(), m)
                    l3 = -A * cc
                    ldual = torch.minimum(l3, lclip)
                    clipfrac_lower = masked_mean(((lclip > l3) & (A < 0)).double(), m)
                    L = torch.where(A < 0, ldual, lclip)
                    pg_loss = token_share(L, m, mini_tokens)
                    loss = pg_loss
                    if calc_entropy:
                        e = token_share(ent, m, mini_tokens)
                        sums["entropy_loss"] += e.item()
                        loss = loss - c["entropy_coeff"] * e
                    if c["use_kl_loss"]:
                        x = torch.clamp(ref_all[mrows] - logp, -20.0, 20.0)
                        kld = torch.clamp(torch.exp(x) - x - 1, -10.0, 10.0)
                        kl = token_share(kld, m, mini_tokens)
                        loss = loss + c["kl_loss_coef"] * kl
                        sums["kl_loss"] += kl.item()
                    loss.backward()
                    sums["pg_loss"] += pg_loss.item()
                    means["pg_clipfrac"].append(clipfrac.item())
                    means["ppo_kl"].append(ppo_kl.item())
                    means["pg_clipfrac_lower"].append(clipfrac_lower.item())
                gn = torch.nn.utils.clip_grad_norm_(params, max_norm=c["grad_clip"])
                if math.isfinite(gn.item()):
                    opt.step()
                else:
                    opt.zero_grad()
                lists["grad_norm"].append(gn.item())
                for name, value in sums.items():
                    lists[name].append(value)
                for name, values in means.items():
                    lists[name].append(sum(values) / len(values))
        for name, vals in lists.items():
            out["u%d.%s" % (k, name)] = torch.tensor(vals, dtype=torch.float64)
    for name, p in W.items():
        out["param." + name] = p.detach().clone()
    st_format.write(out_path, out)


if __name__ == "__main__":
    main()
