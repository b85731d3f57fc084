#!/usr/bin/env python3
"""The distributed partitioner against the single-process one (issue 30, docs/benchmarks.md).

For each (dataset, ranks) pair: `fanout-partition --num-parts K` (serial METIS) and
`mpirun -np P fanout-partition --distributed --num-parts K` (K = P: one partition per rank, as on a
cluster) on the same plain-layout dataset, reverse edges added, one after the other. Printed per
pair: wall time, peak RSS (serial: the process's; distributed: the largest rank's, and the phase it
was reached in), edge cut, the ratios distributed / serial, and the memory model's prediction of
the distributed peak (docs/partitioning.md):

    peak per rank = max(48 S, 32 E + 8 A) / P + 60 N / P + 0.2 GiB   (K = P)

with E input edges, S stored edges (2E with reverse edges), A arcs of the symmetric graph
without self loops and repeats (<= 2E), N nodes.

    bench/partition_dist_bench.py --data products:DIR [--data products2x:DIR] --ranks 2,4,8
                                  [--pairs products2x:4] [--rounds 1]

--pairs limits a dataset to some rank counts (NAME:P[,P...]). Standard library only; both runs
are on this machine, so with P ranks on 2 cores the distributed wall times are oversubscribed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(os.environ.get("FANOUT_BUILD_DIR", os.path.join(HERE, "..", "build")) + "/bin")
GIB = float(1 << 30)


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return wall, p.stdout + p.stderr


def summary(out_dir, stdout):
    cfg = [f for f in os.listdir(out_dir) if f.endswith(".json") and not f.startswith(".")][0]
    j = json.load(open(os.path.join(out_dir, cfg)))
    b = j["build"]
    m = re.search(r"peak memory:.*?\(RSS(?: of rank \d+)?, (\d+) bytes", stdout)
    return {
        "cut": b["edge_cut"] / j["num_edges"],
        "stored": j["num_edges"],
        "input": b["input_edges"],
        "nodes": j["num_nodes"],
        "peak": int(m.group(1)),
        "phase": b.get("peak_phase", ""),
        "method": b.get("method_detail", ""),
    }


def symmetric_arcs(stdout):
    m = re.search(r"contracting level 0 \(\d+ vertices, (\d+) edges\)", stdout) or \
        re.search(r"running PT-Scotch: \d+ vertices, (\d+) undirected edges", stdout)
    return 2 * int(m.group(1)) if m else None


def model(n, e, s, a, p):
    return (max(48 * s, 32 * e + 8 * a) + 60 * n) / p + 0.2 * GIB


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", action="append", required=True, help="NAME:DIR of a plain .npy dataset")
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--pairs", action="append", default=[], help="NAME:P[,P...]: only these rank counts for NAME")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "fanout-dist-bench"))
    args = ap.parse_args()
    ranks = [int(x) for x in args.ranks.split(",")]
    limit = {p.split(":")[0]: [int(x) for x in p.split(":")[1].split(",")] for p in args.pairs}
    os.makedirs(args.work, exist_ok=True)
    print(f"== {os.cpu_count()} cores; {BIN}")
    rows = []
    for spec in args.data:
        name, data = spec.split(":", 1)
        for p in limit.get(name, ranks):
            for rnd in range(args.rounds):
                serial_out = os.path.join(args.work, f"{name}-serial-{p}")
                dist_out = os.path.join(args.work, f"{name}-dist-{p}")
                common = ["--input", data, "--num-parts", str(p), "--add-reverse-edges", "--overwrite"]
                ws, so = run([f"{BIN}/fanout-partition", *common, "--out", serial_out])
                s = summary(serial_out, so)
                shutil.rmtree(serial_out)
                wd, do = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(p),
                              f"{BIN}/fanout-partition", "--distributed", *common, "--out", dist_out])
                d = summary(dist_out, do)
                shutil.rmtree(dist_out)
                # A (the symmetric graph's arcs) is what the serial METIS input holds: its log line.
                a = symmetric_arcs(do) or 2 * d["input"]
                pred = model(d["nodes"], d["input"], d["stored"], a, p)
                row = (name, p, rnd + 1, ws, s["peak"], s["cut"], wd, d["peak"], d["phase"], d["cut"], pred)
                rows.append(row)
                print(f"{name} P={p} round {rnd + 1}: serial {ws:.1f} s, {s['peak'] / GIB:.2f} GiB, cut {100 * s['cut']:.2f} % | "
                      f"distributed {wd:.1f} s, {d['peak'] / GIB:.2f} GiB per rank (in {d['phase']}), "
                      f"cut {100 * d['cut']:.2f} % | memory {d['peak'] / s['peak']:.3f}x, cut {d['cut'] / s['cut']:.3f}x, "
                      f"time {wd / ws:.2f}x | model {pred / GIB:.2f} GiB", flush=True)
                print(f"   {d['method']}", flush=True)
    print("\n| graph | ranks = parts | serial time | serial peak | serial cut | distributed time | peak per rank "
          "(phase) | model | cut | memory ratio | cut ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, p, rnd, ws, sp, sc, wd, dp, ph, dc, pred in rows:
        print(f"| {name} | {p} | {ws:.0f} s | {sp / GIB:.2f} GiB | {100 * sc:.2f} % | {wd:.0f} s | {dp / GIB:.2f} GiB ({ph}) | "
              f"{pred / GIB:.2f} GiB | {100 * dc:.2f} % | **{dp / sp:.3f}×** | **{dc / sc:.3f}×** |")


if __name__ == "__main__":
    main()
