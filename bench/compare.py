#!/usr/bin/env python3
"""verl.cpp beside the tools a user would otherwise run, the same work one after the other on this machine.

Run through `bench/compare.sh` (it sets up .venv/bench and builds `verl`). Every side loads the same HF model folder
(bench/peers/make_model.py: random-weight Qwen2, transformers' init, a tokenizer of the model's vocabulary), gets
the same prompts, lengths, sampling (temperature 1, no top-k / top-p, responses run to full length), threads
(OMP_NUM_THREADS and torch's intra-op threads) and dtype (fp32 on the CPU). Rows:

  generate B      decode tokens/s, prompt 64 + 128 new tokens, batch B: `verl bench generate` against transformers'
                  `generate` with its dynamic and its static KV cache (bench/hf_generate.py)
  log-prob        one log-prob pass over B x (P + R) = 16 x (448 + 64): `verl bench ppo`'s old_log_prob phase
                  against a transformers forward (bench/peers/hf_forward_backward.py)
  fwd+bwd         one actor update of the same batch (forward, clipped loss, backward, clip, AdamW):
                  `verl bench ppo`'s update_actor phase against the same in transformers; with
                  --train-micro-batch b both sides run b sequences at a time and accumulate gradients
  grpo step       16 prompts x 8 samples, 128 response tokens, one update, no reference model: `verl train`
                  (timing_s/step) against TRL's GRPOTrainer (bench/peers/trl_grpo.py)
  ppo step        the same with a critic and GAE: `verl train`; no peer runs on this machine (see RESULTS.md)

Times: each tool's own timer around exactly the work (warm-up excluded), best and median of --repeats. Peak
memory: the peak resident set of the process that ran the row (getrusage of the child), loading included.
The machine's GEMM peak and memory bandwidth come from `verl bench roofline` in the same run.

Prints one table and appends one JSON Lines record per run to OUT/compare.jsonl.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

REWARD = '''# The comparison's reward, a verl-style compute_score: 1 when the ground-truth number appears in the response.
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if str(ground_truth) in solution_str else 0.0
'''


class Runner:
    """Runs one child process with the shared environment; keeps its output and its peak resident memory."""

    def __init__(self, out, threads, log):
        self.out, self.threads, self.log = out, threads, log
        self.env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                        TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                        TRANSFORMERS_OFFLINE="1", WANDB_DISABLED="true")

    def run(self, name, command):
        log_path = os.path.join(self.out, f"{name}.log")
        self.log(f"compare: {name}: {' '.join(command)}")
        start = time.time()
        with open(log_path, "w") as log:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=self.env, cwd=self.out,
                                     text=True)
            stdout = child.stdout.read()
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
        with open(log_path, "a") as log:
            log.write(stdout)
        if child.returncode != 0:
            raise SystemExit(f"error: {name} failed (exit {child.returncode}); its output is in {log_path}")
        return stdout, usage.ru_maxrss * 1024, time.time() - start  # ru_maxrss is KiB on Linux


def best_median(values, higher=False):
    """The best (the highest rate, or the shortest time) and the median of the repeats."""
    return {"best": max(values) if higher else min(values), "median": statistics.median(values), "n": len(values)}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_prompts(out, corpus, model_dir, count):
    """The GRPO rows' prompts: the first GSM8K questions as chat messages, in verl's parquet and TRL's JSONL."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer
    rows = []
    with open(corpus) as f:
        for line in f:
            if len(rows) == count:
                break
            item = json.loads(line)
            rows.append({"question": item["question"], "answer": item["answer"].split("####")[-1].strip()})
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    longest = 0
    for r in rows:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": r["question"]}], add_generation_prompt=True,
                                            tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        longest = max(longest, len(ids))
    table = pa.table({
        "data_source": ["bench"] * len(rows),
        "prompt": [[{"role": "user", "content": r["question"]}] for r in rows],
        "ability": ["math"] * len(rows),
        "reward_model": [{"style": "rule", "ground_truth": r["answer"]} for r in rows],
        "extra_info": [{"index": i, "split": "train"} for i in range(len(rows))],
    })
    parquet = os.path.join(out, "prompts.parquet")
    pq.write_table(table, parquet)
    jsonl = os.path.join(out, "prompts.jsonl")
    with open(jsonl, "w") as f:
        for r in rows:
            f.write(json.dumps({"prompt": [{"role": "user", "content": r["question"]}], "ground_truth": r["answer"]})
                    + "\n")
    reward = os.path.join(out, "reward.py")
    with open(reward, "w") as f:
        f.write(REWARD)
    return parquet, jsonl, reward, longest


def verl_train_overrides(model_dir, parquet, reward, longest, args, estimator, run_dir):
    steps = 1 + args.repeats  # the first step is the warm-up
    overrides = [
        f"data.train_files={parquet}", f"data.val_files={parquet}",
        f"data.train_batch_size={args.grpo_prompts}", f"data.max_prompt_length={longest}",
        f"data.max_response_length={args.grpo_response_length}", "data.shuffle=false",
        f"actor_rollout_ref.model.path={model_dir}",
        f"actor_rollout_ref.rollout.n={args.grpo_samples}", "actor_rollout_ref.rollout.ignore_eos=true",
        "actor_rollout_ref.rollout.temperature=1.0",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.grpo_prompts}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={args.grpo_prompts}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={args.grpo_prompts}",
        "actor_rollout_ref.actor.ppo_epochs=1", "actor_rollout_ref.actor.use_kl_loss=false",
        "actor_rollout_ref.actor.loss_agg_mode=token-mean", "actor_rollout_ref.actor.optim.lr=1e-6",
        "actor_rollout_ref.actor.entropy_coeff=0",
        "algorithm.use_kl_in_reward=false", f"algorithm.adv_estimator={estimator}",
        f"custom_reward_function.path={reward}",
        f"trainer.total_training_steps={steps}", "trainer.test_freq=-1", "trainer.val_before_train=false",
        "trainer.save_freq=-1", "trainer.logger=[console,jsonl]", f"trainer.default_local_dir={run_dir}",
        "trainer.n_gpus_per_node=1", "trainer.nnodes=1", "trainer.device=cpu",
        f"trainer.num_cpu_threads={args.threads}",
    ]
    if estimator == "gae":
        overrides += [f"critic.model.path={model_dir}", f"critic.ppo_mini_batch_size={args.grpo_prompts}",
                      f"critic.ppo_micro_batch_size_per_gpu={args.grpo_prompts}", "critic.optim.lr=1e-5"]
    return overrides


def train_step_seconds(run_dir):
    steps = [r for r in read_jsonl(os.path.join(run_dir, "metrics.jsonl")) if "timing_s/step" in r]
    return [r["timing_s/step"] for r in steps[1:]]  # the first step is the warm-up


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verl", default=os.path.join(REPO, "build", "verl"))
    parser.add_argument("--out", default=os.path.join(REPO, "bench_compare"))
    parser.add_argument("--corpus", default=os.path.join(REPO, "tests", "fixtures", "gsm8k", "test.jsonl"))
    parser.add_argument("--shape", default="compare-512x8", help="bench/peers/make_model.py's shapes")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", default="generate,logprob,grpo,ppo")
    parser.add_argument("--batches", default="1,8,64")
    parser.add_argument("--prompt-length", type=int, default=64)
    parser.add_argument("--response-length", type=int, default=128)
    parser.add_argument("--train-batch", type=int, default=16, help="log-prob / fwd+bwd rows: sequences")
    parser.add_argument("--train-prompt", type=int, default=448)
    parser.add_argument("--train-response", type=int, default=64)
    parser.add_argument("--train-micro-batch", type=int, default=0,
                        help="log-prob / fwd+bwd rows: sequences per micro-batch on both sides (default: all)")
    parser.add_argument("--grpo-prompts", type=int, default=16)
    parser.add_argument("--grpo-samples", type=int, default=8)
    parser.add_argument("--grpo-response-length", type=int, default=128)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny model, short sequences, 2 repeats (for the test suite)")
    parser.add_argument("--render", metavar="FILE", help="print the table of the last record of a compare.jsonl")
    args = parser.parse_args()
    if args.render:
        record = read_jsonl(args.render)[-1]
        roofline = dict(record["roofline"], machine=record["machine"])
        print(render(record["rows"], roofline, record["versions"], record["model"], record["repeats"],
                     record["threads"], record.get("model_dir", "")))
        return
    if args.quick:
        args.shape, args.repeats, args.batches = "tiny", 2, "1,4"
        args.prompt_length, args.response_length = 8, 8
        args.train_batch, args.train_prompt, args.train_response = 2, 8, 8
        args.grpo_prompts, args.grpo_samples, args.grpo_response_length = 2, 2, 8
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be at least 1")
    if not os.access(args.verl, os.X_OK):
        raise SystemExit(f"error: --verl {args.verl} is not an executable (build it with `make build-verl`)")
    rows = args.rows.split(",")
    unknown = sorted(set(rows) - {"generate", "logprob", "grpo", "ppo"})
    if unknown:
        raise SystemExit(f"error: --rows: unknown {unknown} (expected generate, logprob, grpo, ppo)")
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    py = sys.executable
    runner = Runner(args.out, args.threads, lambda m: print(m, file=sys.stderr, flush=True))

    import torch
    import transformers
    versions = {"verl.cpp": subprocess.run([args.verl, "--version"], capture_output=True,
                                           text=True).stdout.strip().splitlines()[0],
                "transformers": transformers.__version__, "torch": torch.__version__}
    try:
        import trl
        versions["trl"] = trl.__version__
    except ImportError:
        pass

    model_dir = os.path.join(args.out, f"model-{args.shape}")
    if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
        runner.run("make_model", [py, os.path.join(HERE, "peers", "make_model.py"), "--shape", args.shape,
                                  "--out", model_dir, "--corpus", args.corpus])

    roofline_json = os.path.join(args.out, "roofline.jsonl")
    if os.path.exists(roofline_json):
        os.remove(roofline_json)
    runner.run("roofline", [args.verl, "bench", "roofline", "--json", roofline_json]
               + (["--roofline-seconds", "0.2", "--gemm-sizes", "256,512", "--stream-mib", "32"] if args.quick else []))
    roofline = read_jsonl(roofline_json)[-1]  # the roofline record is the measurement itself
    table = []  # (work, metric, verl.cpp value, peer name, peer value, higher_is_better, verl rss, peer rss, extra)

    if "generate" in rows:
        for B in [int(b) for b in args.batches.split(",")]:
            common = ["--model-dir", model_dir, "--batches", str(B), "--prompt-length", str(args.prompt_length),
                      "--response-length", str(args.response_length), "--repeats", str(args.repeats)]
            vj = os.path.join(args.out, f"generate_verl_b{B}.jsonl")
            if os.path.exists(vj):
                os.remove(vj)
            _, vrss, _ = runner.run(f"generate_verl_b{B}", [args.verl, "bench", "generate", *common, "--json", vj]
                                    + (["--roofline-seconds", "0.2", "--gemm-sizes", "256", "--stream-mib", "32"]
                                       if args.quick else []))
            vrow = read_jsonl(vj)[-1]["rows"][0]["decode"]
            for cache in ["dynamic", "static"]:
                hj = os.path.join(args.out, f"generate_hf_{cache}_b{B}.jsonl")
                if os.path.exists(hj):
                    os.remove(hj)
                extra = ["--cache-implementation", "static"] if cache == "static" else []
                _, hrss, _ = runner.run(f"generate_hf_{cache}_b{B}",
                                        [py, os.path.join(HERE, "hf_generate.py"), "generate", *common,
                                         "--device", "cpu", "--dtype", "fp32", "--json", hj, *extra])
                hrow = read_jsonl(hj)[-1]["rows"][0]["decode"]
                table.append(dict(work=f"generate, batch {B}", metric="decode tok/s", higher=True,
                                  verl=[vrow["tokens"] / s for s in vrow["repeat_seconds"]], verl_rss=vrss,
                                  peer=f"transformers generate ({cache} cache)",
                                  peer_values=[hrow["tokens"] / s for s in hrow["repeat_seconds"]], peer_rss=hrss,
                                  bound=vrow.get("bound_tokens_per_s"), timer="each tool's own timer"))

    if "logprob" in rows:
        vj = os.path.join(args.out, "ppo_phases_verl.jsonl")
        micro = args.train_micro_batch or args.train_batch
        if os.path.exists(vj):
            os.remove(vj)
        _, vrss, _ = runner.run("logprob_fwdbwd_verl", [
            args.verl, "bench", "ppo", "--model-dir", model_dir, "--batch-size", str(args.train_batch), "--n", "1",
            "--prompt-length", str(args.train_prompt), "--response-length", str(args.train_response),
            "--micro-batch-size", str(micro), "--repeats", str(args.repeats), "--json", vj]
            + (["--roofline-seconds", "0.2", "--gemm-sizes", "256", "--stream-mib", "32"] if args.quick else [])
            # The actor (and its rollout) alone, as the peer's one model + AdamW: no critic, no reference model.
            + ["algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=false"])
        ppo = read_jsonl(vj)[-1]
        flops = {p["phase"]: p["flops"] for p in ppo["phases"]}
        out, hrss, _ = runner.run("logprob_fwdbwd_hf", [
            py, os.path.join(HERE, "peers", "hf_forward_backward.py"), "--model-dir", model_dir,
            "--batch-size", str(args.train_batch), "--prompt-length", str(args.train_prompt),
            "--response-length", str(args.train_response), "--micro-batch-size", str(micro),
            "--repeats", str(args.repeats), "--threads", str(args.threads)])
        hf = json.loads(out.strip().splitlines()[-1])
        shape = f"{args.train_batch} x ({args.train_prompt} + {args.train_response})"
        if micro != args.train_batch:
            shape += f", micro-batch {micro}"
        for work, phase, key in [("log-prob pass", "old_log_prob", "log_prob_seconds"),
                                 ("forward+backward+AdamW", "update_actor", "forward_backward_seconds")]:
            table.append(dict(work=f"{work}, {shape}", metric="seconds", higher=False,
                              verl=ppo["repeat_seconds"][phase], verl_rss=vrss,
                              peer="transformers forward/backward", peer_values=hf[key], peer_rss=hrss,
                              flops=flops[phase], timer="each tool's own timer (perf_counter around the work)",
                              note="both processes hold one model and its AdamW state (verl.cpp's also runs "
                                   "the rollout that made the responses)"))

    if "grpo" in rows or "ppo" in rows:
        parquet, prompts_jsonl, reward, longest = write_prompts(args.out, args.corpus, model_dir, args.grpo_prompts)
        work = f"{args.grpo_prompts} prompts x {args.grpo_samples}, response {args.grpo_response_length}"
    if "grpo" in rows:
        run_dir = os.path.join(args.out, "grpo_verl")
        subprocess.run(["rm", "-rf", run_dir])
        _, vrss, _ = runner.run("grpo_verl", [args.verl, "train", *verl_train_overrides(
            model_dir, parquet, reward, longest, args, "grpo", run_dir)])
        out, trss, _ = runner.run("grpo_trl", [
            py, os.path.join(HERE, "peers", "trl_grpo.py"), "--model-dir", model_dir, "--prompts", prompts_jsonl,
            "--reward", reward, "--num-prompts", str(args.grpo_prompts), "--num-generations", str(args.grpo_samples),
            "--response-length", str(args.grpo_response_length), "--repeats", str(args.repeats),
            "--threads", str(args.threads), "--out", os.path.join(args.out, "grpo_trl")])
        trl_result = json.loads(out.strip().splitlines()[-1])
        table.append(dict(work=f"GRPO step, {work}", metric="seconds", higher=False,
                          verl=train_step_seconds(run_dir), verl_rss=vrss,
                          peer=f"TRL GRPOTrainer", peer_values=trl_result["step_seconds"], peer_rss=trss,
                          timer="verl: timing_s/step; TRL: a TrainerCallback's on_step_begin..on_step_end",
                          note="verl.cpp also recomputes old log-probs (verl's order); TRL reuses the update's"))
    if "ppo" in rows:
        run_dir = os.path.join(args.out, "ppo_verl")
        subprocess.run(["rm", "-rf", run_dir])
        _, vrss, _ = runner.run("ppo_verl", [args.verl, "train", *verl_train_overrides(
            model_dir, parquet, reward, longest, args, "gae", run_dir)])
        table.append(dict(work=f"PPO step with a critic (GAE), {work}", metric="seconds", higher=False,
                          verl=train_step_seconds(run_dir), verl_rss=vrss, peer=None, peer_values=None,
                          peer_rss=None, timer="verl: timing_s/step",
                          note=f"no peer: TRL {versions.get('trl', '?')} has no PPO trainer; OpenRLHF needs Ray, "
                               "DeepSpeed and vLLM on CUDA"))

    # The table: ratio = how many times faster (or more tokens/s) verl.cpp is, on the best and the median.
    print(render(table, roofline, versions, args.shape, args.repeats, args.threads, model_dir))
    record = {"bench": "compare", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": roofline["machine"], "platform": platform.platform(), "threads": args.threads,
              "roofline": {k: roofline[k] for k in ("gemm_peak_flops", "bandwidth_bytes_per_s")},
              "versions": versions, "model": args.shape, "model_dir": model_dir, "repeats": args.repeats,
              "rows": table}
    with open(os.path.join(args.out, "compare.jsonl"), "a") as f:
        f.write(json.dumps(record) + "\n")


def render(table, roofline, versions, shape, repeats, threads, model_dir):
    """The table of one comparison (also `compare.py --render OUT/compare.jsonl` for a saved record)."""
    def ratio(row, key):
        v = best_median(row["verl"], row["higher"])[key]
        p = best_median(row["peer_values"], row["higher"])[key]
        return v / p if row["higher"] else p / v

    lines = [f"machine: {roofline['machine']['cpu_model']} ({roofline['machine']['cores']} cores, "
             f"{roofline['machine']['cpu_kernels']}), {threads} threads; GEMM peak fp32 "
             f"{roofline['gemm_peak_flops'] / 1e9:.1f} GFLOP/s, bandwidth {roofline['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s",
             f"versions: {versions}", f"model: {shape} ({model_dir}), fp32, best / median of {repeats}",
             ""]
    header = ["work", "metric", "verl.cpp best", "median", "% roofline", "peer", "peer best", "median",
              "ratio best", "ratio median", "RSS verl.cpp", "RSS peer"]
    body = []
    for r in table:
        v = best_median(r["verl"], r["higher"])
        roof = ""
        if r.get("bound"):
            roof = f"{100 * v['best'] / r['bound']:.1f}"
        elif r.get("flops"):
            roof = f"{100 * r['flops'] / v['best'] / roofline['gemm_peak_flops']:.1f}"
        fmt = (lambda x: f"{x:.1f}") if r["higher"] else (lambda x: f"{x:.3f}")
        if r["peer"]:
            p = best_median(r["peer_values"], r["higher"])
            body.append([r["work"], r["metric"], fmt(v["best"]), fmt(v["median"]), roof, r["peer"], fmt(p["best"]),
                         fmt(p["median"]), f"{ratio(r, 'best'):.2f}x", f"{ratio(r, 'median'):.2f}x",
                         f"{r['verl_rss'] / 2**30:.2f} GiB", f"{r['peer_rss'] / 2**30:.2f} GiB"])
        else:
            body.append([r["work"], r["metric"], fmt(v["best"]), fmt(v["median"]), roof, "(none)", "", "", "", "",
                         f"{r['verl_rss'] / 2**30:.2f} GiB", ""])
    widths = [max(len(str(x[i])) for x in [header] + body) for i in range(len(header))]
    lines.append(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("-+-".join("-" * w for w in widths))
    for b in body:
        lines.append(" | ".join(str(x).ljust(w) for x, w in zip(b, widths)))
    lines.append("")
    lines.append("ratio: verl.cpp's tokens/s over the peer's, or the peer's seconds over verl.cpp's (> 1: verl.cpp "
                 "faster). RSS: each process's peak resident memory, model loading included.")
    for r in table:
        if r.get("note"):
            lines.append(f"{r['work']}: {r['note']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
