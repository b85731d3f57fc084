#!/usr/bin/env bash
# Builds fanout against a CUDA-enabled LibTorch, PyTorch's own (python3 -c 'import torch'), into
# build-cuda/; the CPU build in build/ is untouched. For a GPU machine, which has PyTorch but
# usually none of Debian's -dev packages: with FANOUT_DEBS=DIR (the .deb files
# scripts/cuda-debs.sh downloads) they are unpacked into build-cuda/deps and the build uses them
# from there, with no root and no network. See docs/training.md, "Building against PyTorch's
# CUDA LibTorch".
# Usage: scripts/build-cuda.sh [extra cmake args]
#   FANOUT_TORCH_PYTHON  the python3 whose torch to build against (default: python3)
#   FANOUT_TORCH_PREFIX  or a LibTorch folder (share/cmake/Torch, lib/) to use without Python
#   FANOUT_DEBS          folder of Debian 12 .deb files to build against instead of /usr
#   CUDA_HOME            the CUDA toolkit (default: /usr/local/cuda); its major version should
#                        be torch.version.cuda's
#   TORCH_CUDA_ARCH_LIST GPU architectures, e.g. "9.0" (default: the GPUs nvidia-smi lists, else 9.0)
#   FANOUT_BUILD_DIR     (default: build-cuda)
#   FANOUT_TARGETS       ninja targets to build (default: all), e.g. "trainer_gpu_test fanout-train"
# Then: build-cuda/env.sh sets LD_LIBRARY_PATH for running what it built (ctest, fanout-*).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FANOUT_BUILD_DIR:-build-cuda}
PY=${FANOUT_TORCH_PYTHON:-python3}
CUDA=${CUDA_HOME:-/usr/local/cuda}
die() { echo "build-cuda: $*" >&2; exit 1; }

if [ -n "${FANOUT_TORCH_PREFIX:-}" ]; then
  # A LibTorch folder without its Python (an unzipped LibTorch, or a wheel's torch/ folder): its
  # ABI is checked by CMake (trainer/CMakeLists.txt).
  [ -d "$FANOUT_TORCH_PREFIX/share/cmake/Torch" ] || die "FANOUT_TORCH_PREFIX=$FANOUT_TORCH_PREFIX has no share/cmake/Torch"
  TORCH_CMAKE=$FANOUT_TORCH_PREFIX/share/cmake
  TORCH_LIB=$FANOUT_TORCH_PREFIX/lib
  TORCH_VERSION=$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$FANOUT_TORCH_PREFIX/version.py" 2>/dev/null || true)
  TORCH_CUDA=$(sed -n "s/^cuda[^=]*= '\(.*\)'/\1/p" "$FANOUT_TORCH_PREFIX/version.py" 2>/dev/null || true)
  [ -n "$TORCH_CUDA" ] || TORCH_CUDA=unknown
else
  command -v "$PY" >/dev/null || die "no $PY (set FANOUT_TORCH_PYTHON to the python3 that has torch)"
  info=$("$PY" -c 'import os, torch
print(torch.utils.cmake_prefix_path, os.path.join(os.path.dirname(torch.__file__), "lib"), torch.__version__,
      torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI)') || die "$PY cannot import torch"
  read -r TORCH_CMAKE TORCH_LIB TORCH_VERSION TORCH_CUDA TORCH_ABI <<<"$info"
  [ "$TORCH_CUDA" != None ] || die "torch $TORCH_VERSION ($PY) is a CPU-only build: install a CUDA one"
  [ "$TORCH_ABI" = True ] || die "torch $TORCH_VERSION uses the pre-C++11 ABI, which cannot link Debian's gRPC: use PyTorch >= 2.7"
fi
[ -x "$CUDA/bin/nvcc" ] || die "no nvcc in $CUDA/bin (set CUDA_HOME)"
nvcc_version=$("$CUDA/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
[ "$nvcc_version" = "${TORCH_CUDA%%.*}" ] ||
  echo "build-cuda: warning: CUDA $nvcc_version in $CUDA, torch built for CUDA $TORCH_CUDA" >&2
echo "build-cuda: torch $TORCH_VERSION (CUDA $TORCH_CUDA) from $TORCH_CMAKE; CUDA toolkit $CUDA"

mkdir -p "$BUILD_DIR"
prefix="$TORCH_CMAKE"
libs="$TORCH_LIB"
# PyTorch's CUDA libraries (cuDNN, cuSPARSELt, NVSHMEM, NCCL, ...) come as pip packages beside
# torch (site-packages/nvidia/*/lib); Python finds them by path, a C++ program through
# LD_LIBRARY_PATH, and the linker needs them to check libtorch_cuda.so's references.
for dir in $(find "$(dirname "$(dirname "$TORCH_LIB")")/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | sort); do
  libs="$libs:$dir"
done
libs="$libs:$CUDA/lib64"
if [ -n "${FANOUT_DEBS:-}" ]; then
  compgen -G "$FANOUT_DEBS/*.deb" >/dev/null || die "FANOUT_DEBS=$FANOUT_DEBS holds no .deb files (scripts/cuda-debs.sh makes them)"
  deps="$(realpath -m "$BUILD_DIR")/deps"
  # Unpacked again only when the set of packages changed (new files would rebuild everything).
  stamp=$(cd "$FANOUT_DEBS" && ls -l -- *.deb | md5sum)
  if [ "$(cat "$deps/.fanout-debs" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$deps.tmp" && mkdir -p "$deps.tmp"
    command -v dpkg-deb >/dev/null || die "FANOUT_DEBS needs dpkg-deb (Debian's and Ubuntu's dpkg have it)"
    for deb in "$FANOUT_DEBS"/*.deb; do dpkg-deb -x "$deb" "$deps.tmp"; done
    echo "$stamp" >"$deps.tmp/.fanout-debs"
    rm -rf "$deps" && mv "$deps.tmp" "$deps"
  fi
  prefix="$deps/usr;$prefix"
  libs="$deps/usr/lib/x86_64-linux-gnu:$libs"
  echo "build-cuda: $(ls "$FANOUT_DEBS"/*.deb | wc -l) Debian packages unpacked in $deps"
elif [ ! -e /usr/include/grpcpp/grpcpp.h ]; then
  die "Debian's -dev packages are not installed here: run scripts/cuda-debs.sh on a Debian 12 machine and set FANOUT_DEBS to its folder"
fi
# The GPU architectures to build for. Set, so that LibTorch's CMake files do not compile a probe
# to find the machine's GPUs (which fails under this project's C++20 with CMake 3.25 and nvcc 13).
if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ]; then
  TORCH_CUDA_ARCH_LIST=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u | paste -sd ';' || true)
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
fi
echo "build-cuda: for GPU architectures $TORCH_CUDA_ARCH_LIST (TORCH_CUDA_ARCH_LIST)"
# protoc and the gRPC plugin run during the build; the tests and tools at run time.
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
printf 'export LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$libs" >"$BUILD_DIR/env.sh"

# The tests that export models from Python need the python whose torch this LibTorch is.
python_arg=()
[ -n "${FANOUT_TORCH_PREFIX:-}" ] || python_arg=(-DFANOUT_PYTHON="$(command -v "$PY")")
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python_arg[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCUDAToolkit_ROOT="$CUDA" -DCMAKE_CUDA_COMPILER="$CUDA/bin/nvcc" \
  -DTORCH_CUDA_ARCH_LIST="$TORCH_CUDA_ARCH_LIST" \
  -DCMAKE_BUILD_RPATH="${libs//:/;}" "$@"
# shellcheck disable=SC2086 # FANOUT_TARGETS is a list of target names
ninja -C "$BUILD_DIR" -j "${FANOUT_JOBS:-$(nproc)}" ${FANOUT_TARGETS:-}
echo "build-cuda: built into $BUILD_DIR; '. $BUILD_DIR/env.sh && ctest --test-dir $BUILD_DIR -L gpu' runs the GPU tests"
