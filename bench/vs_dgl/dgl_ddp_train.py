"""DGL side of setup B: one machine, 2 trainers, no DistDGL.

    python dgl_ddp_train.py --data DIR --num-trainers 2 [model flags]

Every trainer is a process (torch.multiprocessing, 'spawn') that loads the dataset (the same
graph as fanout-partition --add-reverse-edges, see dgl_common.load_npy_graph), builds the CSC
index, and trains with torch DDP over Gloo on 127.0.0.1: dgl.dataloading.NeighborSampler with
the input features and labels gathered in the sampler (prefetch_node_feats / prefetch_labels, as
DGL's examples/pytorch/graphsage/node_classification.py), dgl.dataloading.DataLoader with
use_ddp=True (each trainer gets its share of the training nodes) and num_workers=1 persistent
sampler process per trainer. Time split: wait (next mini-batch from the sampler process,
features included), feature (reading them out of the batch), forward, backward (incl. DDP's
all-reduce), update. Validation after the last epoch, outside the epoch time: same fanouts, batch
4096, each trainer half of the validation nodes.
"""
import argparse
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dgl_common import (  # noqa: E402
    add_job_args,
    Breakdown,
    build_model,
    epoch_record,
    format_epoch,
    load_npy_graph,
    now,
    timed_step,
    write_metrics,
)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--num-trainers", type=int, default=2)
    p.add_argument("--num-workers", type=int, default=1, help="sampler processes per trainer")
    add_job_args(p)
    p.add_argument("--master-port", type=int, default=38200)
    return p.parse_args()


def trainer(rank, a):
    import dgl

    torch.set_num_threads(a.threads)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{a.master_port}", rank=rank, world_size=a.num_trainers
    )
    world = a.num_trainers
    lead = rank == 0
    t0 = now()
    g = load_npy_graph(a.data)
    train_nid = torch.nonzero(g.ndata.pop("train_mask"), as_tuple=True)[0]
    val_nid = torch.nonzero(g.ndata.pop("val_mask"), as_tuple=True)[0]
    g.ndata.pop("test_mask")
    g.create_formats_()
    fanouts = [int(f) for f in a.fanouts.split(",")]
    assert len(fanouts) == a.num_layers, "--fanouts must have --num-layers entries"
    in_feats = g.ndata["feat"].shape[1]
    torch.manual_seed(a.seed)
    model = torch.nn.parallel.DistributedDataParallel(
        build_model(in_feats, a.hidden, a.num_classes, a.num_layers, a.dropout)
    )
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if lead:
        print(
            f"dgl_ddp_train: graph {g.num_nodes()} nodes, {g.num_edges()} edges, loaded in "
            f"{now() - t0:.1f} s; {world} trainer(s); sage {a.num_layers} layers, hidden {a.hidden}, "
            f"{in_feats} -> {a.num_classes} classes; fanouts {a.fanouts}, batch {a.batch_size}; "
            f"train/val {len(train_nid)}/{len(val_nid)}; {a.num_workers} sampler process(es) per "
            f"trainer; {torch.get_num_threads()} intra-op thread(s); dgl {dgl.__version__}, "
            f"torch {torch.__version__}",
            flush=True,
        )
        if a.metrics_file:
            open(a.metrics_file, "w").close()
    sampler = dgl.dataloading.NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = dgl.dataloading.DataLoader(
        g,
        train_nid,
        sampler,
        device="cpu",
        use_ddp=True,
        batch_size=a.batch_size,
        shuffle=True,
        drop_last=False,
        num_workers=a.num_workers,
        persistent_workers=a.num_workers > 0,
    )
    for epoch in range(a.epochs):
        model.train()
        t = Breakdown()
        loss_sum = correct = count = 0.0
        steps = 0
        start = now()
        it = iter(loader)
        while True:
            t0 = now()
            try:
                input_nodes, seeds, blocks = next(it)
            except StopIteration:
                break
            t1 = now()
            x = blocks[0].srcdata["feat"]
            y = blocks[-1].dstdata["label"].long()
            t2 = now()
            loss_value, n_correct = timed_step(model, opt, blocks, x, y, t, t0, t1, t2)
            n = len(seeds)
            loss_sum += loss_value * n
            correct += n_correct
            count += n
            steps += 1
        epoch_s = now() - start
        sums = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(sums)
        extra = {}
        if epoch == a.epochs - 1:
            ev0 = now()
            extra["val_acc"] = evaluate(model.module, g, val_nid, fanouts, a.eval_batch_size, rank, world)
            extra["eval_seconds"] = now() - ev0
        rec = epoch_record(epoch, epoch_s, t, steps, sums[0].item(), sums[1].item(), sums[2].item(), world, extra)
        if lead:
            line = format_epoch(rec)
            if "val_acc" in rec:
                line += f" | val acc {rec['val_acc']:.4f} (eval {rec['eval_seconds']:.1f} s)"
            print(line, flush=True)
            write_metrics(a.metrics_file, rec)
    del it, loader
    dist.barrier()
    dist.destroy_process_group()


def evaluate(model, g, nids, fanouts, batch_size, rank, world):
    import dgl

    model.eval()
    mine = nids[rank::world]
    sampler = dgl.dataloading.NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = dgl.dataloading.DataLoader(g, mine, sampler, batch_size=batch_size, shuffle=False, drop_last=False)
    correct = count = 0.0
    with torch.no_grad():
        for _, seeds, blocks in loader:
            pred = model(blocks, blocks[0].srcdata["feat"])
            correct += float((pred.argmax(1) == blocks[-1].dstdata["label"].long()).sum())
            count += len(seeds)
    model.train()
    sums = torch.tensor([correct, count], dtype=torch.float64)
    dist.all_reduce(sums)
    return (sums[0] / sums[1]).item() if sums[1] > 0 else 0.0


if __name__ == "__main__":
    args = parse()
    mp.spawn(trainer, args=(args,), nprocs=args.num_trainers, join=True)
