#!/usr/bin/env bash
# Features beyond memory (issue 40, docs/benchmarks.md): the same training job with its features
# mapped and no limit, then read from disk (fanout-launch --features-from-disk-mb C) with every
# process of each machine in a memory cgroup of its own, once per cache size C and row cache
# policy (POLICIES, default "s3fifo"; "s3fifo lru" compares them: fanout-launch
# --features-cache-policy).
#   [POLICIES="s3fifo lru"] bench/disk_features_bench.sh PART_CONFIG LIMIT_MB CACHE_MB [CACHE_MB...]
# LIMIT_MB is each machine's cgroup limit. Needs root and cgroup v1's memory controller
# (/sys/fs/cgroup/memory). Extra fanout-train flags in FANOUT_TRAIN_FLAGS (docs/benchmarks.md's
# final runs: "--feature-cache-mb 2048 --prefetch 1" with CACHE_MB 16); MAPPED=0 skips the
# mapped run. Each run also prints what the block device under the partition read.
# MACHINES=M (with RATE, default 1gbit): the job on M emulated machines instead (scripts/cluster.sh:
# network namespaces over links shaped to RATE, each machine's processes in a memory cgroup of
# LIMIT_MB with `--memory-per-machine`, none for the mapped run); PART_CONFIG then has M parts.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n 2,11p "$0"; exit 2; }
BIN=$(cd "${FANOUT_BUILD_DIR:-build}/bin" && pwd)
CONFIG=$(realpath "$1")
LIMIT_MB=$2
shift 2
CG=/sys/fs/cgroup/memory
[ -w "$CG" ] || { echo "disk_features_bench: $CG is not writable (root and cgroup v1 needed)" >&2; exit 1; }
WORK=${TMPDIR:-/tmp}/fanout-disk-features-bench
mkdir -p "$WORK"
printf '127.0.0.1 35150\n127.0.0.2 35150\n' > "$WORK/ip_config.txt"
# Every process of machine K joins cgroup fanout-bench-mK, then becomes the program.
cat > "$WORK/in-cgroup.sh" <<EOF
#!/bin/sh
[ -n "\${FANOUT_BENCH_CGROUP:-}" ] && echo \$\$ > "$CG/fanout-bench-m\${FANOUT_MACHINE_ID}/cgroup.procs"
exec "\$@"
EOF
cat > "$WORK/server.sh" <<EOF
#!/bin/sh
exec "$WORK/in-cgroup.sh" "$BIN/fanout-server" "\$@"
EOF
chmod +x "$WORK/in-cgroup.sh" "$WORK/server.sh"
TRAIN=("$BIN/fanout-train" --model sage --fanouts 10,5 --hidden 64 --batch-size 1024 --epochs 2 --eval-every 0
       --no-test --threads 1 ${FANOUT_TRAIN_FLAGS:-})

# The block device under the partition, for what the runs read from the disk itself (a pread the
# page cache answers reads nothing there).
DEV_STAT=/sys/dev/block/$(findmnt -no MAJ:MIN -T "$CONFIG" | tr -d ' ')/stat
disk_reads() { [ -r "$DEV_STAT" ] && awk '{print $1, $3}' "$DEV_STAT" || echo "0 0"; }

MACHINES=${MACHINES:-0}
CLUSTER=$PWD/scripts/cluster.sh
CL=fdisk$$
CL=${CL:0:12}
[ "$MACHINES" = 0 ] || trap '"$CLUSTER" down --name "$CL" >/dev/null 2>&1 || true' EXIT

launch() {  # launch NAME [fanout-launch flags...]: on the two loopback machines, or the emulated cluster
  local name=$1
  shift
  if [ "$MACHINES" = 0 ]; then
    "$BIN/fanout-launch" --ip-config ip_config.txt --part-config "$CONFIG" --num-servers 1 --num-trainers 1 \
      --num-samplers 1 --server-bin "$WORK/server.sh" --log-dir "logs-$name" "$@" -- "$WORK/in-cgroup.sh" "${TRAIN[@]}"
    return
  fi
  "$BIN/fanout-launch" --agent "$CLUSTER exec {index} --name $CL --" --ip-config "/run/fanout-cluster/$CL/ip_config.txt" \
    --part-config "$CONFIG" --num-servers 1 --num-trainers 1 --num-samplers 1 --log-dir "logs-$name" "$@" -- "${TRAIN[@]}"
}

run() {  # run NAME [fanout-launch flags...]
  local name=$1
  shift
  echo "== $name"
  local before after
  before=$(disk_reads)
  cd "$WORK"
  launch "$name" "$@" 2>&1 | grep -E "trainer 0\] epoch|row cache|halo cache|fanout-launch: machine|error" || true
  cd - > /dev/null
  after=$(disk_reads)
  [ -r "$DEV_STAT" ] && echo "disk: $(($(echo "$after" | cut -d' ' -f1) - $(echo "$before" | cut -d' ' -f1))) reads," \
    "$(( ($(echo "$after" | cut -d' ' -f2) - $(echo "$before" | cut -d' ' -f2)) * 512 / 1000000 )) MB read from $DEV_STAT during the run"
}

if [ "$MACHINES" != 0 ]; then
  # The emulated cluster: a fresh one per run, capped for the disk runs (scripts/cluster.sh's cgroups).
  if [ "${MAPPED:-1}" != 0 ]; then
    "$CLUSTER" up --machines "$MACHINES" --rate "${RATE:-1gbit}" --name "$CL" >&2
    run mapped
    "$CLUSTER" down --name "$CL"
  fi
  for c in "$@"; do
    for p in ${POLICIES:-s3fifo}; do
      sync
      echo 1 > /proc/sys/vm/drop_caches
      "$CLUSTER" up --machines "$MACHINES" --rate "${RATE:-1gbit}" --memory-per-machine "${LIMIT_MB}M" --name "$CL" >&2
      run "disk-${c}MiB-$p" --features-from-disk-mb "$c" --features-cache-policy "$p"
      for ((k = 0; k < MACHINES; k++)); do
        cg=$CG/fanout-cluster-$CL-m$k
        echo "machine $k cgroup: limit ${LIMIT_MB} MiB, peak $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MiB," \
          "OOM kills $(awk '$1 == "oom_kill" {print $2}' "$cg/memory.oom_control")"
      done
      "$CLUSTER" down --name "$CL"
    done
  done
  exit 0
fi
[ "${MAPPED:-1}" = 0 ] || run mapped
for c in "$@"; do
  for p in ${POLICIES:-s3fifo}; do
    for k in 0 1; do
      rmdir "$CG/fanout-bench-m$k" 2>/dev/null || true
      mkdir "$CG/fanout-bench-m$k"
      echo $((LIMIT_MB << 20)) > "$CG/fanout-bench-m$k/memory.limit_in_bytes"
    done
    # Every run starts with the partition's files out of the page cache: the run before would
    # otherwise leave the next one the pages it read (the first policy run paid for the second).
    sync
    echo 1 > /proc/sys/vm/drop_caches
    FANOUT_BENCH_CGROUP=1 run "disk-${c}MiB-$p" --features-from-disk-mb "$c" --features-cache-policy "$p"
    for k in 0 1; do
      echo "machine $k cgroup: limit ${LIMIT_MB} MiB, peak $(($(cat "$CG/fanout-bench-m$k/memory.max_usage_in_bytes") >> 20)) MiB," \
        "OOM kills $(awk '$1 == "oom_kill" {print $2}' "$CG/fanout-bench-m$k/memory.oom_control")"
      rmdir "$CG/fanout-bench-m$k" 2>/dev/null || true
    done
  done
done
