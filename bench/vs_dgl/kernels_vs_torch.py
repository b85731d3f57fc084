"""fanout.kernels against PyTorch's own CPU operators alone (no layer around them), one thread:
the sparse mean product of a SAGE layer's aggregation (3M edges, 300K sources, 100K
destinations, 100 floats: torch.sparse.mm(adj, x, "mean") on a plain CSR tensor against the
same on fanout.kernels.FusedCsr) and ReLU + dropout over [60000, 256] (F.dropout(F.relu(h))
against fanout.kernels.relu_dropout). Prints the best of 3 forward and backward times.

    OMP_NUM_THREADS=1 PYTHONPATH=python PYG_VENV/bin/python bench/vs_dgl/kernels_vs_torch.py

Needs PyTorch 2.x (torch.sparse.mm's reduce argument) and fanout's package (docs/benchmarks.md,
setup Y).
"""
import time
import warnings

import torch
import torch.nn.functional as F

import fanout.kernels as fk


def best(f, leaf, n=3):
    """(forward, backward) seconds of f(), the best of n; leaf's gradient reset each time."""
    out = []
    for _ in range(n):
        leaf.grad = None
        t0 = time.perf_counter()
        y = f()
        t1 = time.perf_counter()
        y.backward(torch.ones_like(y))
        out.append((t1 - t0, time.perf_counter() - t1))
    return min(out)


def main():
    warnings.filterwarnings("ignore")  # PyTorch's "sparse CSR is beta" notes
    torch.set_num_threads(1)
    torch.manual_seed(0)
    num_src, num_dst, num_edges, width = 300_000, 100_000, 3_000_000, 100
    ptr = torch.arange(num_dst + 1, dtype=torch.int64) * (num_edges // num_dst)
    col = torch.randint(0, num_src, (num_edges,))
    x = torch.randn(num_src, width, requires_grad=True)
    for name, adj in (("pytorch", torch.sparse_csr_tensor(ptr, col, torch.ones(num_edges), (num_dst, num_src))),
                      ("fanout", fk.fused_csr(ptr, col, num_dst, num_src))):
        fw, bw = best(lambda: torch.sparse.mm(adj, x, "mean"), x)
        print(f"sparse mean product, {name:8s} forward {fw * 1e3:6.0f} ms  backward {bw * 1e3:6.0f} ms")
    h = torch.randn(60_000, 256, requires_grad=True)
    for name, f in (("pytorch", lambda: F.dropout(F.relu(h), 0.5)), ("fanout", lambda: fk.relu_dropout(h, 0.5))):
        fw, bw = best(f, h)
        print(f"ReLU + dropout,      {name:8s} forward {fw * 1e3:6.0f} ms  backward {bw * 1e3:6.0f} ms")
    print(f"torch {torch.__version__}, fanout's kernels: {fk._native.kernel_isa()}")


if __name__ == "__main__":
    main()
