"""Setup Y's trainer: the model of DGL's distributed GraphSAGE example written with PyG, fed by
fanout.pyg (bench/vs_dgl/run.sh --setups S,Y; docs/benchmarks.md).

    fanout-launch ... -- python pyg_sage_train.py --part-config PARTS/fanout-2/vsdgl.json \
        [--epochs 3 --metrics-file m.jsonl ...]

The model: torch_geometric.nn.GraphSAGE (SAGEConv with mean aggregation, ReLU and dropout 0.5
between layers), 3 layers, hidden 256, as DGL's example's `DistSAGE` (`dgl.nn.SAGEConv('mean')`);
Adam lr 0.003, cross-entropy on the seeds. Batches: `fanout.pyg.DistNeighborLoader` with
`num_neighbors=[5, 10, 15]` (PyG's order, hop 1 first: DGL's and fanout's `15,10,5`, input layer
first), batch 1024, shuffled, over this trainer's share of the training nodes
(`fanout.distributed.node_split(..., force_even=True)`, fanout-train's split); each layer trimmed
to the nodes the next one needs (PyG's `num_sampled_nodes_per_hop` / `trim_to_layer`, as DGL's
blocks shrink), DDP over Gloo. Every trainer runs the same number of steps.

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
from torch_geometric.nn import GraphSAGE

import fanout.distributed as fdist
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
    train = fdist.node_split(g.ndata["train_mask"], pb, force_even=True)
    val = fdist.node_split(g.ndata["val_mask"], pb, force_even=True)
    loader = DistNeighborLoader((feature, graph), num_neighbors=num_neighbors, input_nodes=train,
                                batch_size=a.batch_size, shuffle=True)
    torch.manual_seed(0)
    model = GraphSAGE(g.ndata["feat"].shape[1], a.hidden, a.num_layers, g.num_classes, dropout=a.dropout)
    model = DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if a.metrics_file and lead:
        open(a.metrics_file, "w").close()

    def forward(batch):
        return model(batch.x, batch.edge_index, num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                     num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]

    for epoch in range(a.epochs):
        model.train()
        t = dict(wait=0.0, forward=0.0, backward=0.0, update=0.0)
        loss_sum = correct = count = steps = 0
        start = mark = time.perf_counter()
        for batch in loader:
            now = time.perf_counter()
            t["wait"] += now - mark
            y = batch.y[:batch.batch_size].long()
            out = forward(batch)
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
            rec["val_acc"] = evaluate(model.module, feature, graph, val, num_neighbors, a.eval_batch_size)
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


@torch.no_grad()
def evaluate(model, feature, graph, nids, num_neighbors, batch_size):
    """Accuracy over every trainer's validation nodes (each visited once), summed over ranks."""
    model.eval()
    loader = DistNeighborLoader((feature, graph), num_neighbors=num_neighbors, input_nodes=nids,
                                batch_size=batch_size, shuffle=False)
    correct = count = 0
    for batch in loader:
        out = model(batch.x, batch.edge_index, num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                    num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]
        y = batch.y[:batch.batch_size].long()
        correct += int((out.argmax(1) == y).sum())
        count += len(y)
    sums = torch.tensor([correct, count], dtype=torch.float64)
    dist.all_reduce(sums)
    return sums[0].item() / max(1.0, sums[1].item())


if __name__ == "__main__":
    main()
