"""Partition a fanout-generate dataset (plain .npy layout) with DGL, for DistDGL.

    python dgl_partition.py --data DIR --out OUT --num-parts 2 --graph-name NAME

Builds the same graph fanout-partition --add-reverse-edges stores (see dgl_common.load_npy_graph),
with ndata feat / label / train_mask / val_mask / test_mask, then calls
dgl.distributed.partition_graph(part_method='metis', balance_ntypes=train_mask,
balance_edges=True), the settings of DGL's examples/distributed/graphsage/partition_graph.py
with --balance_train --balance_edges. Writes OUT/NAME.json and OUT/partK/ into a temporary
sibling folder and renames it when complete.

With --exclude-pairs SPLIT (setup L, link prediction: link_split.py's folder), the held-out pairs
of SPLIT/{valid,test}_pos.npy are removed from the graph in both directions, as fanout-partition
--edge-split-files removes them, and two more files are written: OUT/orig_nids.npy (DGL's node ID
-> input node ID, to map the held-out pairs) and OUT/reverse_eids.npy (each edge's reverse edge
in DGL's edge IDs: DistEdgeDataLoader's exclude="reverse_id").
"""
import argparse
import os
import resource
import shutil
import sys
import time

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import numpy as np  # noqa: E402
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
    p.add_argument("--exclude-pairs", default="", help="link_split.py's folder: held-out pairs to remove")
    a = p.parse_args()

    t0 = time.time()
    g = load_npy_graph(a.data)
    reverse = None
    if a.exclude_pairs:
        g, reverse = remove_pairs(g, a.exclude_pairs)
    t1 = time.time()
    print(
        f"dgl_partition: graph {g.num_nodes()} nodes, {g.num_edges()} edges (with reverse edges), "
        f"{int(g.ndata['train_mask'].sum())} train nodes; loaded in {t1 - t0:.1f} s",
        flush=True,
    )
    tmp = a.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    mapping = dgl.distributed.partition_graph(
        g,
        a.graph_name,
        a.num_parts,
        tmp,
        num_hops=1,
        part_method=a.part_method,
        balance_ntypes=g.ndata["train_mask"].to(torch.int64),
        balance_edges=True,
        return_mapping=reverse is not None,
    )
    if reverse is not None:
        orig_nids, orig_eids = mapping
        np.save(os.path.join(tmp, "orig_nids.npy"), orig_nids.numpy().astype(np.int64))
        orig_eids = orig_eids.numpy()
        new_of_orig = np.empty_like(orig_eids)
        new_of_orig[orig_eids] = np.arange(len(orig_eids), dtype=orig_eids.dtype)
        np.save(os.path.join(tmp, "reverse_eids.npy"), new_of_orig[reverse[orig_eids]].astype(np.int64))
    t2 = time.time()
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    print(
        f"dgl_partition: {a.num_parts} parts ({a.part_method}) in {t2 - t1:.1f} s; "
        f"peak RSS {rss:.2f} GiB; config {os.path.join(a.out, a.graph_name + '.json')}",
        flush=True,
    )


def remove_pairs(g, split):
    """g without the held-out pairs of split/{valid,test}_pos.npy in either direction, and each
    remaining edge's reverse edge (g is load_npy_graph's: the E0 input rows, then the reverses of
    the rows that are not self loops, in order; a self loop is its own reverse)."""
    src, dst = (t.numpy() for t in g.edges())
    n, e = g.num_nodes(), g.num_edges()
    e0 = e - (e - np.count_nonzero(src == dst)) // 2  # forward rows: every input row
    loops = src[:e0] == dst[:e0]
    reverse = np.arange(e, dtype=np.int64)
    nonloop = np.flatnonzero(~loops)
    reverse[nonloop] = e0 + np.arange(len(nonloop))
    reverse[e0:] = nonloop
    held = np.concatenate([np.load(os.path.join(split, f"{w}_pos.npy")) for w in ("valid", "test")])
    held_keys = np.minimum(held[:, 0], held[:, 1]) * n + np.maximum(held[:, 0], held[:, 1])
    keys = np.minimum(src, dst).astype(np.int64) * n + np.maximum(src, dst)
    keep = ~np.isin(keys, held_keys)
    del keys
    new_id = np.cumsum(keep) - 1
    reverse = new_id[reverse[keep]]
    sub = dgl.edge_subgraph(g, torch.from_numpy(np.flatnonzero(keep)), relabel_nodes=False, store_ids=False)
    print(f"dgl_partition: removed {e - int(keep.sum())} stored edges of {len(held)} held-out pairs", flush=True)
    return sub, reverse


if __name__ == "__main__":
    main()
