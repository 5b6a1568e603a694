#!/bin/bash
# Peak resident memory per rank of a 2-rank PPO run (GAE with a KL loss: actor, ref and critic on both worker
# ranks, two steps), ZeRO-2 (fsdp_config.reshard_after_forward=false) against ZeRO-3 (true). Run once with the
# default allocator settings (freed memory stays in the heap: runtime/heap_reuse.h) and once with
# ALLOCATOR=live, where glibc's mmap threshold is fixed at 1 MiB and the resident size follows the live tensors.
# Model: Llama-shaped, vocabulary 16, hidden 512, 8 layers, intermediate 2048 (33.6M parameters).
#
# usage: [ALLOCATOR=live] bench/zero3_memory.sh BUILD_DIR SETUP_DIR WORK_DIR
#   SETUP_DIR: a digit_completion set-up made by the dist tests (data/train.jsonl, data/test.jsonl and the char
#   tokenizer tok/), e.g. BUILD_DIR/tests/tmp/dist_zero3_setup_*; WORK_DIR gets the model and the runs.
set -euo pipefail
V=$(cd "${1:?build dir}" && pwd)/verl
SETUP=$(cd "${2:?setup dir}" && pwd)
mkdir -p "${3:?work dir}"
WORK=$(cd "$3" && pwd)
if [ ! -f "$WORK/model/model.safetensors" ]; then
  "$V" model init --arch llama --out "$WORK/model" --tokenizer "$SETUP/tok" --vocab-size 16 --hidden-size 512 \
    --num-layers 8 --num-heads 8 --num-kv-heads 8 --intermediate-size 2048 --seed 1 >/dev/null
  # The char tokenizer's special ids, as the dist tests set them.
  /usr/bin/python3 - "$WORK/model" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
c.update(bos_token_id=0, eos_token_id=1, pad_token_id=2)
json.dump(c, open(d + "/config.json", "w"), indent=2)
json.dump({"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}, open(d + "/generation_config.json", "w"))
PY
fi
ENVS="OMP_NUM_THREADS=1"
[ "${ALLOCATOR:-}" = live ] && ENVS="$ENVS VERL_HEAP_REUSE=0 MALLOC_MMAP_THRESHOLD_=1048576"
for Z in false true; do
  rm -rf "$WORK/run_$Z"
  echo "reshard_after_forward=$Z allocator=${ALLOCATOR:-default}: peak RSS (KiB) of the controller and the 2 workers"
  env $ENVS mpirun --oversubscribe --allow-run-as-root -np 3 /usr/bin/time -f "MAXRSS_KB %M" "$V" train \
    data.train_files="$SETUP/data/train.jsonl" data.val_files="$SETUP/data/test.jsonl" data.max_prompt_length=8 \
    data.max_response_length=18 data.train_batch_size=8 data.seed=1 actor_rollout_ref.model.path="$WORK/model" \
    critic.model.path="$WORK/model" actor_rollout_ref.actor.ppo_mini_batch_size=8 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 critic.ppo_micro_batch_size_per_gpu=4 \
    trainer.n_gpus_per_node=2 trainer.nnodes=1 trainer.device=cpu 'trainer.logger=[jsonl]' \
    trainer.val_before_train=false trainer.default_local_dir="$WORK/run_$Z" trainer.total_training_steps=2 \
    trainer.save_freq=-1 trainer.test_freq=-1 trainer.num_cpu_threads=1 algorithm.adv_estimator=gae \
    actor_rollout_ref.actor.use_kl_loss=true actor_rollout_ref.actor.fsdp_config.reshard_after_forward=$Z \
    actor_rollout_ref.ref.fsdp_config.reshard_after_forward=$Z critic.model.fsdp_config.reshard_after_forward=$Z \
    2>&1 | grep -E "MAXRSS|error" | sort -k2 -n
done
