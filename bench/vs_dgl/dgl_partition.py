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

With --assignment FANOUT_PART_JSON (a fanout-partition config of the same dataset), the nodes are
not assigned by DGL's METIS but as fanout-partition assigned them: partition K gets the input
nodes of FANOUT_PART_JSON's partK/graph/orig_nids.npy (fanout's new ID -> input node ID, for the
nodes partition K owns). The call is the same partition_graph(part_method='metis', ...) with
dgl.distributed.partition's metis_partition_assignment replaced, for that call, by one
returning this assignment; everything after the assignment (halo, reshuffle, files) is DGL's.

    python dgl_partition.py --to-graphbolt OUT/NAME.json

converts existing DGL partitions for DistGraph with use_graphbolt=True (setup G):
dgl.distributed.dgl_partition_to_graphbolt with its default arguments, which writes
partK/fused_csc_sampling_graph.pt and adds part_graph_graphbolt to NAME.json.
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
    p.add_argument("--data")
    p.add_argument("--out")
    p.add_argument("--num-parts", type=int, default=2)
    p.add_argument("--graph-name", default="graph")
    p.add_argument("--part-method", default="metis")
    p.add_argument("--exclude-pairs", default="", help="link_split.py's folder: held-out pairs to remove")
    p.add_argument("--assignment", default="",
                   help="a fanout-partition config (NAME.json) of the same dataset: use its node assignment instead of METIS")
    p.add_argument("--to-graphbolt", default="", metavar="PART_CONFIG",
                   help="only convert these DGL partitions to GraphBolt's format, in place")
    a = p.parse_args()
    if a.to_graphbolt:
        t0 = time.time()
        dgl.distributed.dgl_partition_to_graphbolt(a.to_graphbolt)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
        print(f"dgl_partition_to_graphbolt: {a.to_graphbolt} in {time.time() - t0:.1f} s; peak RSS {rss:.2f} GiB",
              flush=True)
        return
    if not a.data or not a.out:
        p.error("--data and --out are required")

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
    if a.assignment:
        use_fanout_assignment(a.assignment, g.num_nodes(), a.num_parts)
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
        f"dgl_partition: {a.num_parts} parts ({'fanout-partition assignment' if a.assignment else a.part_method}) "
        f"in {t2 - t1:.1f} s; "
        f"peak RSS {rss:.2f} GiB; config {os.path.join(a.out, a.graph_name + '.json')}",
        flush=True,
    )


def fanout_assignment(part_json, num_nodes):
    """Input node ID -> partition, from a fanout-partition config's partK/graph/orig_nids.npy."""
    import json

    with open(part_json) as f:
        conf = json.load(f)
    base = os.path.dirname(os.path.abspath(part_json))
    parts = np.full(num_nodes, -1, dtype=np.int64)
    for k in range(conf["num_parts"]):
        orig = np.load(os.path.join(base, f"part{k}", "graph", "orig_nids.npy"))
        lo, hi = conf["node_map"]["_N"][k]
        assert len(orig) == hi - lo, f"part{k}: {len(orig)} orig_nids for node_map [{lo}, {hi})"
        parts[orig] = k
    missing = int((parts < 0).sum())
    assert missing == 0, f"{missing} input nodes are in no partition of {part_json}"
    return torch.from_numpy(parts), conf["num_parts"]


def use_fanout_assignment(part_json, num_nodes, num_parts):
    """partition_graph(part_method='metis') takes its assignment from `part_json`."""
    import dgl.distributed.partition as dpart

    parts, k = fanout_assignment(part_json, num_nodes)
    assert k == num_parts, f"{part_json} has {k} partitions, not --num-parts {num_parts}"
    counts = np.bincount(parts.numpy(), minlength=k).tolist()
    print(f"dgl_partition: node assignment of {part_json} (nodes per partition {counts}) instead of METIS",
          flush=True)

    def given_assignment(g, n_parts, **_):
        assert g.num_nodes() == len(parts) and n_parts == k
        return parts

    dpart.metis_partition_assignment = given_assignment


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
