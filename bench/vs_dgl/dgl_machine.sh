#!/usr/bin/env bash
# One loopback "machine" of a DistDGL job: its graph server and its trainer, the processes DGL's
# tools/launch.py would start on that machine, with the environment launch.py gives them.
#
#   unshare -m --propagation private bash dgl_machine.sh MACHINE_ID LOG_DIR PYTHON SCRIPT ARGS...
#
# run.sh starts it in a mount namespace of its own: DGL names its shared memory after the graph,
# so two machines on one host would collide in one /dev/shm; here each gets a private tmpfs. The
# caller exports the job-wide variables: DGL_IP_CONFIG, DGL_CONF_PATH, DGL_NUM_SERVER,
# DGL_NUM_CLIENT, DGL_NUM_SAMPLER, DGL_GRAPH_FORMAT, MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
# TRAINER_OMP_THREADS. Exits with the trainer's status; the server is stopped if it lingers.
set -u
M=$1 LOG=$2 PY=$3
shift 3
mount -t tmpfs -o size=${BENCH_SHM_SIZE:-16g} tmpfs /dev/shm || { echo "machine $M: cannot mount a private /dev/shm" >&2; exit 1; }

# Server: launch.py's construct_dgl_server_env_vars (one server per machine, so server ID = M).
DGL_ROLE=server DGL_SERVER_ID=$M OMP_NUM_THREADS=${SERVER_OMP_THREADS:-1} \
  "$PY" "$@" >"$LOG/m$M-server.log" 2>&1 &
server=$!
# Trainer: launch.py's construct_dgl_client_env_vars, and what torch.distributed.run would set for
# one trainer per machine (rank = machine ID). BENCH_DGL_MACHINE_ID: see dgl_dist_train.py.
DGL_DIST_MODE=distributed DGL_ROLE=client DGL_GROUP_ID=0 OMP_NUM_THREADS=$TRAINER_OMP_THREADS \
  RANK=$M LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 GROUP_RANK=$M BENCH_DGL_MACHINE_ID=$M \
  "$PY" "$@" >"$LOG/m$M-trainer.log" 2>&1 &
trainer=$!

stop() {
  kill -TERM "$trainer" "$server" 2>/dev/null
  sleep 2
  kill -KILL "$trainer" "$server" 2>/dev/null
  # DGL's sampler processes are children of the trainer; they are in this process group, which
  # run.sh kills as a whole as well.
  exit 143
}
trap stop TERM INT HUP

wait "$trainer"
rc=$?
if [ $rc != 0 ]; then
  # A failed trainer never sends the shutdown; run.sh stops the other machine.
  kill -TERM "$server" 2>/dev/null
  sleep 1
  kill -KILL "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  exit $rc
fi
# Trainer rank 0 tells every server to shut down when it exits; give them a moment.
for _ in $(seq 1 60); do
  kill -0 "$server" 2>/dev/null || break
  sleep 1
done
if kill -0 "$server" 2>/dev/null; then
  echo "machine $M: server still running 60 s after its trainer exited; stopping it" >&2
  kill -TERM "$server" 2>/dev/null
  sleep 2
  kill -KILL "$server" 2>/dev/null
fi
wait "$server" 2>/dev/null
exit $rc
