"""verl's own optimizer and LR schedule code as the oracle for verl.cpp's (verl 0.9.1 under .venv/test, through
tests/golden/algo/verl_oracle.py): verl.workers.config.optimizer.build_optimizer on an FSDPOptimizerConfig, and
verl.utils.torch_functional's get_cosine_schedule_with_warmup / get_constant_schedule_with_warmup.

Usage: optimizer_reference.py SPEC OUT. SPEC (JSON):
  "cases": [{"name", "optimizer", "lr", "weight_decay", "betas", "kwargs"}] (kwargs: override_optimizer_config),
  "params": [[shape, values]], "steps", "lr_factors": [per step], "grads": [step][param] values or null;
  "schedules": [{"name", "type", "warmup", "total", "min_lr_ratio", "num_cycles", "zero_indexed_step", "steps"}].
OUT (JSON): {"cases": {name: [final values per parameter]}, "schedules": {name: [lr factor at steps 0..steps-1]}},
all float64.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "algo"))
import verl_oracle  # noqa: E402

optimizer_config = verl_oracle.load_verl("verl.workers.config.optimizer")
torch_functional = verl_oracle.load_verl("verl.utils.torch_functional")


def run_case(case, spec):
    params = [torch.tensor(values, dtype=torch.float64).reshape(shape).requires_grad_(True)
              for shape, values in spec["params"]]
    config = optimizer_config.FSDPOptimizerConfig(
        lr=case["lr"], weight_decay=case["weight_decay"], betas=tuple(case["betas"]), optimizer=case["optimizer"],
        override_optimizer_config=case["kwargs"] or None)
    opt = optimizer_config.build_optimizer(params, config)
    base_lr = opt.param_groups[0]["lr"]
    for step in range(spec["steps"]):
        # The schedule sets the group's lr before each step, as LambdaLR does.
        opt.param_groups[0]["lr"] = base_lr * spec["lr_factors"][step]
        for p, g in zip(params, spec["grads"][step]):
            p.grad = None if g is None else torch.tensor(g, dtype=torch.float64).reshape(p.shape)
        opt.step()
    return [p.detach().reshape(-1).tolist() for p in params]


def run_schedule(s):
    # LambdaLR over a base LR of 1: the group's lr is the factor. The LR at update k is the one after k steps.
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=1.0)
    if s["type"] == "cosine":
        sched = torch_functional.get_cosine_schedule_with_warmup(
            opt, num_warmup_steps=s["warmup"], num_training_steps=s["total"], min_lr_ratio=s["min_lr_ratio"],
            num_cycles=s["num_cycles"], zero_indexed_step=s["zero_indexed_step"])
    else:
        sched = torch_functional.get_constant_schedule_with_warmup(opt, num_warmup_steps=s["warmup"])
    factors = []
    for _ in range(s["steps"]):
        factors.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return factors


def main():
    spec_path, out_path = sys.argv[1:3]
    with open(spec_path) as f:
        spec = json.load(f)
    out = {"cases": {c["name"]: run_case(c, spec) for c in spec["cases"]},
           "schedules": {s["name"]: run_schedule(s) for s in spec.get("schedules", [])}}
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
