#!/bin/bash
# `verl sft` (sft_trainer_engine layout) in one process and under `mpirun -np 2`, with the AdamW state whole on each
# rank (engine.fsdp_size=1) and sharded (ZeRO-2, the default): peak resident memory of each process and the time in
# training steps (the summary's train_time_s). Model: Qwen2-shaped, hidden 512, 8 layers, intermediate 2048, the
# tiny SFT set-up's byte-level tokenizer; 4 steps of 8 conversations, one thread per rank.
#
# ALLOCATOR=live: glibc's mmap threshold fixed at 1 MiB and verl.cpp's heap reuse off (runtime/heap_reuse.h), so the
# resident size follows the live tensors instead of what the heap keeps.
#
# usage: [ALLOCATOR=live] bench/sft_mpi_memory.sh BUILD_DIR SETUP_DIR WORK_DIR
#   SETUP_DIR: a set-up made by the dist tests (train.parquet, val.parquet, tokenizer/), e.g.
#   BUILD_DIR/tests/tmp/dist_sft_setup_*; WORK_DIR gets the model and the runs.
set -euo pipefail
V=$(cd "${1:?build dir}" && pwd)/verl
SETUP=$(cd "${2:?setup dir}" && pwd)
mkdir -p "${3:?work dir}"
WORK=$(cd "$3" && pwd)
if [ ! -f "$WORK/model/model.safetensors" ]; then
  "$V" model init --arch qwen2 --out "$WORK/model" --tokenizer "$SETUP/tokenizer" --vocab-size 512 --hidden-size 512 \
    --num-layers 8 --num-heads 8 --num-kv-heads 8 --intermediate-size 2048 --seed 1 >/dev/null
fi
ARGS=(--config-name sft_trainer_engine trainer.device=cpu "data.train_files=$SETUP/train.parquet"
      data.train_batch_size=8 data.micro_batch_size_per_gpu=2 data.max_length=64 "model.path=$WORK/model"
      trainer.total_training_steps=4 trainer.num_cpu_threads=1 'trainer.logger=[]' trainer.save_freq=-1
      optim.lr=1e-4)
ENVS="OMP_NUM_THREADS=1"
[ "${ALLOCATOR:-}" = live ] && ENVS="$ENVS VERL_HEAP_REUSE=0 MALLOC_MMAP_THRESHOLD_=1048576"
lscpu | grep 'Model name' | sed 's/  */ /g'
echo "allocator=${ALLOCATOR:-default}"
run() {
  local name=$1
  shift
  rm -rf "$WORK/run_$name"
  echo "$name: peak RSS (KiB) per process, then the summary"
  "$@" /usr/bin/time -f "MAXRSS_KB %M" "$V" sft "${ARGS[@]}" "trainer.default_local_dir=$WORK/run_$name" \
    "${EXTRA[@]}" 2>&1 | grep -E "MAXRSS_KB|^sft: steps"
}
EXTRA=()
run one env $ENVS
EXTRA=(engine.fsdp_size=1)
run two_whole env $ENVS mpirun --oversubscribe --allow-run-as-root -np 2
EXTRA=()
run two_zero2 env $ENVS mpirun --oversubscribe --allow-run-as-root -np 2
