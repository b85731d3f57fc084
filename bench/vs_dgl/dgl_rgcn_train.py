"""DistDGL side of the typed (ogbn-mag-shaped) R-GCN benchmark: node classification of 'paper'.

The DistDGL counterpart of fanout's

  fanout-train --model rgcn --fanouts 25,15 --hidden 64 --lr 0.01 --batch-size 1024 \
      --embed-featureless 64 --sparse-lr 0.06 --dropout 0.5 --threads 1   (sparse Adam)

in the shape of DGL's examples/distributed/rgcn/node_classification.py (the
heterograph version: DistGraph with its node and edge types, DistNodeDataLoader over
{'paper': train_nid}, HeteroGraphConv layers, DistEmbedding for the featureless types, DGL's
distributed SparseAdam, DDP over Gloo). bench/vs_dgl/run.sh (setup H) partitions the graph and
starts the job on 2 loopback machines; see there for the environment.

One script for both roles, as with DGL's tools/launch.py: with DGL_ROLE=server it serves its
partition (dgl.distributed.initialize never returns); with DGL_ROLE=client it trains.

The model, fanout's `rgcn` (docs/training.md) on DGL's modules:
  - input: paper features (128 float32) through nn.Linear(128, hidden) (with bias, PyTorch's
    default initialisation); author, field_of_study and institution get learnable rows
    (dgl.distributed.DistEmbedding, uniform in [-1, 1]), trained by
    dgl.distributed.optim.SparseAdam at --sparse-lr;
  - each layer: out_v = W_self h_v + sum_r W_r mean_{u in sampled N_r(v)} h_u + bias — the DGL
    example's RelGraphConvLayer with self_loop and no basis decomposition (one weight per
    relation): HeteroGraphConv({rel: GraphConv(norm='right')}, aggregate='sum') with the
    relation's weight, one self-loop weight and one bias shared by the node types, xavier_uniform
    (gain relu) weights and zero bias as fanout's; a relation's mean is 0 for a node with none of
    its edges in the block;
  - ReLU and dropout between layers, none after the last; cross-entropy on the papers' logits;
    Adam at --lr on every dense parameter (the projection and the layers).
With --model rgat, fanout's `rgat` instead (DGL's MAG240M / MLPerf R-GAT shape): each layer
HeteroGraphConv({rel: GATConv(in, hidden / heads, heads, feat_drop, attn_drop, no bias)},
aggregate='sum') plus a projection of the destination itself (fanout's fc_self, with the bias),
the heads concatenated and ELU after every layer, the dropout (--dropout) on each layer's input
features and attention as fanout's layer applies it, then a linear classifier (hidden ->
classes) on the papers; every layer `hidden` wide, the same inputs as above.
Sampling: dgl.dataloading.NeighborSampler([25, 15]) on the DistGraph heterograph. The list is
input layer first, as fanout-train's --fanouts: the seeds get up to 15 in-neighbours, those up
to 25. An int fanout applies per edge type (DistGraph.sample_neighbors -> sample_etype_neighbors),
so that is up to 15 (then 25) of every relation, as fanout samples (checked on a batch: every
relation's in-degree in the output block is at most 15, in the input block at most 25). The
per-relation weights are one [R, in, out] parameter, so a batch without some relation leaves no
DDP parameter unused.

Time per epoch (evaluation excluded) is split as in bench/vs_dgl/dgl_dist_train.py: wait (next
mini-batch from the sampler process), feature (paper features and labels from the KVStore plus
the embedding rows of the featureless types), forward, backward (zero_grad + backward, which
includes DDP's all-reduce), update (Adam step, then SparseAdam's step: gradient all-to-all
between trainers and the rows pushed to the servers). Validation accuracy (--eval-every, default
after the last epoch only): the training fanouts on every validation paper, batch 4096, as
fanout-train's default --eval-fanouts.

Partitioning: dgl_partition_mag.py stores paper/{feat,label,train_mask} only; the
validation split is needed here, so `--partition` runs that script's main() with
dgl.distributed.partition_graph wrapped to add paper/val_mask and paper/test_mask first
(the same METIS call otherwise: the masks take no part in the balancing).

  python dgl_rgcn_train.py --partition DATA_DIR OUT_DIR NUM_PARTS
  (server / trainer: started by run.sh --setups H) python dgl_rgcn_train.py --graph-name mag \
      --ip-config ip_config.txt --part-config OUT_DIR/mag.json [--epochs 3 ...]
"""
import argparse
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dgl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Importing dgl_dist_train patches DGL's machine-ID detection for loopback machines
# (BENCH_DGL_MACHINE_ID; see there). It is at import time, so DGL's sampler processes, which
# re-import this file, are patched as well.
import dgl_dist_train  # noqa: E402,F401
from dgl_common import (  # noqa: E402
    Breakdown,
    add_job_args,
    dist_initialize,
    epoch_record,
    finish_step,
    format_epoch,
    now,
    write_metrics,
)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--partition", nargs=3, metavar=("DATA_DIR", "OUT_DIR", "NUM_PARTS"),
                   help="partition the typed .npy dataset (with the validation and test masks) and exit")
    p.add_argument("--graph-name", default="mag")
    p.add_argument("--ip-config")
    p.add_argument("--part-config")
    p.add_argument("--graphbolt", action="store_true",
                   help="DistDGL on GraphBolt partitions: dgl.distributed.initialize(use_graphbolt=True)")
    p.add_argument("--target-ntype", default="paper")
    p.add_argument("--embed-featureless", type=int, default=64,
                   help="width of the featureless types' learnable rows and of the feature projection")
    p.add_argument("--sparse-lr", type=float, default=0.06)
    p.add_argument("--model", choices=["rgcn", "rgat"], default="rgcn")
    p.add_argument("--heads", type=int, default=4, help="rgat: attention heads (hidden / heads each)")
    p.add_argument("--eval-every", type=int, default=0, help="validate every N epochs (0: after the last only)")
    p.add_argument("--log-every", type=int, default=0)
    # The job's common flags (dgl_common.add_job_args), with this job's values (fanouts per relation).
    add_job_args(p)
    p.set_defaults(num_layers=2, hidden=64, fanouts="25,15", num_classes=349, lr=0.01, epochs=3)
    a = p.parse_args()
    if a.num_layers != len(a.fanouts.split(",")):  # (before any process joins the job)
        p.error(f"--num-layers {a.num_layers} but --fanouts {a.fanouts} has {len(a.fanouts.split(','))} layers")
    return a


# ---- partitioning ------------------------------------------------------------------------------
def partition(data, out, parts):
    """dgl_partition_mag.py's partitioning, with paper/val_mask and paper/test_mask stored too."""
    import dgl_partition_mag

    partition_graph = dgl.distributed.partition_graph

    def with_split(g, *args, **kwargs):
        for name, file in (("val_mask", "valid_idx"), ("test_mask", "test_idx")):
            mask = torch.zeros(g.num_nodes("paper"), dtype=torch.bool)
            mask[torch.from_numpy(np.load(os.path.join(data, "split", "paper", file + ".npy")).astype(np.int64))] = True
            g.nodes["paper"].data[name] = mask
        return partition_graph(g, *args, **kwargs)

    dgl.distributed.partition_graph = with_split
    sys.argv = [dgl_partition_mag.__file__, data, out, str(parts)]
    dgl_partition_mag.main()


# ---- model -------------------------------------------------------------------------------------
def init_emb(shape, dtype):
    """The learnable rows' initialisation, as DGL's example and fanout: uniform in [-1, 1]."""
    arr = torch.zeros(shape, dtype=dtype)
    nn.init.uniform_(arr, -1.0, 1.0)
    return arr


class RelGraphConvLayer(nn.Module):
    """DGL's examples/distributed/rgcn RelGraphConvLayer with self_loop=True and one weight per
    relation: out_v = h_v W_self + sum_r mean_r(h_u) W_r + bias (ReLU and dropout applied by the
    caller)."""

    def __init__(self, in_feat, out_feat, rel_names):
        super().__init__()
        import dgl.nn.pytorch as dglnn

        self.rel_names = list(rel_names)
        # norm='right': the sum over the relation's sampled in-edges divided by their number (the
        # in-degree clamped to 1, so 0 where there are none); the weight comes from mod_kwargs.
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False,
                                  allow_zero_in_degree=True) for rel in self.rel_names},
            aggregate="sum",
        )
        gain = nn.init.calculate_gain("relu")
        self.weight = nn.Parameter(torch.empty(len(self.rel_names), in_feat, out_feat))
        for r in range(len(self.rel_names)):
            nn.init.xavier_uniform_(self.weight.data[r], gain=gain)
        self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
        nn.init.xavier_uniform_(self.loop_weight, gain=gain)
        self.h_bias = nn.Parameter(torch.zeros(out_feat))

    def forward(self, block, inputs):
        wdict = {rel: {"weight": self.weight[i]} for i, rel in enumerate(self.rel_names)}
        hs = self.conv(block, inputs, mod_kwargs=wdict)
        out = {}
        for ntype, h in hs.items():
            dst = inputs[ntype][: block.num_dst_nodes(ntype)]
            out[ntype] = h + dst @ self.loop_weight + self.h_bias
        return out


class RGCN(nn.Module):
    """The dense part of the model: the feature projections of the featured types and the
    R-GCN layers. forward() takes the input rows per type: raw features for the types in
    `feat_dims`, the learnable rows (already looked up) for the others."""

    def __init__(self, feat_dims, embed_dim, hidden, n_classes, rel_names, n_layers, dropout):
        super().__init__()
        self.projs = nn.ModuleDict({nt: nn.Linear(d, embed_dim) for nt, d in feat_dims.items()})
        dims = [embed_dim] + [hidden] * (n_layers - 1) + [n_classes]
        self.layers = nn.ModuleList(RelGraphConvLayer(dims[i], dims[i + 1], rel_names) for i in range(n_layers))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = {nt: self.projs[nt](v) if nt in self.projs else v for nt, v in x.items()}
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = {nt: self.dropout(F.relu(v)) for nt, v in h.items()}
        return h


class RelGATLayer(nn.Module):
    """fanout's RelGatConv on DGL's modules: out_v = fc_self x_v + sum_r GAT_r(x)_v + bias with
    x = dropout(h), a GATConv per relation (softmax over v's in-edges of that relation), heads
    concatenated; [num_dst, heads * out] per type."""

    def __init__(self, in_feat, out_feat, heads, rel_names, dropout):
        super().__init__()
        import dgl.nn.pytorch as dglnn

        self.drop = nn.Dropout(dropout)
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GATConv(in_feat, out_feat // heads, heads, feat_drop=0.0, attn_drop=dropout,
                                bias=False, allow_zero_in_degree=True) for rel in rel_names},
            aggregate="sum",
        )
        self.fc_self = nn.Linear(in_feat, out_feat)

    def forward(self, block, inputs):
        x = {nt: self.drop(v) for nt, v in inputs.items()}
        hs = self.conv(block, x)
        out = {}
        for ntype, h in hs.items():
            dst = x[ntype][: block.num_dst_nodes(ntype)]
            out[ntype] = h.flatten(1) + self.fc_self(dst)
        return out


class RGAT(nn.Module):
    """The dense part of fanout's `rgat`: the feature projections, R-GAT layers of `hidden` with
    ELU after each, a linear classifier on the target type's outputs."""

    def __init__(self, feat_dims, embed_dim, hidden, n_classes, rel_names, n_layers, dropout, heads, target):
        super().__init__()
        self.projs = nn.ModuleDict({nt: nn.Linear(d, embed_dim) for nt, d in feat_dims.items()})
        dims = [embed_dim] + [hidden] * n_layers
        self.layers = nn.ModuleList(RelGATLayer(dims[i], dims[i + 1], heads, rel_names, dropout)
                                    for i in range(n_layers))
        self.classifier = nn.Linear(hidden, n_classes)
        self.target = target

    def forward(self, blocks, x):
        h = {nt: self.projs[nt](v) if nt in self.projs else v for nt, v in x.items()}
        for layer, block in zip(self.layers, blocks):
            h = {nt: F.elu(v) for nt, v in layer(block, h).items()}
        return {self.target: self.classifier(h[self.target])}


class InputRows:
    """Each batch's input rows by node type: the featured types' features from the KVStore, the
    featureless types' DistEmbedding rows (recorded for SparseAdam when grad is enabled)."""

    def __init__(self, g, embed_dim):
        self.g = g
        self.feats = {nt: g.nodes[nt].data["feat"] for nt in g.ntypes if "feat" in g.nodes[nt].data}
        self.embeds = {
            nt: dgl.distributed.DistEmbedding(g.num_nodes(nt), embed_dim, "embed_" + nt, init_emb,
                                              g.get_node_partition_policy(nt))
            for nt in g.ntypes if nt not in self.feats
        }
        self.embed_dim = embed_dim

    def __call__(self, input_nodes):
        x = {}
        for nt, ids in input_nodes.items():
            if nt in self.feats:
                x[nt] = self.feats[nt][ids]
            else:
                x[nt] = self.embeds[nt](ids)
        return x


# ---- training ----------------------------------------------------------------------------------
def main():
    a = parse()
    if a.partition:
        partition(a.partition[0], a.partition[1], int(a.partition[2]))
        return
    torch.set_num_threads(a.threads)
    dist_initialize(dgl.distributed, a)  # a DGL server never returns from here
    dist.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(a.graph_name, part_config=a.part_config)
    rank, world = dist.get_rank(), dist.get_world_size()
    lead = rank == 0
    pb = g.get_partition_book()
    T = a.target_ntype
    train_nid = dgl.distributed.node_split(g.nodes[T].data["train_mask"], pb, ntype=T, force_even=True)
    val_nid = dgl.distributed.node_split(g.nodes[T].data["val_mask"], pb, ntype=T, force_even=True)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    rel_names = g.etypes
    assert len(set(rel_names)) == len(rel_names), "relation names must be unique (HeteroGraphConv keys)"

    torch.manual_seed(a.seed + rank)  # the learnable rows: each machine initialises its own part
    rows = InputRows(g, a.embed_featureless)
    torch.manual_seed(a.seed)  # the dense model: the same on every rank (DDP broadcasts rank 0's)
    feat_dims = {nt: f.shape[1] for nt, f in rows.feats.items()}
    if a.model == "rgat":
        model = RGAT(feat_dims, a.embed_featureless, a.hidden, a.num_classes, rel_names, len(fanouts), a.dropout,
                     a.heads, T)
    else:
        model = RGCN(feat_dims, a.embed_featureless, a.hidden, a.num_classes, rel_names, len(fanouts), a.dropout)
    # R-GAT has a GATConv per relation, and a batch's last block uses only the relations into the
    # target type: DDP must be told that some parameters go without gradients (as DGL's R-GAT
    # examples do). R-GCN's one [R, in, out] weight always has one.
    model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=a.model == "rgat")
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    sparse_opt = dgl.distributed.optim.SparseAdam(list(rows.embeds.values()), lr=a.sparse_lr)
    n_params = sum(p.numel() for p in model.parameters())
    if lead:
        print(
            f"dgl_rgcn_train: graph '{a.graph_name}' ({g.num_nodes()} nodes, {g.num_edges()} edges, "
            f"{pb.num_partitions()} partitions; node types {g.ntypes}; {len(rel_names)} relations), "
            f"{world} trainer(s); {a.model} {len(fanouts)} layers, hidden {a.hidden}"
            f"{f', {a.heads} heads' if a.model == 'rgat' else ''}, {a.num_classes} classes, "
            f"{n_params} dense parameters; inputs: {feat_dims} projected to {a.embed_featureless}, "
            f"learnable {a.embed_featureless}-wide rows for {sorted(rows.embeds)} (SparseAdam lr {a.sparse_lr}); "
            f"fanouts {a.fanouts} per relation, batch {a.batch_size}; train/val per trainer "
            f"{len(train_nid)}/{len(val_nid)}; {os.environ.get('DGL_NUM_SAMPLER', '0')} sampler process(es) "
            f"per trainer; {torch.get_num_threads()} intra-op thread(s); dgl {dgl.__version__}, "
            f"torch {torch.__version__}",
            flush=True,
        )
    print(f"dgl_rgcn_train: rank {rank} on machine {pb.partid} (DGL rank {g.rank()})", flush=True)
    if a.metrics_file and lead:
        open(a.metrics_file, "w").close()

    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DistNodeDataLoader(g, {T: train_nid}, sampler, batch_size=a.batch_size,
                                                shuffle=True, drop_last=False)
    label = g.nodes[T].data["label"]
    for epoch in range(a.epochs):
        model.train()
        t = Breakdown()
        loss_sum = correct = count = 0.0
        steps = inputs = 0
        start = now()
        it = iter(loader)
        with model.join():
            while True:
                t0 = now()
                try:
                    input_nodes, seeds, blocks = next(it)
                except StopIteration:
                    break
                t1 = now()
                seeds = seeds[T]
                x = rows(input_nodes)
                y = label[seeds].long()
                t2 = now()
                pred = model(blocks, x)[T]
                loss = F.cross_entropy(pred, y)
                finish_step(loss, [opt, sparse_opt], t, t0, t1, t2)
                n = len(seeds)
                loss_sum += loss.item() * n
                correct += float((pred.argmax(1) == y).sum())
                count += n
                inputs += sum(len(v) for v in input_nodes.values())
                steps += 1
                if lead and a.log_every and steps % a.log_every == 0:
                    print(f"epoch {epoch} step {steps} | loss {loss.item():.4f} | {now() - start:.1f} s", flush=True)
        epoch_s = now() - start
        sums = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(sums)
        extra = {"input_nodes_per_step": inputs / max(1, steps)}
        if epoch == a.epochs - 1 or (a.eval_every and (epoch + 1) % a.eval_every == 0):
            ev0 = now()
            extra["val_acc"] = evaluate(model.module, rows, g, T, val_nid, fanouts, a.eval_batch_size)
            extra["eval_seconds"] = now() - ev0
        rec = epoch_record(epoch, epoch_s, t, steps, sums[0].item(), sums[1].item(), sums[2].item(), world, extra)
        if lead:
            line = format_epoch(rec) + f" | {rec['input_nodes_per_step']:.0f} input nodes/step"
            if "val_acc" in rec:
                line += f" | val acc {rec['val_acc']:.4f} (eval {rec['eval_seconds']:.1f} s)"
            print(line, flush=True)
            write_metrics(a.metrics_file, rec)
    dist.barrier()


def evaluate(model, rows, g, T, nids, fanouts, batch_size):
    model.eval()
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DistNodeDataLoader(g, {T: nids}, sampler, batch_size=batch_size,
                                                shuffle=False, drop_last=False)
    correct = count = 0.0
    with torch.no_grad():
        for input_nodes, seeds, blocks in loader:
            pred = model(blocks, rows(input_nodes))[T]
            correct += float((pred.argmax(1) == g.nodes[T].data["label"][seeds[T]].long()).sum())
            count += len(seeds[T])
    model.train()
    sums = torch.tensor([correct, count], dtype=torch.float64)
    dist.all_reduce(sums)
    return (sums[0] / sums[1]).item() if sums[1] > 0 else 0.0


if __name__ == "__main__":
    main()
