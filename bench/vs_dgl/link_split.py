"""Held-out link pairs for setup L, the same for fanout and DistDGL.

    python link_split.py --data DIR --out SPLIT [--valid 2000] [--test 2000] [--negatives 100] [--seed 0]

Draws distinct node pairs (unordered, no self loops) from the input edges of a fanout-generate
dataset (DIR/edges.npy) as valid and test positives, and for each positive `--negatives`
destinations drawn uniformly among all nodes (neither endpoint), and writes them in input node
IDs in the layout `fanout-partition --edge-split-files` reads (OGB's citation2 shape):
SPLIT/{valid,test}_pos.npy int64 [n, 2] and SPLIT/{valid,test}_neg_dst.npy int64 [n, k].
fanout-partition removes the held-out pairs from the stored graph in both directions wherever
they occur; dgl_partition.py --exclude-pairs SPLIT does the same on the DGL side. Writes into a
temporary sibling folder and renames it when complete.
"""
import argparse
import os
import shutil

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--valid", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--negatives", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    edges = np.load(os.path.join(a.data, "edges.npy"), mmap_mode="r")
    num_nodes = np.load(os.path.join(a.data, "node_feat.npy"), mmap_mode="r").shape[0]
    rng = np.random.default_rng(a.seed)
    want = a.valid + a.test
    # Rows drawn with a margin, self loops and repeated pairs dropped, in draw order.
    rows = rng.choice(edges.shape[0], size=min(edges.shape[0], 2 * want + 1000), replace=False)
    pairs = np.asarray(edges[np.sort(rows)], dtype=np.int64)[np.argsort(np.argsort(rows))]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    key = np.minimum(pairs[:, 0], pairs[:, 1]) * num_nodes + np.maximum(pairs[:, 0], pairs[:, 1])
    _, first = np.unique(key, return_index=True)
    pairs = pairs[np.sort(first)]
    if len(pairs) < want:
        raise SystemExit(f"link_split: only {len(pairs)} distinct pairs drawn, {want} wanted")
    tmp = a.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, pos in (("valid", pairs[: a.valid]), ("test", pairs[a.valid: want])):
        neg = rng.integers(0, num_nodes, size=(len(pos), a.negatives), dtype=np.int64)
        bad = (neg == pos[:, :1]) | (neg == pos[:, 1:])
        while bad.any():
            neg[bad] = rng.integers(0, num_nodes, size=int(bad.sum()), dtype=np.int64)
            bad = (neg == pos[:, :1]) | (neg == pos[:, 1:])
        np.save(os.path.join(tmp, f"{name}_pos.npy"), pos)
        np.save(os.path.join(tmp, f"{name}_neg_dst.npy"), neg)
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    print(f"link_split: {a.valid} valid and {a.test} test pairs of {edges.shape[0]} input edges, "
          f"{a.negatives} negatives each, in {a.out}", flush=True)


if __name__ == "__main__":
    main()
