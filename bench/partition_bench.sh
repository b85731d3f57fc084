#!/usr/bin/env bash
# Partitioner benchmark (docs/benchmarks.md): on a products-scale synthetic graph, total wall
# time and peak RSS of fanout-partition side by side with a plain METIS_PartGraphKway call on
# the same graph, in the same run. Runs the pair ROUNDS times, alternating, and prints ratios.
#
#   bench/partition_bench.sh [--preset products|small] [--parts 4] [--rounds 1] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=products PARTS=4 ROUNDS=1 WORK=${TMPDIR:-/tmp}/fanout-bench EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) PRESET=$2; shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --no-balance-train) EXTRA+=(--no-balance-train); shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
BIN=${FANOUT_BUILD_DIR:-build}/bin
[ -x "$BIN/metis_baseline" ] || bash scripts/build.sh
DATA=$WORK/$PRESET
mkdir -p "$WORK"
if [ ! -f "$DATA/edges.npy" ]; then
  echo "== generating the $PRESET dataset in $DATA"
  "$BIN/fanout-generate" --preset "$PRESET" --out "$DATA" --overwrite
fi
echo "== $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; dataset: $DATA"

now() { date +%s.%N; }
for round in $(seq 1 "$ROUNDS"); do
  t0=$(now)
  base=$("$BIN/metis_baseline" --input "$DATA" --num-parts "$PARTS" "${EXTRA[@]}")
  t1=$(now)
  "$BIN/fanout-partition" --input "$DATA" --num-parts "$PARTS" --out "$WORK/parts" \
    --add-reverse-edges --overwrite --quiet "${EXTRA[@]}" > "$WORK/summary.txt"
  t2=$(now)
  metis_s=$(echo "$base" | sed -n 's/^metis_seconds=//p')
  metis_rss=$(echo "$base" | sed -n 's/^peak_rss_bytes=//p')
  part_rss=$(sed -n 's/^peak memory:.*RSS, \([0-9]*\) bytes.*/\1/p' "$WORK/summary.txt")
  part_s=$(echo "$t2 - $t1" | bc -l)
  base_proc_s=$(echo "$t1 - $t0" | bc -l)
  echo "-- round $round"
  sed 's/^/   /' "$WORK/summary.txt"
  printf '   metis_baseline:   METIS call %.1fs (whole process %.1fs), peak RSS %.2f GiB, %s constraint(s)\n' \
    "$metis_s" "$base_proc_s" "$(echo "$metis_rss/1073741824" | bc -l)" "$(echo "$base" | sed -n 's/^constraints=//p')"
  printf '   fanout-partition: total %.1fs (process wall), peak RSS %.2f GiB\n' \
    "$part_s" "$(echo "$part_rss/1073741824" | bc -l)"
  printf '   ratios: time %.2fx the METIS call (target <= 1.5), peak RSS %.2fx METIS alone (target <= 2)\n' \
    "$(echo "$part_s/$metis_s" | bc -l)" "$(echo "$part_rss/$metis_rss" | bc -l)"
done
