#!/usr/bin/env bash
# Configures the sanitizer build (issue 11, docs/fuzzing.md) into $1 (default build-asan): clang-14,
# ASan + UBSan, libFuzzer harnesses, no trainer/ (LibTorch) and no benchmarks. Does nothing when
# the folder is already configured.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so another clone on this machine (a fresh one,
# CI's) reuses the cache instead of recompiling everything.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
BUILD_DIR=${1:-build-asan}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DFANOUT_FUZZ=ON -DFANOUT_BUILD_BENCH=OFF
fi
