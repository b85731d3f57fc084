"""bench/cluster/run.sh's figures: one job's (``job DIR SYSTEM MACHINES RATE EPOCHS RC [SETUP
[PEER]]`` -> a JSON line; SETUP defaults to A, PEER, the DistDGL side's name, to "DistDGL 2.1.0"),
and the table of a run's jobs (``table RESULTS.jsonl`` -> CLUSTER_RESULT lines and a Markdown
table per setup).

``table RESULTS.jsonl --results-json PATH [--setup S] [--measure epoch|wire] [--headline
MACHINES:RATE] [--job NAME] [--description TEXT] [--command CMD] [--machine TEXT] [--date
YYYY-MM-DD] [--section HEADING]`` also writes one setup's jobs (default: the run's first setup)
as one bench/results/*.json file (schema: bench/results/README.md): the headline row's (default
4 machines at 1gbit, else the first row with both sides) epoch or wire bytes on both sides and
their ratio, every round of that row, a series per rate over the machine counts
(scripts/results.py plots them), and the setup's whole table. Fields a run cannot know are kept
from the file already at PATH. The printed output is the same with or without it.

A job's epoch is the mean of its epochs 2..E (epoch 1 warms up: connections, caches); its wire
bytes are what each machine's interface received plus sent from the end of epoch 1 to the end of
epoch E, per epoch, averaged over the machines (wire.txt: every machine's counters read when rank
0 wrote each epoch's record)."""
import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import result_file  # noqa: E402  (bench/result_file.py)


def machines_of(line: str) -> dict:
    """'epoch K m0:rx:tx m1:rx:tx ...' -> {machine: rx + tx}."""
    out = {}
    for item in line.split()[2:]:
        name, rx, tx = item.split(":")
        out[name] = int(rx) + int(tx)
    return out


def job(d: str, system: str, machines: int, rate: str, epochs: int, rc: int, setup: str = "A",
        peer: str = "DistDGL 2.1.0") -> dict:
    rec = {"system": system, "setup": setup, "machines": int(machines), "rate": rate, "rc": int(rc), "dir": d}
    if system == "dgl":
        rec["peer"] = peer
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


def setups(path: str) -> list:
    """The setups of a run's jobs, in the order they ran (a job written before setups were
    recorded is setup A's)."""
    out = []
    for line in open(path):
        s = json.loads(line).get("setup", "A")
        if s not in out:
            out.append(s)
    return out


def pairs(path: str, setup: str) -> list:
    """One setup's jobs as (machines, rate, fanout's record, DistDGL's record) rows, rounds in order."""
    jobs = [json.loads(line) for line in open(path)]
    groups = defaultdict(lambda: defaultdict(list))
    for j in jobs:
        if j.get("setup", "A") == setup:
            groups[(j["machines"], j["rate"])][j["system"]].append(j)
    rows = []
    for (m, rate), by in sorted(groups.items()):
        f, d = by.get("fanout", []), by.get("dgl", [])
        for i in range(max(len(f), len(d))):
            rows.append((m, rate, f[i] if i < len(f) else {}, d[i] if i < len(d) else {}))
    return rows


RATE_ORDER = {"unlimited": 0, "10gbit": 1, "1gbit": 2, "200mbit": 3, "100mbit": 4, "10mbit": 5}


def result_record(path: str, rows: list, args) -> tuple:
    """The run as one result in bench/results' schema (see the module's docstring)."""
    key, unit = ("epoch_s", "s/epoch") if args.measure == "epoch" else ("wire_mb", "MB/machine/epoch")
    both = [(m, rate, a, b) for m, rate, a, b in rows if a.get(key) and b.get(key)]
    if not both:
        raise SystemExit(f"summarize.py: no row of {path} has both sides' {key}")
    if args.headline:
        hm, hrate = args.headline.split(":")
        chosen = [x for x in both if x[0] == int(hm) and x[1] == hrate]
        if not chosen:
            raise SystemExit(f"summarize.py: no row of {path} at {args.headline} with both sides")
    else:
        chosen = [x for x in both if x[0] == 4 and x[1] == "1gbit"] or [x for x in both if x[:2] == both[0][:2]]
    ratios = [a[key] / b[key] for _, _, a, b in chosen]
    m, rate, a, b = chosen[result_file.median_round(ratios)]
    acc = None
    if a.get("val_acc") is not None and b.get("val_acc") is not None:
        acc = {"fanout": round(a["val_acc"], 4), "peer": round(b["val_acc"], 4), "metric": "validation accuracy"}
    series = {}
    for r in sorted({x[1] for x in both}, key=lambda x: (RATE_ORDER.get(x, 9), x)):
        pts = {}
        for mm, rr, aa, bb in both:
            if rr == r:
                pts.setdefault(mm, (aa[key], bb[key]))  # the first round of each machine count
        xs = sorted(pts)
        series[f"{args.measure}, {r}"] = {"x_label": "machines", "x": xs, "unit": unit,
                                           "fanout": [round(pts[x][0], 2) for x in xs],
                                           "peer": [round(pts[x][1], 2) for x in xs]}

    def cell(x, p, unit=""):
        return "-" if x is None else f"{x:.{p}f}{unit}"

    def ratio(aa, bb, k):
        return f"{aa[k] / bb[k]:.2f}x" if aa.get(k) and bb.get(k) else "-"

    table = {"title": "every job of the run",
             "columns": ["machines", "rate", "fanout epoch", "DistDGL epoch", "ratio", "fanout MB/machine/epoch",
                         "DistDGL MB", "ratio", "val acc fanout / DistDGL"],
             "rows": [[mm, rr, cell(aa.get("epoch_s"), 2, " s"), cell(bb.get("epoch_s"), 2, " s"), ratio(aa, bb, "epoch_s"),
                       cell(aa.get("wire_mb"), 1), cell(bb.get("wire_mb"), 1), ratio(aa, bb, "wire_mb"),
                       f"{cell(aa.get('val_acc'), 4)} / {cell(bb.get('val_acc'), 4)}"]
                      for mm, rr, aa, bb in sorted(rows, key=lambda x: (x[0], RATE_ORDER.get(x[1], 9)))]}
    computed = {
        "kind": args.measure, "better": "lower",
        "fanout": {"value": round(a[key], 2), "unit": unit},
        "peer": {"name": b.get("peer", "DistDGL 2.1.0"), "value": round(b[key], 2)},
        "ratio": round(a[key] / b[key], 4), "accuracy": acc, "rounds": [round(x, 4) for x in ratios],
        "series": series, "table": table,
    }
    given = {"job": args.job, "description": args.description, "command": args.command, "machine": args.machine,
             "section": args.section, "date": args.date or result_file.date_of(path)}
    defaults = {"job": f"emulated cluster, setup {args.setup}, {m} machines at {rate}",
                "description": f"setup {args.setup} on {m} emulated machines, links at {rate}: "
                               + ("epoch time" if args.measure == "epoch" else "bytes per machine per epoch")}
    return computed, given, defaults


def table(path: str, args=None) -> None:
    for setup in setups(path):
        print_setup(setup, pairs(path, setup))
    if args is not None and args.results_json:
        args.setup = args.setup or setups(path)[0]
        computed, given, defaults = result_record(path, pairs(path, args.setup), args)
        result_file.write(args.results_json, computed, given, defaults)
        print(f"summarize.py: wrote {args.results_json}", file=sys.stderr)


def print_setup(setup: str, rows: list) -> None:
    for m, rate, a, b in rows:
        fmt = lambda x, p=2: "nan" if x is None else f"{x:.{p}f}"  # noqa: E731
        print(f"CLUSTER_RESULT setup={setup} machines={m} rate={rate} fanout_epoch_s={fmt(a.get('epoch_s'))} "
              f"dgl_epoch_s={fmt(b.get('epoch_s'))} fanout_wire_mb={fmt(a.get('wire_mb'), 1)} "
              f"dgl_wire_mb={fmt(b.get('wire_mb'), 1)}")
    print()
    peer = next((b["peer"] for _, _, _, b in rows if b.get("peer")), "DistDGL")
    print(f"setup {setup}, fanout against {peer}:")
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
    print()


if __name__ == "__main__":
    if sys.argv[1] == "job":
        print(json.dumps(job(*sys.argv[2:6], int(sys.argv[6]), int(sys.argv[7]), *sys.argv[8:10])))
    else:
        ap = argparse.ArgumentParser(prog="summarize.py table")
        ap.add_argument("results_jsonl")
        ap.add_argument("--results-json", metavar="PATH", help="also write the run's result to PATH (bench/results/)")
        ap.add_argument("--setup", help="the setup the result file is of (default: the run's first)")
        ap.add_argument("--measure", choices=("epoch", "wire"), default="epoch")
        ap.add_argument("--headline", metavar="MACHINES:RATE", help="the row the result's figures are (default 4:1gbit)")
        for name in ("job", "description", "command", "machine", "date", "section"):
            ap.add_argument(f"--{name}")
        table(sys.argv[2], ap.parse_args(sys.argv[2:]))
