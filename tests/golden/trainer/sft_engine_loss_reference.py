"""verl's own SFT loss normalization as the oracle for verl.cpp's (verl 0.9.1 under .venv/test, through
tests/golden/algo/verl_oracle.py): verl.workers.utils.losses.sft_loss, called per micro batch the way the FSDP
engine's forward_backward_batch calls it in pad_mode no_padding with one data-parallel rank.

The batch is a TensorDict (verl.utils.tensordict_utils.get_tensordict) holding the loss masks as a jagged nested
tensor, as SFTTensorCollator hands it to the engine. As in forward_backward_batch, batch_num_tokens is
data["loss_mask"].sum() over the whole batch and is assigned with dp_size (=1) as non-tensor data; each micro
batch is tu.index_select_tensor_dict of the batch (what verl's dynamic-batch rearrangement builds), and the model's
log probs arrive as a jagged nested tensor of the micro batch's rows. sft_loss itself rolls the flattened loss mask
left by one token (over the concatenated micro batch, so across row boundaries) before the masked sum.

Usage: sft_engine_loss_reference.py SPEC OUT. SPEC (JSON):
  "rows": [{"log_probs": [float per token], "loss_mask": [int per token]}] (one batch, variable lengths),
  "micro_batches": [[row indices], ...].
OUT (JSON): {"micro_losses": [sft_loss per micro batch], "loss": their sum (the engine's train loss metric sums the
micro-batch losses), "batch_num_tokens": the normalizer}. log probs are float64; loss masks int64, as the dataset
returns them. Nothing is printed to stdout.
"""
import contextlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "algo"))
with contextlib.redirect_stdout(sys.stderr):
    import verl_oracle  # noqa: E402

    losses = verl_oracle.load_verl("verl.workers.utils.losses")
    tu = verl_oracle.load_verl("verl.utils.tensordict_utils")
    dataset_utils = verl_oracle.load_verl("verl.utils.dataset.dataset_utils")


def run(spec):
    rows = spec["rows"]
    loss_masks = [torch.tensor(r["loss_mask"], dtype=torch.int64) for r in rows]
    log_probs = [torch.tensor(r["log_probs"], dtype=torch.float64) for r in rows]
    for lp, lm in zip(log_probs, loss_masks):
        assert lp.shape == lm.shape, "log_probs and loss_mask lengths differ in a row"

    data = tu.get_tensordict(
        tensor_dict={"loss_mask": tu.nested_tensor_from_tensor_list(loss_masks)},
        non_tensor_dict={"pad_mode": dataset_utils.DatasetPadMode.NO_PADDING})
    # forward_backward_batch: the global batch's loss-token count (all-reduced over dp; one rank here) and dp_size.
    batch_num_tokens = data["loss_mask"].sum()
    tu.assign_non_tensor(data, batch_num_tokens=batch_num_tokens.item())
    tu.assign_non_tensor(data, dp_size=1)

    micro_losses = []
    for indices in spec["micro_batches"]:
        micro_batch = tu.index_select_tensor_dict(data, list(indices))
        model_output = {"log_probs": tu.nested_tensor_from_tensor_list([log_probs[i] for i in indices])}
        loss, _ = losses.sft_loss(config=None, model_output=model_output, data=micro_batch)
        micro_losses.append(loss.item())
    return {"micro_losses": micro_losses, "loss": float(sum(micro_losses)),
            "batch_num_tokens": tu.get_non_tensor_data(data, "batch_num_tokens", None)}


def main():
    spec_path, out_path = sys.argv[1:3]
    with open(spec_path) as f:
        spec = json.load(f)
    with contextlib.redirect_stdout(sys.stderr):
        out = run(spec)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
