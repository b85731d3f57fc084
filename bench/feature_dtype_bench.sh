#!/usr/bin/env bash
# What smaller stored features (fanout-partition --feature-dtype, issue 40) cost in accuracy and
# buy in bytes and time (docs/benchmarks.md, "Compressed features"): the same graph partitioned
# four times (float32, float16, bfloat16, int8; the same METIS seed, so the same partitions), then
# the same 2-machine loopback job on each (setup A's model: 3-layer GraphSAGE, hidden 256, fanouts
# 15,10,5, batch 1024, 1 server + 1 trainer + 1 sampler per machine), in one run, side by side.
#   bench/feature_dtype_bench.sh [DATASET_DIR] [EPOCHS]
# Without DATASET_DIR it generates the products-scale graph (fanout-generate --preset products)
# under $TMPDIR/fanout-feature-dtype-bench. Prints, per dtype: the feature bytes per partition,
# the mean epoch time after the first, the validation accuracy after each epoch (the test split,
# 2.08M nodes, is not evaluated: it would take longer than the training), and the largest
# per-machine memory (PSS) fanout-launch reports.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "${FANOUT_BUILD_DIR:-build}/bin" && pwd)
WORK=${TMPDIR:-/tmp}/fanout-feature-dtype-bench
DATA=${1:-}
EPOCHS=${2:-4}
DTYPES=${FEATURE_DTYPES:-float32 float16 bfloat16 int8}
mkdir -p "$WORK"
if [ -z "$DATA" ]; then
  DATA=$WORK/data
  [ -f "$DATA/edges.npy" ] || "$BIN/fanout-generate" --preset products --out "$DATA" --overwrite
fi
DATA=$(realpath "$DATA")
printf '127.0.0.1 35150\n127.0.0.2 35150\n' > "$WORK/ip_config.txt"
printf '%-9s %13s %9s %-28s %15s\n' dtype "feat MB/part" "epoch s" "val acc by epoch" "machine PSS GB"
for dtype in $DTYPES; do
  parts=$WORK/parts-$dtype
  [ -f "$parts/g.json" ] || "$BIN/fanout-partition" --input "$DATA" --num-parts 2 --out "$parts" --graph-name g \
    --add-reverse-edges --feature-dtype "$dtype" --overwrite --quiet
  feat_mb=$(du -m "$parts/part0/node_data/feat.npy" | cut -f1)
  rm -rf "$WORK/logs-$dtype" "$WORK/metrics-$dtype.jsonl"
  out=$(cd "$WORK" && "$BIN/fanout-launch" --ip-config ip_config.txt --part-config "$parts/g.json" --num-servers 1 \
    --num-trainers 1 --num-samplers 1 --log-dir "logs-$dtype" -- \
    "$BIN/fanout-train" --model sage --fanouts 15,10,5 --hidden 256 --batch-size 1024 --epochs "$EPOCHS" \
    --eval-every 1 --no-test --metrics-file "metrics-$dtype.jsonl" --seed 0 2>&1)
  epoch=$(echo "$out" | grep -E '^\[m0 trainer 0\] epoch [0-9]+ \|' | tail -n +2 |
    sed -E 's/.*\| ([0-9.]+) s \(.*/\1/' | awk '{s+=$1; n++} END {if (n) printf "%.1f", s/n; else print "-"}')
  val=$(echo "$out" | grep -E '^\[m0 trainer 0\] epoch [0-9]+ \|' | grep -oE 'val acc [0-9.]+' | awk '{print $3}' | paste -sd' ')
  pss=$(echo "$out" | grep -oE 'machine [0-9]+ .*peak PSS [0-9.]+ GB' | grep -oE '[0-9.]+ GB' | sort -g | tail -1)
  printf '%-9s %13s %9s %-28s %15s\n' "$dtype" "$feat_mb" "$epoch" "${val:--}" "${pss:--}"
  echo "$out" | grep -E "error|Error" | head -3 || true
done
