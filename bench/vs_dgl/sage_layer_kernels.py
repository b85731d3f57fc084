"""One mean-aggregating SAGE layer (100 -> 256) on a random bipartite block of a step's input
layer shape, forward and backward, one thread: PyG's SAGEConv on an edge_index (its gather and
scatter path, what PyG 2.8 runs on CPU without pyg-lib or torch-sparse), on a torch.sparse CSR
adjacency (its fused spmm path: PyTorch's CSR kernel) and on the same adjacency as
fanout.kernels.FusedCsr (fanout's kernel, what fanout.pyg's adjs=True batches carry), and DGL's
SAGEConv('mean') on a block, whichever of PyG, fanout and DGL the interpreter has; then ReLU +
dropout (p 0.5) over the layer's [destinations, 256] output, PyTorch's F.relu + F.dropout against
fanout.kernels.relu_dropout (docs/benchmarks.md, setup Y).

    OMP_NUM_THREADS=1 PYG_VENV/bin/python bench/vs_dgl/sage_layer_kernels.py
    OMP_NUM_THREADS=1 DGLBACKEND=pytorch DGL_VENV/bin/python bench/vs_dgl/sage_layer_kernels.py

Prints the median of --reps runs of each (after one warm-up) in ms.
"""
import argparse
import statistics
import time

import torch


def timed(f, reps):
    f()
    fwd, bwd = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        t1 = time.perf_counter()
        out.sum().backward()
        fwd.append(t1 - t0)
        bwd.append(time.perf_counter() - t1)
    return statistics.median(fwd) * 1e3, statistics.median(bwd) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=int, default=300_000)
    ap.add_argument("--dst", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=3_000_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(0, a.src, (a.edges,), generator=g)
    dst = torch.sort(torch.randint(0, a.dst, (a.edges,), generator=g)).values
    x = torch.randn(a.src, 100, generator=g, requires_grad=True)
    print(f"torch {torch.__version__}, {a.edges} edges from {a.src} sources to {a.dst} destinations, 100 -> 256")
    try:
        from torch_geometric.nn import SAGEConv
        conv = SAGEConv((100, 100), 256)
        ei = torch.stack([src, dst])
        f, b = timed(lambda: conv((x, x[:a.dst]), ei, size=(a.src, a.dst)), a.reps)
        print(f"PyG SAGEConv, edge_index:     forward {f:8.1f} ms, backward {b:8.1f} ms")
        indptr = torch.zeros(a.dst + 1, dtype=torch.int64)
        indptr[1:] = torch.cumsum(torch.bincount(dst, minlength=a.dst), 0)
        adj = torch.sparse_csr_tensor(indptr, src, torch.ones(a.edges), size=(a.dst, a.src))
        f, b = timed(lambda: conv((x, x[:a.dst]), adj), a.reps)
        print(f"PyG SAGEConv, sparse CSR adj: forward {f:8.1f} ms, backward {b:8.1f} ms")
        try:
            from fanout.kernels import fused_csr
            fused = fused_csr(indptr, src, a.dst, a.src)
            f, b = timed(lambda: conv((x, x[:a.dst]), fused), a.reps)
            print(f"PyG SAGEConv, fanout FusedCsr: forward {f:7.1f} ms, backward {b:8.1f} ms")
        except ImportError:
            pass
    except ImportError:
        pass
    try:
        import dgl
        import dgl.nn as dglnn
        block = dgl.create_block((src, dst), num_src_nodes=a.src, num_dst_nodes=a.dst)
        conv = dglnn.SAGEConv(100, 256, "mean")
        f, b = timed(lambda: conv(block, (x, x[:a.dst])), a.reps)
        print(f"DGL SAGEConv('mean'), block:  forward {f:8.1f} ms, backward {b:8.1f} ms")
    except ImportError:
        pass
    h = torch.randn(a.dst, 256, generator=g, requires_grad=True)
    f, b = timed(lambda: torch.nn.functional.dropout(torch.relu(h), 0.5), a.reps)
    print(f"ReLU + dropout, PyTorch:       forward {f:8.1f} ms, backward {b:8.1f} ms")
    try:
        from fanout.kernels import relu_dropout
        f, b = timed(lambda: relu_dropout(h, 0.5), a.reps)
        print(f"ReLU + dropout, fanout:        forward {f:8.1f} ms, backward {b:8.1f} ms")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
