"""Golden numbers for verl.cpp's rollout correction (src/algo/rollout_corr.cpp) and PF-PPO reweighting
(src/algo/pf_ppo.cpp), produced by CALLING verl's own functions (verl 0.9.1:
verl/trainer/ppo/rollout_corr_helper.py and core_algos.compute_pf_ppo_reweight_data) on seeded random inputs,
once in float64 and once in float32 (the float32 inputs are the float64 ones rounded; verl computes in float32).

Run with the test-only Python (scripts/install-deps.sh --test installs verl there):
    .venv/test/bin/python tests/golden/algo/gen_rollout_corr_golden.py
It rewrites tests/golden/algo/rollout_corr_golden.json next to this file. Never edit the JSON by hand.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verl_oracle  # noqa: E402

rc = verl_oracle.load_verl("verl.trainer.ppo.rollout_corr_helper")
core_algos = verl_oracle.load_verl("verl.trainer.ppo.core_algos")
protocol = verl_oracle.load_verl("verl.protocol")
debug_metrics = verl_oracle.load_verl("verl.utils.debug.metrics")

FORMAT_VERSION = 1
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rollout_corr_golden.json")
DTYPES = {"float64": torch.float64, "float32": torch.float32}
PF_PPO_SEEDS = [0, 1, 2024]
PF_PPO_DRAWS = 500  # seeds for the measured sampling frequencies


def L(t):
    return t.detach().double().tolist() if isinstance(t, torch.Tensor) else t


def make_inputs():
    """(B, R) = (10, 8); lengths include 0 and 1 and a multi-turn hole; one token and one sequence past the
    +-20 safety bound; the rest small log-ratios around 0 so every threshold both keeps and rejects."""
    torch.manual_seed(20260126)
    B, R = 10, 8
    lengths = [8, 6, 1, 0, 8, 5, 3, 7, 2, 8]
    mask = torch.zeros(B, R, dtype=torch.int64)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    mask[4, 3] = 0  # a hole
    rollout = -torch.rand(B, R, dtype=torch.float64) * 3.0 - 0.05
    log_ratio = torch.randn(B, R, dtype=torch.float64) * 0.6
    log_ratio[1, 2] = 23.0   # past the safety bound, token level
    log_ratio[7, :] = -3.5   # sequence sum -24.5: past the bound at sequence level
    log_ratio[9, :] = 0.02   # nearly on-policy
    old = rollout + log_ratio
    # padding positions hold garbage, as a padded batch may (the mask decides)
    old = torch.where(mask.bool(), old, torch.full_like(old, 7.0))
    rollout = torch.where(mask.bool(), rollout, torch.full_like(rollout, -9.0))
    return old, rollout, mask


IS_CASES = [  # (rollout_is, rollout_is_threshold, batch_normalize)
    ("token", 2.0, False),
    ("token", 1.5, True),
    ("token", "0.5_5.0", False),
    ("token", "0.8_1.25", True),
    ("sequence", 2.0, False),
    ("sequence", 10.0, True),
    ("sequence", "0.5_5.0", False),
    ("sequence", "0.01_100", True),
]

RS_CASES = [  # (rollout_rs, rollout_rs_threshold)
    ("token_k1", "0.5_2.0"),
    ("token_k1", 1.5),
    ("token_k2", 0.1),
    ("token_k3", 0.05),
    ("seq_sum_k1", "0.2_5.0"),
    ("seq_sum_k2", 0.5),
    ("seq_sum_k3", 0.4),
    ("seq_mean_k1", "0.7_1.3"),
    ("seq_mean_k2", 0.08),
    ("seq_mean_k3", 0.06),
    ("seq_max_k2", 0.3),
    ("seq_max_k3", 0.25),
    ("token_k1,seq_mean_k3", "0.5_2.0,0.06"),
    ("seq_max_k2, token_k2 ,seq_max_k2", 0.2),
    ("token_k1,seq_sum_k1", "2.0"),
]

PIPELINE_CASES = [  # RolloutCorrectionOptions
    {"rollout_is": None, "rollout_is_threshold": 2.0, "rollout_is_batch_normalize": False, "rollout_rs": None,
     "rollout_rs_threshold": None},
    {"rollout_is": "token", "rollout_is_threshold": 2.0, "rollout_is_batch_normalize": False, "rollout_rs": None,
     "rollout_rs_threshold": None},
    {"rollout_is": "sequence", "rollout_is_threshold": "0.5_5.0", "rollout_is_batch_normalize": True,
     "rollout_rs": "seq_mean_k1", "rollout_rs_threshold": "0.7_1.3"},
    {"rollout_is": None, "rollout_is_threshold": 2.0, "rollout_is_batch_normalize": False,
     "rollout_rs": "token_k3,seq_max_k2", "rollout_rs_threshold": "0.05,0.3"},
]

# Configurations verl rejects (ValueError / TypeError): verl.cpp must reject them too.
BAD_IS_THRESHOLDS = ["0", "-1", "3_2", "0_2", "abc", "", "1_x"]
BAD_RS = [("token_k4", "1.0"), ("token_k2", "0.1_2"), ("token_k1,token_k2,seq_sum_k3", "1.0,2.0"),
          ("token_k1", "2_1"), ("token_k3", "0"), ("", "1.0"), ("seq_max_k1", "2.0")]


def str_spec(x):
    return x if isinstance(x, str) else repr(float(x))


def main():
    old64, rollout64, mask = make_inputs()
    out = {"format_version": FORMAT_VERSION, "verl_version": verl_oracle.verl_version(),
           "torch_version": torch.__version__, "tolerance": {"float64": 1e-9, "float32": 1e-6},
           "inputs": {"old_log_prob": L(old64), "rollout_log_prob": L(rollout64), "response_mask": L(mask)},
           "by_dtype": {}}
    for name, dtype in DTYPES.items():
        old, rollout = old64.to(dtype), rollout64.to(dtype)
        log_ratio = old - rollout
        cases = {"is": [], "rs": [], "pipeline": []}
        for level, threshold, normalize in IS_CASES:
            w, metrics = rc.compute_rollout_correction_weights(log_ratio, mask, level, threshold, normalize)
            cases["is"].append({"rollout_is": level, "rollout_is_threshold": str_spec(threshold),
                                "batch_normalize": normalize, "weights": L(w), "metrics": metrics})
        for options, threshold in RS_CASES:
            new_mask, metrics = rc.compute_rollout_rejection_mask(log_ratio, mask, options, threshold)
            assert new_mask.dtype == mask.dtype
            cases["rs"].append({"rollout_rs": options, "rollout_rs_threshold": str_spec(threshold),
                                "response_mask": L(new_mask), "metrics": metrics})
        cases["offpolicy"] = rc.compute_offpolicy_metrics(old, rollout, mask)
        for options in PIPELINE_CASES:
            w, new_mask, metrics = rc.compute_rollout_correction_and_rejection_mask(
                old_log_prob=old, rollout_log_prob=rollout, response_mask=mask, **options)
            entry = {"options": {k: (str_spec(v) if k.endswith("threshold") and v is not None else v)
                                 for k, v in options.items()},
                     "response_mask": L(new_mask), "metrics": metrics}
            if w is not None:
                entry["rollout_is_weights"] = L(w.batch["rollout_is_weights"])
            cases["pipeline"].append(entry)
        # calculate_debug_metrics (the trainer's training/rollout_probs_diff_*), on the whole batch and on a
        # batch with a single valid token (std NaN) and none (valid 0, NaN).
        one = torch.zeros_like(mask)
        one[0, 0] = 1
        cases["debug"] = []
        for m in [mask, one, torch.zeros_like(mask)]:
            data = protocol.DataProto.from_dict(tensors={"rollout_log_probs": rollout, "old_log_probs": old,
                                                         "response_mask": m, "responses": torch.zeros_like(m)})
            cases["debug"].append({"response_mask": L(m), "metrics": {
                k: (None if isinstance(v, float) and v != v else float(v))
                for k, v in debug_metrics.calculate_debug_metrics(data).items()}})
        out["by_dtype"][name] = cases

    for spec in BAD_IS_THRESHOLDS:
        try:
            rc._parse_rollout_is_threshold(spec)
        except (ValueError, TypeError):
            continue
        raise AssertionError(f"verl accepted rollout_is_threshold {spec!r}")
    for options, threshold in BAD_RS:
        try:
            rc.compute_rollout_rejection_mask(old64 - rollout64, mask, options, threshold)
        except (ValueError, TypeError):
            continue
        raise AssertionError(f"verl accepted rollout_rs {options!r} / {threshold!r}")
    out["rejected"] = {"rollout_is_threshold": BAD_IS_THRESHOLDS,
                       "rollout_rs": [list(case) for case in BAD_RS]}

    # PF-PPO: scores = sum of token_level_scores per response (float32, as the trainer holds them), ties on
    # the max and the min. The weights are deterministic; the resampling draws torch.multinomial from the
    # default generator, seeded here, so verl.cpp (the same PyTorch kernels, a generator with the same seed)
    # must draw the same rows.
    B, R = 12, 5
    scores_per_row = torch.tensor([1.0, 0.0, -1.0, 1.0, 0.5, -1.0, 0.25, 0.0, 2.0, -0.5, 2.0, 0.75])
    token_level_scores = torch.zeros(B, R, dtype=torch.float32)
    token_level_scores[:, -2] = scores_per_row * 0.75
    token_level_scores[:, 1] = scores_per_row * 0.25
    pf = {"token_level_scores": L(token_level_scores), "cases": [], "frequencies": []}
    for method in ["pow", "max_min", "max_random"]:
        for weight_pow in [2.0, 1.0] if method == "pow" else [2.0]:
            for seed in PF_PPO_SEEDS:
                data = protocol.DataProto.from_dict(
                    tensors={"token_level_scores": token_level_scores, "row": torch.arange(B)},
                    non_tensors={"uid": np.array([f"u{i // 3}" for i in range(B)], dtype=object)},
                    meta_info={"global_token_num": list(range(100, 100 + B)), "temperature": 1.0})
                torch.manual_seed(seed)
                resampled = core_algos.compute_pf_ppo_reweight_data(data, method, weight_pow)
                rows = resampled.batch["row"].tolist()
                assert list(resampled.non_tensor_batch["uid"]) == [f"u{i // 3}" for i in rows]
                assert resampled.meta_info["global_token_num"] == [100 + i for i in rows]
                pf["cases"].append({"reweight_method": method, "weight_pow": weight_pow, "seed": seed,
                                    "rows": rows})
            # verl's sampling distribution, measured: how often each row is drawn over PF_PPO_DRAWS seeds.
            counts = torch.zeros(B, dtype=torch.int64)
            for seed in range(PF_PPO_DRAWS):
                data = protocol.DataProto.from_dict(
                    tensors={"token_level_scores": token_level_scores, "row": torch.arange(B)})
                torch.manual_seed(10_000 + seed)
                counts += torch.bincount(core_algos.compute_pf_ppo_reweight_data(
                    data, method, weight_pow).batch["row"], minlength=B)
            pf["frequencies"].append({"reweight_method": method, "weight_pow": weight_pow,
                                      "draws": PF_PPO_DRAWS * B, "counts": counts.tolist()})
    out["pf_ppo"] = pf

    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
