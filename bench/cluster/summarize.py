"""bench/cluster/run.sh's figures: one job's (``job DIR SYSTEM MACHINES RATE EPOCHS RC`` -> a JSON
line), and the table of a run's jobs (``table RESULTS.jsonl`` -> CLUSTER_RESULT lines and a
Markdown table).

A job's epoch is the mean of its epochs 2..E (epoch 1 warms up: connections, caches); its wire
bytes are what each machine's interface received plus sent from the end of epoch 1 to the end of
epoch E, per epoch, averaged over the machines (wire.txt: every machine's counters read when rank
0 wrote each epoch's record)."""
import json
import os
import sys
from collections import defaultdict


def machines_of(line: str) -> dict:
    """'epoch K m0:rx:tx m1:rx:tx ...' -> {machine: rx + tx}."""
    out = {}
    for item in line.split()[2:]:
        name, rx, tx = item.split(":")
        out[name] = int(rx) + int(tx)
    return out


def job(d: str, system: str, machines: int, rate: str, epochs: int, rc: int) -> dict:
    rec = {"system": system, "machines": int(machines), "rate": rate, "rc": int(rc), "dir": d}
    records = []
    if os.path.exists(os.path.join(d, "metrics.jsonl")):
        with open(os.path.join(d, "metrics.jsonl")) as f:
            records = [r for r in map(json.loads, f) if r.get("event") == "epoch"]
    epochs = int(epochs)
    if rc == 0 and len(records) >= epochs:
        rec["epoch_s"] = sum(r["epoch_seconds"] for r in records[1:epochs]) / (epochs - 1)
        rec["val_acc"] = records[epochs - 1].get("val_acc")
    wire = {}
    if os.path.exists(os.path.join(d, "wire.txt")):
        with open(os.path.join(d, "wire.txt")) as f:
            for line in f:
                if line.startswith("epoch "):
                    wire[int(line.split()[1])] = machines_of(line)
    if 1 in wire and epochs in wire:
        per = [(wire[epochs][m] - wire[1][m]) / (epochs - 1) for m in wire[1]]
        rec["wire_mb"] = sum(per) / len(per) / 1e6
        rec["wire_mb_per_machine"] = [round(x / 1e6, 1) for x in per]
    # fanout-train's own count (rank 0: its and its samplers' calls to other machines, and its
    # collectives), per epoch over epochs 2..E, by kind. Machine 0's link also carries its
    # server's answers to the others' calls, which mirror its own calls in a balanced job, so the
    # count explains about 2 x calls + collectives of the interface's bytes; the rest is HTTP/2,
    # TLS-less gRPC framing, TCP/IP headers and ACKs.
    counted = [r["wire_bytes"] for r in records[1:epochs] if "wire_bytes" in r]
    if counted and len(counted) == epochs - 1:
        kinds = {k: sum(c[k]["sent"] + c[k]["received"] for c in counted) / len(counted) / 1e6 for k in counted[0]}
        rec["counted_mb_by_kind"] = {k: round(v, 2) for k, v in kinds.items()}
        calls = sum(v for k, v in kinds.items() if k != "collectives")
        rec["explained_mb_machine0"] = 2 * calls + kinds.get("collectives", 0)
    return rec


def table(path: str) -> None:
    jobs = [json.loads(line) for line in open(path)]
    groups = defaultdict(lambda: defaultdict(list))
    for j in jobs:
        groups[(j["machines"], j["rate"])][j["system"]].append(j)
    rows = []
    for (m, rate), by in sorted(groups.items()):
        f, d = by.get("fanout", []), by.get("dgl", [])
        for i in range(max(len(f), len(d))):
            a = f[i] if i < len(f) else {}
            b = d[i] if i < len(d) else {}
            fmt = lambda x, p=2: "nan" if x is None else f"{x:.{p}f}"  # noqa: E731
            print(f"CLUSTER_RESULT setup=A machines={m} rate={rate} fanout_epoch_s={fmt(a.get('epoch_s'))} "
                  f"dgl_epoch_s={fmt(b.get('epoch_s'))} fanout_wire_mb={fmt(a.get('wire_mb'), 1)} "
                  f"dgl_wire_mb={fmt(b.get('wire_mb'), 1)}")
            rows.append((m, rate, a, b))
    print()
    print("| machines | rate | fanout epoch | DistDGL epoch | ratio | fanout wire MB/machine/epoch | DistDGL | ratio | val acc fanout / DistDGL |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m, rate, a, b in rows:
        def ratio(k):
            return f"**{a[k] / b[k]:.2f}x**" if a.get(k) and b.get(k) else "-"

        def val(x, p=2, unit=""):
            return "-" if x is None else f"{x:.{p}f}{unit}"

        acc = f"{val(a.get('val_acc'), 4)} / {val(b.get('val_acc'), 4)}"
        print(f"| {m} | {rate} | {val(a.get('epoch_s'), 2, ' s')} | {val(b.get('epoch_s'), 2, ' s')} | {ratio('epoch_s')} "
              f"| {val(a.get('wire_mb'), 1)} | {val(b.get('wire_mb'), 1)} | {ratio('wire_mb')} | {acc} |")
    counted = [(m, rate, a) for m, rate, a, _ in rows if a.get("counted_mb_by_kind")]
    if counted:
        print()
        print("fanout's own count (rank 0, per epoch) against machine 0's interface:")
        print("| machines | rate | counted by kind, MB | 2 x calls + collectives | machine 0's interface | explained |")
        print("|---|---|---|---|---|---|")
        for m, rate, a in counted:
            kinds = ", ".join(f"{k} {v:.1f}" for k, v in a["counted_mb_by_kind"].items() if v >= 0.05)
            iface = a.get("wire_mb_per_machine", [None])[0]
            share = f"{a['explained_mb_machine0'] / iface:.0%}" if iface else "-"
            print(f"| {m} | {rate} | {kinds} | {a['explained_mb_machine0']:.1f} | {iface if iface is not None else '-'} | {share} |")


if __name__ == "__main__":
    if sys.argv[1] == "job":
        print(json.dumps(job(*sys.argv[2:5], sys.argv[5], int(sys.argv[6]), int(sys.argv[7]))))
    else:
        table(sys.argv[2])
