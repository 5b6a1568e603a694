"""verl 0.9.1's own sft_trainer config as the reference for configs/sft_trainer_engine.yaml: the YAML files of the
installed verl package (.venv/test), composed as sft_trainer_engine.yaml's defaults list composes them (model/hf_model,
engine/fsdp, optim/fsdp, profiler/profiler, then the file itself), `_target_` keys left out. Hydra is not installed, so
the groups are merged here with OmegaConf in the list's order; interpolations stay unresolved.

Usage: sft_engine_config_reference.py OUT. OUT (JSON): {dotted key: default value} for every leaf (empty maps and
lists are leaves).
"""
import json
import os
import sys

from omegaconf import OmegaConf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "algo"))
import verl_oracle  # noqa: E402

CONFIG = os.path.join(os.path.dirname(verl_oracle.load_verl("verl.trainer").__file__), "config")


def load(name):
    tree = OmegaConf.to_container(OmegaConf.load(os.path.join(CONFIG, name)), resolve=False)
    tree.pop("defaults", None)
    return tree


def leaves(node, prefix=""):
    for key, value in node.items():
        if key == "_target_":
            continue
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            yield from leaves(value, path)
        else:
            yield path, value


def main():
    own = load("sft_trainer_engine.yaml")
    composed = {"model": load("model/hf_model.yaml"), "engine": load("engine/fsdp.yaml"),
                "optim": load("optim/fsdp.yaml"), "profiler": load("profiler/profiler.yaml")}
    merged = OmegaConf.to_container(OmegaConf.merge(composed, own), resolve=False)
    with open(sys.argv[1], "w") as f:
        json.dump(dict(leaves(merged)), f)


if __name__ == "__main__":
    main()
