#!/usr/bin/env bash
# fanout and DistDGL on an emulated cluster: M machines as network namespaces over links shaped to
# a rate (scripts/cluster.sh), the same job and the same partitions on both sides, each machine's
# link counted by its own interface (docs/benchmarks.md, "On an emulated cluster").
#
#   bench/cluster/run.sh --machines 2,4,8 --rate 1gbit,200mbit,unlimited [--setups A,H] [--rounds R]
#                        [--epochs E] [--venv DIR] [--work DIR] [--quick] [--timeout S] [--no-dgl]
#                        [--graphbolt] [--mag-scale S] [--memory-per-machine M] [--cpus-per-machine C]
#                        [--fanout-flags "FLAGS"] [--launch-flags "FLAGS"] [--cut-link K:AFTER:FOR]
#
# Every setup: one server, one trainer and one sampler process per machine, one intra-op thread;
# fanout-train started by fanout-launch --agent, DistDGL's trainer script started in each
# namespace as DGL's launch.py would start it (bench/vs_dgl/dgl_machine.sh). Setups (bench/vs_dgl's,
# on M machines):
#   A  the 500K-node graph (--quick: 50K), 3-layer GraphSAGE, hidden 256, fanouts 15,10,5, batch
#      1024 per trainer, Adam 0.003, dropout 0.5; DistDGL's dgl_dist_train.py on DGL-format
#      partitions converted from fanout's (bench/vs_dgl/fanout_to_dgl.py: the same assignment).
#   H  the typed ogbn-mag-shaped graph (fanout-generate --preset mag --scale S: default 0.1,
#      --quick 0.02; reverse relations), R-GCN 2 layers, hidden 64, fanouts 25,15 per relation,
#      batch 1024, Adam 0.01, dropout 0.5, 64-wide learnable rows for the featureless types
#      (sparse Adam 0.06); DistDGL's dgl_rgcn_train.py (DistEmbedding + SparseAdam) on its own
#      METIS partitions of the same graph (M parts each side).
#   L  link prediction on A's graph (fanout-partition --edge-split 0.998,0.001,0.001, M METIS
#      parts): SAGE 3x256 embeddings, fanouts 15,10,5, batch 1024 positives, 40 steps a trainer an
#      epoch (--edges-per-epoch 40960; --quick 10), Adam 0.0003, no dropout, 1 uniform negative
#      each, no evaluation (its full-graph inference is not what is measured). fanout's side only
#      (--no-dgl): DistDGL's link job (bench/vs_dgl/run.sh --setups L) runs on loopback.
# --graphbolt: DistDGL on GraphBolt partitions (DGL 2.1's dgl_partition_to_graphbolt of its
# partitions; initialize(use_graphbolt=True)), its best configuration. --fanout-flags adds flags
# to fanout-train (e.g. "--wire-rows bfloat16"), --launch-flags to fanout-launch (e.g. "--replicas
# 1"); in either, @DIR@ stands for the job's own folder (e.g. "--checkpoint-dir @DIR@/ckpt");
# --no-dgl runs fanout's side only.
# --cut-link K:AFTER:FOR: in fanout's jobs, machine K's link is cut at the switch AFTER seconds
# after rank 0's first epoch record, and restored FOR seconds later; each such job then prints
#   CLUSTER_FAULT setup=S machines=M rate=R cut=K:AFTER:FOR rc=RC end_after_cut_s=E job_s=J restarts=N
# (E: from the cut to the launcher's exit; J: the whole job; N: the launcher's restarts).
# --memory-per-machine M (e.g. 6G): every process of a machine, both sides', in a memory cgroup of
# M (scripts/cluster.sh), so that a run shows whether each side fits the machines it would rent.
# --cpus-per-machine C (e.g. 0.5): each machine's processes, both sides', get C cores' worth of
# CPU time together, so that machines stop competing for the host's cores.
#
# Prints per job one line
#   CLUSTER_RESULT setup=S machines=M rate=R fanout_epoch_s=F dgl_epoch_s=D fanout_wire_mb=FB dgl_wire_mb=DB
# (epoch: mean of epochs 2..E; wire: the bytes each machine's interface received plus sent per
# epoch over epochs 2..E, mean over machines; counted when rank 0 writes each epoch's record),
# then the table. Results in WORK/cluster-runs/<time>/. Needs root (namespaces) and, for the
# DistDGL side, bench/vs_dgl's virtualenv (--venv; made on first use by bench/vs_dgl/run.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VS=$REPO/bench/vs_dgl
CLUSTER=$REPO/scripts/cluster.sh
BIN=${FANOUT_BIN:-$REPO/build/bin}
MACHINES=4 RATES=1gbit SETUPS=A ROUNDS=1 EPOCHS=3 QUICK=0 TIMEOUT=1800 DGL=1 GRAPHBOLT=0 FANOUT_FLAGS=() LAUNCH_FLAGS=() CUT=
WORK=${TMPDIR:-/tmp}/fanout-vs-dgl VENV="" MAG_SCALE="" MEMORY=() CPUS=()
while [ $# -gt 0 ]; do
  case $1 in
    --machines) MACHINES=$2; shift 2 ;;
    --rate | --rates) RATES=$2; shift 2 ;;
    --setups) SETUPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-dgl) DGL=0; shift ;;
    --graphbolt) GRAPHBOLT=1; shift ;;
    --mag-scale) MAG_SCALE=$2; shift 2 ;;
    --memory-per-machine) MEMORY=(--memory-per-machine "$2"); shift 2 ;;
    --cpus-per-machine) CPUS=(--cpus-per-machine "$2"); shift 2 ;;
    --fanout-flags) read -r -a FANOUT_FLAGS <<<"$2"; shift 2 ;;
    --launch-flags) read -r -a LAUNCH_FLAGS <<<"$2"; shift 2 ;;
    --cut-link) CUT=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a SLIST <<<"$SETUPS"
for s in "${SLIST[@]}"; do
  case $s in A | H | L) ;; *) echo "run.sh: --setups: unknown setup '$s' (A, H, L)" >&2; exit 2 ;; esac
  if [ "$s" = L ] && [ "$DGL" = 1 ]; then
    echo "run.sh: --setups L runs fanout's side only: add --no-dgl" \
      "(DistDGL's link job: bench/vs_dgl/run.sh --setups L)" >&2
    exit 2
  fi
done
[ -z "$CUT" ] || [[ $CUT =~ ^[0-9]+:[0-9.]+:[0-9.]+$ ]] || { echo "run.sh: --cut-link must be K:AFTER:FOR" >&2; exit 2; }
[ "$EPOCHS" -ge 2 ] || { echo "run.sh: --epochs must be >= 2 (epoch 1 is warm-up)" >&2; exit 2; }
VENV=${VENV:-$WORK/venv}
PY=$VENV/bin/python
if [ "$DGL" = 1 ] && ! "$PY" -c 'import dgl' 2>/dev/null; then
  echo "run.sh: no DGL in $VENV: make it with bench/vs_dgl/run.sh --quick --setups A (or pass --venv, or --no-dgl)" >&2
  exit 2
fi
if [ "$QUICK" = 1 ]; then NODES=50000 EDGES=2500000; else NODES=500000 EDGES=25000000; fi
if [ -z "$MAG_SCALE" ]; then MAG_SCALE=$([ "$QUICK" = 1 ] && echo 0.02 || echo 0.1); fi
[[ $MAG_SCALE =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "run.sh: --mag-scale must be a positive number" >&2; exit 2; }
NAME=vsdgl
DATA=$WORK/data-n$NODES-e$EDGES
PARTS=$WORK/parts-n$NODES-e$EDGES
MAG=$WORK/mag-scale$MAG_SCALE  # bench/vs_dgl/run.sh's setup H folder: the same graph
RUN=$WORK/cluster-runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
CL=fcb$$
CL=${CL:0:12}
log() { echo "$(date +%H:%M:%S) $*" | tee -a "$RUN/log.txt" >&2; }
# On exit, failure, Ctrl-C or SIGTERM: the job under way stopped (its launcher told to end it),
# then the cluster and whatever still runs in it removed. Jobs run in the background and are
# waited for, as bash handles a signal only once the command in the foreground has ended.
cleanup() {
  trap - EXIT INT TERM
  local p
  for p in $(jobs -p); do
    pkill -TERM -P "$p" 2>/dev/null || true
    kill -TERM "$p" 2>/dev/null || true
  done
  "$CLUSTER" down --name "$CL" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "fanout build: $BIN; results in $RUN"

# graphbolt_of PART_CONFIG: GraphBolt's form of DGL partitions, beside them (once).
graphbolt_of() {
  grep -q part_graph_graphbolt "$1" && return 0
  log "dgl_partition_to_graphbolt: $1"
  DGLBACKEND=pytorch "$PY" "$VS/dgl_partition.py" --to-graphbolt "$1" >>"$RUN/log.txt" 2>&1
}

parts_of() {  # SETUP M: fanout's M METIS parts (vs_dgl's flags) and DistDGL's
  local s=$1 m=$2
  if [ "$s" = H ]; then
    if [ ! -f "$MAG/data/num_nodes.json" ]; then
      log "generating $MAG/data (fanout-generate --preset mag --scale $MAG_SCALE)"
      "$BIN/fanout-generate" --preset mag --scale "$MAG_SCALE" --out "$MAG/data" --overwrite >/dev/null
    fi
    if [ ! -f "$MAG/fanout-$m/mag.json" ]; then
      log "fanout-partition: the typed graph, $m METIS parts"
      "$BIN/fanout-partition" --input "$MAG/data" --out "$MAG/fanout-$m" --num-parts "$m" --part-method metis \
        --add-reverse-edges --balance-train --graph-name mag --overwrite --quiet
    fi
    if [ "$DGL" = 1 ] && [ ! -f "$MAG/dgl-$m/mag.json" ]; then
      log "dgl.distributed.partition_graph: the typed graph, $m METIS parts"
      rm -rf "$MAG/dgl-$m"
      DGLBACKEND=pytorch "$PY" "$VS/dgl_rgcn_train.py" --partition "$MAG/data" "$MAG/dgl-$m" "$m" >>"$RUN/log.txt" 2>&1
    fi
    [ "$DGL" = 0 ] || [ "$GRAPHBOLT" = 0 ] || graphbolt_of "$MAG/dgl-$m/mag.json"
    return 0
  fi
  if [ ! -f "$DATA/edges.npy" ]; then
    log "generating $DATA"
    "$BIN/fanout-generate" --out "$DATA" --overwrite --num-nodes "$NODES" --num-edges "$EDGES" \
      --feat-dim 100 --num-classes 47 --train-frac 0.1 --valid-frac 0.05 --seed 0 >/dev/null
  fi
  if [ "$s" = L ]; then
    if [ ! -f "$PARTS/fanout-$m-link/$NAME.json" ]; then
      log "fanout-partition: $m METIS parts, 0.1 % of the pairs held out each for validation and test"
      "$BIN/fanout-partition" --input "$DATA" --out "$PARTS/fanout-$m-link" --num-parts "$m" --part-method metis \
        --add-reverse-edges --balance-train --balance-edges --graph-name "$NAME" --edge-split 0.998,0.001,0.001 \
        --overwrite --quiet
    fi
    return 0
  fi
  if [ ! -f "$PARTS/fanout-$m/$NAME.json" ]; then
    log "fanout-partition: $m METIS parts"
    "$BIN/fanout-partition" --input "$DATA" --out "$PARTS/fanout-$m" --num-parts "$m" --part-method metis \
      --add-reverse-edges --balance-train --balance-edges --graph-name "$NAME" --overwrite --quiet
  fi
  if [ "$DGL" = 1 ] && [ ! -f "$PARTS/dgl-$m-conv/$NAME.json" ]; then
    log "fanout_to_dgl.py: DGL-format partitions of the same $m parts"
    DGLBACKEND=pytorch "$PY" "$VS/fanout_to_dgl.py" --fanout "$PARTS/fanout-$m/$NAME.json" --out "$PARTS/dgl-$m-conv" \
      --graph-name "$NAME" >>"$RUN/log.txt" 2>&1
  fi
  [ "$DGL" = 0 ] || [ "$GRAPHBOLT" = 0 ] || graphbolt_of "$PARTS/dgl-$m-conv/$NAME.json"
}

counters() { "$CLUSTER" counters --name "$CL" | awk '{printf "%s:%s:%s ", $1, $3, $5} END {print ""}'; }

# Reads every machine's interface counters at the start and whenever rank 0 writes an epoch
# record to METRICS, until stopped: "start ..." then "epoch K m0:rx:tx m1:rx:tx ...".
watch_wire() {
  local out=$1 metrics=$2 seen=0 n
  echo "start $(counters)" >"$out"
  while true; do
    n=$(grep -c '"event": *"epoch"' "$metrics" 2>/dev/null || true)
    n=${n:-0}
    if [ "$n" -gt "$seen" ]; then
      seen=$n
      echo "epoch $n $(counters)" >>"$out"
    fi
    sleep 0.2
  done
}

run_fanout() {  # DIR SETUP M
  local dir=$1 s=$2 m=$3 config model evaluate=(--eval-every "$EPOCHS")
  if [ "$s" = L ]; then
    config=$PARTS/fanout-$m-link/$NAME.json evaluate=(--eval-every 0)
    model=(--task link --model sage --fanouts 15,10,5 --hidden 256 --batch-size 1024 --lr 0.0003 --dropout 0
      --edges-per-epoch "$([ "$QUICK" = 1 ] && echo 10240 || echo 40960)" --negatives 1 --negative-sampling uniform)
  elif [ "$s" = H ]; then
    config=$MAG/fanout-$m/mag.json
    model=(--model rgcn --fanouts 25,15 --hidden 64 --batch-size 1024 --lr 0.01 --dropout 0.5
      --embed-featureless 64 --sparse-optimizer adam --sparse-lr 0.06)
  else
    config=$PARTS/fanout-$m/$NAME.json
    model=(--model sage --fanouts 15,10,5 --hidden 256 --batch-size 1024 --lr 0.003 --dropout 0.5)
  fi
  local launch_flags=("${LAUNCH_FLAGS[@]//@DIR@/$dir}") train_flags=("${FANOUT_FLAGS[@]//@DIR@/$dir}")
  timeout "$TIMEOUT" "$BIN/fanout-launch" --agent "$FANOUT_CLUSTER_AGENT" --ip-config "$FANOUT_CLUSTER_IP_CONFIG" \
    --part-config "$config" --num-servers 1 --num-trainers 1 --num-samplers 1 \
    --num-omp-threads 1 --log-dir "$dir/logs" "${launch_flags[@]}" -- \
    "$BIN/fanout-train" "${model[@]}" --epochs "$EPOCHS" "${evaluate[@]}" --no-test --threads 1 --num-samplers 1 \
    --metrics-file "$dir/metrics.jsonl" "${train_flags[@]}" >"$dir/console.log" 2>&1
}

cut_link() {  # DIR: --cut-link's cut, timed from rank 0's first epoch record
  local dir=$1 k after for
  IFS=: read -r k after for <<<"$CUT"
  until grep -q '"event": *"epoch"' "$dir/metrics.jsonl" 2>/dev/null; do sleep 0.1; done
  sleep "$after"
  "$CLUSTER" link "$k" down --name "$CL" && date +%s.%N >"$dir/cut_at"
  sleep "$for"
  "$CLUSTER" link "$k" up --name "$CL" || true
}

run_dgl() {  # DIR SETUP M: DistDGL as bench/vs_dgl's setup, each machine's processes in its namespace
  local dir=$1 s=$2 m=$3 k pids=() rc=0 port=31800 config script graph args
  if [ "$s" = H ]; then
    config=$MAG/dgl-$m/mag.json script=$VS/dgl_rgcn_train.py graph=mag
    args=(--num-layers 2 --hidden 64 --fanouts 25,15 --batch-size 1024 --lr 0.01 --dropout 0.5
      --embed-featureless 64 --sparse-lr 0.06)
  else
    config=$PARTS/dgl-$m-conv/$NAME.json script=$VS/dgl_dist_train.py graph=$NAME
    args=(--num-layers 3 --hidden 256 --fanouts 15,10,5 --batch-size 1024 --lr 0.003 --dropout 0.5)
  fi
  [ "$GRAPHBOLT" = 0 ] || args+=(--graphbolt)
  sed "s/ [0-9]*\$/ $port/" "$FANOUT_CLUSTER_IP_CONFIG" >"$dir/ip_config.txt"
  for ((k = 0; k < m; k++)); do
    # What DGL's tools/launch.py exports for 1 server, 1 trainer and 1 sampler a machine; Gloo
    # and TensorPipe told the interface to use, as DistDGL's users must on a cluster.
    timeout "$TIMEOUT" "$CLUSTER" exec "$k" --name "$CL" -- env DGLBACKEND=pytorch DGL_IP_CONFIG="$dir/ip_config.txt" \
      DGL_CONF_PATH="$config" DGL_NUM_SERVER=1 DGL_NUM_CLIENT=$((2 * m)) DGL_NUM_SAMPLER=1 DGL_GRAPH_FORMAT=csc \
      DGL_DIST_MAX_TRY_TIMES=300 TRAINER_OMP_THREADS=1 SERVER_OMP_THREADS=1 MASTER_ADDR=10.213.0.1 \
      MASTER_PORT=$((port + 5)) WORLD_SIZE="$m" GLOO_SOCKET_IFNAME=eth0 TP_SOCKET_IFNAME=eth0 \
      unshare -m --propagation private bash "$VS/dgl_machine.sh" "$k" "$dir" "$PY" "$script" \
      --graph-name "$graph" --ip-config "$dir/ip_config.txt" --part-config "$config" "${args[@]}" \
      --epochs "$EPOCHS" --threads 1 --metrics-file "$dir/metrics.jsonl" >"$dir/machine$k.log" 2>&1 &
    pids+=($!)
  done
  # The first machine to fail stops the others (a DistDGL trainer whose peer died waits forever).
  local done_pid st p keep
  while [ ${#pids[@]} -gt 0 ]; do
    st=0 done_pid=
    wait -n -p done_pid "${pids[@]}" || st=$?
    [ -n "$done_pid" ] || break
    keep=()
    for p in "${pids[@]}"; do [ "$p" = "$done_pid" ] || keep+=("$p"); done
    pids=("${keep[@]}")
    if [ $st != 0 ]; then rc=$st; break; fi
  done
  if [ $rc != 0 ]; then
    for k in $(seq 0 $((m - 1))); do ip netns pids "$CL-m$k" | xargs -r kill -KILL 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  fi
  return $rc
}

job() {  # SYSTEM SETUP M RATE ROUND
  local sys=$1 s=$2 m=$3 rate=$4 r=$5 dir=$RUN/$2-$1-m$3-$4-r$5 rc=0
  mkdir -p "$dir"
  "$CLUSTER" up --machines "$m" --rate "$rate" "${MEMORY[@]}" "${CPUS[@]}" --name "$CL" 2>>"$RUN/log.txt"
  export FANOUT_CLUSTER_IP_CONFIG=/run/fanout-cluster/$CL/ip_config.txt
  export FANOUT_CLUSTER_AGENT="$CLUSTER exec {index} --name $CL --"
  watch_wire "$dir/wire.txt" "$dir/metrics.jsonl" &
  local watcher=$! cutter= start end
  if [ -n "$CUT" ] && [ "$sys" = fanout ]; then cut_link "$dir" & cutter=$!; fi
  log "[$s $sys] $m machines at $rate, round $r ($dir)"
  start=$(date +%s.%N)
  "run_$sys" "$dir" "$s" "$m" &
  wait $! || rc=$?
  end=$(date +%s.%N)
  log "[$s $sys] job took $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s (exit $rc)"
  if [ -n "$cutter" ]; then
    kill "$cutter" 2>/dev/null || true
    wait "$cutter" 2>/dev/null || true
    echo "CLUSTER_FAULT setup=$s machines=$m rate=$rate cut=$CUT rc=$rc end_after_cut_s=$(
      awk -v a="$(cat "$dir/cut_at" 2>/dev/null)" -v b="$end" 'BEGIN { print a == "" ? "nan" : sprintf("%.1f", b - a) }'
    ) job_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') restarts=$(
      grep -c "restart [0-9]* of" "$dir/console.log" || true)" | tee -a "$RUN/faults.txt"
  fi
  sleep 0.5
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  "$CLUSTER" down --name "$CL"
  [ $rc = 0 ] || log "[$s $sys] FAILED (exit $rc): $(tail -n 3 "$dir"/console.log "$dir"/machine*.log 2>/dev/null | tail -n 6)"
  python3 "$HERE/summarize.py" job "$dir" "$sys" "$m" "$rate" "$EPOCHS" "$rc" "$s" "$PEER" >>"$RUN/results.jsonl"
}

PEER="DistDGL 2.1.0"
if [ "$GRAPHBOLT" = 1 ]; then PEER="$PEER + GraphBolt"; fi
IFS=, read -r -a MLIST <<<"$MACHINES"
IFS=, read -r -a RLIST <<<"$RATES"
for s in "${SLIST[@]}"; do for m in "${MLIST[@]}"; do parts_of "$s" "$m"; done; done
for r in $(seq 1 "$ROUNDS"); do
  for s in "${SLIST[@]}"; do
    for m in "${MLIST[@]}"; do
      for rate in "${RLIST[@]}"; do
        job fanout "$s" "$m" "$rate" "$r"
        [ "$DGL" = 0 ] || job dgl "$s" "$m" "$rate" "$r"
      done
    done
  done
done
python3 "$HERE/summarize.py" table "$RUN/results.jsonl" | tee "$RUN/summary.txt"
