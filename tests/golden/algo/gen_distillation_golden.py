"""Golden numbers for verl.cpp's on-policy distillation loss (src/algo/distillation_loss.cpp), produced by CALLING
verl 0.9.1's own verl/trainer/distillation/losses.py on seeded random inputs in float64:
  - distillation_loss(): every single-sample estimator, as a supervised loss and as a policy gradient, with and
    without loss_max_clamp, under three loss_agg_modes; its value, its gradient w.r.t. the student's log-probs and
    its metrics;
  - forward_kl_topk: verl's verl/trainer/distillation/fsdp/losses.py compute_forward_kl_topk on the student's logits
    and the teacher's top-k, then distillation_loss() on its outputs (as verl's logits processor and policy loss
    chain them); the loss, its gradient w.r.t. the student's logits, the metrics;
  - distillation_ppo_loss(): how the task's PPO loss and the distillation loss combine for each use_task_rewards /
    use_policy_gradient pair. verl's ppo_loss (the task loss) is replaced by a function returning a fixed scalar
    (recorded in the JSON): the numbers under test are the combination's, the distillation loss is verl's own.

verl's new engine feeds the unpadded (packed) layout; the inputs here are packed the way its left_right_2_no_padding
packs them, so no_padding_2_padding gives back the padded [B, R] tensors verl.cpp uses. The aggregation gets the
micro-batch's own token count and row count as its global batch info (dp_size 1), which is how verl.cpp's actor
aggregates per micro-batch.

Run with the test-only Python (scripts/install-deps.sh --test installs verl there):
    .venv/test/bin/python tests/golden/algo/gen_distillation_golden.py
It rewrites tests/golden/algo/distillation_golden.json next to this file. Never edit the JSON by hand.
"""
import json
import math
import os
import sys

import torch
from tensordict import TensorDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verl_oracle  # noqa: E402

losses = verl_oracle.load_verl("verl.trainer.distillation.losses")
fsdp_losses = verl_oracle.load_verl("verl.trainer.distillation.fsdp.losses")
verl_config = verl_oracle.load_verl("verl.workers.config")

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distillation_golden.json")
ESTIMATORS = ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"]
AGG_MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]


def L(t):
    return t.detach().double().tolist() if isinstance(t, torch.Tensor) else t


def metric_value(v):
    if hasattr(v, "aggregate"):
        v = v.aggregate()
    return float(v.item()) if isinstance(v, torch.Tensor) else float(v)


def make_inputs():
    """B rows, left-padded prompts of width P, responses of width R (one response empty, one with a hole)."""
    torch.manual_seed(20261129)
    B, P, R = 6, 4, 7
    prompt_lens = [3, 2, 4, 1, 3, 2]
    response_lens = [7, 5, 3, 0, 6, 2]
    attention = torch.zeros(B, P + R, dtype=torch.int64)
    response_mask = torch.zeros(B, R, dtype=torch.float64)
    for i in range(B):
        attention[i, P - prompt_lens[i]:P] = 1
        attention[i, P:P + response_lens[i]] = 1
        response_mask[i, :response_lens[i]] = 1
    response_mask[4, 2] = 0  # a tool-response token inside the response (multi-turn)
    old_lp = -torch.rand(B, R, dtype=torch.float64) * 3
    lp = old_lp + (torch.rand(B, R, dtype=torch.float64) - 0.5) * 1.0
    lp[0, 1] = old_lp[0, 1] + 1.2  # outside the clip range
    teacher = lp + (torch.rand(B, R, dtype=torch.float64) - 0.5) * 4
    teacher[1, 2] = lp[1, 2] - 30.0  # low_var_kl's clamp and loss_max_clamp
    teacher[2, 0] = lp[2, 0] + 3.0
    is_weights = torch.rand(B, R, dtype=torch.float64) + 0.5
    return dict(B=B, P=P, R=R, prompt_lens=prompt_lens, response_lens=response_lens, attention_mask=attention,
                response_mask=response_mask, old_log_prob=old_lp, log_prob=lp, teacher_log_prob=teacher,
                rollout_is_weights=is_weights)


def pack(x, padded):
    """[B, R, *] response values -> the packed (total_nnz, *) layout whose no_padding_2_padding is `padded`
    (differentiable)."""
    pieces = []
    for i in range(x["B"]):
        n_prompt, n_response = x["prompt_lens"][i], x["response_lens"][i]
        # position t of a sequence holds the log-prob of token t + 1: the prompt's first tokens predict prompt tokens
        row = torch.zeros((n_prompt + n_response,) + tuple(padded.shape[2:]), dtype=padded.dtype)
        row = torch.cat([row[:n_prompt - 1], padded[i, :n_response], row[-1:]]) if n_prompt + n_response > 0 else row
        pieces.append(row)
    return torch.cat(pieces)


def nested(x, packed):
    """The packed (total_nnz, *) layout as verl's jagged nested tensor (one component per sequence)."""
    lengths = [p + r for p, r in zip(x["prompt_lens"], x["response_lens"])]
    offsets = torch.tensor([0] + lengths).cumsum(0)
    return torch.nested.nested_tensor_from_jagged(packed, offsets)


def batch_td(x, with_is_weights):
    B, P = x["B"], x["P"]
    prompts = torch.zeros(B, P, dtype=torch.int64)
    responses = torch.zeros(B, x["R"], dtype=torch.int64)
    d = {
        "prompts": prompts,
        "responses": responses,
        "attention_mask": x["attention_mask"],
        "response_mask": x["response_mask"],
        "old_log_probs": x["old_log_prob"],
        "teacher_logprobs": pack(x, x["teacher_log_prob"]).unsqueeze(-1),
        "dp_size": 1,
        "batch_num_tokens": float(x["response_mask"].sum()),
        "global_batch_size": float(B),
    }
    if with_is_weights:
        d["rollout_is_weights"] = x["rollout_is_weights"]
    return TensorDict(d, batch_size=[])


def actor_config(loss_agg_mode):
    return verl_config.ActorConfig(strategy="fsdp", ppo_micro_batch_size_per_gpu=4, rollout_n=1,
                                   loss_agg_mode=loss_agg_mode)


def distillation_config(**loss):
    loss_cfg = verl_config.DistillationLossConfig(**loss)
    return verl_config.DistillationConfig(enabled=False, distillation_loss=loss_cfg)


def loss_fields(mode, pg, clamp):
    # The yaml's defaults (verl's trainer config), not the dataclass's, except what the case sets.
    return dict(loss_mode=mode, use_policy_gradient=pg, loss_max_clamp=clamp, log_prob_min_clamp=None, topk=32,
                use_task_rewards=True, distillation_loss_coef=1.0, clip_ratio=0.2, clip_ratio_low=0.2,
                clip_ratio_high=0.28)


def distillation_loss_cases(x):
    cases = []
    for mode in ESTIMATORS:
        for pg in (False, True):
            if not pg and mode in ("k1", "kl"):
                continue  # verl refuses k1 as a supervised loss; verl.cpp refuses kl too (its gradient is k1's)
            for clamp in (None, 0.5):
                for agg in AGG_MODES:
                    with_is = pg and agg == "token-mean" and clamp is None
                    fields = loss_fields(mode, pg, clamp)
                    log_prob = x["log_prob"].clone().requires_grad_(True)
                    data = batch_td(x, with_is)
                    out, metrics = losses.distillation_loss(actor_config(agg), distillation_config(**fields),
                                                            {"log_probs": pack(x, log_prob)}, data)
                    (grad,) = torch.autograd.grad(out, log_prob)
                    cases.append({"name": f"{mode}/{'pg' if pg else 'supervised'}/clamp={clamp}/{agg}",
                                  "config": fields, "loss_agg_mode": agg, "rollout_is_weights": with_is,
                                  "loss": float(out), "grad": L(grad),
                                  "metrics": {k: metric_value(v) for k, v in metrics.items()}})
    return cases


TOPK_V, TOPK_K = 11, 4


def make_topk_inputs(x):
    """The student's logits over a vocabulary of TOPK_V at each response position, its sampled tokens, and a teacher
    near it (so the top-k sets overlap partly) as its top-TOPK_K log-probs and ids."""
    torch.manual_seed(20261130)
    B, R, V = x["B"], x["R"], TOPK_V
    logits = torch.randn(B, R, V, dtype=torch.float64) * 2
    responses = torch.randint(0, V, (B, R))
    teacher_logits = 0.6 * logits + torch.randn(B, R, V, dtype=torch.float64) * 1.5
    teacher_logits[1, 1] = torch.linspace(8, -8, V, dtype=torch.float64)  # a peaked teacher: log_prob_min_clamp
    teacher_logits[2, 1] = -logits[2, 1]  # the student's 4 least likely tokens: no overlap at this position
    teacher_log_probs, teacher_ids = torch.log_softmax(teacher_logits, -1).topk(TOPK_K, dim=-1)
    return dict(logits=logits, responses=responses, teacher_top_k_log_probs=teacher_log_probs,
                teacher_top_k_ids=teacher_ids)


def topk_cases(x, t):
    cases = []
    for temperature in (1.0, 0.7):
        for pg in (False, True):
            for min_clamp in (None, -3.0):
                for clamp in (None, 0.5):
                    for agg in AGG_MODES:
                        fields = loss_fields("forward_kl_topk", pg, clamp)
                        fields.update(topk=TOPK_K, log_prob_min_clamp=min_clamp)
                        config = distillation_config(**fields)
                        logits = t["logits"].clone().requires_grad_(True)
                        scaled = logits / temperature  # verl's engine scales the logits before its logits processor
                        outputs = fsdp_losses.compute_forward_kl_topk(
                            student_logits=pack(x, scaled).unsqueeze(0),
                            teacher_topk_log_probs=nested(x, pack(x, t["teacher_top_k_log_probs"])),
                            teacher_topk_ids=nested(x, pack(x, t["teacher_top_k_ids"])),
                            config=config, data_format="thd")
                        model_output = {k: nested(x, v.squeeze(0)) for k, v in outputs.items()}
                        log_prob = torch.log_softmax(scaled, -1).gather(-1, t["responses"].unsqueeze(-1)).squeeze(-1)
                        model_output["log_probs"] = pack(x, log_prob)
                        with_is = pg and agg == "token-mean" and clamp is None
                        out, metrics = losses.distillation_loss(actor_config(agg), config, model_output,
                                                                batch_td(x, with_is))
                        (grad,) = torch.autograd.grad(out, logits)
                        name = f"topk/T={temperature}/{'pg' if pg else 'supervised'}/min={min_clamp}/clamp={clamp}/{agg}"
                        cases.append({"name": name, "config": fields, "temperature": temperature,
                                      "loss_agg_mode": agg, "rollout_is_weights": with_is, "loss": float(out),
                                      "grad": L(grad), "metrics": {k: metric_value(v) for k, v in metrics.items()}})
    return cases


def combination_cases(x):
    """distillation_ppo_loss with the task loss fixed: (use_task_rewards, use_policy_gradient) x coef."""
    task_loss_value = 0.8125
    real_ppo_loss = losses.ppo_loss
    calls = []

    def fixed_ppo_loss(config, model_output, data, dp_group=None):
        calls.append(1)
        return torch.tensor(task_loss_value, dtype=torch.float64), {"actor/pg_loss": task_loss_value}

    losses.ppo_loss = fixed_ppo_loss
    cases = []
    try:
        for use_task_rewards in (True, False):
            for pg in (True, False):
                mode = "k1" if pg else "k3"
                fields = loss_fields(mode, pg, None)
                fields.update(use_task_rewards=use_task_rewards, distillation_loss_coef=0.35)
                calls.clear()
                log_prob = x["log_prob"].clone().requires_grad_(True)
                total, _ = losses.distillation_ppo_loss(actor_config("token-mean"), distillation_config(**fields),
                                                        model_output={"log_probs": pack(x, log_prob)},
                                                        data=batch_td(x, False))
                cases.append({"config": fields, "task_loss": task_loss_value, "task_loss_computed": bool(calls),
                              "total": float(total)})
    finally:
        losses.ppo_loss = real_ppo_loss
    return cases


def main():
    x = make_inputs()
    t = make_topk_inputs(x)
    golden = {
        "generator": "tests/golden/algo/gen_distillation_golden.py",
        "verl_version": verl_oracle.VERL_VERSION,
        "registry": sorted(losses.DISTILLATION_LOSS_REGISTRY.keys()),
        "inputs": {"response_mask": L(x["response_mask"]), "old_log_prob": L(x["old_log_prob"]),
                   "log_prob": L(x["log_prob"]), "teacher_log_prob": L(x["teacher_log_prob"]),
                   "rollout_is_weights": L(x["rollout_is_weights"])},
        "distillation_loss": distillation_loss_cases(x),
        "topk_inputs": {k: L(v) for k, v in t.items()},
        "forward_kl_topk": topk_cases(x, t),
        "combination": combination_cases(x),
    }
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(golden['distillation_loss'])} loss cases, {len(golden['forward_kl_topk'])} top-k cases, "
          f"{len(golden['combination'])} combinations")


if __name__ == "__main__":
    main()
