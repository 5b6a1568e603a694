"""Golden numbers for verl.cpp's core_algos / metrics, produced by CALLING verl's own functions (verl 0.9.1,
verl/trainer/ppo/core_algos.py and metric_utils.py) on seeded random inputs, once in float64 and once in float32.
Losses carry their gradient w.r.t. log_prob (torch autograd through verl's function).

Run with the test-only Python (scripts/install-deps.sh --test installs verl there):
    .venv/test/bin/python tests/golden/algo/gen_core_algos_golden.py
It rewrites tests/golden/algo/core_algos_golden.json next to this file. Never edit the JSON by hand.

The JSON also lists verl's registries (ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY, the loss_agg modes), so the
C++ test checks that verl.cpp registers every name verl does.
"""
import dataclasses
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verl_oracle  # noqa: E402

core_algos = verl_oracle.load_verl("verl.trainer.ppo.core_algos")
metric_utils = verl_oracle.load_verl("verl.trainer.ppo.metric_utils")
verl_F = verl_oracle.load_verl("verl.utils.torch_functional")
verl_config = verl_oracle.load_verl("verl.workers.config")
algo_config = verl_oracle.load_verl("verl.trainer.config")
protocol = verl_oracle.load_verl("verl.protocol")
verl_model_utils = verl_oracle.load_verl("verl.utils.model")

FORMAT_VERSION = 2
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_algos_golden.json")
AGG_MODES = ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
# The actor keys every policy-loss case uses (the C++ test reads them from the JSON).
ACTOR_KEYS = {"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": 3.0, "tau_pos": 1.0,
              "tau_neg": 1.05}
CLIP_COV_SEED = 1234  # torch.manual_seed before clip_cov (it samples the clipped tokens with torch.randperm)


def L(t):
    if isinstance(t, torch.Tensor):
        return t.detach().double().tolist()
    return t


def actor_config(**policy_loss):
    """verl's ActorConfig as the trainer builds it (its yaml defaults), with policy_loss keys overridden."""
    pl = verl_config.PolicyLossConfig(**policy_loss)
    return verl_config.ActorConfig(strategy="fsdp", ppo_micro_batch_size_per_gpu=4, rollout_n=1, policy_loss=pl,
                                   **ACTOR_KEYS)


def make_inputs():
    """The shared inputs, float64. Group sizes 4, 3, 1, 2, 2; lengths include 0 and 1 and two multi-turn holes."""
    torch.manual_seed(20260122)
    rng = np.random.RandomState(7)
    B, R, V = 12, 7, 11
    lengths = [7, 5, 3, 1, 7, 6, 0, 4, 2, 7, 5, 3]
    m = torch.zeros(B, R, dtype=torch.float64)
    for i, n in enumerate(lengths):
        m[i, :n] = 1
    m[4, 2] = 0  # multi-turn holes
    m[9, 3:5] = 0
    uid_pool = ["g0"] * 4 + ["g1"] * 3 + ["g2"] + ["g3"] * 2 + ["g4"] * 2
    uids = [uid_pool[i] for i in rng.permutation(B)]
    f64 = dict(dtype=torch.float64)
    rewards = torch.randn(B, R, **f64) * 0.3 * m
    for i, n in enumerate(lengths):
        if n > 0:
            rewards[i, n - 1] += float(rng.randint(0, 2))
    rewards[1] = 0.0  # a zero outcome score (GPG's nonzero count)
    values = torch.randn(B, R, **f64)
    baselines = torch.randn(B, **f64)
    old_lp = -torch.rand(B, R, **f64) * 3
    lp = old_lp + (torch.rand(B, R, **f64) - 0.5) * 1.2
    lp[0, 1] = old_lp[0, 1] + 1.5
    lp[3, 0] = old_lp[3, 0] - 1.0
    adv = torch.randn(B, R, **f64)
    adv[0, 1] = -0.8
    ref_lp = lp + (torch.rand(B, R, **f64) - 0.5) * 2
    ref_lp[2, 2] = lp[2, 2] + 25.0  # low_var_kl clamps
    vpreds = values + torch.randn(B, R, **f64)
    returns = torch.randn(B, R, **f64)
    is_w = torch.rand(B, R, **f64) + 0.5
    kl_w = torch.rand(B, R, **f64)
    logits = torch.randn(B, R, V, **f64) * 2
    labels = torch.randint(0, V, (B, R))
    loss_mat = torch.randn(B, R, **f64)
    # clip_cov / kl_cov select tokens by cov = (A - mean A)(logp - mean logp); these advantages put a handful of
    # tokens inside clip_cov's (lb, ub) band and give kl_cov a clear top-k.
    cov_adv = torch.randn(B, R, **f64) * 3
    # GDPO: two reward components per response (what compute_score's dict returns), float as verl reads them.
    comp_a = [float(rng.randint(0, 2)) for _ in range(B)]
    comp_b = [float(np.round(rng.rand(), 3)) for _ in range(B)]
    return dict(response_mask=m, index=uids, token_level_rewards=rewards, values=values, reward_baselines=baselines,
                old_log_prob=old_lp, log_prob=lp, advantages=adv, ref_log_prob=ref_lp, vpreds=vpreds,
                returns=returns, rollout_is_weights=is_w, kl_weights=kl_w, logits=logits, labels=labels,
                loss_mat=loss_mat, cov_advantages=cov_adv, gdpo_format_reward=comp_a, gdpo_accuracy_reward=comp_b)


def cast(inputs, dtype):
    return {k: (v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
            for k, v in inputs.items()}


# ---- advantage estimators ---------------------------------------------------------------------------------

def advantage_cases(x):
    r, m, uids = x["token_level_rewards"], x["response_mask"], np.array(x["index"], dtype=object)
    # Σπ² from the logits, as the actor computes it with calculate_sum_pi_squared (verl_F).
    sum_pi_sq = verl_F.calculate_sum_pi_squared_from_logits(x["logits"])
    algo = algo_config.AlgoConfig(norm_adv_by_std_in_grpo=True)
    algo_dr = algo_config.AlgoConfig(norm_adv_by_std_in_grpo=False)
    cases = []

    def add(name, estimator, out, **options):
        cases.append({"name": name, "estimator": estimator, "options": options,
                      "advantages": L(out[0]), "returns": L(out[1])})

    fn = core_algos.get_adv_estimator_fn
    add("gae", "gae", fn("gae")(r, x["values"], m, gamma=1.0, lam=1.0), gamma=1.0, lam=1.0)
    add("gae_gamma_lam", "gae", fn("gae")(r, x["values"], m, gamma=0.99, lam=0.95), gamma=0.99, lam=0.95)
    add("grpo", "grpo", fn("grpo")(r.clone(), m, uids, norm_adv_by_std_in_grpo=True))
    add("dr_grpo", "grpo", fn("grpo")(r.clone(), m, uids, norm_adv_by_std_in_grpo=False),
        norm_adv_by_std_in_grpo=False)
    add("grpo_vectorized", "grpo_vectorized", fn("grpo_vectorized")(r, m, uids, norm_adv_by_std_in_grpo=True))
    add("dr_grpo_vectorized", "grpo_vectorized", fn("grpo_vectorized")(r, m, uids, norm_adv_by_std_in_grpo=False),
        norm_adv_by_std_in_grpo=False)
    # grpo_passk needs >= 2 responses per group: the rows of the singleton group are left out of this case.
    keep = [i for i, u in enumerate(x["index"]) if x["index"].count(u) > 1]
    add("grpo_passk", "grpo_passk", fn("grpo_passk")(r[keep], m[keep], uids[keep], config=algo), rows=keep)
    add("grpo_passk_no_std", "grpo_passk", fn("grpo_passk")(r[keep], m[keep], uids[keep], config=algo_dr),
        rows=keep, norm_adv_by_std_in_grpo=False)
    add("rloo", "rloo", fn("rloo")(r, m, uids, config=algo))
    add("rloo_vectorized", "rloo_vectorized", fn("rloo_vectorized")(r, m, uids, config=algo))
    add("reinforce_plus_plus", "reinforce_plus_plus",
        fn("reinforce_plus_plus")(r, m, config=algo_config.AlgoConfig(gamma=1.0)), gamma=1.0)
    add("reinforce_plus_plus_gamma", "reinforce_plus_plus",
        fn("reinforce_plus_plus")(r, m, config=algo_config.AlgoConfig(gamma=0.9)), gamma=0.9)
    add("reinforce_plus_plus_baseline", "reinforce_plus_plus_baseline",
        fn("reinforce_plus_plus_baseline")(r, m, uids, config=algo))
    add("remax", "remax", fn("remax")(r, x["reward_baselines"], m, config=algo))
    add("opo", "opo", fn("opo")(r, m, uids, config=algo))
    add("gpg", "gpg", fn("gpg")(r, m, uids, config=algo))
    for est in ("optimal_token_baseline", "tir_optimal_token_baseline"):
        add(est, est, fn(est)(r, m, uids, old_log_probs=x["old_log_prob"], sum_pi_squared=sum_pi_sq))
        add(est + "_is", est, fn(est)(r, m, uids, old_log_probs=x["old_log_prob"], sum_pi_squared=sum_pi_sq,
                                        rollout_is_weights=x["rollout_is_weights"]), rollout_is_weights=True)
    # GDPO without reward components (the function's fallback: the summed reward as the one component)...
    add("gdpo", "gdpo", fn("gdpo")(r, m, uids))
    # ...and as the trainer calls it: components from the reward's extra info, placed on the last valid token.
    B, R = r.shape
    P = 3
    attention = torch.cat([torch.ones(B, P, dtype=torch.long), m.long()], dim=1)
    batch = {"prompts": torch.zeros(B, P, dtype=torch.long), "attention_mask": attention}
    ntb = {"format_reward": np.array(x["gdpo_format_reward"]), "accuracy_reward": np.array(x["gdpo_accuracy_reward"])}
    for weights in (None, [1.0, 0.5]):
        cfg = algo_config.AlgoConfig(gdpo_reward_keys=["format_reward", "accuracy_reward"],
                                     gdpo_reward_weights=weights)
        add("gdpo_components" + ("_weighted" if weights else ""), "gdpo",
            fn("gdpo")(r, m, uids, config=cfg, non_tensor_batch=ntb, batch=batch),
            gdpo_reward_keys=["format_reward", "accuracy_reward"], gdpo_reward_weights=weights,
            attention_mask=L(attention), prompt_length=P)
    return cases, L(sum_pi_sq)


# ---- policy losses ------------------------------------------------------------------------------------------

def policy_loss_cases(x):
    old, lp0, adv, m, w = x["old_log_prob"], x["log_prob"], x["advantages"], x["response_mask"], x["rollout_is_weights"]
    cases = []

    def run(mode, agg_mode, with_w, advantages, cfg, **extra):
        lp = lp0.clone().requires_grad_(True)
        if mode == "clip_cov":
            torch.manual_seed(CLIP_COV_SEED)
        fn = core_algos.get_policy_loss_fn(mode)
        loss, metrics = fn(old, lp, advantages, m, agg_mode, cfg, w if with_w else None)
        loss.backward()
        case = {"mode": mode, "loss_agg_mode": agg_mode, "rollout_is_weights": with_w,
                "pg_loss": float(loss.detach()), "metrics": {k: float(v) for k, v in metrics.items()},
                "grad_log_prob": L(lp.grad), "dtype": str(loss.dtype)}
        case.update(extra)
        cases.append(case)

    plain = actor_config()
    for mode in ["vanilla", "gspo", "gpg", "cispo", "sapo", "geo_mean", "dppo_tv", "dppo_kl"]:
        for agg_mode in AGG_MODES:
            for with_w in (False, True):
                run(mode, agg_mode, with_w, adv, plain)
    dro = actor_config(dro_beta=0.3)
    for agg_mode in AGG_MODES:
        for with_w in (False, True):
            run("dro", agg_mode, with_w, adv, dro, dro_beta=0.3)
    # clip_cov: clip_cov_ratio 0.1 of ~50 tokens = 5 of the band's candidates, chosen by torch.randperm under a
    # fixed seed; 0.5 takes every candidate (no randomness).
    for ratio in (0.1, 0.5):
        cfg = actor_config(clip_cov_ratio=ratio, clip_cov_lb=0.5, clip_cov_ub=4.0)
        for agg_mode in ("token-mean", "seq-mean-token-mean"):
            for with_w in (False, True):
                run("clip_cov", agg_mode, with_w, x["cov_advantages"], cfg, clip_cov_ratio=ratio, clip_cov_lb=0.5,
                    clip_cov_ub=4.0, advantages_input="cov_advantages", seed=CLIP_COV_SEED)
    for ratio, coef in ((0.1, 0.1), (0.02, 1.0)):
        cfg = actor_config(kl_cov_ratio=ratio, ppo_kl_coef=coef)
        for agg_mode in ("token-mean", "seq-mean-token-sum"):
            for with_w in (False, True):
                run("kl_cov", agg_mode, with_w, x["cov_advantages"], cfg, kl_cov_ratio=ratio, ppo_kl_coef=coef,
                    advantages_input="cov_advantages")
    # bypass_mode: rollout correction (IS weights, rejection) between the current policy and old_log_prob (= the
    # rollout's log-probs in bypass mode), then PPO-clip or REINFORCE; the rollout_is_weights argument is unused.
    for rc in ({"loss_type": "ppo_clip", "rollout_is": None, "rollout_is_threshold": 2.0, "rollout_rs": "token_k1",
                "rollout_rs_threshold": "0.6_1.6"},
               {"loss_type": "reinforce", "rollout_is": "token", "rollout_is_threshold": 1.5, "rollout_rs": None,
                "rollout_rs_threshold": None},
               {"loss_type": "reinforce", "rollout_is": "sequence", "rollout_is_threshold": 4.0,
                "rollout_is_batch_normalize": True, "rollout_rs": "seq_mean_k3", "rollout_rs_threshold": "0.2"}):
        cfg = actor_config(loss_mode="bypass_mode", rollout_correction=dict(rc))
        for agg_mode in ("token-mean", "seq-mean-token-sum"):
            run("bypass_mode", agg_mode, False, adv, cfg,
                rollout_correction={k: (None if v is None else (v if isinstance(v, bool) else str(v)))
                                    for k, v in rc.items()})
    return cases


def value_loss_cases(x):
    cases = []
    for agg_mode in AGG_MODES:
        vp = x["vpreds"].clone().requires_grad_(True)
        loss, clipfrac = core_algos.compute_value_loss(vp, x["returns"], x["values"], x["response_mask"], 0.5,
                                                       loss_agg_mode=agg_mode)
        loss.backward()
        cases.append({"loss_agg_mode": agg_mode, "cliprange_value": 0.5, "vf_loss": float(loss),
                      "vf_clipfrac": float(clipfrac), "grad_vpreds": L(vp.grad)})
    return cases


def kl_cases(x):
    cases = []
    for kind in ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]:
        for k in (kind, kind + "+"):
            lp = x["log_prob"].clone().requires_grad_(True)
            case = {"kind": k}
            try:
                val = core_algos.kl_penalty(lp, x["ref_log_prob"], k)
            except NotImplementedError:
                # verl cannot compute this kind: the C++ test pins verl.cpp's documented meaning instead.
                case["verl_raises"] = "NotImplementedError"
                cases.append(case)
                continue
            (val * x["kl_weights"]).sum().backward()
            case.update({"value": L(val), "grad_weighted_sum": L(lp.grad)})
            cases.append(case)
    return cases


def agg_cases(x):
    cases = []
    for mode in AGG_MODES:
        cases.append({"mode": mode, "options": {},
                      "value": float(core_algos.agg_loss(x["loss_mat"], x["response_mask"], mode))})
    opts = {"dp_size": 4, "batch_num_tokens": 150, "global_batch_size": 40, "loss_scale_factor": 512}
    for mode in AGG_MODES:
        cases.append({"mode": mode, "options": opts,
                      "value": float(core_algos.agg_loss(x["loss_mat"], x["response_mask"], mode, **opts))})
    return cases


def helpers(x):
    m, loss_mat, logits, labels = x["response_mask"], x["loss_mat"], x["logits"], x["labels"]
    ids = torch.randint(0, 6, m.shape, generator=torch.Generator().manual_seed(5))
    return {
        "masked_mean": float(verl_F.masked_mean(loss_mat, m)),
        "masked_mean_rows": L(verl_F.masked_mean(loss_mat, m, axis=-1)),
        "masked_var": float(verl_F.masked_var(loss_mat, m)),
        "masked_whiten": L(verl_F.masked_whiten(loss_mat, m)),
        "entropy_from_logits": L(verl_F.entropy_from_logits(logits)),
        "logprobs_from_logits": L(verl_F.logprobs_from_logits(logits, labels)),
        "sum_pi_squared_from_logits": L(verl_F.calculate_sum_pi_squared_from_logits(logits)),
        "response_ids": L(ids),
        "eos_token": [0, 5],
        "response_mask_from_eos": L(verl_F.get_response_mask(ids, eos_token=[0, 5], dtype=torch.int64)),
        "position_ids": L(verl_model_utils.compute_position_id_with_mask(m.long())),
    }


def section(inputs):
    adv, sum_pi_sq = advantage_cases(inputs)
    return {
        "advantage": adv,
        "policy_loss": policy_loss_cases(inputs),
        "value_loss": value_loss_cases(inputs),
        "kl_penalty": kl_cases(inputs),
        "agg_loss": agg_cases(inputs),
        "helpers": helpers(inputs),
        "sum_pi_squared": sum_pi_sq,
    }


# ---- metrics (metric_utils) ----------------------------------------------------------------------------------

def flatten_validation(per_source):
    """ray_trainer._validate's naming of process_validation_metrics' result (val-core / val-aux)."""
    flat = {}
    for src, by_var in per_source.items():
        core_var = "acc" if "acc" in by_var else "reward"
        for var, metrics in by_var.items():
            n_max = max(int(name.split("@")[-1].split("/")[0]) for name in metrics)
            for name, val in metrics.items():
                is_core = (var == core_var and any(name.startswith(p) for p in ("mean", "maj", "best"))
                           and f"@{n_max}" in name)
                flat[f"{'val-core' if is_core else 'val-aux'}/{src}/{var}/{name}"] = float(val)
    return flat


def validation_section(rng):
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
    out = {}
    for name, inf in (("validation", infos), ("validation_no_pred", {"reward": infos["reward"]})):
        metrics = metric_utils.process_validation_metrics(sources, vuids, inf, seed=42)
        out[name] = {"data_sources": sources, "uids": vuids, "infos": inf, "metrics": flatten_validation(metrics)}
    return out


def data_metrics_section(x):
    m = x["response_mask"]
    B, R = m.shape
    P = 4
    g = torch.Generator().manual_seed(11)
    attn = torch.cat([(torch.rand(B, P, generator=g) > 0.3).double(), m], dim=1)
    attn[0, :P] = 1
    scores = x["token_level_rewards"]
    rewards = scores - 0.01 * m
    batch = protocol.DataProto.from_dict(tensors={
        "prompts": torch.zeros(B, P, dtype=torch.long), "responses": torch.zeros(B, R, dtype=torch.long),
        "attention_mask": attn, "response_mask": m, "token_level_scores": scores, "token_level_rewards": rewards,
        "advantages": x["advantages"], "returns": x["returns"], "values": x["values"]})
    metrics = metric_utils.compute_data_metrics(batch, use_critic=True)
    return {"attention_mask": L(attn), "token_level_scores": L(scores), "token_level_rewards": L(rewards),
            "metrics": {k: float(v) for k, v in metrics.items()}}


def variance_proxy_section(x):
    """verl 0.9.1's compute_variance_proxy_metrics (with and without IS weights and a grad norm, float64 and float32),
    sum_pi_squared from the shared logits; and GDPO's per-component metrics as verl's trainer computes them inline
    (ray_trainer.fit: np.asarray(values, float32), then np.mean / np.std / np.max / np.min)."""
    pi = torch.softmax(x["logits"], dim=-1)
    sum_pi_sq = (pi * pi).sum(-1)
    cases = []
    for dtype_name, dtype in (("float64", torch.float64), ("float32", torch.float32)):
        for with_is in (False, True):
            for grad_norm in (None, 0.7):
                tensors = {"sum_pi_squared": sum_pi_sq.to(dtype), "old_log_probs": x["old_log_prob"].to(dtype),
                           "advantages": x["advantages"].to(dtype), "response_mask": x["response_mask"].to(dtype)}
                if with_is:
                    tensors["rollout_is_weights"] = x["rollout_is_weights"].to(dtype)
                batch = protocol.DataProto.from_dict(tensors=tensors)
                metrics = metric_utils.compute_variance_proxy_metrics(batch, gradient_norm=grad_norm)
                cases.append({"dtype": dtype_name, "with_is": with_is, "gradient_norm": grad_norm,
                              "metrics": {k: float(v) for k, v in metrics.items()}})
    components = {}
    for key in ("gdpo_format_reward", "gdpo_accuracy_reward"):
        vals = np.asarray(x[key], dtype=np.float32)
        components[key] = {"values": x[key], "mean": float(np.mean(vals)), "std": float(np.std(vals)),
                           "max": float(np.max(vals)), "min": float(np.min(vals))}
    return {"sum_pi_squared": L(sum_pi_sq), "cases": cases, "gdpo_components": components}


def main():
    inputs64 = make_inputs()
    golden = {
        "format_version": FORMAT_VERSION,
        "generator": "tests/golden/algo/gen_core_algos_golden.py",
        "verl_version": verl_oracle.verl_version(),
        "registries": {
            "adv_estimators": sorted(core_algos.ADV_ESTIMATOR_REGISTRY),
            "policy_losses": sorted(core_algos.POLICY_LOSS_REGISTRY),
            "loss_agg_modes": AGG_MODES,
        },
        # float64: verl.cpp and verl run the same operations in double; float32: the same inputs cast to float32,
        # relative 1e-6 (a few float32 ulps: summation order may differ).
        "tolerance": {"float64": {"abs": 1e-9, "rel": 1e-9}, "float32": {"abs": 1e-6, "rel": 1e-6}},
        "inputs": {k: L(v) for k, v in inputs64.items()},
        "actor_config": ACTOR_KEYS,
        "clip_cov_seed": CLIP_COV_SEED,
        "float64": section(inputs64),
        "float32": section(cast(inputs64, torch.float32)),
    }
    # verl's AdaptiveKLController over a few batches (algorithm.kl_ctrl.type=adaptive).
    ctrl = core_algos.AdaptiveKLController(init_kl_coef=0.05, target_kl=0.1, horizon=100)
    kls, values = [0.05, 0.3, 0.1, 0.0, 0.12, 0.5], []
    for kl in kls:
        ctrl.update(current_kl=kl, n_steps=16)
        values.append(float(ctrl.value))
    golden["adaptive_kl_controller"] = {"init_kl_coef": 0.05, "target_kl": 0.1, "horizon": 100, "n_steps": 16,
                                        "current_kl": kls, "values": values}
    golden.update(validation_section(np.random.RandomState(8)))
    golden["data_metrics"] = data_metrics_section(inputs64)
    golden["variance_proxy"] = variance_proxy_section(inputs64)
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
