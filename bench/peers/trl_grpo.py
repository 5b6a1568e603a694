#!/usr/bin/env python3
"""TRL's side of `bench/compare.py`'s GRPO row: `GRPOTrainer` on the same model folder, prompts, reward function
and sizes as the `verl train` run beside it.

One optimizer step = P prompts x G generations, completions of exactly --response-length tokens (the model's EOS
is suppressed, as verl's `rollout.ignore_eos=true`), sampling at temperature 1 (no top-k / top-p), one update over
all of them (per_device_train_batch_size = P, gradient_accumulation_steps = G: TRL generates P x G completions once
per optimizer step), no reference model (beta 0, as verl's use_kl_loss=false), on the CPU in fp32.

Step times come from a TrainerCallback (on_step_begin .. on_step_end: generation, scoring, forward, backward and
the optimizer step); the first --warmup steps are dropped. Prints one JSON object on stdout.
"""
import argparse
import importlib.util
import json
import time


def load_reward(path):
    spec = importlib.util.spec_from_file_location("bench_reward", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compute_score


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--prompts", required=True, help="JSONL: {'prompt': [messages], 'ground_truth': str}")
    parser.add_argument("--reward", required=True, help="a verl-style reward file with compute_score(...)")
    parser.add_argument("--num-prompts", type=int, default=16)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--response-length", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--out", required=True, help="TRL's output_dir (nothing is saved)")
    args = parser.parse_args()

    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    rows = [json.loads(line) for line in open(args.prompts)]
    dataset = Dataset.from_list([{"prompt": r["prompt"], "ground_truth": r["ground_truth"]} for r in rows])
    compute_score = load_reward(args.reward)

    def reward(completions, ground_truth, **kwargs):
        return [float(compute_score("bench", c[0]["content"] if isinstance(c, list) else c, g, None))
                for c, g in zip(completions, ground_truth)]

    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    steps = args.warmup + args.repeats
    config = GRPOConfig(
        output_dir=args.out, use_cpu=True, bf16=False, fp16=False, report_to="none", save_strategy="no",
        logging_steps=1, max_steps=steps, learning_rate=1e-6, lr_scheduler_type="constant", weight_decay=0.01,
        max_grad_norm=1.0,
        per_device_train_batch_size=args.num_prompts, gradient_accumulation_steps=args.num_generations,
        num_generations=args.num_generations, max_completion_length=args.response_length,
        temperature=1.0, top_p=1.0, top_k=0, beta=0.0, num_iterations=1, loss_type="dapo", seed=0,
        generation_kwargs={"min_new_tokens": args.response_length}, dataloader_num_workers=0,
        disable_tqdm=True)

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds, self.start = [], None

        def on_step_begin(self, *a, **k):
            self.start = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.seconds.append(time.perf_counter() - self.start)

    timer = StepTimer()
    trainer = GRPOTrainer(model=args.model_dir, reward_funcs=reward, args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[timer])
    trainer.train()
    completion_lengths = [h["completions/mean_length"] for h in trainer.state.log_history
                          if "completions/mean_length" in h]
    print(json.dumps({"engine": f"trl {trl.__version__} (transformers {transformers.__version__})",
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "num_prompts": args.num_prompts, "num_generations": args.num_generations,
                      "response_length": args.response_length, "step_seconds": timer.seconds[args.warmup:],
                      "warmup_seconds": timer.seconds[:args.warmup], "completion_mean_length": completion_lengths}))


if __name__ == "__main__":
    main()
