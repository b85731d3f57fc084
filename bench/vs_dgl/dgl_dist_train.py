"""DistDGL side of setups A and C: GraphSAGE on a DGL-partitioned graph.

One script for both roles, as with DGL's tools/launch.py: started with DGL_ROLE=server it serves
its partition (dgl.distributed.initialize never returns); with DGL_ROLE=client it trains.
run.sh sets the environment tools/launch.py would set (DGL_*, OMP_NUM_THREADS, and
torch.distributed's RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT), and runs each loopback
"machine" in its own mount namespace with a private /dev/shm.

The training loop follows DGL's examples/distributed/graphsage/node_classification.py, with
the time split into: wait (next mini-batch from the sampler process), feature (pull of input
features and labels from the KVStore, local shared memory + remote servers), forward (model +
loss), backward (zero_grad + backward, which includes DDP's gradient all-reduce), update
(optimizer step). Validation (after the last epoch) is outside the epoch time: the same fanouts
as training on the validation nodes (as fanout-train's default --eval-fanouts), batch 4096.

With --graphbolt (setup G, run.sh --graphbolt) both roles call initialize(use_graphbolt=True): the servers load the
GraphBolt form of their partition (dgl_partition.py --to-graphbolt) and sample it with GraphBolt.

With --data-plane fanout the same script is setup P's fanout side: started by fanout-launch, the
same loop and model (dgl.nn.SAGEConv on DGL blocks) take their graph, split and batches from
fanout.distributed instead of dgl.distributed; only the module the names come from changes.
"""
import argparse
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import dgl.distributed.rpc_client as _rpc_client  # noqa: E402


# --- Loopback machine ID -------------------------------------------------------------------
# DGL finds a client's machine ID by matching the IPv4 addresses of the local network interfaces
# against ip_config (rpc_client.get_local_machine_id). On one host, 127.0.0.1 and 127.0.0.2 are
# both "local" but only 127.0.0.1 is an interface address (lo), so every client, on either
# loopback machine, would say it is machine 0, and machine 1's trainer would sample partition 0
# as if it were local. BENCH_DGL_MACHINE_ID overrides the detection. This runs at import time so
# that the sampler processes DGL spawns (multiprocessing 'spawn' re-imports this file as
# __mp_main__) are patched too. Servers take their machine ID from DGL_SERVER_ID and need nothing.
def _loopback_machine_id():
    mid = os.environ.get("BENCH_DGL_MACHINE_ID")
    if mid is None:
        return
    orig = _rpc_client.get_local_machine_id

    def get_local_machine_id(server_namebook):
        detected = orig(server_namebook)
        if os.environ.get("BENCH_DGL_VERBOSE"):
            print(f"[pid {os.getpid()}] DGL detected machine {detected}; using {mid}", flush=True)
        return int(mid)

    _rpc_client.get_local_machine_id = get_local_machine_id


_loopback_machine_id()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dgl_common import (  # noqa: E402
    add_dist_args,
    add_job_args,
    Breakdown,
    dist_initialize,
    build_model,
    epoch_record,
    format_epoch,
    now,
    timed_step,
    write_metrics,
)


def parse():
    p = argparse.ArgumentParser()
    add_dist_args(p)
    add_job_args(p)
    p.add_argument("--log-every", type=int, default=0)
    p.add_argument("--data-plane", choices=["dgl", "fanout"], default="dgl",
                   help="where DistGraph, node_split, NeighborSampler and DistNodeDataLoader come from")
    return p.parse_args()


# The data plane's names: DGL's, or fanout's (the same names; fanout's loader yields DGL blocks
# when DGL is imported).
ddist = dgl.distributed
NeighborSampler = dgl.dataloading.NeighborSampler
DistNodeDataLoader = dgl.dataloading.DistNodeDataLoader


def use_fanout():
    global ddist, NeighborSampler, DistNodeDataLoader
    import fanout.distributed

    ddist = fanout.distributed
    NeighborSampler = fanout.distributed.NeighborSampler
    DistNodeDataLoader = fanout.distributed.DistNodeDataLoader


def main():
    a = parse()
    if a.data_plane == "fanout":
        use_fanout()
    torch.set_num_threads(a.threads)
    dist_initialize(ddist, a)  # a DGL server never returns from here
    dist.init_process_group(backend="gloo")
    g = ddist.DistGraph(a.graph_name, part_config=a.part_config)
    rank, world = dist.get_rank(), dist.get_world_size()
    lead = rank == 0
    pb = g.get_partition_book()
    train_nid = ddist.node_split(g.ndata["train_mask"], pb, force_even=True)
    val_nid = ddist.node_split(g.ndata["val_mask"], pb, force_even=True)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    assert len(fanouts) == a.num_layers, "--fanouts must have --num-layers entries"
    in_feats = g.ndata["feat"].shape[1]
    n_classes = a.num_classes
    torch.manual_seed(a.seed)
    model = build_model(in_feats, a.hidden, n_classes, a.num_layers, a.dropout)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if lead:
        print(
            f"dgl_dist_train: graph '{a.graph_name}' ({g.num_nodes()} nodes, {pb.num_partitions()} "
            f"partitions), {world} trainer(s); sage {a.num_layers} layers, hidden {a.hidden}, "
            f"{in_feats} -> {n_classes} classes; fanouts {a.fanouts}, batch {a.batch_size}; "
            f"train/val per trainer {len(train_nid)}/{len(val_nid)}; "
            f"{os.environ.get('DGL_NUM_SAMPLER', os.environ.get('FANOUT_NUM_SAMPLERS', '0'))} sampler process(es) "
            f"per trainer; data plane {a.data_plane}; "
            f"{torch.get_num_threads()} intra-op thread(s); dgl {dgl.__version__}, torch {torch.__version__}",
            flush=True,
        )
    print(f"dgl_dist_train: rank {rank} on machine {pb.partid} (DGL rank {g.rank()})", flush=True)
    if a.metrics_file and lead:
        open(a.metrics_file, "w").close()

    sampler = NeighborSampler(fanouts)
    loader = DistNodeDataLoader(g, train_nid, sampler, batch_size=a.batch_size, shuffle=True, drop_last=False)
    feat, label = g.ndata["feat"], g.ndata["label"]
    for epoch in range(a.epochs):
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
                    input_nodes, seeds, blocks = next(it)
                except StopIteration:
                    break
                t1 = now()
                x = feat[input_nodes]
                y = label[seeds].long()
                t2 = now()
                loss_value, n_correct = timed_step(model, opt, blocks, x, y, t, t0, t1, t2)
                n = len(seeds)
                loss_sum += loss_value * n
                correct += n_correct
                count += n
                steps += 1
                if lead and a.log_every and steps % a.log_every == 0:
                    print(f"epoch {epoch} step {steps} | loss {loss_value:.4f}", flush=True)
        epoch_s = now() - start
        sums = torch.tensor([loss_sum, correct, count], dtype=torch.float64)
        dist.all_reduce(sums)
        extra = {}
        if epoch == a.epochs - 1:
            ev0 = now()
            extra["val_acc"] = evaluate(model.module, g, val_nid, fanouts, a.eval_batch_size)
            extra["eval_seconds"] = now() - ev0
        rec = epoch_record(epoch, epoch_s, t, steps, sums[0].item(), sums[1].item(), sums[2].item(), world, extra)
        if lead:
            line = format_epoch(rec)
            if "val_acc" in rec:
                line += f" | val acc {rec['val_acc']:.4f} (eval {rec['eval_seconds']:.1f} s)"
            print(line, flush=True)
            write_metrics(a.metrics_file, rec)
    dist.barrier()


def evaluate(model, g, nids, fanouts, batch_size):
    model.eval()
    sampler = NeighborSampler(fanouts)
    loader = DistNodeDataLoader(g, nids, sampler, batch_size=batch_size, shuffle=False, drop_last=False)
    correct = count = 0.0
    with torch.no_grad():
        for input_nodes, seeds, blocks in loader:
            pred = model(blocks, g.ndata["feat"][input_nodes])
            correct += float((pred.argmax(1) == g.ndata["label"][seeds].long()).sum())
            count += len(seeds)
    model.train()
    sums = torch.tensor([correct, count], dtype=torch.float64)
    dist.all_reduce(sums)
    return (sums[0] / sums[1]).item() if sums[1] > 0 else 0.0


if __name__ == "__main__":
    main()
