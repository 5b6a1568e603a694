"""verl 0.9.1's mini-batch order, run live: the rows of each mini-batch its engine workers train on.

usage: mini_batch_order_oracle.py CASES_JSON
  CASES_JSON: [{"rows", "mini_batch", "epochs", "shuffle", "seed"}, ...]; prints, per case, [[row, ...], ...] (every
  epoch's mini-batches in order) as one JSON list.

Calls verl's own make_iterator (verl/utils/tensordict_utils.py, what train_mini_batch iterates with
`seed=data_loader_seed + dp_rank`, `dataloader_kwargs={"shuffle": shuffle}`) on a TensorDict whose one column is
the row index, loaded through tests/golden/algo/verl_oracle.py.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402


def main(cases):
    import torch
    from tensordict import TensorDict

    tensordict_utils = verl_oracle.load_verl("verl.utils.tensordict_utils")
    out = []
    for case in cases:
        data = TensorDict({"row": torch.arange(case["rows"])}, batch_size=[case["rows"]])
        iterator = tensordict_utils.make_iterator(data, mini_batch_size=case["mini_batch"], epochs=case["epochs"],
                                                  seed=case["seed"], dataloader_kwargs={"shuffle": case["shuffle"]})
        out.append([mini["row"].tolist() for mini in iterator])
    print(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
