#!/usr/bin/env bash
# Runs the ```sh blocks under one heading of a document, as written, on this machine's loopback
# "machines": the only changes are the ones a reader makes (their dataset, addresses, folders:
# /data/job and /tmp/job become a temporary folder, port 30050 a free port, 10.0.0.x the loopback
# addresses, build/bin this build's) and a smaller job so that the test is quick. The output
# must match EXPECT (a grep -E pattern).
# $PWD/python and $PWD/build/{bin,python} (run from the repository root) become this checkout's
# and this build's; a line starting with python3 runs $DOC_PYTHON.
# Usage: doc_commands_test.sh DOC HEADING BIN_DIR EXPECT
set -euo pipefail
doc=$1
heading=$2
bin=$(cd "$3" && pwd)
expect=$4
# The repository (for $PWD/python in a document) and the Python that runs a document's python3
# (DOC_PYTHON: the one fanout's extension was built for).
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${DOC_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every ```sh block from the heading to the next heading of the same or a higher level.
level=$(printf '%s' "$heading" | sed 's/ .*//')
block=$(awk -v h="$heading" -v l="$level" '
  $0 == h {on = 1; next}
  on && /^#+ / { split($0, w, " "); if (length(w[1]) <= length(l)) exit }
  on && /^```sh/ {grab = 1; next}
  grab && /^```/ {grab = 0; next}
  grab' "$doc")
[ -n "$block" ] || { echo "doc_commands_test: no sh block under '$heading' in $doc" >&2; exit 1; }

"$bin/fanout-generate" --out "$work/ds" --preset tiny >/dev/null
# A base port free for two servers on both loopback machines, and the coordinator's after it.
port=$(python3 -c 'import socket
for _ in range(50):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    ok = True
    for host in ("127.0.0.1", "127.0.0.2"):
        for q in (p, p + 1, p + 2):
            t = socket.socket()
            try: t.bind((host, q))
            except OSError: ok = False
            t.close()
    if ok: print(p); break')
script=$(printf '%s\n' "$block" | sed -E \
  -e "s#/data/job|/tmp/job#$work/job#g" \
  -e "s#DATASET_DIR#$work/ds#g" \
  -e "s#^B=\\\$PWD/build/bin#B=$bin#" \
  -e "s#\\\$PWD/build/bin#$bin#g; s#\\\$PWD/build/python#$(cd "$bin/../python" 2>/dev/null && pwd || echo "$bin/../python")#g" \
  -e "s#\\\$PWD/python#$repo/python#g; s#^( *)python3 #\1$python #" \
  -e "s#10\.0\.0\.11 30050#127.0.0.1 $port#; s#10\.0\.0\.12 30050#127.0.0.2 $port#" \
  -e "s#(127\.0\.0\.[12]) 30050#\1 $port#g" \
  -e "s#parts/NAME\.json#parts/ds.json#" \
  -e "s#--hidden [0-9]+#--hidden 16#; s#--epochs [0-9]+#--epochs 1#; s#--fanouts [0-9,]+#--fanouts 5,5#")
echo "doc_commands_test: running, from $doc '$heading':"
printf '%s\n' "$script"
export PATH="$bin:$PATH"
out=$(cd "$work" && bash -euo pipefail -c "$script" 2>&1) || { printf '%s\n' "$out"; echo "doc_commands_test: the commands failed" >&2; exit 1; }
printf '%s\n' "$out" | tail -5
printf '%s\n' "$out" | grep -Eq "$expect" || { printf '%s\n' "$out"; echo "doc_commands_test: no line matches '$expect'" >&2; exit 1; }
echo "doc_commands_test: ok"
