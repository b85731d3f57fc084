"""Metrics of a run of DGL's distributed R-GCN example (entity_classify_dist.py, setup X), on
either side, from its rank 0's printed lines, as the JSON lines summarize.py reads.

    python3 example_metrics.py LOG METRICS_FILE

The example prints, per epoch, "[0]Epoch Time(s): T, sample: S, data copy: C, forward: F,
backward: B, update: U, #train: N, #input: I" (the step times summed; evaluation excluded),
"[0] Epoch E | Step K | Train acc A | Loss L | ..." every --log-every steps, and rank 0's "Val Acc
V, Test Acc W, time: ..." after each epoch's evaluation. A line may carry fanout-launch's
"[trainer 0] " prefix. Each epoch's record: epoch_seconds = T, wait_seconds = S (the trainer
waiting for the next mini-batch), feature_seconds = C (the features and the learnable rows),
forward/backward/update as printed, loss and train_acc of the epoch's last logged step,
seeds_per_second = N / T, val_acc / test_acc. Exits 1 when the log has no epoch. Standard
library only.
"""
import json
import re
import sys

EPOCH = re.compile(r"\[0\]Epoch Time\(s\): ([\d.]+), sample: ([\d.]+), data copy: ([\d.]+), forward: ([\d.]+), "
                   r"backward: ([\d.]+), update: ([\d.]+), #train: (\d+), #input: (\d+)")
STEP = re.compile(r"\[0\] Epoch (\d+) \| Step (\d+) \| Train acc ([\d.]+) \| Loss ([\d.]+)")
VAL = re.compile(r"Val Acc ([\d.]+), Test Acc ([\d.]+)")


def parse(lines):
    epochs, loss, acc, steps = [], None, None, 0
    for line in lines:
        m = STEP.search(line)
        if m:
            acc, loss, steps = float(m.group(3)), float(m.group(4)), int(m.group(2)) + 1
            continue
        m = EPOCH.search(line)
        if m:
            t, sample, copy, fwd, bwd, upd = (float(x) for x in m.groups()[:6])
            n = int(m.group(7))
            epochs.append({"event": "epoch", "epoch": len(epochs), "epoch_seconds": t, "wait_seconds": sample,
                           "feature_seconds": copy, "forward_seconds": fwd, "backward_seconds": bwd,
                           "update_seconds": upd, "loss": loss, "train_acc": acc, "seeds_per_second": n / t,
                           "input_nodes_per_step": int(m.group(8)) / max(1, steps)})
            continue
        m = VAL.search(line)
        if m and epochs:
            epochs[-1]["val_acc"], epochs[-1]["test_acc"] = float(m.group(1)), float(m.group(2))
    return epochs


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], errors="replace") as f:
        epochs = parse(f)
    with open(sys.argv[2], "w") as f:
        for rec in epochs:
            f.write(json.dumps(rec) + "\n")
    if not epochs:
        sys.exit(f"example_metrics.py: no '[0]Epoch Time(s)' line in {sys.argv[1]}")


if __name__ == "__main__":
    main()
