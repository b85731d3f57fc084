#!/usr/bin/env bash
# Runs the README's "Train on a cluster" commands as written, on two loopback machines: the only
# changes are the ones a reader makes (their dataset, their addresses, their workspace) and a
# smaller job so that the test is quick. Usage: readme_cluster_test.sh README BIN_DIR
set -euo pipefail
readme=$1
bin=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The first ```sh block after the heading.
block=$(awk '/^## Train on a cluster/{on=1} on && /^```sh/{grab=1; next} grab && /^```/{exit} grab' "$readme")
[ -n "$block" ] || { echo "readme_cluster_test: no sh block under '## Train on a cluster' in $readme" >&2; exit 1; }

"$bin/fanout-generate" --out "$work/ds" --preset tiny >/dev/null
# Free base ports on the two loopback machines (the README's are 30050 on both).
port=$(python3 -c 'import socket
for _ in range(50):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    ok = True
    for host in ("127.0.0.1", "127.0.0.2"):
        for q in (p, p + 1):
            t = socket.socket()
            try: t.bind((host, q))
            except OSError: ok = False
            t.close()
    if ok: print(p); break')
script=$(printf '%s\n' "$block" | sed \
  -e "s|/data/job|$work/job|g" \
  -e "s|DATASET_DIR|$work/ds|g" \
  -e "s|10\.0\.0\.11 30050|127.0.0.1 $port|; s|10\.0\.0\.12 30050|127.0.0.2 $port|" \
  -e "s|parts/NAME.json|parts/ds.json|" \
  -e "s|--hidden 256 --epochs 20|--hidden 16 --epochs 1|" \
  -e "s|--fanouts 15,10,5|--fanouts 5,5|")
echo "readme_cluster_test: running"
printf '%s\n' "$script"
export PATH="$bin:$PATH"
out=$(cd "$work" && bash -euo pipefail -c "$script" 2>&1) || { printf '%s\n' "$out"; echo "readme_cluster_test: the commands failed" >&2; exit 1; }
printf '%s\n' "$out" | tail -5
printf '%s\n' "$out" | grep -q "\[m0 trainer 0\] fanout-train: test accuracy" || { printf '%s\n' "$out"; echo "readme_cluster_test: no test accuracy" >&2; exit 1; }
[ -s "$work/job/metrics.jsonl" ] || { echo "readme_cluster_test: no metrics.jsonl in the workspace" >&2; exit 1; }
ls "$work/job/checkpoints" | grep -q . || { echo "readme_cluster_test: no checkpoint in the workspace" >&2; exit 1; }
echo "readme_cluster_test: ok"
