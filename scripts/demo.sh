#!/usr/bin/env bash
# The demo: sets up, builds, generates a synthetic dataset (100K nodes, 1M edges, 47 classes)
# and cuts it into 2 partitions with METIS. Output goes to demo/ (or $FANOUT_DEMO_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
DEMO=${FANOUT_DEMO_DIR:-demo}
BIN=${FANOUT_BUILD_DIR:-build}/bin
mkdir -p "$DEMO"
echo "== generating a synthetic dataset in $DEMO/dataset"
"$BIN/fanout-generate" --preset small --out "$DEMO/dataset" --overwrite
echo "== partitioning it into 2 with METIS into $DEMO/parts"
"$BIN/fanout-partition" --input "$DEMO/dataset" --num-parts 2 --out "$DEMO/parts" \
  --graph-name demo --add-reverse-edges --duplicate-edges remove --overwrite
echo "== done: partition config at $DEMO/parts/demo.json"
