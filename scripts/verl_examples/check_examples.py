#!/usr/bin/env python3
"""Tries the override lists of verl's example scripts on `verl config show`, as a verl user would (PPO scripts on
the PPO trainer's keys; SFT scripts with --config-name sft_trainer / sft_trainer_engine, counted apart).

    python3 scripts/verl_examples/extract_overrides.py --git-dir VERL.git > /tmp/overrides.json
    python3 scripts/verl_examples/check_examples.py /tmp/overrides.json --verl build/verl \
        [--verl-config tests/data/verl/_generated_ppo_trainer.yaml] \
        [--verl-sft-config tests/data/verl/sft_trainer.yaml] \
        [--config-dir CMD_SUBST/examples/sglang_multiturn/config=DIR]   (DIR: that folder of verl's repository)

Scripts for verl's Megatron trainer are left out, unless --megatron, which measures those instead (pass
--verl-config tests/data/verl/_generated_ppo_megatron_trainer.yaml with it). With --verl-config
every override list is first applied to verl's own generated key tree the way Hydra applies it (OmegaConf struct
mode: `a.b=v` needs the key, `+a.b=v` needs it absent; an empty value for a typed key), and verl.cpp errors that
are verl 0.9.1's own run-time refusals are recognised: a list verl itself rejects is counted apart, and so are the
scripts for vision-language models. Prints one line per script (PASS / FAIL with verl.cpp's error / VERL-REJECTS
with the reason / EXCEPT-VLM), the totals and the failures by cause.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys


def verl_rejects(tree_path, args):
    """The first override verl 0.9.1's key tree refuses (Hydra's rule for plain / + / ++ / ~), or None. A
    --config-name file's own keys must be in verl's tree too (its `defaults:` list is ppo_trainer)."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(tree_path)
    config_path = next((a.split("=", 1)[1] for a in args if a.startswith("--config-path=")), None)
    config_name = next((a.split("=", 1)[1] for a in args if a.startswith("--config-name=")), None)
    if config_path and config_name and os.path.exists(os.path.join(config_path, config_name.removesuffix(".yaml") + ".yaml")):
        own = OmegaConf.to_container(OmegaConf.load(os.path.join(config_path, config_name.removesuffix(".yaml") + ".yaml")))
        own.pop("defaults", None)
        own.pop("hydra", None)

        def keys(node, prefix):
            for k, v in node.items():
                path = f"{prefix}.{k}" if prefix else k
                if isinstance(v, dict) and v:
                    yield from keys(v, path)
                else:
                    yield path

        for key in keys(own, ""):
            if not has_key(cfg, key):
                return f"'{key}' of {config_name} is not in verl's config (Hydra: Key '{key}' is not in struct)"
    for arg in args:
        if arg.startswith("--"):
            continue
        key = arg.split("=", 1)[0]
        if key.startswith("~"):
            continue
        plus = len(key) - len(key.lstrip("+"))
        key = key.lstrip("+")
        exists = has_key(cfg, key)
        if plus == 0 and not exists:
            return f"'{key}' is not in verl's config (Hydra: Could not override '{key}'; use '+{key}')"
        if plus == 1 and exists:
            return f"'{key}' is in verl's config already (Hydra: Could not append to config; use '{key}=...')"
        value = arg.split("=", 1)[1] if "=" in arg else None
        default = OmegaConf.select(cfg, key, throw_on_missing=False) if exists else None
        if value == "" and isinstance(default, (bool, int, float)):
            return f"'{key}=' sets an empty string where verl's dataclass wants {type(default).__name__}"
    return None


def has_key(cfg, key):
    from omegaconf import OmegaConf

    node = cfg
    for part in key.split("."):
        if not OmegaConf.is_dict(node) or part not in node.keys():
            return False
        node = node._get_node(part)
    return True


def is_vlm(name, args):
    """Scripts for vision-language models (multimodal inputs: excepted from the count, as the issue says)."""
    if re.search(r"(qwen2_5_vl|qwen3_vl|_vl-|glm41v|minicpmo|geo3k)", name.lower()):
        return True
    return any(a.startswith(("data.image_key=", "actor_rollout_ref.actor.freeze_vision_tower=")) for a in args)


# verl.cpp errors that are verl 0.9.1's own run-time refusals (its engine workers read only the *_per_gpu sizes; its
# fsdp workers assert that the per-device mini-batch divides by the micro-batch, verl/workers/fsdp_workers.py).
VERL_RUNTIME_REJECTS = ["verl 0.9.1 does not convert it to a per-GPU size", "its tool agent loop stops with 'Unknown tool parser: ",
                        "is not divisible by actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
                        "is not divisible by critic.ppo_micro_batch_size_per_gpu"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("overrides", help="JSON from extract_overrides.py")
    p.add_argument("--verl", default="build/verl", help="the verl.cpp binary")
    p.add_argument("--verl-config", help="verl's _generated_ppo_trainer.yaml: count apart what verl itself rejects")
    p.add_argument("--verl-sft-config", help="verl's fsdp_sft_trainer sft_trainer.yaml (tests/data/verl/sft_trainer.yaml): "
                   "count apart what verl itself rejects in its SFT scripts")
    p.add_argument("--config-dir", action="append", default=[],
                   help="SCRIPT_DIR=LOCAL: replace a --config-path ending in SCRIPT_DIR by LOCAL")
    p.add_argument("--json", help="write the per-script results here")
    p.add_argument("--megatron", action="store_true", help="the Megatron trainer's PPO scripts instead of the fsdp ones")
    a = p.parse_args()
    scripts = json.load(open(a.overrides))
    results, causes = {}, collections.Counter()
    for name, entry in sorted(scripts.items()):
        if entry["megatron"] != a.megatron or (a.megatron and entry.get("trainer", "ppo") != "ppo"):
            continue
        trainer = entry.get("trainer", "ppo")
        args = list(entry["args"])
        if trainer != "ppo":  # verl sft's layouts, by the names of verl's SFT configs (verl config show takes them)
            args = ["--config-name=" + ("sft_trainer" if trainer == "sft" else "sft_trainer_engine"), *args]
        for i, arg in enumerate(args):
            for mapping in a.config_dir:
                src, dst = mapping.split("=", 1)
                if arg.startswith("--config-path=") and arg.rstrip("/").endswith(src):
                    args[i] = "--config-path=" + dst
        tree = a.verl_config if trainer == "ppo" else a.verl_sft_config if trainer == "sft" else None
        rejected = verl_rejects(tree, args) if tree else None
        # verl train's own checks of the config too (batch sizes, parallel sizes), for its PPO scripts.
        validate = ["--validate"] if trainer == "ppo" else []
        proc = subprocess.run([a.verl, "config", "show", *validate, *args], capture_output=True, text=True)
        error = ""
        if proc.returncode != 0:
            lines = [l for l in proc.stderr.splitlines() if l.startswith("error")] or proc.stderr.splitlines()[-1:]
            error = lines[0] if lines else f"exit {proc.returncode}"
        if not rejected and any(marker in error for marker in VERL_RUNTIME_REJECTS):
            rejected = "verl 0.9.1's worker stops too: " + error.split("error: [config] ", 1)[-1][:120]
        vlm = is_vlm(name, args)
        status = "VERL-REJECTS" if rejected else "EXCEPT-VLM" if vlm else ("PASS" if proc.returncode == 0 else "FAIL")
        results[name] = {"status": status, "error": error, "verl_rejects": rejected, "passes": not error,
                         "trainer": trainer}
        print(f"{status:13} {name}  {error or ''}{'  [verl: ' + rejected + ']' if rejected else ''}")
        if status == "FAIL":
            causes[re.sub(r"\(from override .*?\)", "", error)[:140]] += 1
    for trainer in ("sft", "sft_engine"):
        mine = [r for r in results.values() if r["trainer"] == trainer]
        if mine:
            print(f"\n{trainer}: {sum(r['status'] == 'PASS' for r in mine)} of "
                  f"{sum(r['status'] in ('PASS', 'FAIL') for r in mine)} pass (counted apart: "
                  f"{sum(r['status'] == 'VERL-REJECTS' for r in mine)} that verl itself rejects, of which "
                  f"{sum(1 for r in mine if r['verl_rejects'] and r['passes'])} pass here anyway; "
                  f"{sum(r['status'] == 'EXCEPT-VLM' for r in mine)} for vision-language models)")
    results_all = results
    results = {k: r for k, r in results_all.items() if r["trainer"] == "ppo"}
    counts = collections.Counter(r["status"] for r in results.values())
    considered = counts["PASS"] + counts["FAIL"]
    kind = "megatron" if a.megatron else "fsdp"
    print(f"\n{counts['PASS']} of {considered} pass ({len(results)} {kind} scripts; counted apart: {counts['VERL-REJECTS']} "
          f"that verl 0.9.1 itself rejects, of which {sum(1 for r in results.values() if r['verl_rejects'] and r['passes'])} "
          f"pass here anyway, and {counts['EXCEPT-VLM']} for vision-language models, of which "
          f"{sum(1 for r in results.values() if r['status'] == 'EXCEPT-VLM' and r['passes'])} pass here anyway)")
    for cause, n in causes.most_common():
        print(f"  {n:3}  {cause}")
    if a.json:
        json.dump(results_all, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
