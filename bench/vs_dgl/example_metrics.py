"""Metrics of a run of one of DGL's distributed examples (setups X and S), on either side, from
its rank 0's printed lines, as the JSON lines summarize.py reads.

    python3 example_metrics.py LOG METRICS_FILE

A line may carry fanout-launch's "[m0 trainer 0] " prefix. Per epoch, each record has
epoch_seconds (the example's own "Epoch Time(s)"), its breakdown as the example prints it
(wait_seconds: the trainer waiting for the next mini-batch; feature_seconds: reading the inputs'
rows), loss and train_acc of the epoch's last logged step, seeds_per_second, input_nodes (the
epoch's sum over steps), and val_acc /
test_acc when the example evaluated after that epoch. Exits 1 when the log has no epoch. Standard
library only.

- R-GCN (examples/pytorch/rgcn/experimental/entity_classify_dist.py, setup X): "[0]Epoch Time(s):
  T, sample: S, data copy: C, forward: F, backward: B, update: U, #train: N, #input: I" (the step
  times summed, evaluation excluded): wait = S, feature = C; "[0] Epoch E | Step K | Train acc A |
  Loss L"; rank 0's "Val Acc V, Test Acc W".
- GraphSAGE (examples/distributed/graphsage/node_classification.py, setup S): "Part 0, Epoch
  Time(s): T, sample+data_copy: S, forward: F, backward: B, update: U, #seeds: N, #inputs: I" (the
  epoch's loop, evaluation after it): wait = S (the batch and its features' rows); "Part 0 |
  Epoch E | Step K | Loss L | Train Acc A"; "Part 0, Val Acc V, Test Acc W".
"""
import json
import re
import sys

RGCN_EPOCH = re.compile(r"\[0\]Epoch Time\(s\): ([\d.]+), sample: ([\d.]+), data copy: ([\d.]+), forward: ([\d.]+), "
                        r"backward: ([\d.]+), update: ([\d.]+), #train: (\d+), #input: (\d+)")
RGCN_STEP = re.compile(r"\[0\] Epoch (\d+) \| Step (\d+) \| Train acc ([\d.]+) \| Loss ([\d.]+)")
SAGE_EPOCH = re.compile(r"Part 0, Epoch Time\(s\): ([\d.]+), sample\+data_copy: ([\d.]+), forward: ([\d.]+), "
                        r"backward: ([\d.]+), update: ([\d.]+), #seeds: (\d+), #inputs: (\d+)")
SAGE_STEP = re.compile(r"Part 0 \| Epoch (\d+) \| Step (\d+) \| Loss ([\d.]+) \| Train Acc ([\d.]+)")
VAL = re.compile(r"(?:^|\] |Part 0, )Val Acc ([\d.]+), Test Acc ([\d.]+)")


def parse(lines):
    epochs, loss, acc = [], None, None
    for line in lines:
        m = RGCN_STEP.search(line)
        if m:
            acc, loss = float(m.group(3)), float(m.group(4))
            continue
        m = SAGE_STEP.search(line)
        if m:
            loss, acc = float(m.group(3)), float(m.group(4))
            continue
        m = RGCN_EPOCH.search(line)
        if m:
            t, sample, copy, fwd, bwd, upd = (float(x) for x in m.groups()[:6])
            seeds, inputs = int(m.group(7)), int(m.group(8))
            parts = {"wait_seconds": sample, "feature_seconds": copy}
        else:
            m = SAGE_EPOCH.search(line)
            if not m:
                m = VAL.search(line)
                if m and epochs:
                    epochs[-1]["val_acc"], epochs[-1]["test_acc"] = float(m.group(1)), float(m.group(2))
                continue
            t, sample, fwd, bwd, upd = (float(x) for x in m.groups()[:5])
            seeds, inputs = int(m.group(6)), int(m.group(7))
            parts = {"wait_seconds": sample}
        epochs.append({"event": "epoch", "epoch": len(epochs), "epoch_seconds": t, **parts, "forward_seconds": fwd,
                       "backward_seconds": bwd, "update_seconds": upd, "loss": loss, "train_acc": acc,
                       "seeds_per_second": seeds / t, "input_nodes": inputs})
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
        sys.exit(f"example_metrics.py: no epoch line of DGL's examples in {sys.argv[1]}")


if __name__ == "__main__":
    main()
