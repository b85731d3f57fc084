#!/usr/bin/env bash
# DistDGL's R-GCN on the ogbn-mag-shaped typed graph, 2 loopback machines on this host: the DGL
# side of fanout's
#
#   fanout-train --model rgcn --fanouts 25,15 --hidden 64 --lr 0.01 --batch-size 1024
#       --embed-featureless 64 --sparse-lr 0.06 --dropout 0.5 --threads 1   (sparse Adam)
#
# with 1 server + 1 trainer + 1 sampler process per machine (dgl_rgcn_train.py: the model, the
# loop, and where it departs from fanout).
#
#   bench/typed/run_dgl_rgcn.sh [--epochs E] [--scale S] [--data DIR] [--work DIR] [--fresh]
#                               [--timeout S] [--port P] [--python PY] [-- TRAINER_FLAGS...]
#
#   --epochs E    training epochs (default 3); validation after the last
#   --scale S     fanout-generate --preset mag --scale S (default 0.1: 193,975 nodes, 2.1M edges)
#   --data DIR    an existing typed .npy dataset instead of generating one
#   --work DIR    cache and logs (default ${TMPDIR:-/tmp}/dglrgcn): the dataset, the DGL
#                 partitions (made once, dgl_rgcn_train.py --partition), runs/<time>/
#   --fresh       regenerate the dataset (if generated here) and the partitions
#   --timeout S   per job (default 900)
#   --port P      DGL server port (default 37850); torch.distributed uses P + 5
#   --python PY   the virtualenv's interpreter with torch 2.2.1 + DGL 2.1.0 (default
#                 /work/venv-dgl/bin/python; bench/vs_dgl/run.sh builds one)
#   TRAINER_FLAGS go to dgl_rgcn_train.py (e.g. -- --log-every 10 --eval-every 1).
# Prints the trainer's epoch lines and `dgl-rgcn epoch_s=<mean of the epochs after the first,
# evaluation excluded> val_acc=<after the last epoch>`. Needs root (unshare -m, as
# bench/vs_dgl/run.sh) and a fanout build (FANOUT_BUILD_DIR, default <repo>/build) for
# fanout-generate.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VS_DGL=$REPO/bench/vs_dgl
EPOCHS=3 SCALE=0.1 DATA='' WORK=${TMPDIR:-/tmp}/dglrgcn FRESH=0 TIMEOUT=900 PORT=37850
PY=/work/venv-dgl/bin/python
EXTRA=()
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --epochs) EPOCHS=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --fresh) FRESH=1; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run_dgl_rgcn.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $EPOCHS =~ ^[1-9][0-9]*$ ]] || { echo "run_dgl_rgcn.sh: --epochs must be a positive integer" >&2; exit 2; }
[ -x "$PY" ] || { echo "run_dgl_rgcn.sh: no Python at $PY (--python)" >&2; exit 1; }
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# One job at a time per work folder (fixed loopback ports, shared caches).
exec 9>"$WORK/.lock"
flock -n 9 || { echo "run_dgl_rgcn.sh: another run is using $WORK" >&2; exit 1; }

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }

# ---- 1. dataset and partitions (cached) -----------------------------------------------------
if [ -z "$DATA" ]; then
  DATA=$WORK/mag-scale$SCALE
  if [ "$FRESH" = 1 ] || [ ! -f "$DATA/num_nodes.json" ]; then
    BIN=$(cd "${FANOUT_BUILD_DIR:-$REPO/build}/bin" 2>/dev/null && pwd) || {
      echo "run_dgl_rgcn.sh: no fanout build at ${FANOUT_BUILD_DIR:-$REPO/build}/bin (scripts/build.sh)" >&2
      exit 1
    }
    log "generating $DATA (fanout-generate --preset mag --scale $SCALE)"
    "$BIN/fanout-generate" --preset mag --scale "$SCALE" --out "$DATA" --overwrite
  fi
fi
DATA=$(cd "$DATA" && pwd)
# The partitions are tied to the dataset they were cut from (its path and num_nodes.json).
PARTS=$WORK/dglparts-$(printf '%s %s' "$DATA" "$(cat "$DATA/num_nodes.json")" | sha256sum | cut -c1-10)
NAME=mag
if [ "$FRESH" = 1 ] || [ ! -f "$PARTS/.done" ]; then
  rm -rf "$PARTS"
  log "partitioning $DATA into $PARTS (dgl_partition_mag.py, 2 METIS parts, with the validation split)"
  DGLBACKEND=pytorch "$PY" "$HERE/dgl_rgcn_train.py" --partition "$DATA" "$PARTS" 2 >"$WORK/partition.log" 2>&1 ||
    { tail -n 30 "$WORK/partition.log"; exit 1; }
  grep -E "^(read and build|partition_graph)" "$WORK/partition.log" | sed 's/^/    /'
  touch "$PARTS/.done"
fi

# ---- 2. the job: 2 machines x (1 server + 1 trainer + 1 sampler process) ----------------------
RUN=$WORK/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
printf '127.0.0.1 %d\n127.0.0.2 %d\n' "$PORT" "$PORT" >"$RUN/ip_config.txt"
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
}
trap cleanup EXIT
trap 'echo; log "interrupted: stopping the job"; cleanup; exit 130' INT TERM HUP

log "DistDGL R-GCN: 2 loopback machines x (1 server + 1 trainer + 1 sampler), $EPOCHS epoch(s); logs in $RUN"
log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
# What DGL's tools/launch.py exports (as bench/vs_dgl/run.sh): DGL_NUM_CLIENT = trainers *
# (1 + samplers) * machines = 4. Each machine is dgl_machine.sh in a mount namespace of its own
# (private /dev/shm), in a process group of its own under `timeout`.
for m in 0 1; do
  setsid timeout -k 10 "$TIMEOUT" env DGLBACKEND=pytorch DGL_IP_CONFIG="$RUN/ip_config.txt" \
    DGL_CONF_PATH="$PARTS/$NAME.json" DGL_NUM_SERVER=1 DGL_NUM_CLIENT=4 DGL_NUM_SAMPLER=1 \
    DGL_GRAPH_FORMAT=csc DGL_DIST_MAX_TRY_TIMES=100 TRAINER_OMP_THREADS=1 SERVER_OMP_THREADS=1 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$((PORT + 5)) WORLD_SIZE=2 \
    unshare -m --propagation private \
    bash "$VS_DGL/dgl_machine.sh" "$m" "$RUN" "$PY" "$HERE/dgl_rgcn_train.py" \
    --graph-name "$NAME" --ip-config "$RUN/ip_config.txt" --part-config "$PARTS/$NAME.json" \
    --epochs "$EPOCHS" --threads 1 --metrics-file "$RUN/metrics.jsonl" "${EXTRA[@]}" \
    >"$RUN/machine$m.log" 2>&1 </dev/null 9>&- &
  GROUPS_RUNNING+=("$!")
done
# The first machine to fail stops the other (a DistDGL trainer whose peer died waits forever).
rc=0 remaining=("${GROUPS_RUNNING[@]}")
while [ ${#remaining[@]} -gt 0 ]; do
  st=0 done_pid=
  wait -n -p done_pid "${remaining[@]}" || st=$?
  [ -n "$done_pid" ] || break
  keep=()
  for g in "${remaining[@]}"; do [ "$g" = "$done_pid" ] || keep+=("$g"); done
  remaining=("${keep[@]}")
  if [ $st != 0 ]; then rc=$st; break; fi
done
cleanup
grep -hE "^(epoch|dgl_rgcn_train: graph)|Error" "$RUN/m0-trainer.log" | sed 's/^/    /' || true
if [ $rc != 0 ]; then
  log "DistDGL R-GCN FAILED (exit $rc$([ $rc = 124 ] && echo ", timed out after $TIMEOUT s")); last lines:"
  for f in "$RUN"/machine*.log "$RUN"/m*-trainer.log "$RUN"/m*-server.log; do
    [ -s "$f" ] && { echo "    == $f"; tail -n 8 "$f" | sed 's/^/    /'; }
  done
  exit "$rc"
fi
log "load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 3. summary: mean epoch time after the first (all epochs if only one), last val accuracy ---
"$PY" - "$RUN/metrics.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
times = [r["epoch_seconds"] for r in recs]
timed = times[1:] or times
val = [r["val_acc"] for r in recs if "val_acc" in r]
print(f"dgl-rgcn epoch_s={sum(timed) / len(timed):.2f} val_acc={val[-1] if val else float('nan'):.4f} "
      f"(epochs {' '.join(f'{s:.2f}' for s in times)})")
EOF
