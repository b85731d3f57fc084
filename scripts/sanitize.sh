#!/usr/bin/env bash
# The hostile-input stage of scripts/test.sh (issue 11, docs/fuzzing.md): the LibTorch-free unit
# tests under ASan + UBSan, then every fuzz harness over its committed corpus plus a bounded run,
# all built with clang-14 into build-asan/ (FANOUT_ASAN_BUILD_DIR).
# Env: FANOUT_FUZZ_SECONDS per harness (default 20), FANOUT_JOBS (ninja and ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
# Clones share this machine's ccache (as scripts/build.sh).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
BUILD_DIR=${FANOUT_ASAN_BUILD_DIR:-build-asan}
JOBS=${FANOUT_JOBS:-$(nproc)}
UNIT_TESTS=(base_test core_test partition_test server_unit_test sampler_unit_test launcher_test)
FUZZERS=()
for d in tests/fuzz/corpus/*/; do FUZZERS+=("fuzz_$(basename "$d")"); done

bash scripts/configure-asan.sh "$BUILD_DIR"
ninja -C "$BUILD_DIR" -j "$JOBS" "${UNIT_TESTS[@]}" "${FUZZERS[@]}"
# Only the unit label: the integration tests (real servers and binaries) are left out of the
# sanitizer build to keep the whole CI under its 30 minutes (docs/fuzzing.md).
(cd "$BUILD_DIR" && ctest -L unit --output-on-failure -j "$JOBS" --timeout 600)
FANOUT_ASAN_BUILD_DIR="$BUILD_DIR" bash scripts/fuzz.sh --no-build --time "${FANOUT_FUZZ_SECONDS:-20}"
