"""One training step of DGL's SAGEConv model (setup P's: 3 x SAGEConv('mean'), hidden 256,
fanouts 15,10,5, batch 1024, 100 features, 47 classes, one thread) on a random block of that
shape, with glibc's default allocator and with fanout.distributed's setting (freed buffers of up
to 1 GiB kept for reuse), side by side in one run: each variant in its own process, alternating.

    DGLBACKEND=pytorch VENV/bin/python bench/vs_dgl/sage_step_alloc.py [--rounds 2] [--steps 8]

docs/benchmarks.md (setup P) cites its figures. Needs torch and dgl (the benchmark's venv).
"""
import argparse
import ctypes
import subprocess
import sys
import time


def step_ms(keep: bool, steps: int) -> float:
    if keep:  # what fanout.distributed.initialize() does (base::KeepLargeAllocations)
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, ctypes.c_int(1 << 30))  # M_MMAP_THRESHOLD
        libc.mallopt(-1, ctypes.c_int(1 << 30))  # M_TRIM_THRESHOLD
    import dgl
    import dgl.nn as dglnn
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    blocks, dst = [], 1024
    for fanout in (5, 10, 15):  # from the seeds outwards
        raw = rng.integers(0, 500_000, size=dst * fanout)
        _, inv = np.unique(np.concatenate([np.arange(dst), raw]), return_inverse=True)
        src_ids = torch.from_numpy(inv[dst:].astype(np.int64))
        dst_ids = torch.arange(dst).repeat_interleave(fanout)
        nsrc = int(inv.max()) + 1
        blocks.insert(0, dgl.create_block((src_ids, dst_ids), num_src_nodes=nsrc, num_dst_nodes=dst))
        dst = nsrc
    layers = torch.nn.ModuleList([dglnn.SAGEConv(100, 256, "mean"), dglnn.SAGEConv(256, 256, "mean"),
                                  dglnn.SAGEConv(256, 47, "mean")])
    opt = torch.optim.Adam(layers.parameters(), lr=0.003)
    x = torch.randn(blocks[0].num_src_nodes(), 100)
    y = torch.randint(0, 47, (1024,))
    total = 0.0
    for s in range(steps + 1):
        t0 = time.perf_counter()
        h = x
        for i, (layer, block) in enumerate(zip(layers, blocks)):
            h = layer(block, h)
            if i < 2:
                h = F.dropout(F.relu(h), 0.5, training=True)
        loss = F.cross_entropy(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if s:  # the first step warms up
            total += time.perf_counter() - t0
    return total / steps * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--child", choices=["default", "keep"])
    a = ap.parse_args()
    if a.child:
        print(f"{step_ms(a.child == 'keep', a.steps):.1f}")
        return
    res = {"default": [], "keep": []}
    for r in range(a.rounds):
        for variant in ("default", "keep"):
            out = subprocess.run([sys.executable, __file__, "--child", variant, "--steps", str(a.steps)],
                                 check=True, capture_output=True, text=True).stdout.split()[-1]
            res[variant].append(float(out))
            print(f"round {r + 1}: {variant:8s} {float(out):7.1f} ms/step", flush=True)
    d, k = min(res["default"]), min(res["keep"])
    print(f"best of {a.rounds}: glibc default {d:.1f} ms/step, freed buffers kept {k:.1f} ms/step, ratio {k / d:.2f}x")


if __name__ == "__main__":
    main()
