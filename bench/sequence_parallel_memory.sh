#!/bin/bash
# Peak resident memory per rank of one GRPO step with a KL loss (actor with AdamW, ref, rollout) on long sequences
# under tensor parallelism (strategy=megatron, tensor_model_parallel_size 2, the rollout on the same slices), with
# Megatron's sequence parallelism (megatron.sequence_parallel, verl's default: the embedding output, norms and
# residual adds hold each rank's half of the tokens) against without it (every TP rank holds them all), and the same
# step on one rank. Model, batch and environment: bench/long_sequence_grpo.sh. Each run's old-log-prob entropy and
# phase times follow its memory (the same entropy: the same numbers).
#
# usage: bench/sequence_parallel_memory.sh BUILD_DIR WORK_DIR
set -euo pipefail
source "$(dirname "$0")/long_sequence_grpo.sh" "$@"
rm -rf "$WORK/run_1"
METRICS='"actor/entropy":[^,]*\|"timing_s/old_log_prob":[^,]*\|"timing_s/update_actor":[^,]*'
echo "1 rank: peak RSS (KiB)"
env "${ENVS[@]}" /usr/bin/time -f "MAXRSS_KB %M" "$V" train "${RUN[@]}" trainer.n_gpus_per_node=1 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 trainer.default_local_dir="$WORK/run_1" 2>&1 | grep MAXRSS_KB
grep -o "$METRICS" "$WORK/run_1/metrics.jsonl" | tr '\n' ' ' && echo
for SP in false true; do
  rm -rf "$WORK/run_sp_$SP" "$WORK"/rss_"$SP"_*
  echo "tensor_model_parallel_size 2, sequence_parallel=$SP: peak RSS (KiB) of the controller and the 2 ranks"
  # Each rank's figure to a file of its own (mpirun's merged output can swallow a line).
  env "${ENVS[@]}" mpirun --oversubscribe --allow-run-as-root -np 3 \
    sh -c 'exec /usr/bin/time -o "$0_$OMPI_COMM_WORLD_RANK" -f "MAXRSS_KB %M" "$@"' "$WORK/rss_$SP" \
    "$V" train "${RUN[@]}" trainer.n_gpus_per_node=2 actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.sequence_parallel=$SP actor_rollout_ref.ref.megatron.sequence_parallel=$SP \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 trainer.default_local_dir="$WORK/run_sp_$SP" >/dev/null 2>&1
  for f in "$WORK"/rss_"$SP"_*; do echo "rank ${f##*_}: $(cat "$f")"; done
  grep -o "$METRICS" "$WORK/run_sp_$SP/metrics.jsonl" | tr '\n' ' ' && echo
done
