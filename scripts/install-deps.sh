#!/usr/bin/env bash
# Installs everything verl.cpp needs on Debian 12, and the test-only npm packages into tests/js.
# Idempotent: installs only what is missing. Uses apt-get as root, sudo otherwise.
set -euo pipefail

cd "$(dirname "$0")/.."

# Build tools and libraries (see docs/building.md for what each is for).
DEBIAN_PACKAGES=(
  build-essential cmake make pkg-config ccache git
  libtorch-dev                                  # tensors, autograd, optimizers (LibTorch 1.13, CPU)
  libopenblas0-openmp                           # the BLAS behind LibTorch's matmuls (Debian's reference BLAS: 0.9 vs 204 GFLOP/s here)
  libyaml-cpp-dev nlohmann-json3-dev            # config, JSON
  libpcre2-dev libutf8proc-dev                  # tokenizer regexes and Unicode normalization
  libsnappy-dev libzstd-dev zlib1g-dev          # parquet codecs
  python3-dev pybind11-dev python3-jinja2       # embedded CPython: chat templates, Python reward functions
  libopenmpi-dev openmpi-bin openssh-client     # processes and collectives (mpirun wants ssh present)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  python3-torch python3-yaml python3-numpy      # test-only: golden numbers and independent YAML reading
  chromium                                      # test-only: renders report.html headless (tests, README picture)
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo > /dev/null; then
    sudo "$@"
  else
    echo "install-deps: need root or sudo to run: $*" >&2
    exit 1
  fi
}

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2> /dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$package")
  fi
done
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "install-deps: Debian packages present"
fi

# Test-only npm packages, pinned by tests/js/package-lock.json, installed into tests/js/node_modules.
lock=tests/js/package-lock.json
stamp=tests/js/node_modules/.verl-installed
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  echo "install-deps: installing npm packages into tests/js/node_modules"
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
else
  echo "install-deps: npm packages present"
fi
