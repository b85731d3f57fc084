#!/usr/bin/env bash
# Packs a CUDA build (scripts/build-cuda.sh) for a GPU machine that has PyTorch with CUDA but none
# of Debian's packages and no network, so that the GPU checks need no build there: the stripped
# programs of build-cuda/bin (fanout-*, trainer_gpu_test) and the Debian libraries they load that
# such a machine lacks (gRPC, Protobuf, Abseil, METIS, ...), plus scripts/gpu-check.sh and the
# benchmark it runs. LibTorch, CUDA, the C library and the C++ runtime are the machine's own.
# Build for it with the same PyTorch version as the GPU machine's (docs/training.md, "On a lent
# GPU machine").
# Usage: scripts/gpu-bundle.sh [DIR]       (default: gpu-bundle/, git-ignored)
#   then on the GPU machine, from a clone: DIR/gpu-check.sh DIR OUT
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FANOUT_BUILD_DIR:-build-cuda}
DIR=${1:-gpu-bundle}
[ -f "$BUILD/env.sh" ] || { echo "gpu-bundle: no $BUILD/env.sh: run scripts/build-cuda.sh first" >&2; exit 1; }
# shellcheck disable=SC1091
. "$BUILD/env.sh"
rm -rf "$DIR" && mkdir -p "$DIR/bin" "$DIR/lib"
for f in "$BUILD"/bin/*; do
  [ -x "$f" ] && [ -f "$f" ] && strip -o "$DIR/bin/$(basename "$f")" "$f"
done
missing=$(ldd "$DIR"/bin/* | grep "not found" | sort -u || true)
[ -z "$missing" ] || { echo "gpu-bundle: unresolved libraries here:" >&2; echo "$missing" >&2; exit 1; }
ldd "$DIR"/bin/* | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    # The C library, the C++ runtime and the loader: the machine's own (newer is fine).
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libutil.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) case "$lib" in /usr/lib/x86_64-linux-gnu/*|/lib/x86_64-linux-gnu/*) cp -L "$lib" "$DIR/lib/" ;; esac ;;
  esac
done
cp scripts/gpu-check.sh "$DIR/"
echo "gpu-bundle: $(ls "$DIR/bin" | wc -l) programs, $(ls "$DIR/lib" | wc -l) libraries in $DIR ($(du -sh "$DIR" | cut -f1))"
