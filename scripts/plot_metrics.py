#!/usr/bin/env python3
"""Turns a fanout-train metrics file (--metrics-file, JSON lines) into one PNG: the loss, the
training and validation metrics, and where each epoch's time went.

    python3 scripts/plot_metrics.py metrics.jsonl -o metrics.png

Needs matplotlib (Debian: python3-matplotlib). Errors name the file and line at fault.
"""
import argparse
import json
import sys

PHASES = ["sample", "fetch", "wait", "copy", "forward", "backward", "allreduce", "update"]


def read_records(path):
    epochs, test = [], None
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise SystemExit(f"plot_metrics: cannot read {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"plot_metrics: {path}:{n}: not a JSON record ({e.msg})")
            if not isinstance(r, dict):
                raise SystemExit(f"plot_metrics: {path}:{n}: not a JSON object")
            if r.get("event") == "epoch":
                if not isinstance(r.get("epoch"), int):
                    raise SystemExit(f"plot_metrics: {path}:{n}: an epoch record without an integer 'epoch'")
                epochs.append(r)
            elif r.get("event") == "test":
                test = r
    if not epochs:
        raise SystemExit(f"plot_metrics: {path} has no epoch records (is it a fanout-train --metrics-file?)")
    # A resumed run appends: the last record of an epoch wins.
    by_epoch = {r["epoch"]: r for r in epochs}
    return [by_epoch[e] for e in sorted(by_epoch)], test


def plot(epochs, test, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["epoch"] for r in epochs]
    fig, (ax_loss, ax_metric, ax_time) = plt.subplots(1, 3, figsize=(16, 4.5))
    ax_loss.plot(xs, [r.get("loss") for r in epochs], marker="o")
    ax_loss.set(title="training loss", xlabel="epoch")

    ax_metric.plot(xs, [r.get("train_acc") for r in epochs], marker="o", label="train acc")
    val_keys = sorted({k for r in epochs for k in r if k.startswith("val_") and isinstance(r[k], (int, float))})
    for k in val_keys:
        pts = [(r["epoch"], r[k]) for r in epochs if k in r]
        ax_metric.plot([p[0] for p in pts], [p[1] for p in pts], marker="s", label=k.replace("_", " "))
    if test:
        for k, v in test.items():
            if k.startswith("test_") and isinstance(v, (int, float)):
                ax_metric.axhline(v, linestyle="--", linewidth=1, color="gray")
                ax_metric.annotate(f"{k.replace('_', ' ')} {v:.4f}", (xs[0], v), fontsize=8, va="bottom")
                break
    ax_metric.set(title="metrics", xlabel="epoch")
    ax_metric.legend(fontsize=8)

    bottom = [0.0] * len(epochs)
    for phase in PHASES:
        ys = [float(r.get(f"{phase}_seconds", 0.0)) for r in epochs]
        ax_time.bar(xs, ys, bottom=bottom, label=phase)
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax_time.plot(xs, [r.get("epoch_seconds") for r in epochs], color="black", marker="x", label="epoch (wall)")
    ax_time.set(title="time per epoch (s)", xlabel="epoch")
    ax_time.legend(fontsize=7, ncol=2)

    from matplotlib.ticker import MaxNLocator
    for ax in (ax_loss, ax_metric, ax_time):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("metrics", help="the --metrics-file of fanout-train (JSON lines)")
    p.add_argument("-o", "--out", default="", help="the PNG to write (default: the metrics file with .png)")
    p.add_argument("--title", default="", help="the figure's title (default: the metrics file's name)")
    a = p.parse_args(argv)
    out = a.out or (a.metrics.rsplit(".", 1)[0] if a.metrics.endswith(".jsonl") else a.metrics) + ".png"
    epochs, test = read_records(a.metrics)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("plot_metrics: matplotlib is not installed (Debian: apt install python3-matplotlib)")
    plot(epochs, test, out, a.title or a.metrics)
    print(f"plot_metrics: wrote {out} ({len(epochs)} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
