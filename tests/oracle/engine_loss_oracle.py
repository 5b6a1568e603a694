"""verl 0.9.1's engine losses, run live: ppo_loss and value_loss (verl/workers/utils/losses.py) over the micro-batches
of several data-parallel ranks, called as its engines call them, with the mini-batch's global_batch_info.

usage: engine_loss_oracle.py CASES_JSON_FILE
  CASES: [{"kind": "actor" | "critic", "config": {ActorConfig / CriticConfig fields}, "loss_mode": name (actor),
           "prompt_length": P, "global_batch_size": rows of the mini-batch over all ranks,
           "ranks": [{"response_length": [L_i], "response_mask": [[...]] (B x R), then B x R lists:
                      actor: old_log_prob, log_prob, entropy, advantages, ref_log_prob, [rollout_is_weights]
                      critic: vpreds, values, returns,
                      "micro_batches": [[row, ...], ...]}]}, ...]
  Prints one JSON list, per case: {"ranks": [{"micro": [{"loss": x, "metrics": {key: value}}],
  "grads": {"log_prob" | "entropy" | "vpreds": B x R}}], "aggregated": {key: value}}.

As the engine (workers/engine/fsdp/transformer_impl.py forward_backward_batch and workers/engine_workers.py):
  batch_num_tokens   sum of the mini-batch's response_mask over every rank (its all_reduce over the DP group)
  dp_size            the number of ranks
  global_batch_size  ppo_mini_batch_size x rollout.n (the trainer's _update_actor / _update_critic)
each micro-batch's loss is back-propagated on its own, so a rank's gradients are the sum over its micro-batches.
The model output is what the engine hands the loss: per-token values of the unpadded sequences (prompt then
response), the response's log-probs one position to the left; the gradients are taken on the padded B x R leaves.
"aggregated" is what train_mini_batch and the trainer log for the mini-batch: Metric.aggregate_dp over the ranks
(mean over ranks, then the metric's aggregation over micro-batches), plain numbers averaged, the loss summed over
micro-batches and averaged over ranks (_postprocess_output); keys as the trainer renames them ("actor/" prefix).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "algo"))
import verl_oracle  # noqa: E402


def model_output_values(padded, response_length, prompt_length):
    """(total_nnz,) per-token values of the unpadded sequences, the response's at positions P-1 ... P+L-2."""
    import torch

    parts = []
    for i, length in enumerate(response_length):
        parts += [padded.new_zeros(prompt_length - 1), padded[i, :length], padded.new_zeros(1)]
    return torch.cat(parts)


def micro_batch_data(rank, rows, prompt_length, extra, non_tensor):
    import torch
    from tensordict import TensorDict

    from verl.utils import tensordict_utils as tu

    response_mask = torch.tensor(rank["response_mask"], dtype=torch.float64)[rows]
    b, r = response_mask.shape
    lengths = [rank["response_length"][i] for i in rows]
    attention = torch.zeros(b, prompt_length + r, dtype=torch.int64)
    attention[:, :prompt_length] = 1
    for i, length in enumerate(lengths):
        attention[i, prompt_length:prompt_length + length] = 1
    tensors = {
        "prompts": torch.ones(b, prompt_length, dtype=torch.int64),
        "responses": torch.ones(b, r, dtype=torch.int64),
        "attention_mask": attention,
        "response_mask": response_mask.to(torch.int64),
    }
    for key, column in extra.items():
        tensors[key] = torch.tensor(rank[column], dtype=torch.float64)[rows]
    data = TensorDict(tensors, batch_size=[b])
    tu.assign_non_tensor(data, **non_tensor)
    return data, lengths


def run_case(case):
    import numpy as np
    import torch

    losses = verl_oracle.load_verl("verl.workers.utils.losses")
    from verl.utils.metric import AggregationType, Metric
    from verl.workers.config import ActorConfig, CriticConfig, PolicyLossConfig

    actor = case["kind"] == "actor"
    if actor:
        config = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1,
                             policy_loss=PolicyLossConfig(loss_mode=case["loss_mode"]), **case["config"])
        extra = {"old_log_probs": "old_log_prob", "advantages": "advantages", "ref_log_prob": "ref_log_prob"}
        if "rollout_is_weights" in case["ranks"][0]:
            extra["rollout_is_weights"] = "rollout_is_weights"
        leaves = ["log_prob", "entropy"]
    else:
        config = CriticConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, **case["config"])
        extra = {"values": "values", "returns": "returns"}
        leaves = ["vpreds"]
    P = case["prompt_length"]
    ranks = case["ranks"]
    non_tensor = {
        "dp_size": len(ranks),
        "batch_num_tokens": int(sum(np.sum(rank["response_mask"]) for rank in ranks)),
        "global_batch_size": case["global_batch_size"],
    }

    out_ranks, per_rank_metrics = [], []
    for rank in ranks:
        grads = {name: torch.tensor(rank[name], dtype=torch.float64, requires_grad=True) for name in leaves}
        micro_out, metrics = [], {}
        for rows in rank["micro_batches"]:
            data, lengths = micro_batch_data(rank, rows, P, extra, non_tensor)
            index = torch.tensor(rows)
            if actor:
                model_output = {"log_probs": model_output_values(grads["log_prob"][index], lengths, P),
                                "entropy": model_output_values(grads["entropy"][index], lengths, P)}
                loss, m = losses.ppo_loss(config, model_output, data)
            else:
                model_output = {"values": model_output_values(grads["vpreds"][index], lengths, P)}
                loss, m = losses.value_loss(config, model_output, data)
            loss.backward()
            m = dict(m)
            m["loss"] = Metric(AggregationType.SUM, loss.detach())
            prefix = "actor/" if actor else "critic/"
            m = {(k if k.startswith(prefix) else prefix + k): v for k, v in m.items()}
            micro_out.append({"loss": loss.item(),
                              "metrics": {k: (v.aggregate() if isinstance(v, Metric) else float(v))
                                          for k, v in m.items()}})
            for k, v in m.items():
                if isinstance(v, Metric):
                    metrics.setdefault(k, Metric(v.aggregation)).extend(v)
                else:
                    metrics.setdefault(k, []).append(float(v))
        out_ranks.append({"micro": micro_out, "grads": {k: v.grad.tolist() for k, v in grads.items()}})
        per_rank_metrics.append(metrics)

    aggregated = {}
    for key, first in per_rank_metrics[0].items():
        values = [metrics[key] for metrics in per_rank_metrics]
        if isinstance(first, Metric):
            aggregated[key] = float(Metric.aggregate_dp(values))
        else:
            aggregated[key] = float(np.mean([x for v in values for x in v]))
    return {"ranks": out_ranks, "aggregated": aggregated}


def main(path):
    with open(path) as f:
        cases = json.load(f)
    print(json.dumps([run_case(case) for case in cases]))


if __name__ == "__main__":
    main(sys.argv[1])
