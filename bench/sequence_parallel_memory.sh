#!/bin/bash
# Peak resident memory per rank of one GRPO step with a KL loss (actor with AdamW, ref, rollout) on long sequences
# under tensor parallelism (strategy=megatron, tensor_model_parallel_size 2, the rollout on the same slices), with
# Megatron's sequence parallelism (megatron.sequence_parallel, verl's default: the embedding output, norms and
# residual adds hold each rank's half of the tokens) against without it (every TP rank holds them all), and the same
# step on one rank. glibc's mmap threshold is fixed at 1 MiB and verl.cpp's heap reuse is off, so the resident size
# follows the live tensors (runtime/heap_reuse.h). Model and batch as bench/context_parallel_memory.sh: Qwen2-shaped,
# hidden 512, 4 layers, 8 / 2 heads, intermediate 1408, vocabulary 130 (even, for TP 2; 13M parameters); 4 responses
# of 4064 tokens (ignore_eos) after prompts of up to 32, one micro-batch of all 4 rows. Each run's old-log-prob
# entropy and phase times follow its memory (the same entropy: the same numbers).
#
# usage: bench/sequence_parallel_memory.sh BUILD_DIR WORK_DIR
set -euo pipefail
V=$(cd "${1:?build dir}" && pwd)/verl
mkdir -p "${2:?work dir}"
WORK=$(cd "$2" && pwd)
if [ ! -f "$WORK/model/model.safetensors" ]; then
  "$V" demo --prepare-only --max-sft-steps 1 --out "$WORK/demo" >/dev/null 2>&1
  "$V" model init --out "$WORK/model" --tokenizer "$WORK/demo/model_init" --arch qwen2 --hidden-size 512 \
    --num-layers 4 --num-heads 8 --num-kv-heads 2 --intermediate-size 1408 --vocab-size 130 --seed 1 >/dev/null
fi
RUN=(data.train_files="$WORK/demo/data/train.parquet" data.val_files="$WORK/demo/data/test.parquet"
  actor_rollout_ref.model.path="$WORK/model" algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_kl_loss=true
  data.train_batch_size=2 actor_rollout_ref.rollout.n=2 actor_rollout_ref.actor.ppo_mini_batch_size=2
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 data.max_prompt_length=32 data.max_response_length=4064
  actor_rollout_ref.rollout.ignore_eos=true actor_rollout_ref.actor.strategy=megatron
  trainer.total_training_steps=1 trainer.test_freq=-1 trainer.val_before_train=false trainer.save_freq=-1
  'trainer.logger=[jsonl]' trainer.num_cpu_threads=1 trainer.device=cpu trainer.nnodes=1)
ENVS=(OMP_NUM_THREADS=1 VERL_HEAP_REUSE=0 MALLOC_MMAP_THRESHOLD_=1048576)
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
