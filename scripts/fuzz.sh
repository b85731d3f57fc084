#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz/ (docs/fuzzing.md): each replays its committed corpus
# (tests/fuzz/corpus/<name>/), then mutates for a bounded time. Inputs it finds go to
# build-asan/fuzz/corpus/<name>/ (kept between runs), crashes to build-asan/fuzz/artifacts/.
#
# Usage: scripts/fuzz.sh [--time SECONDS] [--merge] [--no-build] [NAME...] [-- LIBFUZZER_ARGS...]
#   --time S    seconds of fuzzing per harness (default 20; 0 only replays the corpora)
#   --merge     afterwards, add the inputs that reach new coverage to tests/fuzz/corpus/<name>/
#               (libFuzzer -merge=1), to be committed
#   --no-build  use the harnesses already built
#   NAME...     harnesses to run (default: every tests/fuzz/corpus/<name>/)
# Env: FANOUT_ASAN_BUILD_DIR (default build-asan), FANOUT_JOBS (ninja), FANOUT_FUZZ_JOBS (libFuzzer
#      -jobs/-workers, default 1: the machine is shared).
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
# Clones share this machine's ccache (as scripts/build.sh).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
BUILD_DIR=${FANOUT_ASAN_BUILD_DIR:-build-asan}
SECONDS_EACH=20
MERGE=0
BUILD=1
NAMES=()
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) SECONDS_EACH=$2; shift 2 ;;
    --merge) MERGE=1; shift ;;
    --no-build) BUILD=0; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) echo "fuzz.sh: unknown flag $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
if [ ${#NAMES[@]} -eq 0 ]; then
  for d in tests/fuzz/corpus/*/; do NAMES+=("$(basename "$d")"); done
fi

if [ "$BUILD" = 1 ]; then
  bash scripts/configure-asan.sh "$BUILD_DIR"
  ninja -C "$BUILD_DIR" -j "${FANOUT_JOBS:-$(nproc)}" "${NAMES[@]/#/fuzz_}"
fi

JOBS=${FANOUT_FUZZ_JOBS:-1}
BUILD_DIR=$(realpath -m "$BUILD_DIR")
ROOT=$PWD
status=0
for name in "${NAMES[@]}"; do
  bin="$BUILD_DIR/bin/fuzz_$name"
  seeds="$ROOT/tests/fuzz/corpus/$name"
  work="$BUILD_DIR/fuzz/corpus/$name"
  artifacts="$BUILD_DIR/fuzz/artifacts/$name"
  log="$BUILD_DIR/fuzz/$name.log"
  mkdir -p "$work" "$artifacts"
  args=(-print_final_stats=1 -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$artifacts/")
  if [ "$SECONDS_EACH" = 0 ]; then args+=(-runs=0); else args+=(-max_total_time="$SECONDS_EACH"); fi
  if [ "$JOBS" -gt 1 ]; then args+=(-jobs="$JOBS" -workers="$JOBS"); fi
  # libFuzzer -jobs writes fuzz-<n>.log into the working directory.
  if (cd "$BUILD_DIR/fuzz" && "$bin" "${args[@]}" "${EXTRA[@]}" "$work" "$seeds") >"$log" 2>&1; then
    runs=$(awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}' "$log" \
           "$BUILD_DIR"/fuzz/fuzz-*.log)
    echo "fuzz $name: ok, $runs executions in ${SECONDS_EACH}s ($(ls "$work" | wc -l) inputs in ${work#"$ROOT"/})"
  else
    echo "fuzz $name: FAILED; the crashing input is in $artifacts/, the log in $log:" >&2
    tail -n 40 "$log" >&2
    status=1
  fi
  rm -f "$BUILD_DIR"/fuzz/fuzz-*.log
  if [ "$MERGE" = 1 ]; then
    before=$(ls "$seeds" | wc -l)
    # Edges only, not hit counts (-use_counters=0), so that the committed corpus stays small.
    "$bin" -merge=1 -use_counters=0 -rss_limit_mb=2048 "$seeds" "$work" >"$log.merge" 2>&1
    echo "fuzz $name: corpus $before -> $(ls "$seeds" | wc -l) files in tests/fuzz/corpus/$name"
  fi
done
exit $status
