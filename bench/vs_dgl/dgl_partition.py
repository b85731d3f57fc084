"""Partition a fanout-generate dataset (plain .npy layout) with DGL, for DistDGL.

    python dgl_partition.py --data DIR --out OUT --num-parts 2 --graph-name NAME

Builds the same graph fanout-partition --add-reverse-edges stores (see dgl_common.load_npy_graph),
with ndata feat / label / train_mask / val_mask / test_mask, then calls
dgl.distributed.partition_graph(part_method='metis', balance_ntypes=train_mask,
balance_edges=True), the settings of DGL's examples/distributed/graphsage/partition_graph.py
with --balance_train --balance_edges. Writes OUT/NAME.json and OUT/partK/ into a temporary
sibling folder and renames it when complete.
"""
import argparse
import os
import resource
import shutil
import sys
import time

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dgl_common import load_npy_graph  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--num-parts", type=int, default=2)
    p.add_argument("--graph-name", default="graph")
    p.add_argument("--part-method", default="metis")
    a = p.parse_args()

    t0 = time.time()
    g = load_npy_graph(a.data)
    t1 = time.time()
    print(
        f"dgl_partition: graph {g.num_nodes()} nodes, {g.num_edges()} edges (with reverse edges), "
        f"{int(g.ndata['train_mask'].sum())} train nodes; loaded in {t1 - t0:.1f} s",
        flush=True,
    )
    tmp = a.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    dgl.distributed.partition_graph(
        g,
        a.graph_name,
        a.num_parts,
        tmp,
        num_hops=1,
        part_method=a.part_method,
        balance_ntypes=g.ndata["train_mask"].to(torch.int64),
        balance_edges=True,
    )
    t2 = time.time()
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    print(
        f"dgl_partition: {a.num_parts} parts ({a.part_method}) in {t2 - t1:.1f} s; "
        f"peak RSS {rss:.2f} GiB; config {os.path.join(a.out, a.graph_name + '.json')}",
        flush=True,
    )


if __name__ == "__main__":
    main()
