"""Setup Y's trainer: the model of DGL's distributed GraphSAGE example written with PyG, fed by
fanout.pyg (bench/vs_dgl/run.sh --setups S,Y; docs/benchmarks.md).

    fanout-launch ... -- python pyg_sage_train.py --part-config PARTS/fanout-2/vsdgl.json \
        [--epochs 3 --metrics-file m.jsonl ...]

The model: PyG's SAGEConv with mean aggregation, ReLU and dropout 0.5 between layers, 3 layers,
hidden 256, as DGL's example's `DistSAGE` (`dgl.nn.SAGEConv('mean')`); Adam lr 0.003,
cross-entropy on the seeds. Batches: `fanout.pyg.DistNeighborLoader` with
`num_neighbors=[5, 10, 15]` (PyG's order, hop 1 first: DGL's and fanout's `15,10,5`, input layer
first), batch 1024, shuffled, over this trainer's share of the training nodes
(`fanout.distributed.node_split(..., force_even=True)`, fanout-train's split, mapped to the graph's
own IDs that fanout.pyg takes), DDP over Gloo.
Every trainer runs the same number of steps. Two ways to write the layers (--layers):
- `adjs` (default): PyG's layer-by-layer form of its CPU examples (ogbn_products_sage.py with the
  old NeighborSampler): the loader's `adjs=True` gives each layer's block as a sparse CSR `adj_t`,
  and layer i runs `SAGEConv((x, x[:size[1]]), adj_t)`: PyG's fused sparse-matrix product (on
  fanout's kernel: adj_t is a fanout.kernels.FusedCsr), over the layer's own destinations only,
  as DGL's blocks; ReLU and dropout between layers by fanout.kernels.relu_dropout (one pass), or
  PyTorch's F.relu and F.dropout with --relu-dropout torch;
- `trim`: `torch_geometric.nn.GraphSAGE` on `edge_index` with PyG's `num_sampled_nodes_per_hop` /
  `trim_to_layer` (per-edge gather and scatter; the first layer computes every sampled node).

Timers per epoch (rank 0, summed over steps; the metrics file's keys as dgl_*_train.py writes
them): wait (the loader's next batch), forward, backward (with DDP's all-reduce), update. After
the last epoch: validation accuracy over every validation node, sampled with the same fanouts
(batch 4096), summed over the trainers.
"""
import argparse
import json
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.nn import GraphSAGE, SAGEConv

import fanout.distributed as fdist
from fanout.kernels import relu_dropout
from fanout.pyg import DistNeighborLoader, LocalFeatureStore, LocalGraphStore


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part-config", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--num-layers", type=int, default=3)
    p.add_argument("--num-neighbors", default="5,10,15", help="per hop, hop 1 first (PyG's order)")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--eval-batch-size", type=int, default=4096)
    p.add_argument("--metrics-file", default="")
    p.add_argument("--layers", choices=("adjs", "trim"), default="adjs",
                   help="adjs: per-layer sparse adj_t (fused product); trim: GraphSAGE on edge_index, trimmed")
    p.add_argument("--relu-dropout", choices=("fanout", "torch"), default="fanout",
                   help="between the adjs layers: fanout.kernels.relu_dropout (one pass) or F.dropout(F.relu(x))")
    a = p.parse_args()
    num_neighbors = [int(x) for x in a.num_neighbors.split(",")]
    if len(num_neighbors) != a.num_layers:
        p.error(f"--num-neighbors has {len(num_neighbors)} hops for {a.num_layers} layers")

    ctx = fdist.initialize()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    lead = rank == 0
    feature = LocalFeatureStore.from_partition(a.part_config, ctx.machine_id)
    graph = LocalGraphStore.from_partition(a.part_config, ctx.machine_id)
    g = graph.graph()
    pb = g.get_partition_book()
    # fanout-train's split of the training nodes (node_split speaks fanout's IDs, DGL's convention),
    # handed to fanout.pyg in the graph's own IDs, which PyG's loaders take.
    ids = graph.ids()
    train = ids.nodes_out(fdist.node_split(g.ndata["train_mask"], pb, force_even=True))
    val = ids.nodes_out(fdist.node_split(g.ndata["val_mask"], pb, force_even=True))
    adjs = a.layers == "adjs"
    loader = DistNeighborLoader((feature, graph), num_neighbors=num_neighbors, input_nodes=train,
                                batch_size=a.batch_size, shuffle=True, adjs=adjs)
    torch.manual_seed(0)
    width = g.ndata["feat"].shape[1]
    if adjs:
        model = LayerwiseSAGE(width, a.hidden, a.num_layers, g.num_classes, a.dropout, a.relu_dropout == "fanout")
    else:
        model = GraphSAGE(width, a.hidden, a.num_layers, g.num_classes, dropout=a.dropout)
    if lead:
        print(f"pyg_sage_train: {a.layers} layers, relu+dropout {a.relu_dropout if adjs else 'torch'}, "
              f"torch {torch.__version__}, "
              f"torch_geometric {__import__('torch_geometric').__version__}", flush=True)
    model = DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if a.metrics_file and lead:
        open(a.metrics_file, "w").close()

    for epoch in range(a.epochs):
        model.train()
        t = dict(wait=0.0, forward=0.0, backward=0.0, update=0.0)
        loss_sum = correct = count = steps = 0
        start = mark = time.perf_counter()
        for batch in loader:
            now = time.perf_counter()
            t["wait"] += now - mark
            y = batch.y[:batch.batch_size].long()
            out = run(model, batch)
            loss = F.cross_entropy(out, y)
            mark = time.perf_counter()
            t["forward"] += mark - now
            opt.zero_grad()
            loss.backward()
            now = time.perf_counter()
            t["backward"] += now - mark
            opt.step()
            mark = time.perf_counter()
            t["update"] += mark - now
            loss_sum += loss.item() * len(y)
            correct += int((out.argmax(1) == y).sum())
            count += len(y)
            steps += 1
        epoch_s = time.perf_counter() - start
        sums = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(sums)
        rec = {"event": "epoch", "epoch": epoch, "epoch_seconds": epoch_s, "steps": steps,
               "loss": sums[0].item() / sums[2].item(), "train_acc": sums[1].item() / sums[2].item(),
               "seeds_per_second": sums[2].item() / world / epoch_s,
               **{f"{k}_seconds": v for k, v in t.items()}}
        if epoch == a.epochs - 1:
            ev = time.perf_counter()
            rec["val_acc"] = evaluate(model.module, feature, graph, val, num_neighbors, a.eval_batch_size, adjs)
            rec["eval_seconds"] = time.perf_counter() - ev
        if lead:
            print(f"epoch {epoch} | loss {rec['loss']:.4f} | train acc {rec['train_acc']:.4f} | {epoch_s:.2f} s "
                  f"(wait {t['wait']:.2f}, forward {t['forward']:.2f}, backward {t['backward']:.2f}, "
                  f"update {t['update']:.2f})" + (f" | val acc {rec['val_acc']:.4f}" if "val_acc" in rec else ""),
                  flush=True)
            if a.metrics_file:
                with open(a.metrics_file, "a") as f:
                    f.write(json.dumps(rec) + "\n")
    dist.barrier()
    loader.close()


class LayerwiseSAGE(torch.nn.Module):
    """GraphSAGE as PyG's CPU examples write it for per-layer adjacencies: SAGEConv (mean) per
    layer on (sources, destinations), ReLU and dropout between layers (fanout's one-pass
    relu_dropout, or PyTorch's F.relu and F.dropout)."""

    def __init__(self, width, hidden, layers, classes, dropout, fused_dropout=True):
        super().__init__()
        sizes = [width] + [hidden] * (layers - 1) + [classes]
        self.convs = torch.nn.ModuleList(SAGEConv(i, o) for i, o in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout
        self.fused_dropout = fused_dropout

    def forward(self, x, adjs):
        for i, (adj_t, _, size) in enumerate(adjs):
            x = self.convs[i]((x, x[:size[1]]), adj_t)
            if i < len(self.convs) - 1:
                if self.fused_dropout:
                    x = relu_dropout(x, self.dropout, self.training)
                else:
                    x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


def run(model, batch):
    """The seeds' logits, by either form of the model."""
    if "adjs" in batch:
        return model(batch.x, batch.adjs)[:batch.batch_size]
    return model(batch.x, batch.edge_index, num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                 num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]


@torch.no_grad()
def evaluate(model, feature, graph, nids, num_neighbors, batch_size, adjs):
    """Accuracy over every trainer's validation nodes (each visited once), summed over ranks."""
    model.eval()
    loader = DistNeighborLoader((feature, graph), num_neighbors=num_neighbors, input_nodes=nids,
                                batch_size=batch_size, shuffle=False, adjs=adjs)
    correct = count = 0
    for batch in loader:
        out = run(model, batch)
        y = batch.y[:batch.batch_size].long()
        correct += int((out.argmax(1) == y).sum())
        count += len(y)
    sums = torch.tensor([correct, count], dtype=torch.float64)
    dist.all_reduce(sums)
    return sums[0].item() / max(1.0, sums[1].item())


if __name__ == "__main__":
    main()
