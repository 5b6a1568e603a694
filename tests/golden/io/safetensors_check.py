#!/usr/bin/python3
"""Independent check of verl.cpp's safetensors files (no `safetensors` package in Debian: parsed with
struct/json by tests/golden/st_format.py).

usage: safetensors_check.py read FILE    -> prints {name: {"dtype", "shape", "values": [...floats]}} as JSON
       safetensors_check.py write FILE   -> writes the fixed tensors below (one per dtype)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import st_format  # noqa: E402


def fixed_tensors():
    return {
        "f64": torch.tensor([[1.5, -2.25], [3.0, 1e-300]], dtype=torch.float64),
        "f32": torch.tensor([0.1, -7.5, 3.25e10], dtype=torch.float32),
        "f16": torch.tensor([0.5, -1.0, 65504.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -0.0078125, 3.0e38], dtype=torch.bfloat16),
        "i64": torch.tensor([[-(2 ** 40), 7]], dtype=torch.int64),
        "i32": torch.tensor([-5, 2 ** 30], dtype=torch.int32),
        "i8": torch.tensor([-128, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 17], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True], dtype=torch.bool),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
    }


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        st_format.write(path, fixed_tensors())
        return
    tensors, meta = st_format.read(path)
    out = {"__metadata__": meta}
    for name, t in tensors.items():
        out[name] = {"dtype": st_format.NAMES[t.dtype], "shape": list(t.shape),
                     "values": [float(v) for v in t.to(torch.float64).flatten().tolist()]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
