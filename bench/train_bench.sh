#!/usr/bin/env bash
# Epoch time of distributed training with its breakdown (docs/benchmarks.md): 3-layer GraphSAGE,
# hidden 256, fanouts 15,10,5, batch 1024, on the products-scale synthetic graph cut into 2
# partitions, 1 server + 1 trainer on each of the loopback machines 127.0.0.1 and 127.0.0.2.
#   bench/train_bench.sh [PART_CONFIG] [EPOCHS] [SAMPLERS]
# Without PART_CONFIG it generates and partitions the graph under $TMPDIR/fanout-train-bench.
# Extra fanout-train flags can be passed in FANOUT_TRAIN_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "${FANOUT_BUILD_DIR:-build}/bin" && pwd)
WORK=${TMPDIR:-/tmp}/fanout-train-bench
CONFIG=${1:-}
EPOCHS=${2:-1}
SAMPLERS=${3:-1}
mkdir -p "$WORK"
if [ -z "$CONFIG" ]; then
  [ -f "$WORK/data/edges.npy" ] || "$BIN/fanout-generate" --preset products --out "$WORK/data" --overwrite
  [ -f "$WORK/parts/products.json" ] || "$BIN/fanout-partition" --input "$WORK/data" --num-parts 2 \
    --out "$WORK/parts" --add-reverse-edges --graph-name products --overwrite
  CONFIG=$WORK/parts/products.json
fi
CONFIG=$(realpath "$CONFIG")
printf '127.0.0.1 35050\n127.0.0.2 35050\n' > "$WORK/ip_config.txt"
cd "$WORK"
rm -rf logs metrics.jsonl
"$BIN/fanout-launch" --ip-config ip_config.txt --part-config "$CONFIG" --num-servers 1 --num-trainers 1 \
  --num-samplers "$SAMPLERS" --log-dir logs -- \
  "$BIN/fanout-train" --model sage --fanouts 15,10,5 --hidden 256 --batch-size 1024 --epochs "$EPOCHS" \
  --eval-every 0 --no-test --metrics-file metrics.jsonl ${FANOUT_TRAIN_FLAGS:-} 2>&1 | grep -E "trainer 0\] (epoch|fanout-train)|fanout-launch: machine|error"
echo "metrics: $WORK/metrics.jsonl"
