"""verl 0.9.1's learning-rate schedule under model_engine=megatron, run live: the LR of every training step.

usage: megatron_lr_schedule_oracle.py CASES_JSON
  CASES_JSON: [{"optim": {McoreOptimizerConfig field: value, ...}, "steps": N}, ...]; prints, per case, the LR the
  first N updates use (the optimizer's param_groups[0]["lr"] before each scheduler step) as one JSON list.

Builds verl's own McoreOptimizerConfig from the actor's optim section of verl's megatron tree
(tests/data/verl/_generated_ppo_megatron_trainer.yaml: the YAML defaults a run gets, which are not all the
dataclass's own, e.g. lr_decay_style) updated with the case's fields, and calls verl's get_megatron_optimizer_param_scheduler (what its megatron
engine's _build_lr_scheduler calls), which builds megatron-core's OptimizerParamScheduler over a torch optimizer;
then steps it once per update, as lr_scheduler_step does. Loaded through tests/golden/algo/verl_oracle.py.
"""
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402


def main(cases):
    warnings.simplefilter("ignore")  # megatron-core warns that Apex / Transformer Engine are absent
    import torch

    import yaml

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "data", "verl", "_generated_ppo_megatron_trainer.yaml")) as f:
        defaults = yaml.safe_load(f)["actor_rollout_ref"]["actor"]["optim"]
    defaults.pop("_target_")
    config_module = verl_oracle.load_verl("verl.workers.config")
    optimizer_module = verl_oracle.load_verl("verl.utils.megatron.optimizer")
    out = []
    for case in cases:
        config = config_module.McoreOptimizerConfig(**{**defaults, **case["optim"]})
        optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=config.lr)
        scheduler = optimizer_module.get_megatron_optimizer_param_scheduler(optimizer, config)
        lrs = []
        for _ in range(case["steps"]):
            lrs.append(optimizer.param_groups[0]["lr"])
            scheduler.step(1)
        out.append(lrs)
    print(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
