"""DistDGL side of setup L: GraphSAGE link prediction on a DGL-partitioned graph.

One script for both roles, as dgl_dist_train.py (started by dgl_machine.sh with DGL_ROLE=server
or client). The job is fanout-train --task link's on the same graph:
- positives: each trainer's share of the stored edges (dgl.distributed.edge_split), of which a
  fresh shuffled draw of --edges-per-epoch per epoch (fanout-train --edges-per-epoch); the held-out
  pairs are not in the graph (dgl_partition.py --exclude-pairs);
- DistEdgeDataLoader(g, eids, NeighborSampler(fanouts), exclude="reverse_id",
  reverse_eids=<the partition's reverse_eids.npy>, negative_sampler=Uniform(1)) (DGL 2.1's
  distributed edge loader takes the exclusion and the negative sampler as its own arguments, not
  through as_edge_prediction_sampler): one uniform negative per positive, the positive and its
  reverse left out of the blocks;
- the model of dgl_common.build_model with --hidden outputs (embeddings), dot-product scores,
  binary cross-entropy with logits, Adam, DDP over Gloo.
Epoch time: the training loop only; each epoch's loader is built before its timer starts.
After the last epoch: layer-wise full-neighbour inference of every node (DGL's example's
`inference`), then each test positive ranked against its own given negatives
(link_split.py's test_neg_dst.npy, input IDs mapped through orig_nids.npy): MRR and Hits@K with
ties counted half, as fanout-train.
"""
import argparse
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dgl_dist_train  # noqa: E402,F401  (its loopback machine-ID patch, applied at import)
from dgl_common import (  # noqa: E402
    Breakdown,
    add_dist_args,
    dist_initialize,
    add_job_args,
    build_model,
    epoch_record,
    finish_step,
    format_epoch,
    now,
    write_metrics,
)


def parse():
    p = argparse.ArgumentParser()
    add_dist_args(p)
    p.add_argument("--split", required=True, help="link_split.py's folder (test_pos.npy, test_neg_dst.npy)")
    p.add_argument("--edges-per-epoch", type=int, default=0, help="positives per trainer per epoch (0: all)")
    add_job_args(p)
    return p.parse_args()


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    dist_initialize(dgl.distributed, a)  # a DGL server never returns from here
    dist.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(a.graph_name, part_config=a.part_config)
    rank, world = dist.get_rank(), dist.get_world_size()
    lead = rank == 0
    pb = g.get_partition_book()
    part_dir = os.path.dirname(os.path.abspath(a.part_config))
    reverse = torch.from_numpy(np.load(os.path.join(part_dir, "reverse_eids.npy")))
    train_eids = dgl.distributed.edge_split(torch.ones(g.num_edges(), dtype=torch.bool), pb, force_even=True)
    # Every rank the same number of steps (as fanout-train: the smallest share).
    share = torch.tensor([len(train_eids)])
    dist.all_reduce(share, op=dist.ReduceOp.MIN)
    per_epoch = int(share) if a.edges_per_epoch <= 0 else min(int(share), a.edges_per_epoch)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    in_feats = g.ndata["feat"].shape[1]
    torch.manual_seed(a.seed)
    model = build_model(in_feats, a.hidden, a.hidden, a.num_layers, a.dropout)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    negative_sampler = dgl.dataloading.negative_sampler.Uniform(1)
    if lead:
        print(f"dgl_link_train: graph '{a.graph_name}' ({g.num_nodes()} nodes, {g.num_edges()} edges, "
              f"{pb.num_partitions()} partitions), {world} trainer(s); sage {a.num_layers} layers, hidden "
              f"{a.hidden}; fanouts {a.fanouts}, batch {a.batch_size}; {per_epoch} positive edges per trainer per "
              f"epoch, 1 uniform negative each; dgl {dgl.__version__}, torch {torch.__version__}", flush=True)
    if a.metrics_file and lead:
        open(a.metrics_file, "w").close()
    feat = g.ndata["feat"]
    gen = torch.Generator().manual_seed(a.seed * 1000 + rank)
    for epoch in range(a.epochs):
        eids = train_eids[torch.randperm(len(train_eids), generator=gen)[:per_epoch]]
        loader = dgl.dataloading.DistEdgeDataLoader(g, eids, sampler, batch_size=a.batch_size, shuffle=True,
                                                    drop_last=False, exclude="reverse_id", reverse_eids=reverse,
                                                    negative_sampler=negative_sampler)
        model.train()
        t = Breakdown()
        loss_sum = correct = count = 0.0
        steps = 0
        start = now()
        it = iter(loader)
        with model.join():
            while True:
                t0 = now()
                try:
                    input_nodes, pos_graph, neg_graph, blocks = next(it)
                except StopIteration:
                    break
                t1 = now()
                x = feat[input_nodes]
                t2 = now()
                h = model(blocks, x)
                ps, pd = pos_graph.edges()
                ns, nd = neg_graph.edges()
                pos = (h[ps] * h[pd]).sum(1)
                neg = (h[ns] * h[nd]).sum(1)
                scores = torch.cat([pos, neg])
                labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
                loss = F.binary_cross_entropy_with_logits(scores, labels)
                finish_step(loss, [opt], t, t0, t1, t2)
                n = len(scores)
                loss_sum += loss.item() * n
                correct += float((pos > 0).sum() + (neg <= 0).sum())
                count += n
                steps += 1
        epoch_s = now() - start
        del loader, it
        sums = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(sums)
        extra = {}
        if epoch == a.epochs - 1:
            ev0 = now()
            extra.update(evaluate(model.module, g, a))
            extra["eval_seconds"] = now() - ev0
        rec = epoch_record(epoch, epoch_s, t, steps, sums[0].item(), sums[1].item(), sums[2].item(), world, extra)
        if lead:
            line = format_epoch(rec)
            if "test_mrr" in rec:
                line += (f" | test mrr {rec['test_mrr']:.4f}, hits@1 {rec['test_hits@1']:.4f}, hits@10 "
                         f"{rec['test_hits@10']:.4f}, hits@100 {rec['test_hits@100']:.4f} over "
                         f"{rec['negatives']} negatives each (eval {rec['eval_seconds']:.1f} s)")
            print(line, flush=True)
            write_metrics(a.metrics_file, rec)
    dist.barrier()


def inference(model, g, batch_size):
    """Every node's output, layer by layer with all neighbours (DGL's distributed example's)."""
    model.eval()
    nodes = dgl.distributed.node_split(np.arange(g.num_nodes()), g.get_partition_book(), force_even=True)
    x = g.ndata["feat"]
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            y = dgl.distributed.DistTensor((g.num_nodes(), layer._out_feats), torch.float32, f"h{i}",
                                           persistent=True)
            loader = dgl.dataloading.DistNodeDataLoader(g, nodes, sampler, batch_size=batch_size, shuffle=False,
                                                        drop_last=False)
            for input_nodes, output_nodes, blocks in loader:
                block = blocks[0]
                h = x[input_nodes]
                h = layer(block, (h, h[: block.num_dst_nodes()]))
                if i != len(model.layers) - 1:
                    h = F.relu(h)
                y[output_nodes] = h
            x = y
            g.barrier()
    model.train()
    return x


def evaluate(model, g, a):
    emb = inference(model, g, a.eval_batch_size)
    orig = np.load(os.path.join(os.path.dirname(os.path.abspath(a.part_config)), "orig_nids.npy"))
    dgl_id = np.empty_like(orig)
    dgl_id[orig] = np.arange(len(orig))
    pos = np.load(os.path.join(a.split, "test_pos.npy"))
    neg = np.load(os.path.join(a.split, "test_neg_dst.npy"))
    rank, world = dist.get_rank(), dist.get_world_size()
    lo, hi = len(pos) * rank // world, len(pos) * (rank + 1) // world
    src = torch.from_numpy(dgl_id[pos[lo:hi, 0]])
    dst = torch.from_numpy(dgl_id[pos[lo:hi, 1]])
    negs = torch.from_numpy(dgl_id[neg[lo:hi]])
    hs, hd, hn = emb[src], emb[dst], emb[negs.flatten()].view(hi - lo, neg.shape[1], -1)
    p = (hs * hd).sum(1, keepdim=True)
    q = (hs.unsqueeze(1) * hn).sum(2)
    r = 1 + (q > p).sum(1).double() + 0.5 * (q == p).sum(1).double()
    sums = torch.tensor([float((1 / r).sum()), float((r <= 1).sum()), float((r <= 10).sum()),
                         float((r <= 100).sum()), float(hi - lo)], dtype=torch.float64)
    dist.all_reduce(sums)
    c = max(1.0, sums[4].item())
    return {"test_mrr": sums[0].item() / c, "test_hits@1": sums[1].item() / c, "test_hits@10": sums[2].item() / c,
            "test_hits@100": sums[3].item() / c, "negatives": int(neg.shape[1])}


if __name__ == "__main__":
    main()
