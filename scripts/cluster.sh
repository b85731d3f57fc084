#!/usr/bin/env bash
# A cluster on one box: N machines as network namespaces joined by a switch, each link shaped to a
# rate, optionally each machine's memory and CPU time capped; for rehearsing a job, its memory and
# its bytes before renting the machines (docs/deploy.md, "Rehearse a cluster on one machine").
#
#   scripts/cluster.sh run --machines N [--rate R] [--memory-per-machine M] [--cpus-per-machine C] [--name NAME]
#                          [--port P] -- CMD...
#       makes the cluster, runs CMD with FANOUT_CLUSTER_IP_CONFIG (its ip_config.txt) and
#       FANOUT_CLUSTER_AGENT (fanout-launch --agent's value) set, and removes the cluster when CMD
#       ends, fails or is interrupted; exits with CMD's status.
#   scripts/cluster.sh up --machines N [--rate R] [--memory-per-machine M] [--cpus-per-machine C] [--name NAME] [--port P]
#   scripts/cluster.sh down [--name NAME]               removes what `up` made, and nothing else
#   scripts/cluster.sh exec K [--name NAME] -- CMD...   runs CMD on machine K (its namespace, memory and CPU caps)
#   scripts/cluster.sh counters [--name NAME]           bytes each machine's link received and sent
#   scripts/cluster.sh link K down|up [--name NAME]     cuts machine K's link at the switch, or restores it
#   scripts/cluster.sh rate K R [--name NAME]           reshapes machine K's link to R
#
# R: a tc rate ("1gbit", "200mbit", "10gbit") or "unlimited" (the default). Each link is shaped in
# both directions with the tbf qdisc. This kernel has no netem: no latency is added, so a link is
# as fast to answer as memory and only its bandwidth is real. M: a memory cap per machine in bytes
# or with K/M/G (cgroup v1's memory controller), e.g. 6G. C: the cores' worth of CPU time each
# machine's processes get together, e.g. 0.5 or 4 (cgroup v1's cpu controller, CFS quota over a
# 100 ms period: time, not pinned cores), so that machines stop competing for the host's cores
# as real machines would not. NAME (default "fanout") prefixes every
# namespace (NAME-m0.., NAME-sw); machine k is 10.213.0.(k+1) inside them, and nothing is routed
# outside them: the host's own interfaces and addresses are never touched. Needs root (ip netns).
# Exit status 77 when namespaces cannot be made here (not root, no ip netns): callers may skip.
set -euo pipefail

SELF=$(readlink -f "$0")
NAME=fanout MACHINES=0 RATE=unlimited MEMORY="" CPUS="" PORT=30050
SUBNET=10.213.0
STATE_ROOT=${FANOUT_CLUSTER_STATE:-/run/fanout-cluster}

die() { echo "cluster.sh: $*" >&2; exit 2; }

parse_common() {
  REST=()
  while [ $# -gt 0 ]; do
    case $1 in
      --name) NAME=$2; shift 2 ;;
      --machines) MACHINES=$2; shift 2 ;;
      --rate) RATE=$2; shift 2 ;;
      --memory-per-machine) MEMORY=$2; shift 2 ;;
      --cpus-per-machine) CPUS=$2; shift 2 ;;
      --port) PORT=$2; shift 2 ;;
      --) shift; REST+=("$@"); break ;;
      *) REST+=("$1"); shift ;;
    esac
  done
  [[ $NAME =~ ^[a-z][a-z0-9]{0,11}$ ]] || die "--name $NAME: lower-case letters and digits, at most 12, a letter first"
  STATE=$STATE_ROOT/$NAME
}

can_make_namespaces() {
  [ "$(id -u)" = 0 ] || { echo "cluster.sh: needs root to make network namespaces (ip netns)" >&2; exit 77; }
  command -v ip >/dev/null && command -v tc >/dev/null || { echo "cluster.sh: needs iproute2 (ip, tc)" >&2; exit 77; }
  local probe="$NAME-probe$$"
  ip netns add "$probe" 2>/dev/null || { echo "cluster.sh: cannot make a network namespace here (ip netns add failed)" >&2; exit 77; }
  ip netns del "$probe"
}

# tbf's bucket: 4 ms of the rate, at least 256 KiB (veth hands over 64 KiB GSO packets).
burst_of() {
  local bits
  bits=$(tc_rate_bits "$1")
  local b=$((bits / 8 / 250))
  [ $b -lt 262144 ] && b=262144
  echo $b
}

tc_rate_bits() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "--rate $1: a rate such as 1gbit, 200mbit, 10gbit, or unlimited"
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in bit) echo "$n" ;; kbit) echo $((n * 1000)) ;; mbit) echo $((n * 1000000)) ;; gbit) echo $((n * 1000000000)) ;; esac
}

shape() {  # shape NS DEV RATE
  tc -n "$1" qdisc del dev "$2" root 2>/dev/null || true
  [ "$3" = unlimited ] && return
  tc -n "$1" qdisc add dev "$2" root tbf rate "$3" burst "$(burst_of "$3")" latency 100ms
}

memory_bytes() {
  local m=${1^^}
  [[ $m =~ ^([0-9]+)([KMG]?)I?B?$ ]] || die "--memory-per-machine $1: bytes, or a number with K, M or G (e.g. 6G)"
  case ${BASH_REMATCH[2]} in
    K) echo $((BASH_REMATCH[1] << 10)) ;; M) echo $((BASH_REMATCH[1] << 20)) ;; G) echo $((BASH_REMATCH[1] << 30)) ;;
    *) echo "${BASH_REMATCH[1]}" ;;
  esac
}

cgroup_of() { echo "/sys/fs/cgroup/memory/fanout-cluster-$NAME-m$1"; }
cpu_cgroup_of() { echo "/sys/fs/cgroup/cpu/fanout-cluster-$NAME-m$1"; }

# --cpus-per-machine C as a CFS quota in microseconds of each 100 ms period.
cpu_quota_us() {
  [[ $1 =~ ^[0-9]+(\.[0-9]{1,3})?$ ]] || die "--cpus-per-machine $1: a number of cores, e.g. 0.5 or 4"
  local q
  q=$(awk -v c="$1" 'BEGIN { printf "%d", c * 100000 }')
  [ "$q" -ge 1000 ] || die "--cpus-per-machine $1: at least 0.01"
  echo "$q"
}

cmd_up() {
  [ "$MACHINES" -ge 1 ] 2>/dev/null && [ "$MACHINES" -le 200 ] || die "--machines $MACHINES: 1 to 200"
  [ "$RATE" = unlimited ] || tc_rate_bits "$RATE" >/dev/null
  local mem="" quota=""
  [ -n "$MEMORY" ] && mem=$(memory_bytes "$MEMORY")
  [ -n "$CPUS" ] && quota=$(cpu_quota_us "$CPUS")
  can_make_namespaces
  if [ -e "$STATE" ] || ip netns list | awk '{print $1}' | grep -qx "$NAME-sw"; then
    die "a cluster named $NAME exists already: scripts/cluster.sh down --name $NAME first, or another --name"
  fi
  if [ -n "$mem" ] && [ ! -d /sys/fs/cgroup/memory ]; then
    echo "cluster.sh: --memory-per-machine needs cgroup v1's memory controller (/sys/fs/cgroup/memory)" >&2
    exit 77
  fi
  if [ -n "$quota" ] && [ ! -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    echo "cluster.sh: --cpus-per-machine needs cgroup v1's cpu controller (/sys/fs/cgroup/cpu)" >&2
    exit 77
  fi
  mkdir -p "$STATE"
  echo "$MACHINES" >"$STATE/machines"
  echo "$RATE" >"$STATE/rate"
  # From here on, a failure removes what was made.
  trap 'cmd_down >/dev/null 2>&1 || true' ERR
  ip netns add "$NAME-sw"
  ip -n "$NAME-sw" link set lo up
  ip -n "$NAME-sw" link add br0 type bridge
  ip -n "$NAME-sw" link set br0 up
  : >"$STATE/ip_config.txt"
  for ((k = 0; k < MACHINES; k++)); do
    local ns="$NAME-m$k"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # One veth pair, made inside the two namespaces: nothing appears among the host's interfaces.
    ip -n "$ns" link add eth0 type veth peer name "p$k" netns "$NAME-sw"
    ip -n "$ns" addr add "$SUBNET.$((k + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$NAME-sw" link set "p$k" master br0 up
    shape "$ns" eth0 "$RATE"          # what machine k sends
    shape "$NAME-sw" "p$k" "$RATE"    # what it receives
    if [ -n "$mem" ]; then
      mkdir -p "$(cgroup_of $k)"
      echo "$mem" >"$(cgroup_of $k)/memory.limit_in_bytes"
    fi
    if [ -n "$quota" ]; then
      mkdir -p "$(cpu_cgroup_of $k)"
      echo 100000 >"$(cpu_cgroup_of $k)/cpu.cfs_period_us"
      echo "$quota" >"$(cpu_cgroup_of $k)/cpu.cfs_quota_us"
    fi
    echo "$SUBNET.$((k + 1)) $PORT" >>"$STATE/ip_config.txt"
  done
  [ -n "$mem" ] && echo "$mem" >"$STATE/memory"
  [ -n "$quota" ] && echo "$quota" >"$STATE/cpu_quota_us"
  trap - ERR
  echo "cluster.sh: $MACHINES machines ($NAME-m0..$NAME-m$((MACHINES - 1)), $SUBNET.1..$SUBNET.$MACHINES), links $RATE${mem:+, memory $MEMORY each}${quota:+, CPU time of $CPUS cores each}; ip_config: $STATE/ip_config.txt" >&2
}

cmd_down() {
  local n=0
  [ -f "$STATE/machines" ] && n=$(cat "$STATE/machines")
  # The machines of this cluster only: those `up` recorded, and any NAME-mK it may have left.
  local spaces
  spaces=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(m[0-9]+|sw)\$" || true)
  for ns in $spaces; do
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  done
  for ns in $spaces; do ip netns del "$ns" 2>/dev/null || true; done
  for ((k = 0; k < n; k++)); do
    local cg
    for cg in "$(cgroup_of $k)" "$(cpu_cgroup_of $k)"; do
      if [ -d "$cg" ]; then
        for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
      fi
    done
  done
  rm -rf "$STATE"
}

need_state() { [ -f "$STATE/machines" ] || die "no cluster named $NAME (scripts/cluster.sh up --name $NAME ...)"; }

machine_arg() {
  need_state
  [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -lt "$(cat "$STATE/machines")" ] ||
    die "machine ${1:-?}: not a machine of cluster $NAME (0..$(($(cat "$STATE/machines") - 1)))"
}

cmd_exec() {
  local k=$1
  shift
  machine_arg "$k"
  [ $# -gt 0 ] || die "exec $k: no command"
  if [ -f "$STATE/memory" ]; then echo $$ >"$(cgroup_of "$k")/cgroup.procs"; fi
  if [ -f "$STATE/cpu_quota_us" ]; then echo $$ >"$(cpu_cgroup_of "$k")/cgroup.procs"; fi
  exec ip netns exec "$NAME-m$k" "$@"
}

cmd_counters() {
  need_state
  local n
  n=$(cat "$STATE/machines")
  for ((k = 0; k < n; k++)); do
    ip netns exec "$NAME-m$k" awk -v k="$k" '$1 == "eth0:" {print "m" k, "rx_bytes", $2, "tx_bytes", $10}' /proc/net/dev
  done
}

cmd_link() {
  machine_arg "$1"
  case ${2:-} in up | down) ip -n "$NAME-sw" link set "p$1" "$2" ;; *) die "link $1: up or down" ;; esac
}

cmd_rate() {
  machine_arg "$1"
  [ -n "${2:-}" ] || die "rate $1: which rate?"
  [ "$2" = unlimited ] || tc_rate_bits "$2" >/dev/null
  shape "$NAME-m$1" eth0 "$2"
  shape "$NAME-sw" "p$1" "$2"
}

cmd_run() {
  [ ${#REST[@]} -gt 0 ] || die "run: the command goes after --"
  cmd_up
  trap 'cmd_down' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  export FANOUT_CLUSTER_IP_CONFIG="$STATE/ip_config.txt"
  export FANOUT_CLUSTER_AGENT="$SELF exec {index} --name $NAME --"
  export FANOUT_CLUSTER_NAME="$NAME"
  local rc=0
  "${REST[@]}" || rc=$?
  return $rc
}

verb=${1:-}
[ $# -gt 0 ] && shift
case $verb in
  up) parse_common "$@"; cmd_up ;;
  down) parse_common "$@"; cmd_down ;;
  run) parse_common "$@"; cmd_run ;;
  counters) parse_common "$@"; cmd_counters ;;
  exec) k=${1:-}; shift || true; parse_common "$@"; cmd_exec "$k" "${REST[@]}" ;;
  link) k=${1:-}; what=${2:-}; shift 2 || true; parse_common "$@"; cmd_link "$k" "$what" ;;
  rate) k=${1:-}; r=${2:-}; shift 2 || true; parse_common "$@"; cmd_rate "$k" "$r" ;;
  *) sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; [ -z "$verb" ] || [ "$verb" = --help ] || exit 2 ;;
esac
