#!/usr/bin/env bash
# HGT: fanout-train --model hgt against the same model written with PyG's HGTConv (pyg_hgt.py),
# both fed fanout's typed batches on the same partitions and machines (issue 44; docs/benchmarks.md).
#
#   bench/typed/hgt_vs_pyg.sh PART_CONFIG PYG_PYTHON [EPOCHS] [ROUNDS]
#
# PART_CONFIG: a typed fanout partition in 2 parts (bench/vs_dgl/run.sh --setups H makes the
# mag-shaped one: $TMPDIR/fanout-vs-dgl/mag-scale0.1/fanout-2/mag.json). PYG_PYTHON: an
# interpreter with torch, torch_geometric and fanout's Python package (pip install ./python).
# 2 loopback machines x (1 server, 1 trainer, 1 sampler process), 1 intra-op thread; HGT 2 layers,
# hidden 64 in 4 heads, fanouts 25,15 per relation (input layer first), batch 1024, Adam 0.01, no
# dropout, featureless types input zeros; jobs alternate fanout, PyG, fanout, ...
#
# The PyG trainers run on jemalloc (Debian's libjemalloc2, decay off) where it is installed:
# under glibc's allocator their heap grows with every batch shape (3.2 GB after one step,
# 12 GB per trainer after 5 epochs: the kernel's OOM killer ended a 6-epoch run on 24 GiB),
# while on jemalloc it stays at 3.5 GB, at the same speed. PYG_PRELOAD= (empty) turns it off.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${FANOUT_BUILD_DIR:-$HERE/../../build}/bin" && pwd)
CONFIG=$(realpath "${1:?usage: hgt_vs_pyg.sh PART_CONFIG PYG_PYTHON [EPOCHS] [ROUNDS]}")
PY=${2:?usage: hgt_vs_pyg.sh PART_CONFIG PYG_PYTHON [EPOCHS] [ROUNDS]}
EPOCHS=${3:-3}
ROUNDS=${4:-1}
WORK=${TMPDIR:-/tmp}/fanout-hgt-vs-pyg
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
PYG_PRELOAD=${PYG_PRELOAD-$([ -e $JEMALLOC ] && echo $JEMALLOC)}
PYG_ENV=()
[ -n "$PYG_PRELOAD" ] && PYG_ENV=(env "LD_PRELOAD=$PYG_PRELOAD" "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1")
mkdir -p "$WORK"
printf '127.0.0.1 35750\n127.0.0.2 35750\n' >"$WORK/ip_config.txt"
launch() {  # LOGDIR PROGRAM...
  "$BIN/fanout-launch" --ip-config "$WORK/ip_config.txt" --part-config "$CONFIG" --num-servers 1 --num-trainers 1 \
    --num-samplers 1 --num-omp-threads 1 --allow-push --log-dir "$1" -- "${@:2}"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r: fanout-train --model hgt"
  launch "$WORK/r$r-fanout" "$BIN/fanout-train" --model hgt --heads 4 --hidden 64 --fanouts 25,15 --batch-size 1024 \
    --lr 0.01 --dropout 0 --embed-featureless 0 --epochs "$EPOCHS" --eval-every "$EPOCHS" --no-test --threads 1 \
    --num-samplers 1 2>&1 | grep -E "trainer 0\] (epoch|fanout-train: graph)|error" || true
  echo "== round $r: PyG HGTConv (pyg_hgt.py)${PYG_PRELOAD:+ on $PYG_PRELOAD}"
  launch "$WORK/r$r-pyg" "${PYG_ENV[@]}" "$PY" "$HERE/pyg_hgt.py" --part-config "$CONFIG" --fanouts 25,15 --hidden 64 --heads 4 \
    --batch-size 1024 --lr 0.01 --epochs "$EPOCHS" --threads 1 2>&1 |
    grep -E "trainer 0\] (pyg_hgt|epoch|validation)|Error|error" || true
done
