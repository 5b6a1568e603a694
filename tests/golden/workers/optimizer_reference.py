"""Independent reference for verl.cpp's optimizers: torch.optim built as verl's build_optimizer builds it.

verl (verl/workers/config/optimizer.py): optimizer_cls = getattr(torch.optim, optimizer);
args = {lr, weight_decay} (+ betas when the name contains "adam"), updated with override_optimizer_config.

Usage: optimizer_reference.py SPEC OUT. SPEC (JSON): {"cases": [{"name", "optimizer", "lr", "weight_decay", "betas",
"kwargs"}], "params": [[shape, values]], "steps", "lr_factors": [per step], "grads": [step][param] values or null}.
OUT (JSON): {case name: [final values per parameter]}, all float64.
"""
import json
import sys

import torch


def build(case, params):
    args = {"lr": case["lr"], "weight_decay": case["weight_decay"]}
    if "adam" in case["optimizer"].lower():
        args["betas"] = tuple(case["betas"])
    args.update(case["kwargs"])
    return getattr(torch.optim, case["optimizer"])(params, **args)


def main():
    spec_path, out_path = sys.argv[1:3]
    with open(spec_path) as f:
        spec = json.load(f)
    out = {}
    for case in spec["cases"]:
        params = [torch.tensor(values, dtype=torch.float64).reshape(shape).requires_grad_(True)
                  for shape, values in spec["params"]]
        opt = build(case, params)
        base_lr = opt.param_groups[0]["lr"]
        for step in range(spec["steps"]):
            # The schedule sets the group's lr before each step, as LambdaLR does.
            opt.param_groups[0]["lr"] = base_lr * spec["lr_factors"][step]
            for p, g in zip(params, spec["grads"][step]):
                p.grad = None if g is None else torch.tensor(g, dtype=torch.float64).reshape(p.shape)
            opt.step()
        out[case["name"]] = [p.detach().reshape(-1).tolist() for p in params]
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
