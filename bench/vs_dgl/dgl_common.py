"""Shared pieces of the DGL side of bench/vs_dgl: the model, the dataset loader, metrics output.

The model is the one of DGL's examples/distributed/graphsage/node_classification.py (DistSAGE):
SAGEConv('mean') layers, ReLU and dropout between layers, none after the last.
"""
import json
import os
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# DGL 2.1's DataLoader warns on every CPU run that its optional CPU-affinity mode is off.
warnings.filterwarnings("ignore", message=".*CPU affinity opt is not enabled.*")


def build_model(in_feats, hidden, n_classes, n_layers, dropout):
    import dgl.nn.pytorch as dglnn

    class SAGE(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList()
            if n_layers == 1:
                self.layers.append(dglnn.SAGEConv(in_feats, n_classes, "mean"))
            else:
                self.layers.append(dglnn.SAGEConv(in_feats, hidden, "mean"))
                for _ in range(1, n_layers - 1):
                    self.layers.append(dglnn.SAGEConv(hidden, hidden, "mean"))
                self.layers.append(dglnn.SAGEConv(hidden, n_classes, "mean"))
            self.dropout = nn.Dropout(dropout)

        def forward(self, blocks, x):
            h = x
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                h = layer(block, h)
                if i != len(self.layers) - 1:
                    h = F.relu(h)
                    h = self.dropout(h)
            return h

    return SAGE()


def load_npy_graph(data_dir, with_data=True):
    """The fanout-generate plain layout as a DGL graph with reverse edges, as
    `fanout-partition --add-reverse-edges` stores it: (u,v) and (v,u) for every input row, a self
    loop once, repeated pairs kept. ndata: feat (float32), label (int64), train/val/test_mask."""
    import dgl

    edges = np.load(os.path.join(data_dir, "edges.npy"), mmap_mode="r")
    src = torch.from_numpy(np.ascontiguousarray(edges[:, 0]).astype(np.int64))
    dst = torch.from_numpy(np.ascontiguousarray(edges[:, 1]).astype(np.int64))
    del edges
    feat = np.load(os.path.join(data_dir, "node_feat.npy"), mmap_mode="r")
    n = feat.shape[0]
    not_loop = src != dst
    g = dgl.graph(
        (torch.cat([src, dst[not_loop]]), torch.cat([dst, src[not_loop]])), num_nodes=n
    )
    del src, dst, not_loop
    if with_data:
        g.ndata["feat"] = torch.from_numpy(np.array(feat, dtype=np.float32))
        g.ndata["label"] = torch.from_numpy(
            np.load(os.path.join(data_dir, "node_label.npy")).astype(np.int64)
        )
        for name, file in (("train_mask", "train_idx"), ("val_mask", "valid_idx"), ("test_mask", "test_idx")):
            mask = torch.zeros(n, dtype=torch.bool)
            mask[torch.from_numpy(np.load(os.path.join(data_dir, file + ".npy")).astype(np.int64))] = True
            g.ndata[name] = mask
    return g


class Breakdown:
    """Seconds per phase of an epoch, summed over steps."""

    KEYS = ("wait", "feature", "forward", "backward", "update")

    def __init__(self):
        for k in self.KEYS:
            setattr(self, k, 0.0)


def add_dist_args(p):
    """Where a DistDGL trainer finds its job: graph name, ip_config.txt and partition config, and
    whether the partitions are served in GraphBolt's form."""
    p.add_argument("--graph-name", required=True)
    p.add_argument("--ip-config", required=True)
    p.add_argument("--part-config", required=True)
    p.add_argument("--graphbolt", action="store_true",
                   help="DistDGL on GraphBolt partitions: dgl.distributed.initialize(use_graphbolt=True)")


def dist_initialize(ddist, a):
    """ddist.initialize for add_dist_args' flags (a DGL server never returns from it). With
    --graphbolt the servers load partK's part_graph_graphbolt (fused_csc_sampling_graph.pt, from
    dgl_partition_to_graphbolt) and sample it with GraphBolt; clients ask server 0 whether it does
    (DistGraph's QueryIfUseGraphBolt)."""
    if a.graphbolt:
        ddist.initialize(a.ip_config, use_graphbolt=True)
    else:
        ddist.initialize(a.ip_config)


def add_job_args(p):
    """The flags of the training job itself, the same for every DGL trainer script."""
    p.add_argument("--num-layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="15,10,5", help="input layer first, as fanout-train")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--eval-batch-size", type=int, default=4096)
    p.add_argument("--num-classes", type=int, default=47)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metrics-file", default="")


def now():
    return time.perf_counter()


def timed_step(model, opt, blocks, x, y, t, t0, t1, t2):
    """Forward, loss, backward and update of one batch. t0..t2 are when the step asked for its
    batch, got it, and had its features; each phase's time is added to the Times `t`.
    Returns (loss, number of correct predictions)."""
    pred = model(blocks, x)
    loss = F.cross_entropy(pred, y)
    finish_step(loss, [opt], t, t0, t1, t2)
    return loss.item(), float((pred.argmax(1) == y).sum())


def finish_step(loss, opts, t, t0, t1, t2):
    """Backward and update (every optimiser in `opts`) of a step whose forward and loss end now;
    adds its phases to the Breakdown `t` (t0..t2: when it asked for its batch, got it, and had its
    features)."""
    t3 = now()
    for o in opts:
        o.zero_grad()
    loss.backward()
    t4 = now()
    for o in opts:
        o.step()
    t5 = now()
    t.wait += t1 - t0
    t.feature += t2 - t1
    t.forward += t3 - t2
    t.backward += t4 - t3
    t.update += t5 - t4


def write_metrics(path, record):
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def epoch_record(epoch, epoch_s, t, steps, loss_sum, correct, count, world_size, extra=None):
    rec = {
        "event": "epoch",
        "epoch": epoch,
        "epoch_seconds": epoch_s,
        "wait_seconds": t.wait,
        "feature_seconds": t.feature,
        "forward_seconds": t.forward,
        "backward_seconds": t.backward,
        "update_seconds": t.update,
        "steps": steps,
        "loss": loss_sum / max(1.0, count),
        "train_acc": correct / max(1.0, count),
        "seeds_per_second": count / max(1e-9, epoch_s),
        "world_size": world_size,
    }
    if extra:
        rec.update(extra)
    return rec


def format_epoch(rec):
    return (
        "epoch {epoch} | loss {loss:.4f} | train acc {train_acc:.4f} | {epoch_seconds:.2f} s "
        "(wait {wait_seconds:.2f}, feature {feature_seconds:.2f}, forward {forward_seconds:.2f}, "
        "backward+all-reduce {backward_seconds:.2f}, update {update_seconds:.2f}) | "
        "{seeds_per_second:.0f} seeds/s".format(**rec)
    )
