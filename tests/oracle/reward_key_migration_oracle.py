"""verl 0.9.1's reward-key migration, run live: the reward-model settings verl's trainer reads after it.

usage: reward_key_migration_oracle.py VERL_TRAINER_YAML OVERRIDE...
  prints {"enable": ..., "model_path": ..., "num_workers": ...} (reward.reward_model.enable / model_path and
  reward.num_workers after the migration) as JSON.

VERL_TRAINER_YAML is verl's generated trainer config (its defaults); each OVERRIDE is key=value (or +key=value) as
on verl's command line, its value parsed as YAML. The migration is migrate_legacy_reward_impl of the installed
verl/experimental/reward_loop/reward_loop.py. That module imports Ray, aiohttp and the trainer when it loads, so the
function's own source is taken from the file (ast) and run alone, with omegaconf's open_dict (the only outside
name it uses).
"""
import ast
import importlib.util
import json
import os
import sys

import yaml
from omegaconf import OmegaConf, open_dict


def verls_migration():
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    path = os.path.join(list(spec.submodule_search_locations)[0], "experimental", "reward_loop", "reward_loop.py")
    tree = ast.parse(open(path).read(), path)
    found = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == "migrate_legacy_reward_impl"]
    assert found, "no migrate_legacy_reward_impl in " + path
    namespace = {"open_dict": open_dict}
    exec(compile(ast.Module(body=found, type_ignores=[]), path, "exec"), namespace)
    return namespace["migrate_legacy_reward_impl"]


def main(yaml_path, overrides):
    config = OmegaConf.load(yaml_path)
    OmegaConf.set_struct(config, True)
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        with open_dict(config):
            OmegaConf.update(config, key, yaml.safe_load(value), merge=True)
    config = verls_migration()(config)
    print(json.dumps({"enable": config.reward.reward_model.enable,
                      "model_path": config.reward.reward_model.model_path,
                      "num_workers": config.reward.num_workers}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
