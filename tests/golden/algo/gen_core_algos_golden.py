#!/usr/bin/python3
"""Golden numbers for verl.cpp's core_algos / metrics, written independently from the reference spec
(/work/shared/reference/verl-ppo-spec.md sections 3 and 10) in plain PyTorch + numpy, float64.

Run with Debian's interpreter (python3-torch, python3-numpy):
    /usr/bin/python3 tests/golden/algo/gen_core_algos_golden.py
It rewrites tests/golden/algo/core_algos_golden.json next to this file. Never edit the JSON by hand.
"""
import json
import math
import os
from collections import defaultdict

import numpy as np
import torch

FORMAT_VERSION = 1
torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_algos_golden.json")


def L(t):
    return t.detach().tolist()


# ---- helpers, from the spec's equations ---------------------------------------------------------------

def msum(v, m, dim=None):
    z = torch.where(m > 0, v, torch.zeros_like(v)) * m
    return z.sum() if dim is None else z.sum(dim)


def mmean(v, m, dim=None):
    return msum(v, m, dim) / ((m.sum() if dim is None else m.sum(dim)) + 1e-8)


def mvar(v, m):
    mu = mmean(v, m)
    var = mmean((v - mu) ** 2, m)
    n = m.sum()
    return var * n / (n - 1)


def mwhiten(v, m):
    return (v - mmean(v, m)) * torch.rsqrt(mvar(v, m) + 1e-8)


def groups(uids):
    out = defaultdict(list)
    for i, u in enumerate(uids):
        out[u].append(i)
    return out


def group_mean0(scores, uids):
    mean = torch.zeros_like(scores)
    for rows in groups(uids).values():
        if len(rows) > 1:
            mean[rows] = scores[rows].mean()
    return mean


# ---- advantage estimators -------------------------------------------------------------------------------

def gae(r, v, m, gamma, lam):
    B, R = r.shape
    nxt = torch.zeros(B)
    last = torch.zeros(B)
    A = torch.zeros(B, R)
    for t in reversed(range(R)):
        delta = r[:, t] + gamma * nxt - v[:, t]
        cur = delta + gamma * lam * last
        nxt = m[:, t] * v[:, t] + (1 - m[:, t]) * nxt
        last = m[:, t] * cur + (1 - m[:, t]) * last
        A[:, t] = last
    ret = A + v
    return mwhiten(A, m), ret


def grpo(r, m, uids, norm):
    s = r.sum(-1)
    a = torch.zeros_like(s)
    for rows in groups(uids).values():
        g = s[rows]
        if len(rows) == 1:
            mu, sd = 0.0, 1.0
        else:
            mu, sd = g.mean(), g.std(unbiased=True)
        a[rows] = (g - mu) / (sd + 1e-6) if norm else g - mu
    A = a[:, None] * m
    return A, A


def rloo(r, m, uids):
    s = r.sum(-1)
    a = s.clone()
    for rows in groups(uids).values():
        n = len(rows)
        if n > 1:
            for i in rows:
                others = [j for j in rows if j != i]
                a[i] = s[i] - s[others].mean()
    A = a[:, None] * m
    return A, A


def rpp(r, m, gamma):
    B, R = r.shape
    G = torch.zeros(B, R)
    run = torch.zeros(B)
    for t in reversed(range(R)):
        run = r[:, t] + gamma * run
        G[:, t] = run
        run = run * m[:, t]
    return mwhiten(G, m) * m, G


def rpp_baseline(r, m, uids):
    s = r.sum(-1)
    a = (s - group_mean0(s, uids))[:, None].repeat(1, r.shape[1]) * m
    A = mwhiten(a, m) * m
    return A, A


def remax(r, base, m):
    rm = r * m
    ret = torch.stack([rm[:, t:].sum(-1) for t in range(r.shape[1])], dim=1)
    return ret - base[:, None] * m, ret


def opo(r, m, uids):
    s = r.sum(-1)
    lens = m.sum(-1)
    b = torch.zeros_like(s)
    for rows in groups(uids).values():
        if len(rows) > 1:
            b[rows] = (lens[rows] * s[rows]).sum() / lens[rows].sum()
    A = (s - b)[:, None] * m
    return A, A


def gpg(r, m, uids):
    s = r.sum(-1)
    alpha = s.shape[0] / max(int((s != 0).sum()), 1)
    A = (alpha * (s - group_mean0(s, uids)))[:, None] * m
    return A, A


# ---- aggregation, losses, KL ----------------------------------------------------------------------------

def agg(Lm, m, mode, dp_size=1.0, batch_num_tokens=None, global_batch_size=None, loss_scale_factor=None):
    if mode == "token-mean":
        n = m.sum() if batch_num_tokens is None else batch_num_tokens
        return msum(Lm, m) / n * dp_size
    if mode in ("seq-mean-token-sum", "seq-mean-token-mean"):
        seq = msum(Lm, m, -1)
        if mode == "seq-mean-token-mean":
            seq = seq / (m.sum(-1) + 1e-8)
        nonempty = (m.sum(-1) > 0).double()
        gbs = nonempty.sum() if global_batch_size is None else global_batch_size
        return (seq * nonempty).sum() / gbs * dp_size
    if mode == "seq-mean-token-sum-norm":
        f = m.shape[-1] if loss_scale_factor is None else loss_scale_factor
        return msum(Lm, m) / f
    raise ValueError(mode)


def policy_loss(mode, old, lp, A, m, agg_mode, lo, hi, c, w):
    if mode == "vanilla":
        nak = torch.clamp(lp - old, -20, 20)
        rho = torch.exp(nak)
        l1 = -A * rho
        l2 = -A * torch.clamp(rho, 1 - lo, 1 + hi)
        lclip = torch.max(l1, l2)
        l3 = -A * c
        loss = torch.where(A < 0, torch.min(l3, lclip), lclip)
        metrics = {"actor/pg_clipfrac": mmean((l2 > l1).double(), m),
                   "actor/ppo_kl": mmean(-nak, m),
                   "actor/pg_clipfrac_lower": mmean(((lclip > l3) & (A < 0)).double(), m)}
    elif mode == "gspo":
        lens = torch.clamp(m.sum(-1), min=1)
        log_s = msum(lp - old, m, -1) / lens
        rho = torch.exp(torch.clamp(lp - lp.detach() + log_s.detach()[:, None], max=10))
        l1 = -A * rho
        l2 = -A * torch.clamp(rho, 1 - lo, 1 + hi)
        loss = torch.max(l1, l2)
        agg_mode = "seq-mean-token-mean"
        metrics = {"actor/pg_clipfrac": mmean((l2 > l1).double(), m),
                   "actor/ppo_kl": mmean(old - lp, m),
                   "actor/pg_clipfrac_lower": torch.tensor(0.0)}
    elif mode == "gpg":
        loss = -lp * A
        metrics = {k: torch.tensor(0.0) for k in ("actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower")}
    elif mode == "cispo":
        nak = torch.clamp(lp - old, -20, 20)
        rho = torch.exp(nak)
        wclip = torch.clamp(rho, 1 - lo, 1 + hi).detach()
        loss = -wclip * A * lp
        metrics = {"actor/pg_clipfrac": mmean(((rho < 1 - lo) | (rho > 1 + hi)).double(), m),
                   "actor/ppo_kl": mmean(-nak, m),
                   "actor/pg_clipfrac_lower": mmean((rho < 1 - lo).double(), m)}
    else:
        raise ValueError(mode)
    if w is not None:
        loss = loss * w
    return agg(loss, m, agg_mode), {k: float(v) for k, v in metrics.items()}


def value_loss(vp, ret, val, m, cr, agg_mode):
    vclip = torch.max(torch.min(vp, val + cr), val - cr)
    l1 = (vp - ret) ** 2
    l2 = (vclip - ret) ** 2
    return 0.5 * agg(torch.max(l1, l2), m, agg_mode), mmean((l2 > l1).double(), m)


def kl_base(lp, ref, kind):
    d = lp - ref
    if kind in ("kl", "k1"):
        return d
    if kind == "abs":
        return d.abs()
    if kind in ("mse", "k2"):
        return 0.5 * d * d
    if kind in ("low_var_kl", "k3"):
        x = torch.clamp(ref - lp, -20, 20)
        return torch.clamp(torch.exp(x) - x - 1, -10, 10)
    raise ValueError(kind)


def kl(lp, ref, kind):
    if kind.endswith("+"):
        k2 = 0.5 * (lp - ref) ** 2
        return k2 - k2.detach() + kl_base(lp, ref, kind[:-1]).detach()
    return kl_base(lp, ref, kind)


# ---- metrics (spec section 10) --------------------------------------------------------------------------

def bootstrap(n_data, n, reduce, seed=42, n_bootstrap=1000):
    np.random.seed(seed)
    vals = []
    for _ in range(n_bootstrap):
        idx = np.random.choice(n_data, size=n, replace=True)
        vals.append(reduce(idx))
    return float(np.mean(vals)), float(np.std(vals))


def majority(idx, vals, preds):
    order, by_pred = [], {}
    for i in idx:
        if preds[i] not in by_pred:
            by_pred[preds[i]] = []
            order.append(preds[i])
        by_pred[preds[i]].append(vals[i])
    best = order[0]
    for p in order[1:]:
        if len(by_pred[p]) > len(by_pred[best]):
            best = p
    return by_pred[best][0]


def validation_metrics(sources, uids, infos):
    per = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    keyed = defaultdict(lambda: defaultdict(list))
    for i, (src, uid) in enumerate(zip(sources, uids)):
        keyed[src][uid].append(i)
    for src, by_uid in keyed.items():
        for uid, rows in by_uid.items():
            for var, allv in infos.items():
                if isinstance(allv[rows[0]], str):
                    continue
                vals = [float(allv[r]) for r in rows]
                N = len(vals)
                per[src][var][f"mean@{N}"].append(float(np.mean(vals)))
                if N == 1:
                    continue
                per[src][var][f"std@{N}"].append(float(np.std(vals)))
                ns, n = [], 2
                while n < N:
                    ns.append(n)
                    n *= 2
                ns.append(N)
                for n in ns:
                    bm, bs = bootstrap(N, n, lambda idx: max(vals[i] for i in idx))
                    wm, ws = bootstrap(N, n, lambda idx: min(vals[i] for i in idx))
                    per[src][var][f"best@{n}/mean"].append(bm)
                    per[src][var][f"best@{n}/std"].append(bs)
                    per[src][var][f"worst@{n}/mean"].append(wm)
                    per[src][var][f"worst@{n}/std"].append(ws)
                    if "pred" in infos:
                        preds = [infos["pred"][r] for r in rows]
                        mm, ms = bootstrap(N, n, lambda idx: majority(idx, vals, preds))
                        per[src][var][f"maj@{n}/mean"].append(mm)
                        per[src][var][f"maj@{n}/std"].append(ms)
    flat = {}
    for src, by_var in per.items():
        core = "acc" if "acc" in by_var else "reward"
        for var, metrics in by_var.items():
            n_max = max(int(k.split("@")[-1].split("/")[0]) for k in metrics)
            for name, uid_vals in metrics.items():
                is_core = var == core and name.split("@")[0] in ("mean", "maj", "best") and f"@{n_max}" in name
                flat[f"{'val-core' if is_core else 'val-aux'}/{src}/{var}/{name}"] = float(np.mean(uid_vals))
    return flat


def data_metrics(scores, rewards, adv, ret, values, resp_mask, attn, use_critic):
    R = resp_mask.shape[1]
    P = attn.shape[1] - R
    plen = attn[:, :P].sum(-1)
    rlen = attn[:, P:].sum(-1)
    keep = rlen > 0
    rm = resp_mask > 0
    out = {}

    def mmm(prefix, x):
        out[prefix + "/mean"] = float(x.mean())
        out[prefix + "/max"] = float(x.max())
        out[prefix + "/min"] = float(x.min())

    mmm("critic/score", scores.sum(-1)[keep])
    mmm("critic/rewards", rewards.sum(-1)[keep])
    mmm("critic/advantages", adv[rm])
    mmm("critic/returns", ret[rm])
    if use_critic:
        mmm("critic/values", values[rm])
        out["critic/vf_explained_var"] = float(1 - torch.var(ret[rm] - values[rm]) / (torch.var(ret[rm]) + 1e-5))
    mmm("response_length", rlen)
    out["response_length/clip_ratio"] = float((rlen == R).double().mean())
    mmm("response_length_non_aborted", rlen[keep])
    out["response_length_non_aborted/clip_ratio"] = float((rlen[keep] == R).double().mean())
    out["response/aborted_ratio"] = float((~keep).double().mean())
    mmm("prompt_length", plen)
    out["prompt_length/clip_ratio"] = float((plen == P).double().mean())
    return out


# ---- the cases ------------------------------------------------------------------------------------------

def main():
    torch.manual_seed(20260122)
    rng = np.random.RandomState(7)
    B, R, V = 12, 7, 11
    lengths = [7, 5, 3, 1, 7, 6, 0, 4, 2, 7, 5, 3]
    m = torch.zeros(B, R)
    for i, n in enumerate(lengths):
        m[i, :n] = 1
    m[4, 2] = 0  # multi-turn hole
    m[9, 3:5] = 0
    uid_pool = ["g0"] * 4 + ["g1"] * 3 + ["g2"] + ["g3"] * 2 + ["g4"] * 2
    uids = [uid_pool[i] for i in rng.permutation(B)]

    rewards = torch.randn(B, R) * 0.3 * m
    for i, n in enumerate(lengths):
        if n > 0:
            rewards[i, n - 1] += float(rng.randint(0, 2))
    rewards[1] = 0.0  # zero outcome score (GPG's nonzero count)
    values = torch.randn(B, R)
    baselines = torch.randn(B)
    old_lp = -torch.rand(B, R) * 3
    lp = old_lp + (torch.rand(B, R) - 0.5) * 1.2
    lp[0, 1] = old_lp[0, 1] + 1.5
    lp[3, 0] = old_lp[3, 0] - 1.0
    adv = torch.randn(B, R)
    adv[0, 1] = -0.8
    ref_lp = lp + (torch.rand(B, R) - 0.5) * 2
    ref_lp[2, 2] = lp[2, 2] + 25.0  # low_var_kl clamps
    vpreds = values + torch.randn(B, R)
    returns = torch.randn(B, R)
    is_w = torch.rand(B, R) + 0.5
    kl_w = torch.rand(B, R)
    logits = torch.randn(B, R, V) * 2
    labels = torch.randint(0, V, (B, R))

    golden = {
        "format_version": FORMAT_VERSION,
        "generator": "tests/golden/algo/gen_core_algos_golden.py",
        "tolerance": {"abs": 1e-9, "rel": 1e-9},
        "inputs": {
            "response_mask": L(m), "index": uids, "token_level_rewards": L(rewards), "values": L(values),
            "reward_baselines": L(baselines), "old_log_prob": L(old_lp), "log_prob": L(lp), "advantages": L(adv),
            "ref_log_prob": L(ref_lp), "vpreds": L(vpreds), "returns": L(returns), "rollout_is_weights": L(is_w),
            "kl_weights": L(kl_w), "logits": L(logits), "labels": L(labels),
        },
    }

    adv_cases = []

    def add_adv(name, estimator, out, gamma=1.0, lam=1.0, norm=True):
        adv_cases.append({"name": name, "estimator": estimator, "gamma": gamma, "lam": lam,
                          "norm_adv_by_std_in_grpo": norm, "advantages": L(out[0]), "returns": L(out[1])})

    add_adv("gae", "gae", gae(rewards, values, m, 1.0, 1.0))
    add_adv("gae_gamma_lam", "gae", gae(rewards, values, m, 0.99, 0.95), 0.99, 0.95)
    add_adv("grpo", "grpo", grpo(rewards, m, uids, True))
    add_adv("dr_grpo", "grpo", grpo(rewards, m, uids, False), norm=False)
    add_adv("rloo", "rloo", rloo(rewards, m, uids))
    add_adv("reinforce_plus_plus", "reinforce_plus_plus", rpp(rewards, m, 1.0))
    add_adv("reinforce_plus_plus_gamma", "reinforce_plus_plus", rpp(rewards, m, 0.9), gamma=0.9)
    add_adv("reinforce_plus_plus_baseline", "reinforce_plus_plus_baseline", rpp_baseline(rewards, m, uids))
    add_adv("remax", "remax", remax(rewards, baselines, m))
    add_adv("opo", "opo", opo(rewards, m, uids))
    add_adv("gpg", "gpg", gpg(rewards, m, uids))
    golden["advantage"] = adv_cases

    agg_modes = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
    pl_cases = []
    for mode in ["vanilla", "gspo", "gpg", "cispo"]:
        for agg_mode in agg_modes:
            for with_w in (False, True):
                x = lp.clone().requires_grad_(True)
                loss, metrics = policy_loss(mode, old_lp, x, adv, m, agg_mode, 0.2, 0.28, 3.0,
                                            is_w if with_w else None)
                loss.backward()
                pl_cases.append({"mode": mode, "loss_agg_mode": agg_mode, "rollout_is_weights": with_w,
                                 "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0,
                                 "pg_loss": float(loss), "metrics": metrics, "grad_log_prob": L(x.grad)})
    golden["policy_loss"] = pl_cases

    vl_cases = []
    for agg_mode in agg_modes:
        x = vpreds.clone().requires_grad_(True)
        loss, clipfrac = value_loss(x, returns, values, m, 0.5, agg_mode)
        loss.backward()
        vl_cases.append({"loss_agg_mode": agg_mode, "cliprange_value": 0.5, "vf_loss": float(loss),
                         "vf_clipfrac": float(clipfrac), "grad_vpreds": L(x.grad)})
    golden["value_loss"] = vl_cases

    kl_cases = []
    for kind in ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]:
        for k in (kind, kind + "+"):
            x = lp.clone().requires_grad_(True)
            val = kl(x, ref_lp, k)
            (val * kl_w).sum().backward()
            kl_cases.append({"kind": k, "value": L(val), "grad_weighted_sum": L(x.grad)})
    golden["kl_penalty"] = kl_cases

    loss_mat = torch.randn(B, R)
    golden["inputs"]["loss_mat"] = L(loss_mat)
    agg_cases = []
    for agg_mode in agg_modes:
        agg_cases.append({"mode": agg_mode, "options": {}, "value": float(agg(loss_mat, m, agg_mode))})
    opts = {"dp_size": 4.0, "batch_num_tokens": 150.0, "global_batch_size": 40.0, "loss_scale_factor": 512.0}
    for agg_mode in agg_modes:
        agg_cases.append({"mode": agg_mode, "options": opts, "value": float(agg(loss_mat, m, agg_mode, **opts))})
    golden["agg_loss"] = agg_cases

    ids = torch.randint(0, 6, (B, R))
    golden["helpers"] = {
        "masked_mean": float(mmean(loss_mat, m)),
        "masked_mean_rows": L(mmean(loss_mat, m, -1)),
        "masked_var": float(mvar(loss_mat, m)),
        "masked_whiten": L(mwhiten(loss_mat, m)),
        "entropy_from_logits": L(torch.logsumexp(logits, -1) - (torch.softmax(logits, -1) * logits).sum(-1)),
        "logprobs_from_logits": L(torch.log_softmax(logits, -1).gather(-1, labels[..., None]).squeeze(-1)),
        "response_ids": L(ids),
        "eos_token": [0, 5],
        "response_mask_from_eos": L(((torch.cumsum(torch.isin(ids, torch.tensor([0, 5])).long(), -1)
                                     - torch.isin(ids, torch.tensor([0, 5])).long()) == 0).long()),
        "position_ids": L(torch.clamp(torch.cumsum(m.long(), -1) - 1, min=0)),
    }

    # Validation metrics: two data sources, prompts with 5, 3, 8 and 1 responses.
    sources, vuids, acc, reward, pred = [], [], [], [], []
    for src, uid, n in [("openai/gsm8k", "a", 5), ("openai/gsm8k", "b", 3), ("lighteval/MATH", "c", 8),
                        ("lighteval/MATH", "d", 1), ("openai/gsm8k", "e", 5)]:
        for _ in range(n):
            sources.append(src)
            vuids.append(uid)
            p = int(rng.randint(0, 3))
            pred.append(str(p))
            acc.append(float(p == 1))
            reward.append(float(np.round(rng.randn(), 6)))
    order = rng.permutation(len(sources))  # interleave samples, as batches do
    sources = [sources[i] for i in order]
    vuids = [vuids[i] for i in order]
    infos = {"acc": [acc[i] for i in order], "reward": [reward[i] for i in order], "pred": [pred[i] for i in order]}
    golden["validation"] = {"data_sources": sources, "uids": vuids, "infos": infos,
                            "metrics": validation_metrics(sources, vuids, infos)}
    no_pred = {"reward": infos["reward"]}
    golden["validation_no_pred"] = {"data_sources": sources, "uids": vuids, "infos": no_pred,
                                    "metrics": validation_metrics(sources, vuids, no_pred)}

    # Data metrics on a (B, P + R) attention mask with P = 4.
    P = 4
    attn = torch.cat([(torch.rand(B, P) > 0.3).double(), m], dim=1)
    attn[0, :P] = 1
    golden["data_metrics"] = {
        "attention_mask": L(attn),
        "token_level_scores": L(rewards), "token_level_rewards": L(rewards - 0.01 * m),
        "metrics": data_metrics(rewards, rewards - 0.01 * m, adv, returns, values, m, attn, True),
    }

    with open(OUT, "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
