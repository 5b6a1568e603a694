#!/usr/bin/env bash
# Builds verl.cpp where the GPU is: a machine with CMake, a C++ compiler and a Python whose torch is a CUDA
# LibTorch 2.x, that reaches no package registry. The Debian libraries the build needs travel as .deb files
# (downloaded beforehand with --fetch where apt works) and are unpacked into BUILD_DIR/sysroot: nothing is
# installed system-wide, no root is needed. The embedded CPython is Debian's 3.11 from the same .debs (a GPU
# image's Python may lack headers or be another version), with its jinja2 for chat templates.
#
# usage: scripts/build-offline.sh --fetch DEBS_DIR                  (where apt works: download the .debs, ~23 MB)
#        scripts/build-offline.sh DEBS_DIR [BUILD_DIR] [TARGET ...]  (on the GPU machine; default build-offline,
#                                                                     targets verl verl_gpu_tests)
# Then: source BUILD_DIR/env.sh (the sysroot's and torch's libraries on LD_LIBRARY_PATH) and run
# BUILD_DIR/verl, BUILD_DIR/tests/verl_gpu_tests. VERL_TORCH_PYTHON picks the Python with torch (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

# The -dev packages of scripts/install-deps.sh, pkg-config, Python 3.11 with jinja2, and the shared libraries
# they load that a GPU image (Ubuntu 24.04-like) may not have (Open MPI's closure: fabric, UCX, PMIx, hwloc).
PACKAGES=(
  libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2
  libsnappy-dev libsnappy1v5 libzstd-dev liblz4-dev liblz4-1 libbrotli-dev libbrotli1 zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  pkgconf pkgconf-bin libpkgconf3
  libpython3.11-dev libpython3.11 libpython3.11-stdlib libpython3.11-minimal python3.11-minimal python3.11
  python3-jinja2 python3-markupsafe libffi8
  libopenmpi-dev libopenmpi3 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0
  libibverbs1 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libnuma1 libpsm2-2 libpsm-infinipath1
)

if [ "${1:-}" = --fetch ]; then
  debs=${2:?usage: scripts/build-offline.sh --fetch DEBS_DIR}
  mkdir -p "$debs"
  (cd "$debs" && apt-get download "${PACKAGES[@]}")
  echo "build-offline: $(ls "$debs"/*.deb | wc -l) packages in $debs ($(du -sh "$debs" | cut -f1))"
  exit 0
fi

debs=${1:?usage: scripts/build-offline.sh DEBS_DIR [BUILD_DIR] [TARGET ...]}
build=${2:-build-offline}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(verl verl_gpu_tests)
python=${VERL_TORCH_PYTHON:-$(command -v python3)}
fail() { echo "build-offline: $*" >&2; exit 1; }
command -v cmake > /dev/null || fail "needs cmake on PATH"
command -v "${CXX:-c++}" > /dev/null || fail "needs a C++ compiler (${CXX:-c++})"
"$python" -c 'import torch' 2> /dev/null || fail "$python cannot import torch (set VERL_TORCH_PYTHON)"
ls "$debs"/*.deb > /dev/null 2>&1 || fail "no .deb files in $debs (make them with --fetch where apt works)"

# 1. Unpack every package (dpkg-deb where there is one, else ar + tar).
mkdir -p "$build"
build=$(cd "$build" && pwd)
sysroot="$build/sysroot"
rm -rf "$sysroot" && mkdir -p "$sysroot"
for deb in "$debs"/*.deb; do
  if command -v dpkg-deb > /dev/null; then
    dpkg-deb -x "$deb" "$sysroot"
  else
    (tmp=$(mktemp -d) && cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$sysroot" && rm -rf "$tmp")
  fi
done
lib="$sysroot/usr/lib/x86_64-linux-gnu"
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nvidia=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia"))')
cat > "$build/env.sh" << EOF
# Sourced before running what build-offline.sh built: the unpacked libraries, then torch's and CUDA's.
export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib:$torch_lib:$(ls -d "$nvidia"/*/lib "$nvidia"/cu13/lib 2> /dev/null | tr '\n' ':')\${LD_LIBRARY_PATH:-}"
EOF
# shellcheck disable=SC1091
source "$build/env.sh"

# 2. pkg-config (the unpacked pkgconf when the machine has none) over the sysroot's .pc files only; the
#    compiler finds the sysroot's headers and libraries too (CPATH, LIBRARY_PATH, -rpath-link for their needs).
pkg_config=$(command -v pkg-config || echo "$sysroot/usr/bin/pkgconf")
export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$sysroot/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$sysroot" PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export CPATH="$sysroot/usr/include:$sysroot/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}"
export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
py="$sysroot/usr/bin/python3.11"
[ -x "$py" ] || fail "python3.11 is not among the unpacked packages"

# 3. Configure against this machine's torch, with MPI and Python given explicitly (their wrappers and
#    sysconfig name /usr paths that exist only inside the sysroot), then build.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DVERL_TORCH_PYTHON="$python" -DPKG_CONFIG_EXECUTABLE="$pkg_config" \
  -DCMAKE_PREFIX_PATH="$sysroot/usr;$lib/cmake" \
  -DPython3_EXECUTABLE="$py" -DPython3_INCLUDE_DIR="$sysroot/usr/include/python3.11" \
  -DPython3_LIBRARY="$lib/libpython3.11.so" \
  -DMPI_CXX_ADDITIONAL_INCLUDE_DIRS="$lib/openmpi/include" -DMPI_CXX_LIBRARIES="$lib/libmpi.so.40" \
  -DMPI_CXX_SKIP_MPICXX=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$lib:$lib/openmpi/lib" \
  -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$lib:$lib/openmpi/lib" \
  -DVERL_BUILD_BENCH=OFF
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
echo "build-offline: built ${targets[*]} in $build (source $build/env.sh before running them)"
