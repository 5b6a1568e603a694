#!/usr/bin/env python3
"""The transformers side of `bench/compare.py`'s log-prob and forward+backward rows: the work of verl's
`compute_log_prob` and of one `update_actor` micro-batch on a B x (P + R) batch, written as a transformers user
would write it.

- log-prob pass: model forward under no_grad with `logits_to_keep = R + 1` (the LM head only where the response's
  log-probs are read, as verl.cpp does), log_softmax, gather of the response tokens (fp32).
- forward+backward: the same forward with gradients, verl's vanilla clipped policy loss (token-mean) against the
  log-prob pass's values with unit advantages, backward, gradient-norm clip 1.0, AdamW step (lr 1e-6).
- --micro-batch-size b (verl's ppo_micro_batch_size_per_gpu / log_prob_micro_batch_size_per_gpu): both passes
  run b sequences at a time; the update accumulates the gradients of B / b micro-batches, each loss scaled by
  b / B as verl does, before the one clip and AdamW step.

Timed with perf_counter around exactly that work; one warm-up of each first; --repeats timed runs; prints one JSON
object (seconds per repeat) on stdout.
"""
import argparse
import json
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--prompt-length", type=int, default=448)
    parser.add_argument("--response-length", type=int, default=64)
    parser.add_argument("--micro-batch-size", type=int, default=0, help="default: the whole batch at once")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32, attn_implementation="sdpa")
    model.train()  # dropout is 0 in Qwen2; train mode as an actor update runs
    B, P, R = args.batch_size, args.prompt_length, args.response_length
    micro = args.micro_batch_size or B
    if micro <= 0 or B % micro != 0:
        raise SystemExit(f"error: --micro-batch-size {micro} must divide --batch-size {B}")
    chunks = [slice(i, i + micro) for i in range(0, B, micro)]
    gen = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(0, model.config.vocab_size - 3, (B, P + R), generator=gen)
    mask = torch.ones_like(ids)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.01)

    def response_log_probs(rows):
        logits = model(input_ids=ids[rows], attention_mask=mask[rows], logits_to_keep=R + 1).logits[:, :-1].float()
        return torch.log_softmax(logits, dim=-1).gather(-1, ids[rows, P:].unsqueeze(-1)).squeeze(-1)

    def log_prob_pass():
        with torch.no_grad():
            return torch.cat([response_log_probs(rows) for rows in chunks])

    old = log_prob_pass()
    advantages = torch.ones(B, R)

    def update():
        for rows in chunks:
            ratio = torch.exp(response_log_probs(rows) - old[rows])
            a = advantages[rows]
            loss = torch.maximum(-a * ratio, -a * ratio.clamp(0.8, 1.2)).mean() * (micro / B)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def timed(fn):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    timed(log_prob_pass), timed(update)  # warm-up
    log_prob = [timed(log_prob_pass) for _ in range(args.repeats)]
    fwd_bwd = [timed(update) for _ in range(args.repeats)]
    print(json.dumps({"engine": f"transformers {transformers.__version__}", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "batch_size": B, "micro_batch_size": micro, "prompt_length": P,
                      "response_length": R, "log_prob_seconds": log_prob, "forward_backward_seconds": fwd_bwd}))


if __name__ == "__main__":
    main()
