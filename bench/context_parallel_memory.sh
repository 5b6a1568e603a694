#!/bin/bash
# Peak resident memory per rank of one GRPO step with a KL loss (actor with AdamW, ref, rollout) on long sequences,
# on one rank (strategy=megatron, whole sequences) against context parallelism (context_parallel_size C: each rank
# runs the cache-less forwards and backwards on 1/C of every sequence, gathering one layer's keys and values at a
# time; generation stays whole on every rank). Model, batch and environment: bench/long_sequence_grpo.sh.
#
# usage: bench/context_parallel_memory.sh BUILD_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$0")/long_sequence_grpo.sh" "$@"
rm -rf "$WORK/run_1"
echo "1 rank (whole sequences): peak RSS (KiB)"
env "${ENVS[@]}" /usr/bin/time -f "MAXRSS_KB %M" "$V" train "${RUN[@]}" trainer.n_gpus_per_node=1 \
  trainer.default_local_dir="$WORK/run_1" 2>&1 | grep MAXRSS_KB
for C in 2 4; do
  rm -rf "$WORK/run_$C"
  echo "context_parallel_size $C: peak RSS (KiB) of the controller and the $C ranks, in rank order"
  # Each rank's figure to a file of its own (mpirun's merged output can swallow a line).
  rm -f "$WORK"/rss_"$C"_*
  env "${ENVS[@]}" mpirun --oversubscribe --allow-run-as-root -np $((C + 1)) \
    sh -c 'exec /usr/bin/time -o "$0_$OMPI_COMM_WORLD_RANK" -f "MAXRSS_KB %M" "$@"' "$WORK/rss_$C" \
    "$V" train "${RUN[@]}" trainer.n_gpus_per_node=$C actor_rollout_ref.actor.megatron.context_parallel_size=$C \
    trainer.default_local_dir="$WORK/run_$C" >/dev/null 2>&1
  for f in "$WORK"/rss_"$C"_*; do echo "rank ${f##*_}: $(cat "$f")"; done
done
