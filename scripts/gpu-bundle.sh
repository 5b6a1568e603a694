#!/usr/bin/env bash
# Packs this build's binaries for a GPU machine that reaches no package registry but has PyTorch with CUDA
# (the same LibTorch version the build used): the binaries, stripped, and every shared library they load that
# is neither LibTorch / CUDA (that machine's PyTorch provides those) nor the C runtime (glibc, libstdc++,
# libgcc: newer there is compatible). `scripts/gpu-run-env.sh` on the GPU machine unpacks it and points the
# loader at that machine's torch/lib.
#
# usage: scripts/gpu-bundle.sh [OUT_DIR] [BINARY ...]   (default: .gpu, build/verl build/tests/verl_gpu_tests)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu}
shift || true
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(build/verl build/tests/verl_gpu_tests)
for b in "${binaries[@]}"; do
  [ -x "$b" ] || { echo "error: $b is not built (run make build first)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "${binaries[@]}"; do
  cp "$b" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$b")"
done
# Libraries resolved outside the LibTorch venv and outside the C runtime.
ldd "${binaries[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -v -E '/\.venv/|/(libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink)[^/]*$|/(libc|libm|libdl|librt|libpthread|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
mkdir -p "$out"
tar -C "$stage" -czf "$out/bundle.tgz" bin lib
echo "wrote $out/bundle.tgz ($(du -h "$out/bundle.tgz" | cut -f1)): $(ls "$stage/bin" | tr '\n' ' ')+ $(ls "$stage/lib" | wc -l) libraries"
