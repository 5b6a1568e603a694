#!/usr/bin/python3
"""The rows each data-parallel rank reads per epoch in verl's SFT trainers (tests/golden/data/
test_distributed_sampler_golden.cpp): torch.utils.data.DistributedSampler(dataset, num_replicas, rank, shuffle,
seed, drop_last=True) after set_epoch(epoch), as fsdp_sft_trainer.py and sft_trainer.py build it, run by PyTorch.

    .venv/test/bin/python tests/golden/data/distributed_sampler_reference.py   (JSON on stdout)
"""
import json

import torch
from torch.utils.data import DistributedSampler

CASES = [
    # dataset size, replicas, shuffle, seed, epochs
    (23, 2, True, 0, 3),
    (24, 4, True, 1, 2),
    (5, 2, False, 0, 1),
    (7, 3, True, 0, 2),
    (1, 2, True, 0, 1),
    (40, 1, True, 3, 2),
]

out = {"torch_version": torch.__version__, "cases": []}
for n, replicas, shuffle, seed, epochs in CASES:
    data = list(range(n))
    ranks = []
    for rank in range(replicas):
        sampler = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed,
                                     drop_last=True)
        per_epoch = []
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            per_epoch.append([int(i) for i in sampler])
        ranks.append(per_epoch)
    out["cases"].append({"size": n, "replicas": replicas, "shuffle": shuffle, "seed": seed, "ranks": ranks})
print(json.dumps(out))
