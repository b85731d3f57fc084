"""DGL's partitioner on the same typed graph fanout-partition cuts (docs/benchmarks.md, "Typed
partitioning"). Reads fanout-generate's typed .npy layout (--preset mag), builds the DGL
heterograph with reverse relations (rev_REL, as fanout-partition --add-reverse-edges), and runs
dgl.distributed.partition_graph with METIS, balancing node types and training nodes as
fanout-partition does. Prints wall time per phase; run it under /usr/bin/time -v for peak memory.
Then, in a process of its own (so that it does not add to the peak above), --cut counts the
partitions' edge cut as fanout-partition counts its own: stored in-edges whose source lives in
another partition (DGL's own log counts after adding halo nodes, and prints 0).

  python bench/vs_dgl/dgl_partition_mag.py DATA_DIR OUT_DIR NUM_PARTS
  python bench/vs_dgl/dgl_partition_mag.py --cut OUT_DIR
"""
import json
import os
import sys
import time

import dgl
import numpy as np
import torch


def edge_cut(out):
    with open(os.path.join(out, "mag.json")) as f:
        parts = json.load(f)["num_parts"]
    cut = total = 0
    for k in range(parts):
        g = dgl.load_graphs(os.path.join(out, f"part{k}", "graph.dgl"))[0][0]
        inner_edge = g.edata["inner_edge"].bool()
        inner_node = g.ndata["inner_node"].bool()
        src, _ = g.edges()
        total += int(inner_edge.sum())
        cut += int((inner_edge & ~inner_node[src]).sum())
    print(f"edges {total}, edge cut {cut} ({100 * cut / max(total, 1):.2f}%)", flush=True)


def main():
    if sys.argv[1] == "--cut":
        edge_cut(sys.argv[2])
        return
    data, out, parts = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t0 = time.time()
    with open(os.path.join(data, "num_nodes.json")) as f:
        num_nodes = json.load(f)
    edges = {}
    for name in sorted(os.listdir(os.path.join(data, "edges"))):
        src, rel, dst = name[: -len(".npy")].split("___")
        e = np.load(os.path.join(data, "edges", name))
        s, d = torch.from_numpy(e[:, 0].copy()), torch.from_numpy(e[:, 1].copy())
        edges[(src, rel, dst)] = (s, d)
        edges[(dst, "rev_" + rel, src)] = (d, s)
    g = dgl.heterograph(edges, num_nodes_dict=num_nodes)
    paper = os.path.join(data, "node_data", "paper")
    g.nodes["paper"].data["feat"] = torch.from_numpy(np.load(os.path.join(paper, "feat.npy")))
    g.nodes["paper"].data["label"] = torch.from_numpy(np.load(os.path.join(paper, "label.npy")))
    train = torch.zeros(num_nodes["paper"], dtype=torch.bool)
    train[torch.from_numpy(np.load(os.path.join(data, "split", "paper", "train_idx.npy")))] = True
    g.nodes["paper"].data["train_mask"] = train
    t1 = time.time()
    print(f"read and build: {t1 - t0:.1f} s ({g.num_nodes()} nodes, {g.num_edges()} edges)", flush=True)
    # balance_ntypes takes one array over the homogeneous nodes: the training mask per type.
    balance = {nt: torch.zeros(g.num_nodes(nt), dtype=torch.int64) for nt in g.ntypes}
    balance["paper"] = train.long()
    dgl.distributed.partition_graph(g, "mag", parts, out, part_method="metis", balance_ntypes=balance,
                                    balance_edges=False)
    t2 = time.time()
    print(f"partition_graph: {t2 - t1:.1f} s; total {t2 - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
