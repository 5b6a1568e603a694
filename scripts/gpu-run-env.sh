# Sourced on a GPU machine: unpacks the bundle from scripts/gpu-bundle.sh into /tmp/verl-gpu and sets
# LD_LIBRARY_PATH to its libraries, then that machine's LibTorch and CUDA libraries (from its python3's torch).
# After it: $VERL is the verl binary, $VERL_GPU_BIN the folder of the bundled binaries.
# usage: source scripts/gpu-run-env.sh [BUNDLE_DIR]   (default .gpu)
_bundle=${1:-.gpu}
mkdir -p /tmp/verl-gpu && tar -C /tmp/verl-gpu -xzf "$_bundle/bundle.tgz"
_torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
_nvidia=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia"))')
export LD_LIBRARY_PATH="/tmp/verl-gpu/lib:${_torch_lib}:$(ls -d "${_nvidia}"/*/lib "${_nvidia}"/cu13/lib 2>/dev/null | tr '\n' ':')${LD_LIBRARY_PATH:-}"
export VERL_GPU_BIN=/tmp/verl-gpu/bin
export VERL=/tmp/verl-gpu/bin/verl
