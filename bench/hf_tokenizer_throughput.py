#!/usr/bin/env python3
"""The peer for bench/bench_tokenizer.cpp: HF tokenizers (the Rust library) encoding the same texts on one thread:
the ~1 MB English text bench_tokenizer.cpp generates (the same LCG) and tests/data/tokenizer_corpus.jsonl line by
line, without special tokens. Prints one JSON line per measurement (MB/s, best of --repeats).

usage: hf_tokenizer_throughput.py MODEL_DIR NAME [--repeats 5]
"""
import json
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # one thread, as bench_tokenizer.cpp measures
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer  # noqa: E402

WORDS = ["the", "policy", "gradient", "is", "estimated", "from", "sampled", "responses,", "and", "each", "reward",
         "model", "scores", "them.", "We", "normalize", "advantages", "within", "a", "group", "of", "16", "rollouts;",
         "then", "clip", "ratio", "at", "0.2", "(as", "PPO", "does).", "Training", "ran", "for", "1,024", "steps", "on",
         "GSM8K's", "questions."]


def english_text():
    out, state = [], 12345
    size = 0
    while size < (1 << 20):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        word = WORDS[(state >> 8) % len(WORDS)]
        sep = "\n" if (state >> 20) % 23 == 0 else " "
        out.append(word + sep)
        size += len(word) + 1
    return "".join(out)


def best_rate(fn, nbytes, repeats):
    fn()  # warm-up
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = max(best, nbytes / (time.perf_counter() - start))
    return best


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    model_dir, name = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 5
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    text = english_text()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "tests", "data", "tokenizer_corpus.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line)["text"] for line in f if line.strip()]
    corpus_bytes = sum(len(line.encode("utf-8")) for line in lines)
    english = best_rate(lambda: tok.encode(text, add_special_tokens=False), len(text.encode()), repeats)
    corpus = best_rate(lambda: [tok.encode(line, add_special_tokens=False) for line in lines], corpus_bytes, repeats)
    for what, rate in (("english", english), ("corpus", corpus)):
        print(json.dumps({"engine": "hf-tokenizers", "tokenizer": name, "text": what, "MB_per_s": rate / 1e6}))


if __name__ == "__main__":
    main()
