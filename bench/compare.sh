#!/usr/bin/env bash
# verl.cpp side by side with transformers and TRL, the same work in each, one after the other on this machine.
#   bench/compare.sh                 the full comparison (about an hour on 2 cores), table + OUT/compare.jsonl
#   bench/compare.sh --quick         a smoke run of seconds on a tiny model (what `make test` runs)
#   bench/compare.sh --rows generate,logprob --out DIR --threads 2 --repeats 3 ...   (bench/compare.py --help)
# Sets up the peers in .venv/bench (scripts/install-deps.sh --bench) and builds `verl` first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench > /dev/null
if [ -z "${VERL_COMPARE_NO_BUILD:-}" ]; then
  make -s build-verl > /dev/null
fi
exec .venv/bench/bin/python bench/compare.py "$@"
