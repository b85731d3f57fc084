"""DGL-format partitions (what dgl.distributed.partition_graph writes, num_hops=1) made from a
fanout-partition output, partition by partition, for graphs whose DGL partition_graph does not
fit the machine (issue 40: DistDGL on fanout's own assignment).

    python dgl_partition.py ...           # DGL's own partitioner (METIS, or --assignment)
    python fanout_to_dgl.py --fanout PARTS/fanout-2/NAME.json --out PARTS/dgl-2-conv [--graphbolt]

The result is what partition_graph(part_method='metis', num_hops=1, reshuffle) would write for
fanout's node assignment, with fanout's node and edge IDs as DGL's reshuffled IDs (both put
partition k's nodes and in-edges in one contiguous ID range; fanout keeps input order inside a
partition, as DGL's stable reshuffle does):

- NAME.json: graph_name, num_nodes, num_edges, part_method, num_parts, halo_hops 1, node_map
  {"_N": [[begin, end) per partition]}, edge_map {"_N:_E:_N": [...]}, ntypes, etypes, part-K
  {node_feats, edge_feats, part_graph} (DGL's keys; fanout's ranges).
- partK/graph.dgl: DGL's 1-hop halo subgraph of partition K, a COO graph on local IDs: the
  partition's nodes first (local i = global node_map[K][0] + i, as DGL's RangePartitionBook
  expects), then its halo nodes (the sources of its in-edges owned elsewhere; fanout's
  halo_nids.npy, ascending). Edges: the partition's in-edges (inner_edge 1, edge IDs
  edge_map[K]), then, as DGL's 1-hop halo subgraph also holds them, the edges from the
  partition's nodes to its halo nodes (inner_edge 0, their owner's edge IDs), each group by edge
  ID, which is DGL's order. (Checked against partition_graph with the same assignment on the
  --quick graph: the same nodes, halo, edges with their inner flags, edge IDs and node fields in
  input IDs, and the same dtypes; DGL's reshuffled node IDs are fanout's new IDs.) ndata: _ID (global node ID), inner_node (uint8), part_id (int64); edata:
  _ID (global edge ID), inner_edge (uint8); dtypes as DGL's RESERVED_FIELD_DTYPE.
- partK/node_feat.dgl: every node field of fanout's partition as "_N/NAME", rows of the
  partition's nodes in ID order; uint8 *_mask fields become bool, as dgl_partition.py's masks.
  partK/edge_feat.dgl: empty (the datasets here have no edge fields).

--graphbolt also runs dgl.distributed.dgl_partition_to_graphbolt on the result (DGL 2.1's
converter, default arguments: fused_csc_sampling_graph.pt beside each graph.dgl and
part_graph_graphbolt in NAME.json), for DistGraph with use_graphbolt=True.
--check: DGL's own partition check (load_partition under DGL_DIST_DEBUG, which verifies that
every inner node and edge maps to its partition through the partition book) on each partition.
Writes into OUT.tmp and renames it when complete. Prints time and peak RSS.
"""
import argparse
import json
import os
import resource
import shutil
import time

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def gather_rows(indptr, indices, rows):
    """(positions, sources) of the CSC rows `rows`: every in-edge of those rows, row by row."""
    begin = indptr[rows].astype(np.int64)
    lens = indptr[rows + 1].astype(np.int64) - begin
    total = int(lens.sum())
    starts = np.repeat(begin - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    pos = starts + np.arange(total, dtype=np.int64)
    return pos, lens, np.asarray(indices[pos], dtype=np.int64)


def convert_part(conf, base, k, out_dir, graph_name):
    K = conf["num_parts"]
    node_map = conf["node_map"]["_N"]
    edge_map = conf["edge_map"]["_N:_E:_N"]
    lo, hi = node_map[k]
    n = hi - lo
    gdir = os.path.join(base, f"part{k}", "graph")
    indptr = np.load(os.path.join(gdir, "indptr.npy"), mmap_mode="r")
    indices = np.load(os.path.join(gdir, "indices.npy"), mmap_mode="r")
    halo = np.load(os.path.join(gdir, "halo_nids.npy")).astype(np.int64)
    assert len(indptr) == n + 1 and (len(halo) < 2 or np.all(halo[1:] > halo[:-1]))
    m = len(indices)
    assert m == edge_map[k][1] - edge_map[k][0]

    def local_of(glob):
        """Local IDs of global node IDs that are in the subgraph; -1 for those that are not."""
        out = np.full(len(glob), -1, dtype=np.int64)
        inner = (glob >= lo) & (glob < hi)
        out[inner] = glob[inner] - lo
        rest = np.flatnonzero(~inner)
        at = np.searchsorted(halo, glob[rest])
        at_ok = at < len(halo)
        hit = np.zeros(len(rest), dtype=bool)
        hit[at_ok] = halo[at[at_ok]] == glob[rest[at_ok]]
        out[rest[hit]] = n + at[hit]
        return out

    # Inner edges: the partition's CSC, in edge-ID order.
    src = local_of(np.asarray(indices, dtype=np.int64))
    assert (src >= 0).all(), f"part{k}: a source is neither inner nor in halo_nids"
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(indptr, dtype=np.int64)))
    eid = np.arange(edge_map[k][0], edge_map[k][1], dtype=np.int64)
    # Edges from the partition's nodes to its halo nodes (in DGL's 1-hop halo subgraph too).
    xs, xd, xe = [], [], []
    for j in range(K):
        if j == k:
            continue
        jlo, jhi = node_map[j]
        sel = np.flatnonzero((halo >= jlo) & (halo < jhi))
        if len(sel) == 0:
            continue
        jdir = os.path.join(base, f"part{j}", "graph")
        jptr = np.load(os.path.join(jdir, "indptr.npy"), mmap_mode="r")
        jind = np.load(os.path.join(jdir, "indices.npy"), mmap_mode="r")
        pos, lens, s = gather_rows(jptr, jind, halo[sel] - jlo)
        d = np.repeat(n + sel, lens)
        keep = (s >= lo) & (s < hi)
        s = s - lo
        xs.append(s[keep])
        xd.append(d[keep])
        xe.append(pos[keep] + edge_map[j][0])
        del pos, lens, s, d, keep
    n_extra = sum(len(x) for x in xs)
    src = np.concatenate([src] + xs)
    dst = np.concatenate([dst] + xd)
    eid = np.concatenate([eid] + xe)
    del xs, xd, xe
    inner_edge = np.zeros(len(eid), dtype=np.uint8)
    inner_edge[:m] = 1
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n + len(halo))
    del src, dst
    nid = np.concatenate([np.arange(lo, hi, dtype=np.int64), halo])
    g.ndata[dgl.NID] = torch.from_numpy(nid)
    inner_node = np.zeros(n + len(halo), dtype=np.uint8)
    inner_node[:n] = 1
    g.ndata["inner_node"] = torch.from_numpy(inner_node)
    bounds = np.array([r[1] for r in node_map], dtype=np.int64)
    g.ndata["part_id"] = torch.from_numpy(np.searchsorted(bounds, nid, side="right").astype(np.int64))
    g.edata[dgl.EID] = torch.from_numpy(eid)
    g.edata["inner_edge"] = torch.from_numpy(inner_edge)
    pdir = os.path.join(out_dir, f"part{k}")
    os.makedirs(pdir, exist_ok=True)
    dgl.save_graphs(os.path.join(pdir, "graph.dgl"), [g])
    print(f"part {k} has {g.num_nodes()} nodes and {n} are inside the partition", flush=True)
    print(f"part {k} has {g.num_edges()} edges and {m} are inside the partition "
          f"(and {n_extra} edges from them to halo nodes)", flush=True)
    del g, nid, eid, inner_edge
    # Node fields, rows in ID order.
    feats = {}
    ndir = os.path.join(base, f"part{k}", "node_data")
    for f in sorted(os.listdir(ndir)):
        if not f.endswith(".npy"):
            continue
        name = f[:-4]
        a = np.load(os.path.join(ndir, f))
        assert len(a) == n, f"part{k}/node_data/{f}: {len(a)} rows for {n} nodes"
        if name.endswith("_mask"):
            a = a.astype(bool)
        feats[f"_N/{name}"] = torch.from_numpy(a)
    dgl.data.utils.save_tensors(os.path.join(pdir, "node_feat.dgl"), feats)
    dgl.data.utils.save_tensors(os.path.join(pdir, "edge_feat.dgl"), {})
    del feats
    return {"node_feats": f"part{k}/node_feat.dgl", "edge_feats": f"part{k}/edge_feat.dgl",
            "part_graph": f"part{k}/graph.dgl"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fanout", required=True, help="the fanout-partition config, NAME.json")
    p.add_argument("--out", required=True)
    p.add_argument("--graph-name", default=None, help="default: the fanout config's graph_name")
    p.add_argument("--graphbolt", action="store_true", help="also dgl_partition_to_graphbolt")
    p.add_argument("--check", action="store_true", help="DGL's partition check on the result")
    a = p.parse_args()
    t0 = time.time()
    with open(a.fanout) as f:
        conf = json.load(f)
    base = os.path.dirname(os.path.abspath(a.fanout))
    if conf.get("ntypes", {"_N": 0}) != {"_N": 0} or len(conf["edge_map"]) != 1:
        raise SystemExit("fanout_to_dgl.py: only one node type and one edge type")
    name = a.graph_name or conf["graph_name"]
    tmp = a.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    meta = {
        "graph_name": name,
        "num_nodes": conf["num_nodes"],
        "num_edges": conf["num_edges"],
        "part_method": "metis",
        "num_parts": conf["num_parts"],
        "halo_hops": 1,
        "node_map": {"_N": conf["node_map"]["_N"]},
        "edge_map": {"_N:_E:_N": conf["edge_map"]["_N:_E:_N"]},
        "ntypes": {"_N": 0},
        "etypes": {"_N:_E:_N": 0},
    }
    for k in range(conf["num_parts"]):
        meta[f"part-{k}"] = convert_part(conf, base, k, tmp, name)
        print(f"fanout_to_dgl: part {k} written ({time.time() - t0:.1f} s, peak RSS {rss_gib():.2f} GiB)", flush=True)
    config = os.path.join(tmp, name + ".json")
    with open(config, "w") as f:
        json.dump(meta, f, indent=4)
    t1 = time.time()
    if a.check:
        os.environ["DGL_DIST_DEBUG"] = "1"
        for k in range(conf["num_parts"]):
            dgl.distributed.load_partition(config, k, load_feats=False)
        del os.environ["DGL_DIST_DEBUG"]
        print(f"fanout_to_dgl: DGL's partition check passed ({time.time() - t1:.1f} s)", flush=True)
    if a.graphbolt:
        t2 = time.time()
        dgl.distributed.dgl_partition_to_graphbolt(config)
        print(f"fanout_to_dgl: dgl_partition_to_graphbolt in {time.time() - t2:.1f} s", flush=True)
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    print(f"fanout_to_dgl: {conf['num_parts']} parts of {a.fanout} in {t1 - t0:.1f} s; peak RSS {rss_gib():.2f} GiB; "
          f"config {os.path.join(a.out, name + '.json')}", flush=True)


if __name__ == "__main__":
    main()
