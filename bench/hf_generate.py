#!/usr/bin/env python3
"""The peer for `verl bench generate`: Hugging Face transformers' `generate` on the same model folder, batch,
prompt and response lengths, dtype and device, timed the same way (prefill = a 1-token generate; decode = the
full generate minus the prefill, over batch x (response_length - 1) tokens; best of --repeats).

usage:
  hf_generate.py make-model --preset qwen2.5-0.5b --out DIR [--dtype bf16] [--seed 0]
      writes an HF model folder of a `verl bench` preset's shape with transformers' own random init
  hf_generate.py generate --model-dir DIR [--batches 1,64] [--prompt-length 64] [--response-length 32]
                          [--dtype bf16] [--device cuda] [--greedy] [--repeats 2] [--seed 0] [--json FILE]
                          [--cache-implementation static]

Responses run to full length (min_new_tokens = max_new_tokens), sampling at temperature 1 with top-k and top-p
off (verl's rollout defaults), or greedy. Needs torch and transformers (on the GPU machines they are installed).
"""
import argparse
import json
import sys
import time

# The shapes of src/bench/model_presets.cpp (Qwen2, special ids at the top of the vocabulary).
PRESETS = {
    "qwen2-25m": dict(hidden_size=512, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=2,
                      intermediate_size=1408, vocab_size=8192, tie_word_embeddings=False, rope_theta=10000.0),
    "qwen2.5-0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True, rope_theta=1000000.0),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, vocab_size=256, tie_word_embeddings=False, rope_theta=10000.0),
}


def torch_dtype(name):
    import torch
    return {"fp32": torch.float32, "bf16": torch.bfloat16}[name]


def make_model(args):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    shape = dict(PRESETS[args.preset])
    vocab = shape["vocab_size"]
    config = Qwen2Config(**shape, rms_norm_eps=1e-6, max_position_embeddings=32768, bos_token_id=vocab - 3,
                         eos_token_id=vocab - 2, pad_token_id=vocab - 1, hidden_act="silu")
    torch.manual_seed(args.seed)
    model = Qwen2ForCausalLM(config).to(torch_dtype(args.dtype))
    model.save_pretrained(args.out)
    print(f"wrote {args.preset} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {args.dtype}) "
          f"to {args.out}")


def synchronize(device):
    import torch
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def timed_generate(model, ids, mask, new_tokens, greedy, device, cache_implementation=None):
    synchronize(device)
    start = time.perf_counter()
    extra = {"cache_implementation": cache_implementation} if cache_implementation else {}
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                         do_sample=not greedy, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=0, **extra)
    synchronize(device)
    seconds = time.perf_counter() - start
    assert out.shape[1] == ids.shape[1] + new_tokens, out.shape
    return seconds


def generate(args):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    device = args.device
    dtype = torch_dtype(args.dtype)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=dtype).to(device).eval()
    vocab = model.config.vocab_size
    gpu = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    rows = []
    gen = torch.Generator().manual_seed(args.seed + 1)
    P, R = args.prompt_length, args.response_length
    for B in [int(b) for b in args.batches.split(",")]:
        ids = torch.randint(0, max(1, vocab - 3), (B, P), generator=gen).to(device)
        mask = torch.ones_like(ids)
        cache = args.cache_implementation
        with torch.no_grad():
            timed_generate(model, ids, mask, 2, args.greedy, device, cache)  # warm-up
            if device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(device)
            prefills = [timed_generate(model, ids, mask, 1, args.greedy, device, cache) for _ in range(args.repeats)]
            totals = [timed_generate(model, ids, mask, R, args.greedy, device, cache) for _ in range(args.repeats)]
        peak = torch.cuda.max_memory_allocated(device) if device.startswith("cuda") else 0
        prefill = min(prefills)
        # Each repeat's decode time: its full generate minus the best prefill.
        decodes = [max(t - prefill, 1e-9) for t in totals]
        decode = min(decodes)
        row = {"batch": B, "prompt_length": P, "response_length": R,
               "prefill": {"seconds": prefill, "repeat_seconds": prefills, "tokens": B * P,
                           "tokens_per_s": B * P / prefill},
               "decode": {"seconds": decode, "repeat_seconds": decodes, "tokens": B * (R - 1),
                          "tokens_per_s": B * (R - 1) / decode},
               "peak_memory_bytes": peak}
        rows.append(row)
        print(f"transformers {transformers.__version__} batch {B}: prefill {row['prefill']['tokens_per_s']:.0f} tok/s, "
              f"decode {row['decode']['tokens_per_s']:.0f} tok/s, peak memory {peak / 2**30:.2f} GiB", flush=True)
    record = {"bench": "generate", "engine": f"transformers {transformers.__version__}", "torch": torch.__version__,
              "cache_implementation": args.cache_implementation or "dynamic", "threads": torch.get_num_threads(),
              "device": device, "accelerator": gpu, "dtype": args.dtype, "model": args.model_dir,
              "sampling": "greedy" if args.greedy else "temperature 1", "rows": rows}
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(record) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make-model")
    m.add_argument("--preset", required=True, choices=sorted(PRESETS))
    m.add_argument("--out", required=True)
    m.add_argument("--dtype", default="bf16", choices=["fp32", "bf16"])
    m.add_argument("--seed", type=int, default=0)
    g = sub.add_parser("generate")
    g.add_argument("--model-dir", required=True)
    g.add_argument("--batches", default="1,64")
    g.add_argument("--prompt-length", type=int, default=64)
    g.add_argument("--response-length", type=int, default=32)
    g.add_argument("--dtype", default="bf16", choices=["fp32", "bf16"])
    g.add_argument("--device", default="cuda")
    g.add_argument("--greedy", action="store_true")
    g.add_argument("--repeats", type=int, default=2)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--json")
    g.add_argument("--cache-implementation", choices=["static"], help="transformers' static KV cache (default: dynamic)")
    args = parser.parse_args()
    if args.command == "make-model":
        make_model(args)
    else:
        if args.response_length < 2:
            sys.exit("error: --response-length must be at least 2")
        generate(args)


if __name__ == "__main__":
    main()
