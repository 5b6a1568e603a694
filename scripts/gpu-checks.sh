#!/usr/bin/env bash
# The GPU checks of the CUDA issue, run on a GPU machine in one go (a lent machine's time is short):
#   1. `verl env`, and the gpu-labelled tests (CPU fp64 reference vs the device, fp32 / bf16);
#   2. `verl bench generate --device cuda` beside transformers' generate (bench/hf_generate.py) on the same
#      model folder (Qwen2.5-0.5B's shape, transformers' random init, bf16), batches 1 and 64;
#   3. `verl bench ppo --device cuda` on the same folder (actor, rollout, ref and critic on the GPU), without and
#      with the offload keys.
# `scripts/gpu-checks.sh OUT_DIR offline DEBS_DIR` instead builds verl.cpp there from source
# (scripts/build-offline.sh, the .debs carried along) and runs the gpu tests of that build.
# Binaries come from $VERL_GPU_BIN (scripts/gpu-run-env.sh unpacks a bundle there) or build/.
# usage: scripts/gpu-checks.sh OUT_DIR [quick]
set -uo pipefail
out=${1:?usage: scripts/gpu-checks.sh OUT_DIR [quick]}
quick=${2:-}
mkdir -p "$out"
bin=${VERL_GPU_BIN:-build}
verl="$bin/verl"
tests="$bin/verl_gpu_tests"
[ -x "$tests" ] || tests=build/tests/verl_gpu_tests
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $* ($(date +%T))"; }

if [ "$quick" = offline ]; then
  step "build-offline.sh on this machine ($(nproc) cores)"
  timeout 480 scripts/build-offline.sh "${3:?offline needs the .deb folder}" /tmp/verl-offline verl verl_gpu_tests \
    > "$out/build_offline.log" 2>&1
  echo "build-offline: rc=$?"; tail -5 "$out/build_offline.log"
  # shellcheck disable=SC1091
  source /tmp/verl-offline/env.sh && /tmp/verl-offline/verl env | head -12
  step "gpu tests of that build"
  timeout 200 /tmp/verl-offline/tests/verl_gpu_tests --gtest_color=no 2>&1 | tee "$out/gpu_tests_offline.log" |
    grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure' | head -40
  exit 0
fi

step env
"$verl" env | tee "$out/env.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee -a "$out/env.txt"

step gpu tests
timeout 300 "$tests" --gtest_color=no 2>&1 | tee "$out/gpu_tests.log" | grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|error|expected|Which is' | head -80

model=/tmp/verl-gpu-qwen2.5-0.5b
step make model
python3 bench/hf_generate.py make-model --preset qwen2.5-0.5b --out "$model" --dtype bf16

batches=1,64
resp=128
[ "$quick" = quick ] && resp=32
for dtype in bf16; do
  step "verl bench generate $dtype"
  timeout 240 "$verl" bench generate --device cuda --dtype "$dtype" --model-dir "$model" --batches $batches \
    --prompt-length 64 --response-length $resp --repeats 2 --json "$out/generate.jsonl" 2>&1 | tail -20
  step "transformers generate $dtype"
  timeout 240 python3 bench/hf_generate.py generate --model-dir "$model" --batches $batches --prompt-length 64 \
    --response-length $resp --dtype "$dtype" --repeats 2 --json "$out/generate.jsonl" 2>&1 | grep -v Loading
done

step "verl bench ppo (roles on cuda, bf16 defaults)"
timeout 240 "$verl" bench ppo --device cuda --model-dir "$model" --batch-size 64 --n 4 --prompt-length 64 \
  --response-length 128 --micro-batch-size 16 --json "$out/ppo.jsonl" 2>&1 | tail -22

step "verl bench ppo with every offload key (state rests in pinned host memory between phases)"
timeout 240 "$verl" bench ppo --device cuda --model-dir "$model" --batch-size 64 --n 4 --prompt-length 64 \
  --response-length 128 --micro-batch-size 16 --json "$out/ppo.jsonl" \
  actor_rollout_ref.actor.fsdp_config.param_offload=true actor_rollout_ref.actor.fsdp_config.optimizer_offload=true \
  actor_rollout_ref.ref.fsdp_config.param_offload=true critic.model.fsdp_config.param_offload=true \
  critic.model.fsdp_config.optimizer_offload=true 2>&1 | tail -22

echo "=== done ($(date +%T))"
