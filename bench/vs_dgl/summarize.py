"""Summary of a bench/vs_dgl/run.sh run: one block per job, then fanout/DGL ratios per setup.

    python3 summarize.py RUN_DIR/results.tsv
    python3 summarize.py RUN_DIR/results.tsv --results-json bench/results/setup-A.json --setup A
        [--measure epoch|memory] [--peer faster|classic|graphbolt] [--job NAME] [--description TEXT]
        [--command CMD] [--machine TEXT] [--date YYYY-MM-DD] [--section HEADING]

With --results-json it also writes one setup's result as a bench/results/*.json file (the schema is
bench/results/README.md; scripts/results.py makes README.md's and docs/benchmarks.md's tables from
them): the median round's epoch (or, --measure memory, its largest per-machine peak PSS) on both
sides and their ratio, every round's ratio, and that round's accuracy. The baseline is the
summary's (DistDGL's faster configuration by median epoch) unless --peer names one. Fields the
run cannot know (the description, the command that reproduces it, the docs section) are kept from
the file already at PATH, or given here. The printed summary is the same with or without it.

results.tsv rows: setup, round, system (fanout|dgl), exit status, metrics file, wall seconds,
build (fanout: fanout-train's hash@mtime; rows of older runs may lack it).
Both sides' metrics files are JSON lines with one {"event": "epoch", ...} record per epoch from
rank 0 (fanout-train --metrics-file; dgl_*_train.py --metrics-file). Epoch time = the mean of
the epochs after the first (start-up excluded), or the only epoch. With run.sh --pss, each job's
folder (the metrics file's) has pss.json (pss_peak.py): each machine's peak PSS, its processes read
together; fanout jobs' console.log also has fanout-launch's own per-machine line. Setup G
(DistDGL on GraphBolt partitions) has no fanout job: its ratios are against A's fanout job of
the same round. Rows of system dgl-gb (run.sh --graphbolt) are a setup's DistDGL job on GraphBolt
partitions: that setup's table shows both DistDGL columns and takes the faster one (by median
epoch) as the baseline. Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import result_file  # noqa: E402  (bench/result_file.py)

SETUPS = {
    "A": "2 loopback machines x (1 server + 1 trainer), 2 METIS parts; SAGE 3x256, fanouts 15,10,5",
    "B": "1 machine, 2 trainers; SAGE 3x256, fanouts 15,10,5 (DGL: DataLoader + DDP, no DistDGL)",
    "C": "as A, data-bound: SAGE 2x16, fanouts 15,10",
    "P": "as A, DistDGL's Python training script (dgl.nn.SAGEConv) on both sides: fanout.distributed vs dgl.distributed",
    "M": "as P, with DistDGL's processes given the allocator setting fanout.distributed.initialize makes (glibc "
         "keeps freed buffers up to 1 GiB: MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_): the data plane's own share",
    "L": "link prediction on A's graph (held-out pairs removed), 2 loopback machines; SAGE 3x256, fanouts 15,10,5, "
         "dot scores, 1 uniform negative, BCE; test MRR against the same 100 given negatives per positive",
    "G": "A's DistDGL job on GraphBolt partitions (dgl_partition_to_graphbolt, initialize(use_graphbolt=True)); "
         "ratios against A's fanout job",
    "E": "A's fanout job with fanout's memory-lean settings (--prefetch 1 --feature-cache-mb 128); ratios against "
         "A's DistDGL job and G's (DistDGL on GraphBolt)",
    "H": "typed graph (ogbn-mag-shaped), 2 loopback machines, 2 METIS parts; R-GCN 2x64, fanouts 25,15 per relation, "
         "learnable rows for featureless types (sparse Adam): fanout-train --model rgcn vs DistDGL's R-GCN",
    "R": "as H with R-GAT (4 heads of 16, the destination's own projection, ELU): fanout-train --model rgat vs "
         "HeteroGraphConv({rel: GATConv}) on DistDGL",
    "S": "A's graph, machines and model as DGL's own distributed GraphSAGE example (node_classification.py, DGL "
         "2.1.0) on both sides: its imports changed to fanout.distributed vs unmodified on DistDGL; wait = its "
         "sample+data_copy",
    "Y": "S's model written with PyG (SAGEConv layer by layer on each block's sparse adj_t) on fanout.pyg's "
         "DistNeighborLoader (pyg_sage_train.py), against S's DistDGL job (DGL's example)",
    "X": "H's graph, machines and model as DGL's own distributed R-GCN example (entity_classify_dist.py, DGL 2.1.0) "
         "on both sides: its imports changed to fanout.distributed vs unmodified on DistDGL; wait = its sample, "
         "feature = its data copy (features and DistEmbedding rows)",
}
# Breakdown columns: (label, metrics key) per side, in step order.
FANOUT_PARTS = [
    ("sample*", "sample_seconds"),
    ("fetch*", "fetch_seconds"),
    ("wait", "wait_seconds"),
    ("copy", "copy_seconds"),
    ("forward", "forward_seconds"),
    ("backward", "backward_seconds"),
    ("all-reduce", "allreduce_seconds"),
    ("update", "update_seconds"),
]
DGL_PARTS = [
    ("wait", "wait_seconds"),
    ("feature", "feature_seconds"),
    ("forward", "forward_seconds"),
    ("backward+all-reduce", "backward_seconds"),
    ("update", "update_seconds"),
]


def load(path):
    """The epoch records, and every record's keys merged (the test figures of either side)."""
    epochs, merged = [], {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rec = json.loads(line)
                    merged.update(rec)
                    if rec.get("event") == "epoch":
                        epochs.append(rec)
    except OSError:
        pass
    return epochs, merged


def steady(epochs):
    """Records of the epochs that count: all but the first when there are several."""
    return epochs[1:] if len(epochs) > 1 else epochs


def mean_of(recs, key):
    vals = [r[key] for r in recs if key in r]
    return sum(vals) / len(vals) if vals else None


def load_pss(metrics, epochs):
    """{machine: pss.json record} of the job whose metrics file is `metrics`, or {}. With the
    sample series and marks (pss_peak.py --marks metrics.jsonl) and 2 or more epochs, each record
    also gets "peak_training": the peak up to the end of the last epoch, validation excluded (the
    last epoch's line is written after validation, so its end is the previous line's time plus
    the last epoch's time; the job's start-up is included)."""
    try:
        with open(os.path.join(os.path.dirname(metrics), "pss.json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {str(m): r for m, r in d.get("machines", {}).items() if r.get("peak_pss")}
    marks, series = d.get("marks") or [], d.get("series") or {}
    if len(epochs) >= 2 and "t" in series:
        before = [t for t, lines in marks if lines >= len(epochs) - 1]
        if before:
            # The mark is the first sample that saw the line: it was written up to one interval earlier.
            t_end = before[0] - d.get("interval_s", 1.0) + epochs[-1]["epoch_seconds"]
            for m, r in out.items():
                vals = [v for t, v in zip(series["t"], series.get(m, [])) if t <= t_end]
                if vals:
                    r["peak_training"] = max(vals)
    return out


def load_cpu(metrics):
    """{machine or "launcher": {role: CPU seconds}} from the job's pss.json (run.sh --cpu), or {}."""
    try:
        with open(os.path.join(os.path.dirname(metrics), "pss.json")) as f:
            return json.load(f).get("cpu") or {}
    except (OSError, ValueError):
        return {}


def launcher_pss(metrics):
    """fanout-launch's own per-machine peak PSS lines (GB) from the job's console.log, or {}."""
    out = {}
    try:
        with open(os.path.join(os.path.dirname(metrics), "console.log"), errors="replace") as f:
            for line in f:
                m = re.search(r"machine (\d+) \(([^)]*)\): peak PSS ([\d.]+) GB", line)
                if m:
                    out[m.group(1)] = float(m.group(3))
    except OSError:
        pass
    return out


def gb(b):
    return b / 1e9


def pairing(s):
    """Setup s's fanout job and its DistDGL jobs, as (setup, system) keys with their labels: G is
    DistDGL on GraphBolt against A's fanout job; E is fanout's lean job against A's DistDGL jobs
    and G's; Y is the PyG script on fanout against S's DistDGL job (DGL's example)."""
    if s == "G":
        return "A", [("DistDGL s", "G", "dgl")]
    if s == "Y":
        return "Y", [("DistDGL s", "S", "dgl")]
    if s == "E":
        return "E", [("DistDGL s", "A", "dgl"), ("GraphBolt s", "G", "dgl"), ("GraphBolt s", "A", "dgl-gb")]
    return s, [("DGL s" if s == "B" else "DistDGL s", s, "dgl"), ("GraphBolt s", s, "dgl-gb")]


def print_ratios(s, results):
    """Setup s's table: fanout's epoch against each DistDGL configuration that ran (classic, and
    GraphBolt with run.sh --graphbolt or setup G), per round and as medians; with both, the
    baseline is the one with the shorter median epoch."""
    fs_, candidates = pairing(s)
    sides = []
    for label, ds, d in candidates:
        if any(k[0] == ds and k[2] == d for k in results) and label not in [x[0] for x in sides]:
            sides.append((label, ds, d))
    print(f"{'setup':6s}{'round':>6s}{'fanout s':>11s}" + "".join(f"{label:>13s}{'ratio':>8s}" for label, _, _ in sides))
    ratios = {i: [] for i in range(len(sides))}
    epochs = {i: [] for i in range(len(sides))}
    for r in sorted({r for ss, r, _ in results if ss == s}, key=int):
        f = results.get((fs_, r, "fanout"))
        line = f"{s:6s}{r:>6s}{(f'{f:.2f}' if f is not None else 'failed'):>11s}"
        for i, (_, ds, d) in enumerate(sides):
            t = results.get((ds, r, d))
            if t:
                epochs[i].append(t)
            ratio = f / t if f is not None and t else None
            if ratio is not None:
                ratios[i].append(ratio)
            line += f"{(f'{t:.2f}' if t else 'failed'):>13s}{(f'{ratio:.2f}x' if ratio is not None else '-'):>8s}"
        print(line)
    if any(len(v) > 1 for v in ratios.values()):
        print(f"{s:6s}{'median':>6s}{'':>11s}" + "".join(
            f"{(f'{statistics.median(epochs[i]):.2f}' if epochs[i] else '-'):>13s}"
            f"{(f'{statistics.median(ratios[i]):.2f}x' if ratios[i] else '-'):>8s}" for i in range(len(sides))))
    if len(sides) > 1 and all(epochs[i] and ratios[i] for i in range(len(sides))):
        best = min(range(len(sides)), key=lambda i: statistics.median(epochs[i]))
        print(f"{s:6s} baseline: DistDGL's faster configuration, {'GraphBolt' if sides[best][0].startswith('GraphBolt') else 'classic'} "
              f"(median epoch {statistics.median(epochs[best]):.2f} s): fanout / it = {statistics.median(ratios[best]):.2f}x")


def peer_name(label, system, version):
    """The DGL side of a ratio in words, with DGL's version when the run recorded it."""
    v = f" {version}" if version else ""
    if label.startswith("GraphBolt"):
        return f"DistDGL{v} + GraphBolt"
    if label.startswith("DGL"):
        return f"DGL{v}, DataLoader + DDP"
    return f"DistDGL{v}"


def result_record(args, results, memory, accuracy, mrr, version):
    """Setup args.setup's result in bench/results' schema, from what main() gathered."""
    s = args.setup
    fs_, candidates = pairing(s)
    sides = []
    for label, ds, d in candidates:
        if any(k[0] == ds and k[2] == d for k in results) and label not in [x[0] for x in sides]:
            sides.append((label, ds, d))
    if args.peer == "classic":
        sides = [x for x in sides if not x[0].startswith("GraphBolt")] or sides
    elif args.peer == "graphbolt":
        sides = [x for x in sides if x[0].startswith("GraphBolt")] or sides
    rounds = sorted({r for ss, r, _ in results if ss == s}, key=int)
    by_side = []  # (label, ds, d, [(round, fanout, peer)])
    for label, ds, d in sides:
        if args.measure == "memory":
            pairs = []
            for r in rounds:
                f, p = memory.get((fs_, r, "fanout")), memory.get((ds, r, d))
                if f and p:
                    pairs.append((r, max(v[0] for v in f.values()) / 1e9, max(v[0] for v in p.values()) / 1e9))
        else:
            pairs = [(r, results.get((fs_, r, "fanout")), results.get((ds, r, d))) for r in rounds]
            pairs = [x for x in pairs if x[1] is not None and x[2]]
        if pairs:
            by_side.append((label, ds, d, pairs))
    if not by_side:
        raise SystemExit(f"summarize.py: setup {s} has no round with both sides' {args.measure} figures")
    # The summary's baseline: the DGL configuration with the shorter median epoch.
    label, ds, d, pairs = min(by_side, key=lambda x: statistics.median(
        [results[(x[1], r, x[2])] for r in rounds if results.get((x[1], r, x[2]))] or [float("inf")]))
    ratios = [f / p for _, f, p in pairs]
    r, f, p = pairs[result_file.median_round(ratios)]
    acc = None
    if (fs_, r, "fanout") in mrr and (ds, r, d) in mrr:
        acc = {"fanout": round(mrr[(fs_, r, "fanout")], 4), "peer": round(mrr[(ds, r, d)], 4), "metric": "test MRR"}
    elif (fs_, r, "fanout") in accuracy and (ds, r, d) in accuracy:
        acc = {"fanout": round(accuracy[(fs_, r, "fanout")], 4), "peer": round(accuracy[(ds, r, d)], 4),
               "metric": "validation accuracy"}
    computed = {
        "kind": args.measure, "better": "lower",
        "fanout": {"value": round(f, 2), "unit": "GB" if args.measure == "memory" else "s/epoch"},
        "peer": {"name": peer_name(label, d, version), "value": round(p, 2)},
        "ratio": round(f / p, 4), "accuracy": acc, "rounds": [round(x, 4) for x in ratios],
    }
    if args.measure == "memory":
        f_m, p_m = memory[(fs_, r, "fanout")], memory[(ds, r, d)]
        machines = sorted(set(f_m) & set(p_m), key=int)
        series = {"x_label": "machine", "x": [f"machine {m}" for m in machines], "unit": "GB",
                  "fanout": [round(f_m[m][0] / 1e9, 2) for m in machines],
                  "peer": [round(p_m[m][0] / 1e9, 2) for m in machines]}
        others = {}
        for (os_, orr, osys), o_m in sorted(memory.items()):
            if orr != r or (os_, osys) in ((fs_, "fanout"), (ds, d)) or not set(machines) <= set(o_m):
                continue
            name = ("fanout" if osys == "fanout" else peer_name("GraphBolt" if osys == "dgl-gb" or os_ == "G" else "DistDGL",
                                                                osys, version)) + f" (setup {os_})"
            others[name] = [round(o_m[m][0] / 1e9, 2) for m in machines]
        if others:
            series["others"] = others
        computed["series"] = {"peak PSS per machine": series}
    given = {"job": args.job, "description": args.description, "command": args.command, "machine": args.machine,
             "section": args.section, "date": args.date or result_file.date_of(args.results_tsv)}
    return computed, given, {"job": f"setup {s}", "description": SETUPS[s]}


def main():
    ap = argparse.ArgumentParser(description="Summary of a bench/vs_dgl/run.sh run (see the module's docstring).")
    ap.add_argument("results_tsv")
    ap.add_argument("--results-json", metavar="PATH", help="also write one setup's result to PATH (bench/results/)")
    ap.add_argument("--setup", help="the setup whose result --results-json writes (default: the run's only one)")
    ap.add_argument("--measure", choices=("epoch", "memory"), default="epoch")
    ap.add_argument("--peer", choices=("faster", "classic", "graphbolt"), default="faster")
    for name in ("job", "description", "command", "machine", "date", "section"):
        ap.add_argument(f"--{name}")
    args = ap.parse_args()
    rows = []
    with open(args.results_tsv) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 6:
                parts.append("?")
            if len(parts) == 7:
                rows.append(parts)
    results = {}  # (setup, round, system) -> epoch seconds or None
    memory = {}  # (setup, round, system) -> {machine: peak PSS bytes}
    accuracy = {}  # (setup, round, system) -> validation accuracy
    mrr = {}  # (setup, round, system) -> test MRR (setup L)
    print("=== per job (rank 0; epoch time = mean of epochs after the first; evaluation excluded) ===")
    for setup, rnd, system, rc, metrics, wall, build in rows:
        epochs, merged = load(metrics)
        name = ("fanout.py" if setup in "PMXSY" else "fanout") if system == "fanout" else (
            "DGL" if setup == "B" else "DistDGL+" if setup == "M" else
            "DistDGL-GB" if setup == "G" or system == "dgl-gb" else "DistDGL")
        head = f"[{setup} round {rnd}] {name:9s}"
        pss = load_pss(metrics, epochs)
        pss_line = None
        if pss:
            memory[(setup, rnd, system)] = {m: (r["peak_pss"], r.get("peak_training")) for m, r in pss.items()}
            pss_line = "peak PSS per machine (pss_peak.py): " + "; ".join(
                f"m{m} {gb(r['peak_pss']):.2f} GB of {r['processes']} processes (anon {gb(r['anon']):.2f}, "
                f"file {gb(r['file']):.2f}, shmem {gb(r['shmem']):.2f}"
                + (f"; {gb(r['peak_training']):.2f} before validation" if "peak_training" in r else "")
                + ")" for m, r in sorted(pss.items()))
            own = launcher_pss(metrics) if system == "fanout" else {}
            if own:
                pss_line += "; fanout-launch's own line: " + ", ".join(f"m{m} {v:.2f} GB" for m, v in sorted(own.items()))
        if rc != "0" or not epochs:
            print(f"{head} FAILED (exit {rc}, {len(epochs)} epoch record(s); job wall {wall} s)")
            if pss_line:
                print(f"{'':28s}{pss_line}")
            results[(setup, rnd, system)] = None
            continue
        rec = steady(epochs)
        t = mean_of(rec, "epoch_seconds")
        results[(setup, rnd, system)] = t
        all_t = ", ".join(f"{e['epoch_seconds']:.2f}" for e in epochs)
        parts = FANOUT_PARTS if system == "fanout" and setup not in "PMXSY" else DGL_PARTS
        bd = ", ".join(
            f"{label} {mean_of(rec, key):.2f}" for label, key in parts if mean_of(rec, key) is not None
        )
        val = epochs[-1].get("val_acc")
        val_s = f"{val:.4f}" if val is not None else "-"
        if val is not None:
            accuracy[(setup, rnd, system)] = val
        print(
            f"{head} epoch {t:7.2f} s  (every epoch: {all_t}; {epochs[-1].get('steps', '?')} steps/epoch/trainer)"
        )
        print(f"{'':28s}breakdown: {bd}")
        print(
            f"{'':28s}loss {epochs[-1]['loss']:.4f}, train acc {epochs[-1]['train_acc']:.4f}, "
            f"val acc after epoch {len(epochs)}: {val_s}; {mean_of(rec, 'seeds_per_second'):.0f} seeds/s; "
            f"job wall {wall} s" + (f"; fanout {build}" if system == "fanout" else "")
        )
        if pss_line:
            print(f"{'':28s}{pss_line}")
        for who, by_role in sorted(load_cpu(metrics).items()):
            print(f"{'':28s}cpu, {'launcher' if who == 'launcher' else 'm' + who}: {sum(by_role.values()):.1f} s ("
                  + ", ".join(f"{r} {v:.1f}" for r, v in sorted(by_role.items(), key=lambda x: -x[1])) + ")")
        if "test_mrr" in merged:
            mrr[(setup, rnd, system)] = merged["test_mrr"]
            hits = ", ".join(f"hits@{k} {merged[f'test_hits@{k}']:.4f}" for k in (1, 10, 100)
                             if f"test_hits@{k}" in merged)
            print(f"{'':28s}test mrr {merged['test_mrr']:.4f}, {hits}")
    print("  * fanout's sample and fetch run in its sampler process, overlapped with training;")
    print("    DGL's wait = trainer idle for the next mini-batch, feature = feature/label pull in the trainer")
    print("    (DistDGL: KVStore pull, local shared memory + remote server; B: read from the batch).")
    builds = sorted({b for _, _, system, _, _, _, b in rows if system == "fanout"})
    if len(builds) > 1:
        print(f"  WARNING: fanout-train changed during the run ({', '.join(builds)}): "
              "rounds are not comparable")
    print()
    print("=== fanout / DGL epoch time (< 1: fanout faster) ===")
    setups = sorted({s for s, _, _ in results})
    for s in setups:
        print_ratios(s, results)
    if memory:
        print()
        print("=== per-machine peak PSS, fanout / DGL (pss_peak.py: each machine's processes read together; < 1: fanout smaller) ===")
        print("    whole job (validation included), and before validation (start-up and the epochs)")
        print(f"{'setup':6s}{'round':>6s}{'machine':>8s}{'fanout GB':>11s}{'DGL GB':>9s}{'ratio':>8s}"
              f"{'| before val: fanout':>21s}{'DGL':>7s}{'ratio':>8s}{'fanout val':>12s}{'DGL val':>9s}")
        for s in setups:
            fs_, candidates = pairing(s)
            for label, ds, dsys in candidates:
                if not any(k[0] == ds and k[2] == dsys for k in memory):
                    continue
                for r in sorted({r for ss, r, _ in results if ss == s}, key=int):
                    f, d = memory.get((fs_, r, "fanout"), {}), memory.get((ds, r, dsys), {})
                    fa, da = accuracy.get((fs_, r, "fanout")), accuracy.get((ds, r, dsys))
                    tag = s if ds == s and dsys == "dgl" else f"{s}/{ds}{'-gb' if dsys == 'dgl-gb' else ''}"
                    for m in sorted(set(f) | set(d)):
                        fv, ft = f.get(m, (None, None))
                        dv, dt = d.get(m, (None, None))
                        print(f"{tag:6s}{r:>6s}{m:>8s}{(f'{gb(fv):.2f}' if fv else '-'):>11s}{(f'{gb(dv):.2f}' if dv else '-'):>9s}"
                              f"{(f'{fv / dv:.2f}x' if fv and dv else '-'):>8s}"
                              f"{(f'{gb(ft):.2f}' if ft else '-'):>21s}{(f'{gb(dt):.2f}' if dt else '-'):>7s}"
                              f"{(f'{ft / dt:.2f}x' if ft and dt else '-'):>8s}"
                              f"{(f'{fa:.4f}' if fa is not None else '-'):>12s}{(f'{da:.4f}' if da is not None else '-'):>9s}")
    print()
    for s in setups:
        print(f"  {s}: {SETUPS[s]}")
    if args.results_json:
        if not args.setup:
            if len(setups) != 1:
                raise SystemExit(f"summarize.py: --results-json needs --setup: the run has {', '.join(setups)}")
            args.setup = setups[0]
        version = next((b[len("dgl-"):] for _, _, system, _, _, _, b in rows
                        if system != "fanout" and b.startswith("dgl-")), "")
        computed, given, defaults = result_record(args, results, memory, accuracy, mrr, version)
        result_file.write(args.results_json, computed, given, defaults)
        print(f"summarize.py: wrote {args.results_json}", file=sys.stderr)


if __name__ == "__main__":
    main()
