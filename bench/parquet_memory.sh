#!/bin/bash
# Peak resident memory of reading parquet files of 100k, 1M and 4M rows (row groups of 100k rows; an int64, a
# short string and a double per row, written by pyarrow) with `verl data show` and `verl data convert` to JSONL:
# the reader holds one row group at a time, so the peak should not grow with the file. The baseline is
# `verl env` (the process with LibTorch and its CUDA libraries mapped, no data).
#
# usage: bench/parquet_memory.sh BUILD_DIR WORK_DIR   (needs .venv/test: scripts/install-deps.sh --test)
set -euo pipefail
V=$(cd "${1:?build dir}" && pwd)/verl
mkdir -p "${2:?work dir}"
WORK=$(cd "$2" && pwd)
PY=$(dirname "$0")/../.venv/test/bin/python
for n in 100000 1000000 4000000; do
  [ -f "$WORK/rows_$n.parquet" ] || "$PY" - "$WORK/rows_$n.parquet" "$n" <<'PY'
import sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
n = int(sys.argv[2])
ids = pa.array(range(n), pa.int64())
pq.write_table(pa.table({"id": ids, "text": pc.binary_join_element_wise("row-", ids.cast(pa.string()), ""),
                         "half": pc.divide(ids.cast(pa.float64()), 2.0)}),
               sys.argv[1], compression="SNAPPY", row_group_size=100_000)
PY
done
peak() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; }
printf "%-28s %12s %10s\n" "run" "file MB" "peak RSS MB"
printf "%-28s %12s %10d\n" "verl env (baseline)" "-" $(( $(peak "$V" env) / 1024 ))
for n in 100000 1000000 4000000; do
  f="$WORK/rows_$n.parquet"
  mb=$(( $(stat -c %s "$f") / 1048576 ))
  printf "%-28s %12s %10d\n" "data show, $n rows" "$mb" $(( $(peak "$V" data show "$f") / 1024 ))
  printf "%-28s %12s %10d\n" "data convert, $n rows" "$mb" $(( $(peak "$V" data convert "$f" "$WORK/out.jsonl") / 1024 ))
done
rm -f "$WORK/out.jsonl"
