#!/usr/bin/env bash
# A small launcher job with --metrics-file and --tensorboard-dir, then, by MODE:
#   plot         scripts/plot_metrics.py turns the metrics file into a PNG;
#   tensorboard  the event file is read back by the real tensorboard package (PyPI, in a
#                throwaway venv under VENV_DIR): every epoch's scalars equal the metrics file's.
#   venv         only makes VENV_DIR (scripts/test.sh, before the tests: installing from PyPI is
#                set-up, not a test).
# Exit 77 (skipped) when what a mode needs cannot be had (matplotlib; tensorboard from PyPI).
# Usage: observability_test.sh MODE BIN_DIR SOURCE_DIR VENV_DIR
set -euo pipefail
mode=$1
venv=$4
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

# VENV_DIR with the tensorboard package, or exit 77.
ensure_venv() {
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" >/dev/null 2>&1 || \
       ! timeout 600 "$venv/bin/python" -m pip install -q tensorboard >/dev/null 2>&1; then
      echo "observability_test: skipped: cannot install tensorboard from PyPI into $venv"
      rm -rf "$venv"
      exit 77
    fi
  fi
}
if [ "$mode" = venv ]; then
  ensure_venv
  exit 0
fi
bin=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$bin/fanout-generate" --out ds --preset tiny >/dev/null
"$bin/fanout-partition" --input ds --num-parts 1 --out parts --quiet
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "127.0.0.1 $port" > ip_config.txt
"$bin/fanout-launch" --ip-config ip_config.txt --part-config parts/ds.json --server-bin "$bin/fanout-server" \
    --coordinator-port $((port + 1)) -- "$bin/fanout-train" --fanouts 5,5 --hidden 16 --epochs 3 \
    --metrics-file metrics.jsonl --tensorboard-dir tb > job.log 2>&1 || { cat job.log; exit 1; }
[ "$(grep -c '"event":"epoch"' metrics.jsonl)" = 3 ] || { cat metrics.jsonl; echo "observability_test: want 3 epoch records" >&2; exit 1; }
ls tb/events.out.tfevents.* >/dev/null

case "$mode" in
plot)
  "$py" -c 'import matplotlib' 2>/dev/null || { echo "observability_test: skipped: no matplotlib (python3-matplotlib)"; exit 77; }
  "$py" "$src/scripts/plot_metrics.py" metrics.jsonl -o metrics.png
  [ "$(head -c 8 metrics.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "observability_test: metrics.png is not a PNG" >&2; exit 1; }
  # Bad input is named: a broken line.
  printf '{"event":"epoch","epoch":0}\nnot json\n' > broken.jsonl
  if "$py" "$src/scripts/plot_metrics.py" broken.jsonl -o broken.png 2> err.txt; then echo "observability_test: a broken file was plotted" >&2; exit 1; fi
  grep -q "broken.jsonl:2: not a JSON record" err.txt || { cat err.txt; exit 1; }
  [ ! -e broken.png ] || { echo "observability_test: a PNG was written for bad input" >&2; exit 1; }
  ;;
tensorboard)
  ensure_venv
  "$venv/bin/python" - <<'PY'
import json
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
ea = EventAccumulator("tb")
ea.Reload()
tags = set(ea.Tags()["scalars"])
for want in ["train/loss", "train/acc", "val/acc", "time/epoch", "time/sample", "time/forward",
             "epoch/seeds_per_second", "test/acc", "test/final_acc", "val/best_acc"]:
    assert want in tags, (want, sorted(tags))
epochs = [json.loads(l) for l in open("metrics.jsonl") if '"event":"epoch"' in l]
loss = ea.Scalars("train/loss")
assert [e.step for e in loss] == [0, 1, 2], [e.step for e in loss]
for e, r in zip(loss, epochs):
    assert abs(e.value - r["loss"]) <= 1e-6 * max(1.0, abs(r["loss"])), (e.value, r["loss"])
test = [json.loads(l) for l in open("metrics.jsonl") if '"event":"test"' in l][0]
assert abs(ea.Scalars("test/acc")[-1].value - test["test_acc"]) < 1e-6
print("observability_test: tensorboard read", len(tags), "scalar tags,", len(loss), "epochs")
PY
  ;;
*) echo "observability_test: unknown mode $mode" >&2; exit 2 ;;
esac
echo "observability_test: $mode ok"
