#!/usr/bin/env bash
# The demo: sets up, builds, generates a synthetic dataset (100K nodes, 1M edges, 47 classes),
# cuts it into 2 partitions with METIS, and trains GraphSAGE on it as a two-machine job on this
# host: fanout-launch starts a graph server and a trainer for each of the loopback "machines"
# 127.0.0.1 and 127.0.0.2, prints per-epoch progress and the final test accuracy. Output goes to
# demo/ (or $FANOUT_DEMO_DIR); FANOUT_DEMO_EPOCHS and FANOUT_DEMO_PORT change the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
DEMO=${FANOUT_DEMO_DIR:-demo}
BIN=$(cd "${FANOUT_BUILD_DIR:-build}/bin" && pwd)
EPOCHS=${FANOUT_DEMO_EPOCHS:-10}
PORT=${FANOUT_DEMO_PORT:-30050}
mkdir -p "$DEMO"
echo "== generating a synthetic dataset in $DEMO/dataset"
"$BIN/fanout-generate" --preset small --out "$DEMO/dataset" --overwrite
echo "== partitioning it into 2 with METIS into $DEMO/parts"
"$BIN/fanout-partition" --input "$DEMO/dataset" --num-parts 2 --out "$DEMO/parts" \
  --graph-name demo --add-reverse-edges --duplicate-edges remove --overwrite
printf '# two "machines" on this host: machine k serves partition k\n127.0.0.1 %s\n127.0.0.2 %s\n' \
  "$PORT" "$PORT" > "$DEMO/ip_config.txt"
echo "== training GraphSAGE for $EPOCHS epochs: 2 machines x (1 server + 1 trainer)"
cd "$DEMO"
"$BIN/fanout-launch" --ip-config ip_config.txt --part-config parts/demo.json \
  --num-servers 1 --num-trainers 1 --num-samplers 1 --log-dir logs -- \
  "$BIN/fanout-train" --model sage --fanouts 10,5 --hidden 128 --batch-size 512 --epochs "$EPOCHS" \
  --lr 0.003 --metrics-file metrics.jsonl --checkpoint-dir checkpoints
echo "== done: logs in $DEMO/logs, metrics in $DEMO/metrics.jsonl, checkpoints in $DEMO/checkpoints"
