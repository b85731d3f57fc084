#!/usr/bin/env bash
# Configures and builds fanout into build/ (Ninja, ccache when present). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so another clone on this machine (a fresh one,
# CI's) reuses the cache instead of recompiling everything.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
BUILD_DIR=${FANOUT_BUILD_DIR:-build}
JOBS=${FANOUT_JOBS:-$(nproc)}
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
ninja -C "$BUILD_DIR" -j "$JOBS"
