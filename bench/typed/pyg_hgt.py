"""HGT written with PyG's HGTConv, trained on fanout's typed batches: the PyG side of issue 44's
comparison with fanout-train --model hgt (bench/typed/hgt_vs_pyg.sh runs both).

A user's PyG script as PyG's own distributed example shapes it, on fanout's data plane:
fanout.pyg.DistNeighborLoader yields HeteroData batches (paper features, per-relation edge_index,
hop 1 first), the model is PyG's HGT example (HGTConv layers, hidden 64 in 4 heads, a linear
classifier on the papers), DDP over Gloo, Adam. The featureless types input zeros of the papers'
width, as fanout-train --embed-featureless 0 gives them. PyG computes each layer over the whole
sampled subgraph (NeighborLoader's batches are not trimmed per hop); fanout-train's layers run on
per-hop blocks. Started by fanout-launch as the trainer program (needs PyG and fanout's Python
package in the interpreter: pip install torch_geometric ./python).

Prints one line per epoch (time without evaluation) and the validation accuracy at the end, and
writes them to --metrics-file (JSON lines, as fanout-train's: epoch, epoch_seconds, loss).
"""
import argparse
import json
import time

import torch
import torch.distributed as tdist
import torch.nn.functional as F

import fanout.distributed as fd
from fanout import pyg


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--part-config", required=True)
    p.add_argument("--fanouts", default="25,15", help="input layer first, as fanout-train's --fanouts")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--target", default="paper")
    p.add_argument("--metrics-file", default="")
    return p.parse_args()


class HGT(torch.nn.Module):
    def __init__(self, in_dim, hidden, classes, heads, layers, metadata, target):
        super().__init__()
        from torch_geometric.nn import HGTConv
        self.convs = torch.nn.ModuleList(
            HGTConv(in_dim if i == 0 else hidden, hidden, metadata, heads) for i in range(layers))
        self.lin = torch.nn.Linear(hidden, classes)
        self.target = target

    def forward(self, x_dict, edge_index_dict):
        for conv in self.convs:
            x_dict = {t: x for t, x in conv(x_dict, edge_index_dict).items() if x is not None}
        return self.lin(x_dict[self.target])


def inputs(batch, width):
    """x of every node type: the featured ones' rows, zeros for the others."""
    for t in batch.node_types:
        if "x" not in batch[t]:
            batch[t].x = torch.zeros(batch[t].num_nodes, width)
    return batch.x_dict, batch.edge_index_dict


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    ctx = fd.initialize()
    tdist.init_process_group(backend="gloo")
    rank, world = tdist.get_rank(), tdist.get_world_size()
    with open(ctx.part_config) as f:
        name = json.load(f)["graph_name"]
    g = fd.DistGraph(name, part_config=ctx.part_config)
    T = a.target
    pb = g.get_partition_book()
    train = fd.node_split(g.nodes[T].data["train_mask"], pb, ntype=T, force_even=True)
    val = fd.node_split(g.nodes[T].data["val_mask"], pb, ntype=T, force_even=True)
    root = ctx.part_config
    data = (pyg.LocalFeatureStore.from_partition(root, ctx.machine_id),
            pyg.LocalGraphStore.from_partition(root, ctx.machine_id))
    # node_split speaks fanout's IDs (DGL's convention); fanout.pyg takes the graph's own.
    train, val = data[1].ids().nodes_out(train, T), data[1].ids().nodes_out(val, T)
    hops = [int(f) for f in reversed(a.fanouts.split(","))]  # PyG's num_neighbors: hop 1 first
    width = g.nodes[T].data["feat"].shape[1]
    classes = int(g.nodes[T].data["label"][torch.arange(g.num_nodes(T))].max()) + 1
    metadata = (list(g.ntypes), [tuple(cet) for cet in g.canonical_etypes])
    torch.manual_seed(0)
    model = HGT(width, a.hidden, classes, a.heads, len(hops), metadata, T)
    with torch.no_grad():  # HGTConv's lazy shapes need one batch before DDP sees the parameters
        probe = pyg.DistNeighborLoader(data, num_neighbors=hops, input_nodes=(T, train[:8]), batch_size=8)
        model(*inputs(next(iter(probe)), width))
        probe.close()
    # The last layer's output is the papers': the other types' transforms there get no gradient.
    model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loader = pyg.DistNeighborLoader(data, num_neighbors=hops, input_nodes=(T, train), batch_size=a.batch_size,
                                    shuffle=True, drop_last=False)
    out = open(a.metrics_file, "w") if a.metrics_file and rank == 0 else None
    if rank == 0:
        print(f"pyg_hgt: {world} trainer(s); HGT {len(hops)} layers, hidden {a.hidden}, {a.heads} heads, "
              f"{classes} classes; num_neighbors {hops}; batch {a.batch_size}; train/val per trainer "
              f"{len(train)}/{len(val)}; torch {torch.__version__}", flush=True)
    for epoch in range(a.epochs):
        model.train()
        t0, total, steps = time.time(), 0.0, 0
        for batch in loader:
            bs = batch[T].batch_size
            logits = model(*inputs(batch, width))[:bs]
            loss = F.cross_entropy(logits, batch[T].y[:bs])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            steps += 1
        seconds = time.time() - t0
        if rank == 0:
            print(f"epoch {epoch} | loss {total / max(1, steps):.4f} | {seconds:.2f} s ({steps} steps)", flush=True)
            if out:
                out.write(json.dumps({"event": "epoch", "epoch": epoch, "epoch_seconds": seconds,
                                      "loss": total / max(1, steps)}) + "\n")
    model.eval()
    correct = count = 0
    evaluation = pyg.DistNeighborLoader(data, num_neighbors=hops, input_nodes=(T, val), batch_size=4096)
    with torch.no_grad():
        for batch in evaluation:
            bs = batch[T].batch_size
            pred = model.module(*inputs(batch, width))[:bs].argmax(1)
            correct += int((pred == batch[T].y[:bs]).sum())
            count += bs
    sums = torch.tensor([correct, count], dtype=torch.float64)
    tdist.all_reduce(sums)
    if rank == 0:
        acc = float(sums[0] / max(1.0, float(sums[1])))
        print(f"validation accuracy {acc:.4f}", flush=True)
        if out:
            out.write(json.dumps({"event": "validation", "val_acc": acc}) + "\n")
            out.close()
    loader.close()
    evaluation.close()


if __name__ == "__main__":
    main()
