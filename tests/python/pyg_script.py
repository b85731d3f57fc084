"""A training script written to PyG's distributed API, as a PyG user writes it, run by
tests/python/pyg_test.py and distributed_test.py (PygIdsTest) under fanout-launch, one per machine:

    fanout-launch ... -- python3 pyg_script.py --data USER --root PARTS --out RESULT.json

USER holds the user's own graph (x.npy, y.npy, edge_index.npy, train_mask.npy, test_mask.npy: what
the script's ``Data`` was before ``Partitioner`` cut it into PARTS). The script trains on its share
of its own ``train_mask`` IDs, evaluates on its own ``test_mask`` IDs, and checks what PyG promises
of every batch and store read against its own arrays: each seed's label is the script's label of
that ID, each row of ``x`` the script's row of ``n_id``, each ``e_id`` a column of its
``edge_index`` joining the two ``n_id``s of that edge, ``input_id`` the seed's position in
``input_nodes``. It writes the counts (checked, mismatched) and the test accuracy to RESULT.json.
With a real PyG it trains PyG's SAGEConv; with the stand-in (no PyG layers) a mean-aggregation
layer written in torch.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

from fanout.pyg import DistLinkNeighborLoader, DistNeighborLoader, LocalFeatureStore, LocalGraphStore

try:
    from torch_geometric.nn import SAGEConv
except ImportError:  # the stand-in: the same layer, written out
    class SAGEConv(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.lin_l, self.lin_r = torch.nn.Linear(i, o), torch.nn.Linear(i, o, bias=False)

        def forward(self, x, edge_index):
            src, dst = edge_index
            agg = torch.zeros(x.shape[0], x.shape[1]).index_add_(0, dst, x[src])
            deg = torch.zeros(x.shape[0]).index_add_(0, dst, torch.ones(len(dst))).clamp_(min=1)
            return self.lin_l(agg / deg[:, None]) + self.lin_r(x)


class Counts(dict):
    def check(self, what, ok: torch.Tensor):
        """Counts `what`'s checked entries and those that failed (ok: a bool tensor)."""
        c = self.setdefault(what, [0, 0])
        c[0] += int(ok.numel())
        c[1] += int((~ok).sum())


def check_batch(counts, batch, user, seeds):
    bs = batch.batch_size
    n_id = batch.n_id
    counts.check("seed_ids", n_id[:bs] == seeds[batch.input_id])
    counts.check("seed_labels", batch.y[:bs] == user["y"][n_id[:bs]])
    counts.check("x_rows", (batch.x == user["x"][n_id]).all(1))
    ei = user["edge_index"][:, batch.e_id]
    counts.check("edges", (ei == n_id[batch.edge_index]).all(0))


def check_stores(counts, feature, graph, user, rank):
    gid = feature.get_global_id(None)
    counts.check("store_local_x", (feature[None, "x"] == user["x"][gid]).all(1))
    pos = torch.arange(0, len(gid), 3)
    counts.check("store_local_index", (feature[None, "x", pos] == user["x"][gid[pos]]).all(1))
    anywhere = torch.arange(0, user["x"].shape[0], 7)  # every partition's nodes
    counts.check("store_global_x", (feature.get_tensor_from_global_id(group_name=None, attr_name="x",
                                                                      index=anywhere) == user["x"][anywhere]).all(1))
    counts.check("lookup_features", (feature.lookup_features(anywhere).wait() == user["x"][anywhere]).all(1))
    counts.check("store_labels", feature.labels == user["y"])
    counts.check("node_pb", graph.node_pb[gid] == rank)
    counts.check("node_pb_of_ids", graph.get_partition_ids_from_nids(gid) == rank)
    edge_index, e_id = graph.get_edge_index(None, "coo"), graph.get_edge_id(None, "coo")
    counts.check("store_edges", (user["edge_index"][:, e_id] == edge_index).all(0))
    counts.check("store_edges_local_dst", torch.isin(edge_index[1], gid))
    counts.check("edge_pb", graph.edge_pb[e_id] == rank)


def train_and_test(counts, feature, graph, user, mine, test, epochs):
    torch.manual_seed(0)
    width, classes = user["x"].shape[1], int(user["y"].max()) + 1
    convs = torch.nn.ModuleList([SAGEConv(width, 32), SAGEConv(32, classes)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    ddp = world > 1 and torch.distributed.is_initialized()

    def forward(batch):
        x = batch.x.float()
        for i, conv in enumerate(convs):
            x = conv(x, batch.edge_index)
            if i < len(convs) - 1:
                x = F.relu(x)
        return x[:batch.batch_size]

    loader = DistNeighborLoader((feature, graph), num_neighbors=[5, 5], input_nodes=mine, batch_size=64,
                                shuffle=True, num_workers=int(os.environ.get("FANOUT_NUM_SAMPLERS", "0") or 0))
    for _ in range(epochs):
        for batch in loader:
            check_batch(counts, batch, user, mine)
            loss = F.cross_entropy(forward(batch), batch.y[:batch.batch_size])
            opt.zero_grad()
            loss.backward()
            if ddp:
                for p in convs.parameters():
                    torch.distributed.all_reduce(p.grad)
                    p.grad /= world
            opt.step()
    loader.close()
    correct = total = 0
    with torch.no_grad(), DistNeighborLoader((feature, graph), num_neighbors=[5, 5], input_nodes=test,
                                             batch_size=128) as evaluation:
        for batch in evaluation:
            check_batch(counts, batch, user, test)
            truth = user["y"][batch.n_id[:batch.batch_size]]  # the script's own labels of its own IDs
            correct += int((forward(batch).argmax(1) == truth).sum())
            total += batch.batch_size
    return correct, total


def check_links(counts, feature, graph, user, rank, world):
    edges = torch.arange(rank, user["edge_index"].shape[1], 5 * world)  # some of the script's own edge IDs
    loader = DistLinkNeighborLoader((feature, graph), num_neighbors=[3], edge_label_index=edges, batch_size=32,
                                    neg_sampling="binary")
    seen = []
    for batch in loader:
        n = batch.batch_size
        pos = batch.n_id[batch.edge_label_index[:, :n]]  # the positives' endpoints, by the graph's IDs
        counts.check("link_positives", (pos == user["edge_index"][:, edges[batch.input_id]]).all(0))
        check_batch_edges(counts, batch, user)
        seen.append(edges[batch.input_id])
    loader.close()
    counts.check("link_every_positive", torch.sort(torch.cat(seen)).values == torch.sort(edges).values)


def check_batch_edges(counts, batch, user):
    counts.check("link_x_rows", (batch.x == user["x"][batch.n_id]).all(1))
    counts.check("link_edges", (user["edge_index"][:, batch.e_id] == batch.n_id[batch.edge_index]).all(0))


def check_refusals(counts, feature, graph, user):
    """IDs the script cannot have meant are refused by name, never reinterpreted."""
    n, e = user["x"].shape[0], user["edge_index"].shape[1]
    for make, bad in ((lambda: DistNeighborLoader((feature, graph), num_neighbors=[2], input_nodes=torch.tensor([0, n]),
                                                  batch_size=4), f"node ID {n} "),
                      (lambda: DistLinkNeighborLoader((feature, graph), num_neighbors=[2], batch_size=4,
                                                      edge_label_index=torch.tensor([e]), neg_sampling="binary"),
                       f"edge ID {e} ")):
        try:
            make()
            refused = False
        except ValueError as err:
            refused = bad in str(err)
        counts.check("refusals", torch.tensor([refused]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    user = {k: torch.from_numpy(np.load(os.path.join(a.data, f"{k}.npy")))
            for k in ("x", "y", "edge_index", "train_mask", "test_mask")}
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])  # one trainer a machine: rank = machine
    if world > 1:
        torch.distributed.init_process_group("gloo")
    feature = LocalFeatureStore.from_partition(a.root, rank)
    graph = LocalGraphStore.from_partition(a.root, rank)
    # The script's own training and test nodes, split between the machines by position (not by
    # partition: a seed may live anywhere).
    mine = user["train_mask"].nonzero().flatten()[rank::world]
    test = user["test_mask"].nonzero().flatten()[rank::world]
    counts = Counts()
    check_stores(counts, feature, graph, user, rank)
    check_refusals(counts, feature, graph, user)
    check_links(counts, feature, graph, user, rank, world)
    correct, total = train_and_test(counts, feature, graph, user, mine, test, a.epochs)
    with open(a.out, "w") as f:
        json.dump({"counts": counts, "correct": correct, "total": total}, f)


if __name__ == "__main__":
    main()
