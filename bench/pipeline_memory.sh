#!/bin/bash
# Peak resident memory per rank of one GRPO step with a KL loss (actor with AdamW, ref, rollout), on one rank
# (strategy=fsdp, the whole model) against pipeline stages (strategy=megatron, pipeline_model_parallel_size P: each
# stage holds 1/P of the layers and its optimizer state; generation gathers every stage's layers for its duration).
# glibc's mmap threshold is fixed at 1 MiB and verl.cpp's heap reuse is off, so the resident size follows the live
# tensors (runtime/heap_reuse.h). Model: Qwen2-shaped, hidden 1024, 8 layers, 16 / 4 heads, intermediate 2816
# (90.5M parameters), the demo's tokenizer and arithmetic data (`verl demo --prepare-only`).
#
# usage: bench/pipeline_memory.sh BUILD_DIR WORK_DIR
set -euo pipefail
V=$(cd "${1:?build dir}" && pwd)/verl
mkdir -p "${2:?work dir}"
WORK=$(cd "$2" && pwd)
if [ ! -f "$WORK/model/model.safetensors" ]; then
  "$V" demo --prepare-only --max-sft-steps 1 --out "$WORK/demo" >/dev/null 2>&1
  "$V" model init --out "$WORK/model" --tokenizer "$WORK/demo/model_init" --arch qwen2 --hidden-size 1024 \
    --num-layers 8 --num-heads 16 --num-kv-heads 4 --intermediate-size 2816 --vocab-size 129 --seed 1 >/dev/null
fi
RUN=(data.train_files="$WORK/demo/data/train.parquet" data.val_files="$WORK/demo/data/test.parquet"
  actor_rollout_ref.model.path="$WORK/model" algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_kl_loss=true
  data.train_batch_size=4 actor_rollout_ref.rollout.n=2 actor_rollout_ref.actor.ppo_mini_batch_size=4
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 data.max_prompt_length=32 data.max_response_length=16
  trainer.total_training_steps=1 trainer.test_freq=-1 trainer.val_before_train=false trainer.save_freq=-1
  'trainer.logger=[jsonl]' trainer.num_cpu_threads=1 trainer.device=cpu trainer.nnodes=1)
ENVS=(OMP_NUM_THREADS=1 VERL_HEAP_REUSE=0 MALLOC_MMAP_THRESHOLD_=1048576)
rm -rf "$WORK/run_1"
echo "1 rank (fsdp, whole model): peak RSS (KiB)"
env "${ENVS[@]}" /usr/bin/time -f "MAXRSS_KB %M" "$V" train "${RUN[@]}" trainer.n_gpus_per_node=1 \
  trainer.default_local_dir="$WORK/run_1" 2>&1 | grep MAXRSS_KB
for P in 2 4; do
  rm -rf "$WORK/run_$P"
  echo "$P pipeline stages (megatron): peak RSS (KiB) of the controller and the $P stages, in rank order"
  env "${ENVS[@]}" mpirun --oversubscribe --allow-run-as-root -np $((P + 1)) --tag-output \
    /usr/bin/time -f "MAXRSS_KB %M" "$V" train "${RUN[@]}" trainer.n_gpus_per_node=$P \
    actor_rollout_ref.actor.strategy=megatron actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$P \
    trainer.default_local_dir="$WORK/run_$P" 2>&1 | grep MAXRSS_KB | sort
done
