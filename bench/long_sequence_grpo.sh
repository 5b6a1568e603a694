# Sourced by bench/context_parallel_memory.sh and bench/sequence_parallel_memory.sh: their shared set-up. Takes
# BUILD_DIR and WORK_DIR as $1 and $2; sets V (the verl binary), WORK, RUN (the overrides of one GRPO step with a KL
# loss on long sequences, strategy=megatron) and ENVS (one thread per rank; glibc's mmap threshold fixed at 1 MiB and
# verl.cpp's heap reuse off, so the resident size follows the live tensors: runtime/heap_reuse.h).
# Model: Qwen2-shaped, hidden 512, 4 layers, 8 / 2 heads, intermediate 1408, vocabulary 130 (even, for TP 2; 13M
# parameters; the 2026-12-02 context-parallel entry of bench/RESULTS.md ran with 129); 4 responses of 4064 tokens
# (ignore_eos) after prompts of up to 32, one micro-batch of all 4 rows: activations, not weights, fill the memory.
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
