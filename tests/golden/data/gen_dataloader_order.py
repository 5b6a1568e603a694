#!/usr/bin/python3
"""Reference batch order for verl.cpp's StatefulDataLoader (tests/unit/data/test_dataloader.cpp).

verl builds its train loader as DataLoader(dataset, batch_size, drop_last, sampler=RandomSampler(dataset,
generator=torch.Generator().manual_seed(data.seed))) (SequentialSampler without data.shuffle) and iterates it
once per epoch. This script does exactly that with PyTorch (Debian's python3-torch) over range(n) and records
the dataset indices of every batch for a few epochs.

    /usr/bin/python3 tests/golden/data/gen_dataloader_order.py > tests/data/dataloader_order_reference.json
"""
import json

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler

CASES = [
    # name, dataset size, batch size, shuffle, seed, drop_last, epochs
    ("shuffle_drop_last", 23, 4, True, 5, True, 3),
    ("shuffle_keep_last", 23, 4, True, 5, False, 3),
    ("shuffle_exact", 24, 6, True, 1, True, 2),
    ("sequential", 10, 3, False, 1, False, 2),
]

out = {"torch_version": torch.__version__, "cases": []}
for name, n, batch_size, shuffle, seed, drop_last, epochs in CASES:
    data = list(range(n))
    if shuffle:
        generator = torch.Generator()
        generator.manual_seed(seed)
        sampler = RandomSampler(data, generator=generator)
    else:
        sampler = SequentialSampler(data)
    loader = DataLoader(data, batch_size=batch_size, drop_last=drop_last, sampler=sampler)
    batches = [[[int(i) for i in batch] for batch in loader] for _ in range(epochs)]
    out["cases"].append({"name": name, "size": n, "batch_size": batch_size, "shuffle": shuffle, "seed": seed,
                         "drop_last": drop_last, "epochs": batches})
print(json.dumps(out))
