#!/usr/bin/env bash
# Jobs on an emulated cluster (scripts/cluster.sh): 4 machines as network namespaces joined by a
# switch, links shaped to 1 Gbit/s, reached by fanout-launch --agent. Checks that
#   - a 4-machine job trains (sampling across every partition, halo caches, evaluation) and each
#     machine's link carried its traffic, counted by the interfaces themselves;
#   - a machine whose link is cut mid-epoch ends the job within 15 s, with an error naming the
#     unreachable machine, and leaves no process behind in any machine;
#   - with --max-restarts, a job whose link is cut for 15 s finishes once it is back, from its
#     last checkpoint, with the uninterrupted run's final loss;
#   - a slow link (10 Mbit/s) is slow, not a failure;
#   - a typed graph's job with learnable rows (their gradients sent as bfloat16) on random
#     partitions, and a link-prediction job, train;
#   - a Python script on fanout.distributed (DistDGL's names) gets exactly fanout-train's batches
#     on every machine (with PYTHON, an interpreter with torch and numpy; skipped without);
#   - with --replicas 1, a partition stays served while its machine's link is cut (Python);
#   - a server killed mid-job, its partition having another, costs nothing but the failover;
#   - a trainer that runs its machine out of memory (--memory-per-machine) fails the job with a
#     line naming the kernel's out-of-memory killer and the machine's memory cgroup;
#   - --cpus-per-machine puts each machine's processes in a CPU cgroup with that quota;
#   - bench/cluster/run.sh runs setups A and H (fanout's side) and prints their results.
# Skipped (exit 77) where namespaces cannot be made (not root, no iproute2).
#
#   tests/integration/cluster_test.sh BIN_DIR [PYTHON]
set -uo pipefail
BIN=$(readlink -f "$1")
PYTHON=${2:-}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CLUSTER=$REPO/scripts/cluster.sh
NAME=ct$(($$ % 1000000))
WORK=$(mktemp -d)
FAILED=0
cleanup() {
  "$CLUSTER" down --name "$NAME" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; FAILED=1; }

"$CLUSTER" run --machines 1 --name "$NAME" -- true 2>"$WORK/probe.err"
case $? in
  0) ;;
  77) echo "skipped: $(cat "$WORK/probe.err")"; exit 77 ;;
  *) cat "$WORK/probe.err" >&2; echo "FAIL: scripts/cluster.sh could not make a 1-machine cluster" >&2; exit 1 ;;
esac

cd "$WORK"
"$BIN/fanout-generate" --out ds --num-nodes 6000 --num-edges 60000 --feat-dim 16 --num-classes 5 --seed 2 >/dev/null
"$BIN/fanout-partition" --input ds --num-parts 4 --out parts --graph-name g --add-reverse-edges --quiet

launch_command() {  # launch_command LOG COMMAND...: fanout-launch over the cluster's machines
  # ($LAUNCH_FLAGS added; the partitions $PART, parts/g.json by default)
  local log=$1
  shift
  "$BIN/fanout-launch" --agent "$FANOUT_CLUSTER_AGENT" --ip-config "$FANOUT_CLUSTER_IP_CONFIG" \
    --part-config "${PART:-parts/g.json}" --num-servers 1 --num-trainers 1 --num-samplers 1 --log-dir "logs-$log" \
    ${LAUNCH_FLAGS:-} -- "$@" >"$log.log" 2>&1
}
launch() {  # launch LOG TRAIN-FLAGS...: fanout-train through launch_command
  local log=$1
  shift
  launch_command "$log" "$BIN/fanout-train" --fanouts 5,5 --batch-size 64 --hidden 16 --threads 1 "$@"
}
export -f launch_command launch
export BIN PYTHON REPO

# 1. A 4-machine job, and the bytes each machine's link carried.
"$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
  launch train --epochs 2 --eval-every 2 --metrics-file metrics.jsonl; echo "launch=$?" >status
  "$0" counters --name "$1" >counters' "$CLUSTER" "$NAME"
grep -q "launch=0" status || { fail "the 4-machine job failed"; tail -n 30 train.log >&2; }
epochs=$(grep -c '"event": *"epoch"' metrics.jsonl 2>/dev/null || echo 0)
[ "$epochs" -ge 2 ] || fail "the 4-machine job wrote $epochs epoch records, not 2"
grep -q "10.213.0.4" train.log || fail "the job's log does not name machine 3's address (10.213.0.4)"
[ "$(wc -l <counters)" = 4 ] || fail "counters: $(cat counters)"
while read -r m _ rx _ tx; do
  # Each machine samples from the 3 others and all-reduces with them: well over 100 KB each way.
  [ "$rx" -gt 100000 ] && [ "$tx" -gt 100000 ] || fail "$m's link carried rx $rx / tx $tx bytes"
done <counters
echo "4 machines at 1gbit: $(tr '\n' ';' <counters)"

# 2. Machine 2's link cut mid-epoch: the job ends within 15 s, naming it, and nothing is left.
"$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
  launch cut --epochs 1000 --eval-every 0 & pid=$!
  for _ in $(seq 1 600); do grep -q "epoch 0 |" cut.log 2>/dev/null && break; sleep 0.1; done
  "$0" link 2 down --name "$1"; cut_at=$(date +%s.%N)
  wait $pid; rc=$?
  echo "rc=$rc seconds=$(awk -v a="$cut_at" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\", b - a }")" >cut.status
  left=0; for k in 0 1 2 3; do n=$(ip netns pids "$1-m$k" | wc -l); left=$((left + n)); done
  echo "left=$left" >>cut.status' "$CLUSTER" "$NAME"
cat cut.status
rc=$(sed -n 's/.*rc=\([0-9]*\).*/\1/p' cut.status)
seconds=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' cut.status)
[ -n "$rc" ] && [ "$rc" != 0 ] || fail "the job with a cut link exited ${rc:-?}, not with an error"
awk -v s="${seconds:-999}" 'BEGIN { exit !(s <= 15) }' || fail "the job ended ${seconds:-?} s after the cut, not within 15"
grep -q "left=0" cut.status || fail "processes were left in the machines after the job ended"
grep -Eq "10\.213\.0\.3|machine 2" cut.log || { fail "the error does not name machine 2 (10.213.0.3)"; tail -n 20 cut.log >&2; }
grep -E "fanout-launch: job .* failed" cut.log >&2 || true

# 3. The same cut for 15 s with --max-restarts: the job finishes once the link is back, resuming
#    from its last checkpoint, with the loss the uninterrupted run ends with.
last_loss() { python3 -c 'import json,sys; print([r for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "epoch"][-1]["loss"])' "$1"; }
"$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
  flags=(--epochs 6 --eval-every 0 --seed 7 --checkpoint-every-steps 5 --auto-resume)
  launch ref "${flags[@]}" --checkpoint-dir ckpt-ref --metrics-file ref.jsonl; echo "ref=$?" >restart.status
  LAUNCH_FLAGS="--max-restarts 3 --restart-backoff 1" launch restart "${flags[@]}" --checkpoint-dir ckpt-cut \
    --metrics-file restart.jsonl & pid=$!
  for _ in $(seq 1 600); do grep -q "epoch 1 |" restart.log 2>/dev/null && break; sleep 0.1; done
  "$0" link 2 down --name "$1"; sleep 15; "$0" link 2 up --name "$1"
  wait $pid; echo "restart=$?" >>restart.status' "$CLUSTER" "$NAME"
cat restart.status
grep -q "ref=0" restart.status || fail "the uninterrupted run failed"
grep -q "restart=0" restart.status || { fail "the run with a 15 s cut did not finish"; tail -n 20 restart.log >&2; }
grep -Eq "job .* finished after [0-9]+ restart" restart.log || fail "the run with a 15 s cut was never restarted"
ref=$(last_loss ref.jsonl 2>/dev/null) got=$(last_loss restart.jsonl 2>/dev/null)
echo "final loss: uninterrupted $ref, with the cut $got"
[ -n "$ref" ] && [ "$ref" = "$got" ] || fail "final loss $got after the cut, $ref without"

# 4. A 10 Mbit/s link is slow, not a failure; rows travel as bfloat16 there (--wire-rows), and the
#    epoch's row pulls count half the bytes they would in float32.
"$CLUSTER" run --machines 4 --rate 10mbit --name "$NAME" -- bash -c '
  launch slow --epochs 1 --eval-every 0 --wire-rows bfloat16; echo "slow=$?" >slow.status' "$CLUSTER" "$NAME"
grep -q "slow=0" slow.status || { fail "the job on 10 Mbit/s links failed"; tail -n 20 slow.log >&2; }
grep -q "| wire .*row_pulls" slow.log || fail "the slow job's epoch line carries no byte count by kind"

# 5. A typed graph on 4 random partitions with learnable rows, their gradients crossing to their
#    owners as bfloat16; link prediction on the 4 METIS partitions.
"$BIN/fanout-generate" --preset mag --scale 0.002 --out mag >/dev/null
"$BIN/fanout-partition" --input mag --num-parts 4 --part-method random --out mparts --graph-name m \
  --add-reverse-edges --quiet
"$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
  PART=mparts/m.json launch typed --model rgcn --embed-featureless 8 --embed-grad-dtype bfloat16 --epochs 2 \
    --eval-every 2 --metrics-file typed.jsonl; echo "typed=$?" >more.status
  launch link --task link --epochs 2 --eval-every 0 --no-test --edges-per-epoch 2048 --metrics-file link.jsonl
  echo "link=$?" >>more.status' "$CLUSTER" "$NAME"
for job in typed link; do
  grep -q "$job=0" more.status || { fail "the 4-machine $job job failed"; tail -n 20 "$job.log" >&2; }
  n=$(grep -c '"event": *"epoch"' "$job.jsonl" 2>/dev/null || echo 0)
  [ "$n" -ge 2 ] || fail "the 4-machine $job job wrote $n epoch records, not 2"
done
grep -q "learnable rows" typed.log || fail "the typed job did not train learnable rows"

# 6. DistDGL's names on 4 machines: python/examples/sage_train.py, started by fanout-launch in each
#    machine, receives fanout-train's batches exactly (their checksums, every rank, every step).
if [ -n "$PYTHON" ] && "$PYTHON" -c "import numpy, torch" 2>/dev/null; then
  "$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
    common=(--fanouts 5,4 --batch-size 50 --epochs 2)
    launch_command cpp "$BIN/fanout-train" "${common[@]}" --seed 3 --print-batch-checksums --hidden 8 \
      --eval-every 0 --threads 1
    echo "cpp=$?" >py.status
    PYTHONPATH="$REPO/python:$BIN/../python" launch_command py "$PYTHON" "$REPO/python/examples/sage_train.py" \
      --mode checksums "${common[@]}" --seeds 3 --num-samplers 1
    echo "py=$?" >>py.status' "$CLUSTER" "$NAME"
  grep -q "cpp=0" py.status || { fail "fanout-train's checksum job failed"; tail -n 20 cpp.log >&2; }
  grep -q "py=0" py.status || { fail "the Python script's job failed"; tail -n 20 py.log >&2; }
  checksums() { grep -Eo "rank [0-9]+ batch [0-9]+ [0-9]+ crc [0-9]+" "$1" | sort; }
  n=$(checksums cpp.log | wc -l)
  ranks=$(checksums cpp.log | cut -d" " -f2 | sort -u | wc -l)
  [ "$n" -gt 8 ] && [ "$ranks" = 4 ] || fail "fanout-train printed $n batch checksums from $ranks ranks"
  if [ "$(checksums cpp.log)" = "$(checksums py.log)" ]; then
    echo "Python on 4 machines: $n batches, the same as fanout-train's"
  else
    fail "the Python script's batches differ from fanout-train's"
  fi

  # 6b. A replica keeps a partition served through its machine's link cut: with --replicas 1,
  #     machine 3 also serves partition 2. Machine 0 reads partition 2's rows through
  #     fanout.distributed while machine 2's link is down for 20 s: every read is answered, the
  #     same rows, the longest within the keepalive's 15 s and a little.
  "$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
    LAUNCH_FLAGS="--replicas 1" PYTHONPATH="$REPO/python:$BIN/../python" launch_command replica "$PYTHON" \
      "$REPO/tests/integration/replica_reader.py" --graph-name g --part 2 --seconds 40 & pid=$!
    for _ in $(seq 1 900); do grep -q "replica_reader: reading" replica.log 2>/dev/null && break; sleep 0.1; done
    sleep 2; "$0" link 2 down --name "$1"; sleep 20; "$0" link 2 up --name "$1"
    wait $pid; echo "replica=$?" >replica.status' "$CLUSTER" "$NAME"
  grep -q "replica=0" replica.status || { fail "the job reading through a replica failed"; tail -n 20 replica.log >&2; }
  grep -q "replica of partition 2" replica.log || fail "the launcher started no replica of partition 2"
  grep -q "of partition 2 is unavailable" replica.log || fail "machine 0 never moved partition 2's reads to its replica"
  longest=$(sed -n "s/.*replica_reader: reads=[0-9]* longest_s=\([0-9.]*\).*/\1/p" replica.log)
  echo "a replica through a 20 s link cut: $(grep -o "reads=[0-9]* longest_s=[0-9.]*" replica.log)"
  awk -v s="${longest:-999}" 'BEGIN { exit !(s <= 20) }' || fail "a read through the cut took ${longest:-?} s"
else
  echo "section 6 skipped: no PYTHON with torch and numpy given"
fi

# 7. Server failover on the cluster: every machine runs 2 servers of its partition; one of machine
#    2's is killed mid-job, its partition goes on with the other, and the job finishes.
"$CLUSTER" run --machines 4 --rate 1gbit --name "$NAME" -- bash -c '
  LAUNCH_FLAGS="--num-servers 2" launch failover --epochs 8 --eval-every 0 & pid=$!
  for _ in $(seq 1 600); do grep -q "epoch 0 |" failover.log 2>/dev/null && break; sleep 0.1; done
  victim=$(for p in $(ip netns pids "$1-m2"); do
             tr "\0" " " <"/proc/$p/cmdline" 2>/dev/null | grep -q "^[^ ]*fanout-server " && echo "$p"
           done | head -n 1)
  [ -n "$victim" ] && kill -KILL "$victim"
  wait $pid; echo "failover=$? victim=${victim:-none}" >failover.status' "$CLUSTER" "$NAME"
cat failover.status
grep -q "victim=[0-9]" failover.status || fail "no server of machine 2 was found to kill"
grep -q "failover=0" failover.status || { fail "the job whose server was killed did not finish"; tail -n 20 failover.log >&2; }
grep -q "partition 2 goes on with its 1 other server" failover.log ||
  fail "the launcher did not say partition 2 goes on with its other server"

# 8. A machine out of memory (--memory-per-machine 256M): a trainer the kernel's out-of-memory
#    killer ends (it reads a line of /dev/zero, which never ends) fails the job with a line that
#    says so and names the machine's memory cgroup, where it was "exited with status 137".
"$CLUSTER" run --machines 4 --memory-per-machine 256M --name "$NAME" -- bash -c '
  launch_command oom sh -c "if [ \$RANK = 2 ]; then exec tail /dev/zero; fi; exec sleep 1000"
  echo "oom=$?" >oom.status'
cat oom.status
grep -q "oom=0" oom.status && fail "the job whose trainer ran out of memory succeeded"
grep "job .* failed" oom.log | grep -q "m2 trainer 0 .*exited with status 137: fanout-launch: error: killed by the kernel's out-of-memory killer .*memory cgroup /fanout-cluster-$NAME-m2" ||
  { fail "the failure line does not name the out-of-memory killer and machine 2's cgroup"; tail -n 5 oom.log >&2; }

# 8b. --cpus-per-machine: each machine's processes are in a CPU cgroup of their own with that
#     quota (the time it gives is not timed here: timings decide no test).
"$CLUSTER" run --machines 2 --cpus-per-machine 0.5 --name "$NAME" -- bash -c '
  "$0" exec 1 --name "$1" -- cat /proc/self/cgroup >cpu.cgroup
  cat "/sys/fs/cgroup/cpu/fanout-cluster-$1-m1/cpu.cfs_quota_us" >cpu.quota' "$CLUSTER" "$NAME"
grep -q "cpu.*:/fanout-cluster-$NAME-m1\$" cpu.cgroup || fail "machine 1's process is not in its CPU cgroup: $(cat cpu.cgroup)"
[ "$(cat cpu.quota)" = 50000 ] || fail "machine 1's CPU quota is $(cat cpu.quota), not 50000 us a 100 ms period"
[ ! -e "/sys/fs/cgroup/cpu/fanout-cluster-$NAME-m1" ] || fail "the cluster left its CPU cgroup behind"

# 9. The benchmark harness itself (fanout's side): bench/cluster/run.sh makes its own cluster,
#    runs setups A and H on it and prints one CLUSTER_RESULT line for each; with --replicas 1
#    (its --launch-flags), so that H's learnable rows are written to every copy.
timeout 240 "$REPO/bench/cluster/run.sh" --quick --no-dgl --setups A,H --mag-scale 0.002 --machines 2 \
  --rate 1gbit --epochs 2 --work "$WORK/bench" --launch-flags "--replicas 1" >bench.out 2>bench.err
# (H's tiny epochs end faster than the harness reads the interfaces: its bytes may be nan.)
for want in "setup=A machines=2 rate=1gbit fanout_epoch_s=[0-9.]+ dgl_epoch_s=nan fanout_wire_mb=[0-9.]+" \
            "setup=H machines=2 rate=1gbit fanout_epoch_s=[0-9.]+ dgl_epoch_s=nan"; do
  grep -Eq "^CLUSTER_RESULT $want" bench.out ||
    { fail "bench/cluster/run.sh printed no line 'CLUSTER_RESULT $want'"; tail -n 20 bench.out bench.err >&2; }
done

exit $FAILED
