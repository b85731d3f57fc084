"""A user's own training script on fanout.distributed: plain PyTorch (no DGL, no PyG), DistDGL's
names, DistributedDataParallel over Gloo, started by fanout-launch as ``python3 sage_train.py ...``
(docs/python.md; the tests run it too, tests/python/distributed_test.py).

  --mode train      GraphSAGE (DGL's SAGEConv 'mean', written here with index_add_) for each of
                    --seeds; rank 0 prints "test accuracy A" per seed and "mean test accuracy M".
  --mode checksums  iterates the loader for --epochs and prints "rank R batch E S crc C" per batch,
                    the CRC-32 of what the script received, in the order of fanout-train's
                    --print-batch-checksums (sampler/batch_checksum.h).
"""

import argparse
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import fanout.distributed as dist


class SAGEConv(nn.Module):
    """DGL's SAGEConv(aggregator_type='mean'): fc_self(h_dst) + fc_neigh(mean of in-neighbours)."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.fc_neigh = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def forward(self, block, h):
        n_dst = block.num_dst_nodes()
        summed = torch.zeros(n_dst, h.shape[1], dtype=h.dtype).index_add_(0, block.dst, h[block.indices])
        mean = summed / block.in_degrees().clamp(min=1).unsqueeze(1).to(h.dtype)
        return self.fc_self(h[:n_dst]) + self.fc_neigh(mean) + self.bias


class SAGE(nn.Module):
    def __init__(self, in_dim, hidden, classes, layers, dropout):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [classes]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i + 1 < len(self.layers):
                h = self.dropout(F.relu(h))
        return h


def checksum(seeds, blocks):
    c = zlib.crc32(seeds.numpy().tobytes())
    for b in blocks:
        for part in (b.srcdata[dist.NID], torch.tensor(b.num_dst_nodes()), b.indptr, b.indices, b.edata[dist.EID]):
            c = zlib.crc32(part.numpy().tobytes(), c)
    c = zlib.crc32(blocks[0].srcdata["feat"].numpy().tobytes(), c)
    return zlib.crc32(blocks[-1].dstdata["label"].numpy().tobytes(), c)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["train", "checksums"], default="train")
    p.add_argument("--graph-name", default="")
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--seeds", default="0")
    p.add_argument("--num-samplers", type=int, default=None)
    args = p.parse_args()

    dist.initialize()
    torch.distributed.init_process_group("gloo")  # env://: MASTER_ADDR/MASTER_PORT from fanout-launch
    torch.set_num_threads(1)
    g = dist.DistGraph(args.graph_name)
    pb = g.get_partition_book()
    train_nid = dist.node_split(g.ndata["train_mask"], pb, force_even=True)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    rank = g.rank()

    if args.mode == "checksums":
        seed = int(args.seeds.split(",")[0])
        loader = dist.DistNodeDataLoader(g, train_nid, dist.NeighborSampler(fanouts), batch_size=args.batch_size,
                                         shuffle=True, seed=seed, num_samplers=args.num_samplers)
        for epoch in range(args.epochs):
            for step, (input_nodes, seeds, blocks) in enumerate(loader):
                assert torch.equal(input_nodes, blocks[0].srcdata[dist.NID])
                assert torch.equal(seeds, blocks[-1].dstdata[dist.NID])
                print(f"rank {rank} batch {epoch} {step} crc {checksum(seeds, blocks)}", flush=True)
        g.barrier()
        return

    test_nid = dist.node_split(g.ndata["test_mask"], pb, force_even=True)
    in_dim = g.ndata["feat"].shape[1]
    accuracies = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        torch.manual_seed(seed)
        model = torch.nn.parallel.DistributedDataParallel(
            SAGE(in_dim, args.hidden, g.num_classes, len(fanouts), args.dropout))
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        loader = dist.DistNodeDataLoader(g, train_nid, dist.NeighborSampler(fanouts), batch_size=args.batch_size,
                                         shuffle=True, seed=seed, num_samplers=args.num_samplers)
        for epoch in range(args.epochs):
            model.train()
            for input_nodes, seeds, blocks in loader:
                logits = model(blocks, blocks[0].srcdata["feat"].float())
                loss = F.cross_entropy(logits, blocks[-1].dstdata["label"])
                opt.zero_grad()
                loss.backward()
                opt.step()
        # Test: full neighbourhoods, every rank its share, the counts summed.
        model.eval()
        test_loader = dist.DistNodeDataLoader(g, test_nid, dist.NeighborSampler([-1] * len(fanouts)),
                                              batch_size=1024, num_samplers=0)
        counts = torch.zeros(2, dtype=torch.float64)
        with torch.no_grad():
            for input_nodes, seeds, blocks in test_loader:
                pred = model.module(blocks, blocks[0].srcdata["feat"].float()).argmax(1)
                counts += torch.tensor([(pred == blocks[-1].dstdata["label"]).sum().item(), len(seeds)],
                                       dtype=torch.float64)
        torch.distributed.all_reduce(counts)
        accuracies.append(float(counts[0] / counts[1]))
        if rank == 0:
            print(f"seed {seed} test accuracy {accuracies[-1]:.4f} ({int(counts[1])} nodes)", flush=True)
        loader.close()
    if rank == 0:
        print(f"mean test accuracy {np.mean(accuracies):.4f}", flush=True)
    g.barrier()


if __name__ == "__main__":
    main()
