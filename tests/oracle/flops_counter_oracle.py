"""verl 0.9.1's MFU estimate, run live: FlopsCounter.estimate_flops and get_device_flops (verl/utils/flops_counter.py).

usage: flops_counter_oracle.py REQUEST_JSON_FILE
  REQUEST: {"models": [{"config": config.json object, "seqlens": [s_i, ...]}, ...], "devices": [name, ...]}
  Prints {"flops": [FLOPs of one forward and backward pass per model], "promised": [FLOP/s per device name, null for
  infinity]}: the model family's estimate (FlopsCounter.estimate_flops's dispatch) with delta_time 1 s gives
  TFLOP/s, here multiplied back to FLOPs.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402


def main(path):
    from transformers import AutoConfig

    flops_counter = verl_oracle.load_verl("verl.utils.flops_counter")
    with open(path) as f:
        request = json.load(f)
    flops = []
    for model in request["models"]:
        fields = dict(model["config"])
        config = AutoConfig.for_model(fields.pop("model_type"), **fields)
        # FlopsCounter.estimate_flops's dispatch, without its get_device_flops() of this (GPU-less) machine.
        estimate = flops_counter.ESTIMATE_FUNC.get(config.model_type, flops_counter._estimate_unknown_flops)
        flops.append(estimate(config, sum(model["seqlens"]), model["seqlens"], 1.0) * 1e12)
    promised = []
    for name in request["devices"]:
        value = flops_counter.get_device_flops(unit="T", device_name=name)
        promised.append(None if math.isinf(value) else value * 1e12)
    print(json.dumps({"flops": flops, "promised": promised}))


if __name__ == "__main__":
    main(sys.argv[1])
