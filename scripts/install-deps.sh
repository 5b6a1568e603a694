#!/usr/bin/env bash
# Installs what verl.cpp needs on Debian 12. Idempotent: installs only what is missing or changed.
#   scripts/install-deps.sh          build and run: Debian packages, LibTorch (PyPI torch) in .venv/libtorch
#   scripts/install-deps.sh --test   also the test-only tools: .venv/test (Python oracles), npm packages,
#                                    Chromium
#   scripts/install-deps.sh --fuzz   also clang (libFuzzer, for `make fuzz`)
#   scripts/install-deps.sh --bench  also the peers of bench/compare.sh (transformers, TRL) in .venv/bench
#                                    (--test includes it: the test suite runs the comparison's smoke run)
# Uses apt-get as root, sudo otherwise. Pinned Python versions live in scripts/requirements/*.txt.
set -euo pipefail

cd "$(dirname "$0")/.."

with_test_tools=false
with_fuzz_tools=false
with_bench_tools=false
for arg in "$@"; do
  case "$arg" in
    --test) with_test_tools=true; with_bench_tools=true ;;
    --fuzz) with_fuzz_tools=true ;;
    --bench) with_bench_tools=true ;;
    *) echo "install-deps: unknown option $arg (expected --test, --fuzz or --bench)" >&2; exit 2 ;;
  esac
done

# Build tools and libraries (see docs/building.md for what each is for).
DEBIAN_PACKAGES=(
  build-essential cmake make pkg-config ccache git
  python3-venv                                  # .venv/libtorch: LibTorch from the PyPI torch wheel
  libyaml-cpp-dev nlohmann-json3-dev            # config, JSON
  libpcre2-dev libutf8proc-dev                  # tokenizer regexes and Unicode normalization
  libsnappy-dev libzstd-dev zlib1g-dev          # parquet codecs
  liblz4-dev libbrotli-dev                      # parquet codecs read only (LZ4_RAW, BROTLI)
  python3-dev python3-jinja2                    # embedded CPython: chat templates, Python reward functions
  libopenmpi-dev openmpi-bin openssh-client     # processes and collectives (mpirun wants ssh present)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
)
TEST_DEBIAN_PACKAGES=(
  chromium                                      # renders report.html headless (tests, README picture)
)
FUZZ_DEBIAN_PACKAGES=(
  clang                                         # libFuzzer + ASan/UBSan runtimes (libclang-rt): `make fuzz`
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

wanted=("${DEBIAN_PACKAGES[@]}")
if $with_test_tools; then wanted+=("${TEST_DEBIAN_PACKAGES[@]}"); fi
if $with_fuzz_tools; then wanted+=("${FUZZ_DEBIAN_PACKAGES[@]}"); fi
missing=()
for package in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2> /dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$package")
  fi
done
if $with_test_tools && { ! command -v node > /dev/null || ! command -v npm > /dev/null; }; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "install-deps: Debian packages present"
fi

# A virtual environment from Debian's python3 with the packages of one requirements file, reinstalled only when
# that file changes (its copy inside the environment is the stamp).
# Further arguments go to pip (--no-deps: the packages of that file without their dependency trees).
make_venv() {
  local venv=$1 requirements=$2 what=$3
  shift 3
  local stamp=$venv/.verl-$(basename "$requirements")
  if [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then
    echo "install-deps: $what present in $venv"
    return
  fi
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  echo "install-deps: installing $what into $venv ($requirements)"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar on "$@" \
    -r "$requirements"
  cp "$requirements" "$stamp"
}

# LibTorch: the PyPI torch wheel (CUDA build: ~3 GB with its nvidia-* libraries, about a minute at 60 MB/s).
make_venv .venv/libtorch scripts/requirements/libtorch.txt "LibTorch (torch wheel, ~3 GB download)"

# A virtual environment that sees .venv/libtorch's torch through a .pth file instead of a second 3 GB install.
venv_with_torch() {
  local venv=$1
  if [ ! -x "$venv/bin/python" ]; then /usr/bin/python3 -m venv "$venv"; fi
  local torch_site site
  torch_site=$(.venv/libtorch/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$torch_site" > "$site/verl-libtorch.pth"
}

if $with_bench_tools; then
  # The peers bench/compare.sh runs verl.cpp against, apart from the test oracles' environment.
  venv_with_torch .venv/bench
  make_venv .venv/bench scripts/requirements/bench.txt "benchmark peers (transformers, TRL)"
fi

if $with_test_tools; then
  venv_with_torch .venv/test
  make_venv .venv/test scripts/requirements/test.txt "test-only Python packages"
  make_venv .venv/test scripts/requirements/test-nodeps.txt "verl (the algorithm oracle, without its dependencies)" \
    --no-deps

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
fi
