#!/usr/bin/env bash
# fanout against DGL 2.1 / DistDGL, side by side on one host (bench/vs_dgl/README.md).
#
#   bench/vs_dgl/run.sh [--rounds R] [--setups A,B,C] [--epochs E] [--quick] [--fresh]
#                       [--timeout S] [--work DIR] [--venv DIR] [--mag-scale S]
#                       [--size products | --nodes N --edges E] [--dgl-parts metis|assignment|convert]
#                       [--pss] [--cpu] [--graphbolt] [--rgcn-example FILE] [--sage-example FILE]
#                       [--pyg-python PYTHON] [--glibc-env] [--sampler-nice N]
#
# Setups (GraphSAGE-mean, Adam lr 0.003, dropout 0.5, batch 1024 per trainer, 1 intra-op
# thread and 1 sampler process per trainer, on both sides):
#   A  2 loopback machines (127.0.0.1, 127.0.0.2) x (1 server + 1 trainer), 2 METIS parts;
#      3 layers, hidden 256, fanouts 15,10,5.            fanout-launch  vs  DistDGL
#   B  1 machine, 2 trainers; same model as A.          fanout-launch, 1 part, 1 server
#                                                        vs  DGL DataLoader + torch DDP (Gloo)
#   C  as A with 2 layers, hidden 16, fanouts 15,10 (data-bound).
#   P  as A, with DistDGL's own Python training script (dgl_dist_train.py: dgl.nn.SAGEConv, the
#      same loop) on both sides: on fanout started by fanout-launch with --data-plane fanout
#      (fanout.distributed's loader), against the same script on DistDGL. P's DistDGL job is A's.
#   M  as P, with DistDGL's processes given the allocator setting fanout.distributed.initialize
#      makes (glibc keeps freed buffers up to 1 GiB; MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_):
#      the data plane's own share of P's ratio. Not in the default list.
#   H  typed graph: R-GCN on the ogbn-mag-shaped graph (fanout-generate --preset mag --scale S,
#      default 0.1, --quick 0.02; reverse relations), 2 loopback machines x (1 server + 1
#      trainer), 2 METIS parts; 2 layers, hidden 64, fanouts 25,15 per relation, Adam 0.01,
#      64-wide learnable rows for the featureless types (sparse Adam 0.06).
#      fanout-train --model rgcn --embed-featureless 64  vs  DistDGL's R-GCN (dgl_rgcn_train.py:
#      DGL's examples/distributed/rgcn shape, DistEmbedding + SparseAdam). Not in the default list.
#   R  as H with R-GAT (4 heads of 16): fanout-train --model rgat --heads 4  vs  the same model on
#      DistDGL (dgl_rgcn_train.py --model rgat: HeteroGraphConv({rel: GATConv}) plus the
#      destination's own projection, DGL's MAG240M / MLPerf R-GAT shape). Not in the default list.
#   L  link prediction on A's graph and machines: SAGE 3x256 (256-wide embeddings), fanouts 15,10,5,
#      Adam lr 0.0003, no dropout,
#      dot scores, 1 uniform negative per positive, BCE, the positives and their reverses left out
#      of the blocks; --link-edges positives per trainer per epoch (default 40960 = 40 steps;
#      --quick 10240); the held-out pairs (link_split.py: 2000 test pairs, 100 given negatives
#      each) removed from both sides' partitions; test MRR after the last epoch.
#      fanout-train --task link  vs  DistDGL's DistEdgeDataLoader (dgl_link_train.py). Not in the
#      default list.
#   X  DGL's own distributed R-GCN example (DGL 2.1.0's examples/pytorch/rgcn/experimental/
#      entity_classify_dist.py, given by --rgcn-example FILE: DGL's wheels do not ship it) on H's
#      graph, machines and model (2 layers, hidden 64, fanouts 25,15, batch 1024, Adam 0.01,
#      DistEmbedding rows for the featureless types with DGL's SparseAdam 0.06, dropout 0.5, self
#      loop): on fanout with its imports changed (a sed: `import fanout.distributed as fdist`,
#      `dgl.distributed.X` and the two dgl.dataloading names -> `fdist.X`), started by
#      fanout-launch; unmodified on DistDGL, on a copy of H's DGL partitions whose paper/label is
#      named paper/labels as the example reads it (dgl_rename_fields.py). The epoch is the
#      example's own "Epoch Time(s)" (its steps, evaluation excluded; example_metrics.py). Needs
#      ogb and tqdm in the virtualenv (installed on first use). Not in the default list.
#   S  DGL's own distributed GraphSAGE example (DGL 2.1.0's examples/distributed/graphsage/
#      node_classification.py, given by --sage-example FILE) on A's graph and machines with A's
#      model (--num_hidden 256 --num_layers 3 --fan_out 15,10,5 --batch_size 1024 --lr 0.003
#      --dropout 0.5): on fanout with its imports changed (the sed of X), started by fanout-launch
#      on A's fanout partitions; unmodified on DistDGL, on a copy of A's DGL partitions with the
#      fields named features / labels as the example reads them. Epoch = the example's own "Epoch
#      Time(s)" (its loop; its layer-wise evaluation after the last epoch excluded). Not in the
#      default list.
#   Y  the same model as S written with PyG (pyg_sage_train.py: PyG's SAGEConv layer by layer on
#      the sparse adj_t of each block, fanout.pyg's DistNeighborLoader(adjs=True)) under
#      --pyg-python PYTHON (a Python with torch_geometric and fanout's package, e.g. a venv after
#      `pip install torch torch_geometric ./python`); no DistDGL job of its own: its ratio is
#      against S's DistDGL job of the same round, so list it after S. Not in the default list.
#   G  A's DistDGL job on GraphBolt partitions (DGL 2.1's dgl_partition_to_graphbolt of the DGL
#      partitions; initialize(use_graphbolt=True)); no fanout job of its own: its ratio is
#      against A's fanout job of the same round. Not in the default list.
#   E  A's fanout job with fanout's memory-lean settings (fanout-train --prefetch 1
#      --feature-cache-mb 128: one batch made ahead per sampler process, a 128 MiB halo row cache
#      instead of 512); no DistDGL job of its own: its ratios are against A's DistDGL job (and G's)
#      of the same round, so list it after A (and G). Not in the default list.
# Dataset: ogbn-products' shape at 500K nodes / 25M input edges (--quick: 50K / 2.5M);
# --size products: the products-scale graph (2,449,029 nodes, 61,859,140 input edges, as
# fanout-generate --preset products; default per-job timeout 3600 s); --nodes N --edges E: any.
# --dgl-parts: DistDGL's 2 partitions from DGL's partition_graph with METIS (metis, the default),
# from partition_graph with fanout-partition's node assignment (assignment:
# dgl_partition.py --assignment), or converted from fanout's partitions without partition_graph
# (convert: fanout_to_dgl.py, for graphs whose partition_graph does not fit the machine).
# --pss: sample each machine's processes' PSS together every second (pss_peak.py, the same
# method for both sides) and report each machine's peak.
# --cpu: CPU seconds each machine's processes used, by role (servers, trainers, sampler processes;
# fanout-launch, which serves both loopback machines, on its own), for both sides: where the
# cores went (pss_peak.py --cpu; without --pss it reads no smaps, so the jobs do not pay for it).
# --glibc-env: every process of every job, both sides, started with glibc's allocator variables
# (MALLOC_MMAP_THRESHOLD_=MALLOC_TRIM_THRESHOLD_=1073741824: freed buffers of up to 1 GiB kept
# for reuse, what fanout.distributed.initialize sets in-process and setup M gives DistDGL alone).
# --sampler-nice N: fanout's jobs with fanout-launch --sampler-nice N (their sampler processes' priority
# below the trainers'; unset: fanout's default, 10; 0: the trainers' own).
# --graphbolt: DistDGL's best configuration as well: each DistDGL job of A, C, H and R is followed
# by the same job on GraphBolt partitions (as G for A); the summary's baseline for a setup is the
# faster of the two (by median epoch), both ratios printed.
# Jobs alternate fanout, DGL, fanout, DGL, ... The epoch time reported is the mean of the epochs
# after the first (evaluation excluded); validation accuracy is measured after the last epoch.
#
# Environment: FANOUT_BUILD_DIR (default: <repo>/build), FANOUT_VS_DGL_PORT (first port used,
# default 37050; each job uses the next 10), PYTHON (interpreter for the virtualenv, python3).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${FANOUT_BUILD_DIR:-$REPO/build}/bin" 2>/dev/null && pwd) || {
  echo "run.sh: no fanout build at ${FANOUT_BUILD_DIR:-$REPO/build}/bin (scripts/build.sh)" >&2
  exit 1
}
ROUNDS=1 SETUPS=A,B,C EPOCHS=2 QUICK=0 FRESH=0 TIMEOUT= LINK_EDGES=
SIZE= NODES= EDGES= DGL_PARTS=metis PSS=0 CPU=0 GRAPHBOLT=0
WORK=${TMPDIR:-/tmp}/fanout-vs-dgl
VENV=
MAG_SCALE=
RGCN_EXAMPLE=
SAGE_EXAMPLE=
PYG_PY=
GLIBC_ENV=()
SAMPLER_NICE=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --setups) SETUPS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --fresh) FRESH=1; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    --mag-scale) MAG_SCALE=$2; shift 2 ;;
    --link-edges) LINK_EDGES=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --edges) EDGES=$2; shift 2 ;;
    --dgl-parts) DGL_PARTS=$2; shift 2 ;;
    --pss) PSS=1; shift ;;
    --cpu) CPU=1; shift ;;
    --graphbolt) GRAPHBOLT=1; shift ;;
    --rgcn-example) RGCN_EXAMPLE=$2; shift 2 ;;
    --sage-example) SAGE_EXAMPLE=$2; shift 2 ;;
    --pyg-python) PYG_PY=$2; shift 2 ;;
    --glibc-env) GLIBC_ENV=(MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824); shift ;;
    --sampler-nice) SAMPLER_NICE=(--sampler-nice "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --rounds must be a positive integer" >&2; exit 2; }
[[ $EPOCHS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --epochs must be a positive integer" >&2; exit 2; }
IFS=, read -r -a SETUP_LIST <<<"$SETUPS"
for s in "${SETUP_LIST[@]}"; do
  [[ $s =~ ^[ABCPMHRLGEXSY]$ ]] || { echo "run.sh: unknown setup '$s' (A, B, C, P, M, H, R, L, G, E, X, S or Y)" >&2; exit 2; }
  if [ "$s" = S ]; then
    [ -n "$SAGE_EXAMPLE" ] || { echo "run.sh: setup S needs --sage-example FILE: DGL 2.1.0's examples/distributed/graphsage/node_classification.py (git -C DGL_CLONE show v2.1.0:examples/distributed/graphsage/node_classification.py > FILE)" >&2; exit 2; }
    grep -q "class DistSAGE" "$SAGE_EXAMPLE" 2>/dev/null || { echo "run.sh: --sage-example $SAGE_EXAMPLE is not DGL's distributed GraphSAGE example" >&2; exit 2; }
    SAGE_EXAMPLE=$(cd "$(dirname "$SAGE_EXAMPLE")" && pwd)/$(basename "$SAGE_EXAMPLE")
  fi
  if [ "$s" = Y ]; then
    [ -n "$PYG_PY" ] && "$PYG_PY" -c 'import torch_geometric, fanout._native' 2>/dev/null || {
      echo "run.sh: setup Y needs --pyg-python PYTHON with torch_geometric and fanout's package (pip install torch torch_geometric ./python)" >&2; exit 2; }
  fi
  if [ "$s" = X ]; then
    [ -n "$RGCN_EXAMPLE" ] || { echo "run.sh: setup X needs --rgcn-example FILE: DGL 2.1.0's examples/pytorch/rgcn/experimental/entity_classify_dist.py (git -C DGL_CLONE show v2.1.0:examples/pytorch/rgcn/experimental/entity_classify_dist.py > FILE)" >&2; exit 2; }
    [ -f "$RGCN_EXAMPLE" ] || { echo "run.sh: --rgcn-example $RGCN_EXAMPLE: no such file" >&2; exit 2; }
    grep -q "def main(args)" "$RGCN_EXAMPLE" && grep -q "dgl.distributed.DistEmbedding" "$RGCN_EXAMPLE" || {
      echo "run.sh: --rgcn-example $RGCN_EXAMPLE is not DGL's entity_classify_dist.py" >&2; exit 2; }
    RGCN_EXAMPLE=$(cd "$(dirname "$RGCN_EXAMPLE")" && pwd)/$(basename "$RGCN_EXAMPLE")
  fi
done
case $DGL_PARTS in metis | assignment | convert) ;; *) echo "run.sh: --dgl-parts must be metis, assignment or convert" >&2; exit 2 ;; esac
case $SIZE in
  "") ;;
  products)
    [ -z "$NODES$EDGES" ] && [ "$QUICK" = 0 ] || { echo "run.sh: --size products goes with neither --nodes/--edges nor --quick" >&2; exit 2; }
    NODES=2449029 EDGES=61859140 ;;
  *) echo "run.sh: --size must be products" >&2; exit 2 ;;
esac
if [ -n "$NODES$EDGES" ]; then
  [[ $NODES =~ ^[1-9][0-9]*$ && $EDGES =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --nodes and --edges go together, positive integers" >&2; exit 2; }
  [ "$QUICK" = 0 ] || { echo "run.sh: --quick sets the size itself" >&2; exit 2; }
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# One run at a time per work folder (jobs use fixed loopback ports, and the caches are shared).
exec 9>"$WORK/.lock"
flock -n 9 || { echo "run.sh: another run.sh is using $WORK" >&2; exit 1; }
VENV=${VENV:-$WORK/venv}

# Dataset size: ogbn-products' shape (100 float32 features, 47 classes, 10/5/85 % split) at
# 500K nodes and 25M input edges (50M stored with reverse edges); --quick: 50K and 2.5M.
# --size products / --nodes N --edges E: another size, same shape.
if [ -n "$NODES" ]; then
  TIMEOUT=${TIMEOUT:-$([ "$NODES" -gt 1000000 ] && echo 3600 || echo 1200)}
elif [ "$QUICK" = 1 ]; then
  NODES=50000 EDGES=2500000 TIMEOUT=${TIMEOUT:-300}
else
  NODES=500000 EDGES=25000000 TIMEOUT=${TIMEOUT:-1200}
fi
NAME=vsdgl
DATA=$WORK/data-n$NODES-e$EDGES
PARTS=$WORK/parts-n$NODES-e$EDGES
# DistDGL's 2 partitions (--dgl-parts): DGL's METIS, DGL's partition_graph on fanout's node
# assignment, or converted from fanout's partitions.
case $DGL_PARTS in
  metis) DGLP=$PARTS/dgl-2 ;;
  assignment) DGLP=$PARTS/dgl-2-assign ;;
  convert) DGLP=$PARTS/dgl-2-conv ;;
esac
# Setup H's typed graph and its partitions.
if [ -z "$MAG_SCALE" ]; then MAG_SCALE=$([ "$QUICK" = 1 ] && echo 0.02 || echo 0.1); fi
[[ $MAG_SCALE =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "run.sh: --mag-scale must be a positive number" >&2; exit 2; }
MAG=$WORK/mag-scale$MAG_SCALE
# Setup L: positives per trainer per epoch, and the held-out pairs (both sides' partitions leave
# them out).
LINK_EDGES=${LINK_EDGES:-$([ "$QUICK" = 1 ] && echo 10240 || echo 40960)}
[[ $LINK_EDGES =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --link-edges must be a positive integer" >&2; exit 2; }
SPLIT=$PARTS/link-split
# A's learning rate and dropout (0.003, 0.5) let the dot products of 256-wide embeddings of these
# unnormalised features blow up in the first steps and then collapse to 0 (loss log 2, test MRR
# at chance on both sides); this rate without dropout learns (docs/benchmarks.md).
LINK_LR=0.0003
PY=$VENV/bin/python
PORT0=${FANOUT_VS_DGL_PORT:-37050}
STAMP=$(date +%Y%m%d-%H%M%S)
RUN=$WORK/runs/$STAMP
mkdir -p "$RUN"
RESULTS=$RUN/results.tsv
: >"$RESULTS"

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }

# ---- process control: every job is a process group of its own, killed whole on exit ----------
GROUPS_RUNNING=()
kill_group() {  # PGID: TERM the group, then KILL what is left after 5 s
  local g=$1
  kill -0 -- "-$g" 2>/dev/null || return 0
  kill -TERM -- "-$g" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -- "-$g" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -KILL -- "-$g" 2>/dev/null || true
}
cleanup() {
  local g
  for g in "${GROUPS_RUNNING[@]}"; do kill_group "$g"; done
  GROUPS_RUNNING=()
  [ -z "${PSS_PID:-}" ] || kill -TERM "$PSS_PID" 2>/dev/null || true
}
trap 'cleanup' EXIT
trap 'echo; log "interrupted: stopping every job process"; cleanup; exit 130' INT TERM HUP
# start_group LOGFILE CMD...: runs CMD in a new session (so its process group is its own) under a
# timeout; sets STARTED to its PID (= PGID).
start_group() {
  local out=$1
  shift
  setsid timeout -k 10 "$TIMEOUT" "$@" >"$out" 2>&1 </dev/null 9>&- &
  STARTED=$!
  GROUPS_RUNNING+=("$STARTED")
}
forget_group() {
  local g keep=()
  for g in "${GROUPS_RUNNING[@]}"; do [ "$g" = "$1" ] || keep+=("$g"); done
  GROUPS_RUNNING=("${keep[@]}")
}
# Warn about (and stop) any process of this run left behind: its command line names $RUN.
check_leftovers() {
  local pids
  pids=$(pgrep -f -- "$RUN/" || true)
  if [ -n "$pids" ]; then
    log "WARNING: processes left behind after $1: $(echo $pids); stopping them"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    sleep 2
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
  fi
}

# ---- 1. virtualenv ------------------------------------------------------------------------------
# DGL 2.1.0 on PyPI with torch 2.2.1 (PyPI's wheel; the CPU-only index is not reachable here).
# dgl 2.1 imports torchdata.datapipes (gone after torchdata 0.7), pandas, pydantic and yaml
# without declaring them all.
PKGS=(torch==2.2.1 dgl==2.1.0 "numpy<2" torchdata==0.7.1 "pandas<3" "pydantic>=2,<3" pyyaml psutil)
ensure_venv() {
  if [ -f "$VENV/.vs_dgl_ok" ] && [ "$(cat "$VENV/.vs_dgl_ok")" = "${PKGS[*]}" ] && [ -x "$PY" ]; then
    return
  fi
  local python=${PYTHON:-python3}
  log "creating virtualenv $VENV (${PKGS[*]}; about 3 GB, a few minutes)"
  if ! "$python" -m venv --help >/dev/null 2>&1 || ! "$python" -c 'import ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get install -y python3-venv >/dev/null || { apt-get update >/dev/null && apt-get install -y python3-venv >/dev/null; }
    else
      echo "run.sh: '$python -m venv' does not work; install python3-venv" >&2
      exit 1
    fi
  fi
  rm -rf "$VENV"
  "$python" -m venv "$VENV"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet "${PKGS[@]}"
  DGLBACKEND=pytorch "$PY" -c 'import dgl, dgl.distributed, dgl.nn, torch; print("dgl", dgl.__version__, "torch", torch.__version__)'
  echo "${PKGS[*]}" >"$VENV/.vs_dgl_ok"
}

# ---- 2. dataset and partitions -------------------------------------------------------------
ensure_data() {
  if [ "$FRESH" = 1 ]; then rm -rf "$DATA" "$PARTS" "$MAG"; fi
  local need2=0 need1=0 needmag=0 needlink=0 needgb2=0 needex=0 needsage=0 s
  for s in "${SETUP_LIST[@]}"; do
    case $s in A | C | P | M | G | E | Y) need2=1 ;; S) need2=1 needsage=1 ;; B) need1=1 ;; H | R) needmag=1 ;; X) needmag=1 needex=1 ;; L) needlink=1 ;; esac
    if [ "$s" = G ] || { [ "$GRAPHBOLT" = 1 ] && has_graphbolt_job "$s"; }; then
      case $s in H | R) ;; *) needgb2=1 ;; esac
    fi
  done
  if [ $need1 = 1 ] || [ $need2 = 1 ] || [ $needlink = 1 ]; then
    if [ ! -f "$DATA/edges.npy" ]; then
      log "generating $DATA"
      "$BIN/fanout-generate" --out "$DATA" --overwrite --num-nodes "$NODES" --num-edges "$EDGES" \
        --feat-dim 100 --num-classes 47 --train-frac 0.1 --valid-frac 0.05 --seed 0
    fi
    mkdir -p "$PARTS"
  fi
  # fanout: the same METIS settings as DGL's partition_graph(balance_ntypes=train_mask,
  # balance_edges=True): nodes, training nodes and in-edges balanced.
  # Partitioning times and peak RSS are kept in $PARTS/partitioning.log (docs/benchmarks.md).
  if [ $need2 = 1 ] && [ ! -f "$PARTS/fanout-2/$NAME.json" ]; then
    log "fanout-partition: 2 METIS parts"
    /usr/bin/time -o "$PARTS/.time" -f "fanout-partition ($PARTS/fanout-2): %e s wall, %M KiB peak RSS" \
      "$BIN/fanout-partition" --input "$DATA" --out "$PARTS/fanout-2" --num-parts 2 --part-method metis \
      --add-reverse-edges --balance-train --balance-edges --graph-name "$NAME" --overwrite --quiet
    tee -a "$PARTS/partitioning.log" <"$PARTS/.time"
  fi
  if [ $need1 = 1 ] && [ ! -f "$PARTS/fanout-1/$NAME.json" ]; then
    log "fanout-partition: 1 part"
    "$BIN/fanout-partition" --input "$DATA" --out "$PARTS/fanout-1" --num-parts 1 --part-method random \
      --add-reverse-edges --graph-name "$NAME" --overwrite --quiet
  fi
  if [ $need2 = 1 ] && [ ! -f "$DGLP/$NAME.json" ]; then
    local dcmd dlog=$DGLP.log
    case $DGL_PARTS in
      metis)
        log "dgl.distributed.partition_graph: 2 METIS parts"
        dcmd=("$HERE/dgl_partition.py" --data "$DATA" --out "$DGLP" --num-parts 2 --graph-name "$NAME") ;;
      assignment)
        log "dgl.distributed.partition_graph: 2 parts, fanout-partition's node assignment"
        dcmd=("$HERE/dgl_partition.py" --data "$DATA" --out "$DGLP" --num-parts 2 --graph-name "$NAME"
          --assignment "$PARTS/fanout-2/$NAME.json") ;;
      convert)
        log "fanout_to_dgl.py: DGL-format partitions of fanout-partition's 2 parts"
        dcmd=("$HERE/fanout_to_dgl.py" --fanout "$PARTS/fanout-2/$NAME.json" --out "$DGLP" --graph-name "$NAME") ;;
    esac
    /usr/bin/time -a -o "$dlog" -f "$(basename "${dcmd[0]}") ($DGLP): %e s wall, %M KiB peak RSS" \
      "$PY" "${dcmd[@]}" >"$dlog" 2>&1 || { tail -n 30 "$dlog"; exit 1; }
    grep -E "^(dgl_partition|fanout_to_dgl)|edge cuts|peak mem" "$dlog" | tee -a "$PARTS/partitioning.log" || true
  fi
  [ $needgb2 = 0 ] || ensure_graphbolt "$DGLP/$NAME.json" "$PARTS/partitioning.log"
  if [ $needsage = 1 ] && [ ! -f "$DGLP-example/$NAME.json" ]; then
    log "DGL's GraphSAGE example reads features / labels: a copy of $DGLP with feat and label renamed"
    DGLBACKEND=pytorch "$PY" "$HERE/dgl_rename_fields.py" "$DGLP" "$DGLP-example" feat=features label=labels
  fi
  if [ $needlink = 1 ]; then
    if [ ! -f "$SPLIT/test_neg_dst.npy" ]; then
      log "held-out link pairs: $SPLIT"
      "$PY" "$HERE/link_split.py" --data "$DATA" --out "$SPLIT" --valid 2000 --test 2000 --negatives 100
    fi
    if [ ! -f "$PARTS/fanout-2-link/$NAME.json" ]; then
      log "fanout-partition: 2 METIS parts without the held-out pairs"
      "$BIN/fanout-partition" --input "$DATA" --out "$PARTS/fanout-2-link" --num-parts 2 --part-method metis \
        --add-reverse-edges --balance-train --balance-edges --graph-name "$NAME" --edge-split-files "$SPLIT" \
        --overwrite --quiet
    fi
    if [ ! -f "$PARTS/dgl-2-link/$NAME.json" ]; then
      log "dgl.distributed.partition_graph: 2 METIS parts without the held-out pairs"
      "$PY" "$HERE/dgl_partition.py" --data "$DATA" --out "$PARTS/dgl-2-link" --num-parts 2 --graph-name "$NAME" \
        --exclude-pairs "$SPLIT" >"$PARTS/dgl-2-link.log" 2>&1 || { tail -n 30 "$PARTS/dgl-2-link.log"; exit 1; }
      grep -E "^dgl_partition|edge cuts" "$PARTS/dgl-2-link.log" || true
    fi
  fi
  [ $needmag = 1 ] || return 0
  if [ ! -f "$MAG/data/num_nodes.json" ]; then
    log "generating $MAG/data (fanout-generate --preset mag --scale $MAG_SCALE)"
    rm -rf "$MAG"
    "$BIN/fanout-generate" --preset mag --scale "$MAG_SCALE" --out "$MAG/data" --overwrite
  fi
  # Both sides: METIS over all nodes, node types and training papers balanced, reverse relations.
  if [ ! -f "$MAG/fanout-2/mag.json" ]; then
    log "fanout-partition: the typed graph, 2 METIS parts"
    /usr/bin/time -f "fanout-partition: %e s wall, %M KiB peak RSS" \
      "$BIN/fanout-partition" --input "$MAG/data" --out "$MAG/fanout-2" --num-parts 2 --part-method metis \
      --add-reverse-edges --balance-train --graph-name mag --overwrite --quiet
  fi
  if [ ! -f "$MAG/dgl-2/mag.json" ]; then
    log "dgl.distributed.partition_graph: the typed graph, 2 METIS parts"
    rm -rf "$MAG/dgl-2"
    DGLBACKEND=pytorch "$PY" "$HERE/dgl_rgcn_train.py" --partition "$MAG/data" "$MAG/dgl-2" 2 \
      >"$MAG/dgl-2.log" 2>&1 || { tail -n 30 "$MAG/dgl-2.log"; exit 1; }
    grep -E "^(read and build|partition_graph)" "$MAG/dgl-2.log" || true
  fi
  [ "$GRAPHBOLT" = 0 ] || ensure_graphbolt "$MAG/dgl-2/mag.json" "$MAG/dgl-2.log"
  if [ $needex = 1 ] && [ ! -f "$MAG/dgl-2-example/mag.json" ]; then
    log "DGL's R-GCN example reads paper/labels: a copy of $MAG/dgl-2 with paper/label renamed"
    DGLBACKEND=pytorch "$PY" "$HERE/dgl_rename_fields.py" "$MAG/dgl-2" "$MAG/dgl-2-example" label=labels
  fi
}

# Setups whose DistDGL job --graphbolt repeats on GraphBolt partitions (DGL 2.1's DistGraph
# serves them for node classification; B has no DistDGL, P/M are A's job, L's edge loader is not
# ported to GraphBolt in DGL 2.1).
has_graphbolt_job() { case $1 in A | C | H | R) return 0 ;; *) return 1 ;; esac; }

# ensure_graphbolt PART_CONFIG LOG: GraphBolt's form of DGL partitions, beside them
# (dgl_partition_to_graphbolt writes partK/fused_csc_sampling_graph.pt, part_graph_graphbolt in
# the config), once.
ensure_graphbolt() {
  local config=$1 out=$2 dir
  dir=$(dirname "$config")
  grep -q part_graph_graphbolt "$config" && return 0
  log "dgl.distributed.dgl_partition_to_graphbolt: $dir"
  /usr/bin/time -a -o "$dir-graphbolt.log" -f "dgl_partition_to_graphbolt ($dir): %e s wall, %M KiB peak RSS" \
    "$PY" "$HERE/dgl_partition.py" --to-graphbolt "$config" >"$dir-graphbolt.log" 2>&1 \
    || { tail -n 30 "$dir-graphbolt.log"; exit 1; }
  grep -E "^dgl_partition_to_graphbolt" "$dir-graphbolt.log" | tee -a "$out" || true
}

# ---- 3. jobs ----------------------------------------------------------------------------------
# model flags per setup: LAYERS HIDDEN FANOUTS
model_of() {
  case $1 in
    A | B | P | M | L | G | E | S | Y) echo "3 256 15,10,5" ;;
    C) echo "2 16 15,10" ;;
    H | R | X) echo "2 64 25,15" ;;
  esac
}
JOBNO=0
record() {  # setup round system rc metrics wall build
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
}
# --pss, --cpu: pss_peak.py samples a job's machines into DIR/pss.json (summarize.py reads it).
# start_pss DIR ARGS... (pss_peak.py's --root / --env-root); stop_pss prints its lines.
PSS_PID=
start_pss() {
  [ "$PSS" = 1 ] || [ "$CPU" = 1 ] || return 0
  local d=$1 what=()
  shift
  [ "$CPU" = 1 ] && what+=(--cpu)
  [ "$PSS" = 1 ] || what+=(--no-pss)
  python3 "$HERE/pss_peak.py" --out "$d/pss.json" --interval 1 "${what[@]}" "$@" >"$d/pss.log" 2>&1 9>&- &
  PSS_PID=$!
}
stop_pss() {
  [ -n "$PSS_PID" ] || return 0
  kill -TERM "$PSS_PID" 2>/dev/null || true
  wait "$PSS_PID" 2>/dev/null || true
  PSS_PID=
  sed 's/^/    /' "$1/pss.log" || true
}
# The fanout build a job used (the binaries may be rebuilt between jobs): fanout-train's hash and
# modification time.
build_id() {
  local f=$BIN/fanout-train
  printf '%s@%s' "$(sha256sum "$f" | cut -c1-10)" "$(date -r "$f" +%H:%M:%S)"
}

run_fanout() {  # SETUP ROUND
  local s=$1 r=$2 dir=$RUN/$1-r$2-fanout port=$((PORT0 + 10 * (JOBNO % 50)))
  read -r layers hidden fanouts <<<"$(model_of "$s")"
  mkdir -p "$dir"
  local config trainers
  local launch_extra=()
  if [ "$s" = B ]; then
    config=$PARTS/fanout-1/$NAME.json trainers=2
    printf '127.0.0.1 %d\n' "$port" >"$dir/ip_config.txt"
  elif [ "$s" = L ]; then
    config=$PARTS/fanout-2-link/$NAME.json trainers=1
    printf '127.0.0.1 %d\n127.0.0.2 %d\n' "$port" "$port" >"$dir/ip_config.txt"
  elif [ "$s" = H ] || [ "$s" = R ] || [ "$s" = X ]; then
    config=$MAG/fanout-2/mag.json trainers=1
    printf '127.0.0.1 %d\n127.0.0.2 %d\n' "$port" "$port" >"$dir/ip_config.txt"
  else
    config=$PARTS/fanout-2/$NAME.json trainers=1
    printf '127.0.0.1 %d\n127.0.0.2 %d\n' "$port" "$port" >"$dir/ip_config.txt"
  fi
  local build
  build=$(build_id)
  log "[$s round $r] fanout: $layers layers, hidden $hidden, fanouts $fanouts, $trainers trainer(s) per machine; fanout-train $build (logs: $dir)"
  local t0=$SECONDS trainer
  if [ "$s" = P ] || [ "$s" = M ]; then
    # DistDGL's training script itself, its names taken from fanout.distributed.
    trainer=(env PYTHONPATH="$(fanout_pythonpath)" DGLBACKEND=pytorch "$PY" "$HERE/dgl_dist_train.py"
      --data-plane fanout --graph-name "$NAME" --ip-config "$dir/ip_config.txt" --part-config "$config"
      --num-layers "$layers" --hidden "$hidden" --fanouts "$fanouts" --batch-size 1024 --lr 0.003
      --dropout 0.5 --epochs "$EPOCHS" --threads 1 --metrics-file "$dir/metrics.jsonl")
  elif [ "$s" = S ]; then
    # DGL's GraphSAGE example, its imports changed.
    trainer=(env PYTHONPATH="$(fanout_pythonpath)" DGLBACKEND=pytorch "$PY" "$RUN/sage_example_fanout.py"
      --graph_name "$NAME" --ip_config "$dir/ip_config.txt" --part_config "$config" "${SAGE_ARGS[@]}")
  elif [ "$s" = Y ]; then
    # The same model in PyG, on fanout.pyg: this tree's sources beside the extension installed there.
    trainer=(env PYTHONPATH="$REPO/python" "$PYG_PY" "$HERE/pyg_sage_train.py" --part-config "$config"
      --epochs "$EPOCHS" --metrics-file "$dir/metrics.jsonl")
  elif [ "$s" = X ]; then
    # DGL's R-GCN example, its imports changed.
    trainer=(env PYTHONPATH="$(fanout_pythonpath)" DGLBACKEND=pytorch "$PY" "$RUN/rgcn_example_fanout.py"
      --graph-name mag --ip-config "$dir/ip_config.txt" --conf-path "$config" "${EXAMPLE_ARGS[@]}")
  elif [ "$s" = L ]; then
    # Evaluation only after training (the test set, against its given negatives).
    trainer=("$BIN/fanout-train" --task link --model sage --fanouts "$fanouts" --hidden "$hidden" --batch-size 1024
      --lr "$LINK_LR" --dropout 0 --edges-per-epoch "$LINK_EDGES" --negatives 1 --negative-sampling uniform
      --epochs "$EPOCHS" --eval-every 0 --threads 1 --num-samplers 1 --metrics-file "$dir/metrics.jsonl")
  elif [ "$s" = H ] || [ "$s" = R ]; then
    local typed_model=(--model rgcn)
    [ "$s" = R ] && typed_model=(--model rgat --heads 4)
    trainer=("$BIN/fanout-train" "${typed_model[@]}" --fanouts "$fanouts" --hidden "$hidden" --batch-size 1024
      --lr 0.01 --dropout 0.5 --embed-featureless 64 --sparse-optimizer adam --sparse-lr 0.06
      --epochs "$EPOCHS" --eval-every "$EPOCHS" --no-test --threads 1 --num-samplers 1
      --metrics-file "$dir/metrics.jsonl")
  else
    local lean=()
    [ "$s" = E ] && lean=(--prefetch 1 --feature-cache-mb 128)
    trainer=("$BIN/fanout-train" --model sage --fanouts "$fanouts" --hidden "$hidden" --batch-size 1024
      --lr 0.003 --dropout 0.5 --epochs "$EPOCHS" --eval-every "$EPOCHS" --no-test --threads 1
      --num-samplers 1 --metrics-file "$dir/metrics.jsonl" "${lean[@]}")
  fi
  start_group "$dir/console.log" env "${GLIBC_ENV[@]}" PATH="$BIN:$PATH" "$BIN/fanout-launch" --workspace "$dir" \
    --ip-config "$dir/ip_config.txt" --part-config "$config" --num-servers 1 --num-trainers "$trainers" \
    --num-samplers 1 --num-omp-threads 1 "${SAMPLER_NICE[@]}" "${launch_extra[@]}" --log-dir "$dir/logs" -- "${trainer[@]}"
  local g=$STARTED rc=0
  # fanout-launch gives each machine's servers and trainers FANOUT_MACHINE_ID (samplers inherit it).
  start_pss "$dir" --env-root "$g" --env-var FANOUT_MACHINE_ID --marks "$dir/metrics.jsonl"
  wait "$g" || rc=$?
  stop_pss "$dir"
  forget_group "$g"
  kill_group "$g"
  case $s in X | S) python3 "$HERE/example_metrics.py" "$dir/console.log" "$dir/metrics.jsonl" || { [ $rc != 0 ] || rc=1; } ;; esac
  grep -E "trainer 0\] (epoch|fanout-train|dgl_dist_train: graph|\[0\]Epoch Time|Val Acc|Part 0, (Epoch Time|Val Acc))|rror$([ "$PSS" = 1 ] && echo '|peak PSS')" "$dir/console.log" \
    | sed 's/^/    /' || true
  if [ $rc != 0 ]; then
    log "[$s round $r] fanout FAILED (exit $rc$([ $rc = 124 ] && echo ", timed out after $TIMEOUT s")); last lines:"
    tail -n 15 "$dir/console.log" | sed 's/^/    /'
  fi
  record "$s" "$r" fanout "$rc" "$dir/metrics.jsonl" "$((SECONDS - t0))" "$build"
  check_leftovers "fanout job $s/$r"
}

run_dgl() {  # SETUP ROUND [gb]: gb = the same DistDGL job on GraphBolt partitions (--graphbolt)
  local s=$1 r=$2 gb=${3:-} port=$((PORT0 + 10 * (JOBNO % 50)))
  local dir=$RUN/$1-r$2-dgl${gb:+-gb} system=dgl${gb:+-gb}
  read -r layers hidden fanouts <<<"$(model_of "$s")"
  mkdir -p "$dir"
  local common=(--num-layers "$layers" --hidden "$hidden" --fanouts "$fanouts" --batch-size 1024
    --lr 0.003 --dropout 0.5 --epochs "$EPOCHS" --threads 1 --metrics-file "$dir/metrics.jsonl")
  local script=$HERE/dgl_dist_train.py graph=$NAME config=$DGLP/$NAME.json
  if [ "$s" = G ]; then
    common+=(--graphbolt)
  elif [ "$s" = L ]; then
    script=$HERE/dgl_link_train.py config=$PARTS/dgl-2-link/$NAME.json
    common=(--num-layers "$layers" --hidden "$hidden" --fanouts "$fanouts" --batch-size 1024 --lr "$LINK_LR"
      --dropout 0 --epochs "$EPOCHS" --threads 1 --metrics-file "$dir/metrics.jsonl" --split "$SPLIT"
      --edges-per-epoch "$LINK_EDGES")
  elif [ "$s" = H ] || [ "$s" = R ]; then
    script=$HERE/dgl_rgcn_train.py graph=mag config=$MAG/dgl-2/mag.json
    common=(--num-layers "$layers" --hidden "$hidden" --fanouts "$fanouts" --batch-size 1024 --lr 0.01
      --dropout 0.5 --embed-featureless 64 --sparse-lr 0.06 --epochs "$EPOCHS" --threads 1
      --metrics-file "$dir/metrics.jsonl")
    [ "$s" = R ] && common+=(--model rgat --heads 4)
  elif [ "$s" = X ]; then
    script=$RUN/rgcn_example.py graph=mag config=$MAG/dgl-2-example/mag.json common=("${EXAMPLE_ARGS[@]}")
  elif [ "$s" = S ]; then
    script=$RUN/sage_example.py config=$DGLP-example/$NAME.json common=("${SAGE_ARGS[@]}")
  fi
  # The examples' names for the job's flags.
  local name_flag=--graph-name ip_flag=--ip-config conf_flag=--part-config
  [ "$s" != X ] || conf_flag=--conf-path
  [ "$s" != S ] || name_flag=--graph_name ip_flag=--ip_config conf_flag=--part_config
  [ -z "$gb" ] || common+=(--graphbolt)
  local t0=$SECONDS rc=0
  if [ "$s" = B ]; then
    log "[$s round $r] DGL: DataLoader + DDP, 2 trainers, $layers layers, hidden $hidden, fanouts $fanouts (logs: $dir)"
    start_group "$dir/console.log" env OMP_NUM_THREADS=1 DGLBACKEND=pytorch \
      "$PY" "$HERE/dgl_ddp_train.py" --data "$DATA" --num-trainers 2 --num-workers 1 \
      --master-port $((port + 5)) "${common[@]}"
    local g=$STARTED
    start_pss "$dir" --root "0=$g" --marks "$dir/metrics.jsonl"
    wait "$g" || rc=$?
    stop_pss "$dir"
    forget_group "$g"
    kill_group "$g"
    grep -E "^(epoch|dgl_ddp_train)|Error|error" "$dir/console.log" | sed 's/^/    /' || true
    [ $rc = 0 ] || { log "[$s round $r] DGL FAILED (exit $rc); last lines:"; tail -n 15 "$dir/console.log" | sed 's/^/    /'; }
  else
    log "[$s round $r] DistDGL$([ "$s" = G ] || [ -n "$gb" ] && echo ' on GraphBolt partitions'): 2 machines x (1 server + 1 trainer), $layers layers, hidden $hidden, fanouts $fanouts; $config (logs: $dir)"
    printf '127.0.0.1 %d\n127.0.0.2 %d\n' "$port" "$port" >"$dir/ip_config.txt"
    # What DGL's tools/launch.py exports (construct_dgl_{server,client}_env_vars), for
    # 2 machines x 1 trainer x 1 sampler: DGL_NUM_CLIENT = trainers * (1 + samplers) * machines.
    local pids=() m malloc_env=() site_env=()
    # X, S: DGL's examples unchanged; the loopback machine-ID fix comes from example_site/sitecustomize.py.
    case $s in X | S) site_env=(PYTHONPATH="$HERE/example_site") ;; esac
    # M: glibc's tunables, read at each process's start (servers, trainers, sampler processes).
    [ "$s" != M ] || malloc_env=(MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824)
    [ ${#GLIBC_ENV[@]} = 0 ] || malloc_env=("${GLIBC_ENV[@]}")
    for m in 0 1; do
      start_group "$dir/machine$m.log" env "${malloc_env[@]}" "${site_env[@]}" DGLBACKEND=pytorch DGL_IP_CONFIG="$dir/ip_config.txt" \
        DGL_CONF_PATH="$config" DGL_NUM_SERVER=1 DGL_NUM_CLIENT=4 DGL_NUM_SAMPLER=1 \
        DGL_GRAPH_FORMAT=csc DGL_DIST_MAX_TRY_TIMES=100 TRAINER_OMP_THREADS=1 SERVER_OMP_THREADS=1 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port + 5)) WORLD_SIZE=2 \
        unshare -m --propagation private \
        bash "$HERE/dgl_machine.sh" "$m" "$dir" "$PY" "$script" \
        "$name_flag" "$graph" "$ip_flag" "$dir/ip_config.txt" "$conf_flag" "$config" \
        "${common[@]}"
      pids+=("$STARTED")
    done
    # Each machine is its own process tree (timeout, unshare, dgl_machine.sh, server, trainer and
    # the trainer's sampler process).
    start_pss "$dir" --root "0=${pids[0]}" --root "1=${pids[1]}" --marks "$dir/metrics.jsonl"
    # The first machine to fail stops the other (a DistDGL trainer whose peer died waits forever).
    local remaining=("${pids[@]}") done_pid st g keep
    while [ ${#remaining[@]} -gt 0 ]; do
      st=0 done_pid=
      wait -n -p done_pid "${remaining[@]}" || st=$?
      [ -n "$done_pid" ] || break
      keep=()
      for g in "${remaining[@]}"; do [ "$g" = "$done_pid" ] || keep+=("$g"); done
      remaining=("${keep[@]}")
      forget_group "$done_pid"
      if [ $st != 0 ]; then
        [ $rc != 0 ] || rc=$st
        break
      fi
    done
    for g in "${pids[@]}"; do kill_group "$g"; forget_group "$g"; done
    stop_pss "$dir"
    case $s in X | S) python3 "$HERE/example_metrics.py" "$dir/m0-trainer.log" "$dir/metrics.jsonl" || { [ $rc != 0 ] || rc=1; } ;; esac
    grep -hE "^(epoch|dgl_(dist|rgcn|link)_train: graph|\[0\]Epoch Time|Val Acc|Part 0, (Epoch Time|Val Acc))|Error" "$dir/m0-trainer.log" | sed 's/^/    /' || true
    if [ $rc != 0 ]; then
      log "[$s round $r] DistDGL FAILED (exit $rc$([ $rc = 124 ] && echo ", timed out after $TIMEOUT s")); last lines:"
      for f in "$dir"/machine*.log "$dir"/m*-trainer.log "$dir"/m*-server.log; do
        [ -s "$f" ] && { echo "    == $f"; tail -n 8 "$f" | sed 's/^/    /'; }
      done
    fi
  fi
  record "$s" "$r" "$system" "$rc" "$dir/metrics.jsonl" "$((SECONDS - t0))" "dgl-2.1.0"
  check_leftovers "DGL job $s/$r"
}

# fanout's Python package for the virtualenv's interpreter (setup P): the sources and this build's
# extension when it was built for the same Python, else `pip install ./python` into the venv.
fanout_pythonpath() {
  local suffix
  suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  if [ -f "$BIN/../python/fanout/_native$suffix" ]; then
    printf '%s:%s' "$REPO/python" "$(cd "$BIN/../python" && pwd)"
  else
    if ! "$PY" -c 'import fanout._native' 2>/dev/null; then
      log "installing fanout's Python package into $VENV (pip install ./python)" >&2
      "$PY" -m pip install --quiet "$REPO/python" >&2
    fi
    printf '%s' ""
  fi
}

# ---- main ---------------------------------------------------------------------------------------
log "fanout vs DGL: setups $SETUPS, $ROUNDS round(s), $EPOCHS epoch(s) per job, $NODES nodes / $EDGES edges$([ "$QUICK" = 1 ] && echo ' (--quick)'); DistDGL partitions: $DGL_PARTS ($DGLP)$([ "$PSS" = 1 ] && echo '; per-machine PSS sampled')$([ "$GRAPHBOLT" = 1 ] && echo '; DistDGL also on GraphBolt partitions')"
log "host: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg); results in $RUN"
[ ${#GLIBC_ENV[@]} = 0 ] || log "--glibc-env: every process of both sides with ${GLIBC_ENV[*]}"
# A tree's commit, and whether it differs from it; a copy made with `git archive` (to run these
# scripts while the checkout changes) is not a checkout.
describe_tree() {  # DIR
  if git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
    printf '%s%s' "$(git -C "$1" rev-parse --short HEAD)" "$(git -C "$1" diff --quiet HEAD || echo ', with uncommitted changes')"
  else
    printf 'not a git checkout'
  fi
}
BUILD_SRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BIN/../CMakeCache.txt" 2>/dev/null)
log "fanout build: $BIN (built from ${BUILD_SRC:-?}: $([ -n "$BUILD_SRC" ] && describe_tree "$BUILD_SRC" || echo '?')); these scripts: $REPO ($(describe_tree "$REPO"))"
ensure_venv
ensure_data
# Setup X: DGL's R-GCN example as given (DistDGL) and with its imports changed (fanout); the
# arguments of setup H's model, both sides. --n-bases: the example's default (-1, "all") fails in
# the example itself (None < int); 8 = the graph's relations, one weight each, as H.
EXAMPLE_ARGS=(--dataset ogbn-mag --num_gpus -1 --n-bases 8 --n-hidden 64 --n-layers 2 --fanout 25,15 --validation-fanout 25,15
  --batch-size 1024 --eval-batch-size 1024 --lr 0.01 --sparse-embedding --dgl-sparse --sparse-lr 0.06 --dropout 0.5
  --use-self-loop --n-epochs "$EPOCHS" --log-every 20)
# Setup S: DGL's GraphSAGE example, A's model, evaluation after the last epoch only.
SAGE_ARGS=(--num_epochs "$EPOCHS" --num_hidden 256 --num_layers 3 --fan_out 15,10,5 --batch_size 1024 --lr 0.003
  --dropout 0.5 --n_classes 47 --eval_every "$EPOCHS" --log_every 20)
# Both examples get the same import change on fanout's side.
port_example() {  # IN OUT
  sed -e 's/^import dgl$/import dgl\nimport fanout.distributed as fdist/' \
    -e 's/^from dgl\.distributed import DistDataLoader$/from fanout.distributed import DistDataLoader/' \
    -e 's/dgl\.distributed\./fdist./g' \
    -e 's/dgl\.dataloading\.\(MultiLayerNeighborSampler\|NeighborSampler\|DistNodeDataLoader\)/fdist.\1/g' \
    "$1" >"$2"
  log "DGL's $(basename "$1"): $(diff "$1" "$2" | grep -c '^>') lines changed for fanout ($2)"
}
if [[ ",$SETUPS," == *,S,* ]]; then
  cp "$SAGE_EXAMPLE" "$RUN/sage_example.py"
  port_example "$SAGE_EXAMPLE" "$RUN/sage_example_fanout.py"
fi
if [[ ",$SETUPS," == *,X,* ]]; then
  "$PY" -c 'import ogb, tqdm' 2>/dev/null || { log "installing ogb and tqdm (DGL's R-GCN example imports them)"; "$PY" -m pip install --quiet ogb tqdm; }
  cp "$RGCN_EXAMPLE" "$RUN/rgcn_example.py"
  port_example "$RGCN_EXAMPLE" "$RUN/rgcn_example_fanout.py"
fi
log "DGL side: $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null), $(DGLBACKEND=pytorch "$PY" -c 'import dgl; print("dgl", dgl.__version__)' 2>/dev/null | tail -n 1)"
for r in $(seq 1 "$ROUNDS"); do
  for s in "${SETUP_LIST[@]}"; do
    if [ "$s" != G ]; then  # G: DistDGL on GraphBolt partitions, against A's fanout job
      JOBNO=$((JOBNO + 1)); run_fanout "$s" "$r"
      log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    fi
    case $s in E | Y) continue ;; esac  # E: fanout's lean job, against A's (and G's) DistDGL jobs; Y: against S's
    JOBNO=$((JOBNO + 1)); run_dgl "$s" "$r"
    log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$GRAPHBOLT" = 1 ] && has_graphbolt_job "$s"; then
      JOBNO=$((JOBNO + 1)); run_dgl "$s" "$r" gb
      log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    fi
  done
done
echo
python3 "$HERE/summarize.py" "$RESULTS" | tee "$RUN/summary.txt"
