#!/usr/bin/env bash
# Test accuracy on ../shared/data/imdb (a real typed graph): R-GCN with learnable embeddings for
# the featureless directors and actors, 1 partition x 1 trainer against 2 x 1 on loopback
# through fanout-launch (servers --allow-push: the embeddings live there), the same global batch,
# SEEDS seeds each; also R-GCN without embeddings (featureless nodes input zeros) and GraphSAGE
# on the same blocks (types ignored). Prints mean and standard deviation per setting. Settings
# after EPOCHS replace those three, e.g. "rgat --embed-featureless 64 --sparse-lr 0.01" "hgt --heads 8".
#   bench/typed/imdb_accuracy.sh [SEEDS=5] [EPOCHS=20] [SETTING...]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FANOUT_BIN:-$here/build/bin}
data=${IMDB_DIR:-$here/../shared/data/imdb}
seeds=${1:-5}
epochs=${2:-20}
[ -f "$data/raw/num-node-dict.csv.gz" ] || { echo "no imdb dataset at $data" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=$((32000 + RANDOM % 2000))
for k in 1 2; do
  "$bin/fanout-partition" --input "$data" --num-parts $k --out "$work/p$k" --add-reverse-edges --normalize-features --quiet
  : > "$work/ip$k.txt"
  for m in $(seq 1 $k); do echo "127.0.0.1 $((port + 100 * m))" >> "$work/ip$k.txt"; done
done
run() {  # parts model extra-flags... -> test accuracy per seed on stdout
  local k=$1 model=$2; shift 2
  for s in $(seq 0 $((seeds - 1))); do
    "$bin/fanout-launch" --ip-config "$work/ip$k.txt" --part-config "$work/p$k/imdb.json" --allow-push \
      --log-dir "$work/logs" -- "$bin/fanout-train" --model "$model" --fanouts 10,10 --hidden 64 --lr 0.005 \
      --batch-size $((256 / k)) --epochs "$epochs" --seed "$s" --num-threads 1 "$@" 2>&1 |
      sed -n 's/.*fanout-train: test accuracy \([0-9.]*\).*/\1/p'
  done
}
stats() { awk '{s += $1; q += $1 * $1; n++} END {m = s / n; printf "%.4f +- %.4f (n=%d)\n", m, sqrt(q / n - m * m), n}'; }
settings=("rgcn --embed-featureless 64 --sparse-lr 0.01" "rgcn" "sage")
[ $# -gt 2 ] && settings=("${@:3}")
for setting in "${settings[@]}"; do
  for k in 1 2; do
    # shellcheck disable=SC2086
    printf '%-45s %d partition(s): %s\n' "$setting" $k "$(run $k $setting | stats)"
  done
done
