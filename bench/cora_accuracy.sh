#!/usr/bin/env bash
# GraphSAGE accuracy on Cora (planetoid split, reverse edges) trained through fanout-launch:
# 2 partitions x 1 trainer on the loopback machines 127.0.0.1/127.0.0.2, against 1 partition x 1
# trainer, several seeds each; prints every run's test accuracy and the means.
#   bench/cora_accuracy.sh [CORA_DIR] [SEEDS]     (default ../shared/data/cora, "0 1 2 3 4")
#   FANOUT_MODEL=/abs/path/sage.pt bench/cora_accuracy.sh    # a scripted model instead of --model sage
set -euo pipefail
cd "$(dirname "$0")/.."
CORA=${1:-../shared/data/cora}
SEEDS=${2:-0 1 2 3 4}
BIN=$(cd "${FANOUT_BUILD_DIR:-build}/bin" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
TRAIN=(--model "${FANOUT_MODEL:-sage}" --fanouts 10,10 --hidden 64 --lr 0.01 --weight-decay 5e-4 --batch-size 32 --epochs 60
       --eval-fanouts -1,-1 --threads 1)
declare -A SUM
for parts in 1 2; do
  "$BIN/fanout-partition" --input "$CORA" --num-parts "$parts" --out "$WORK/p$parts" \
    --add-reverse-edges --graph-name cora --quiet
  : > "$WORK/ip$parts.txt"
  for m in $(seq 1 "$parts"); do echo "127.0.0.$m 34050" >> "$WORK/ip$parts.txt"; done
  SUM[$parts]=0
  for seed in $SEEDS; do
    acc=$(cd "$WORK" && "$BIN/fanout-launch" --ip-config "ip$parts.txt" --part-config "p$parts/cora.json" \
            --num-servers 1 --num-trainers 1 --log-dir "logs$parts-$seed" -- \
            "$BIN/fanout-train" "${TRAIN[@]}" --seed "$seed" 2>&1 |
          sed -n 's/.*fanout-train: test accuracy \([0-9.]*\).*/\1/p')
    echo "partitions $parts seed $seed test accuracy $acc"
    SUM[$parts]=$(python3 -c "print(${SUM[$parts]} + $acc)")
  done
done
n=$(echo $SEEDS | wc -w)
python3 -c "a=${SUM[1]}/$n; b=${SUM[2]}/$n; print(f'mean test accuracy: 1 partition {a:.4f}, 2 partitions {b:.4f}, difference {100*(b-a):+.2f} points')"
