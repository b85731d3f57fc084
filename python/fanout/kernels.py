"""fanout-train's fused CPU kernels for any PyTorch script: a block's sparse adjacency whose
products run on fanout's aggregation kernel, and ReLU + dropout in one pass.

**Sparse products.** PyG's convolutions with a fused ``message_and_aggregate`` (``SAGEConv``,
``GraphConv``, ``GINConv``, ...) multiply a sparse ``adj_t`` with the source features through
PyG's ``spmm``, which on CPU calls ``torch.sparse.mm(adj_t, x, reduce)`` (PyTorch's CSR reduction
kernel). :func:`fused_csr` returns that same ``torch.sparse_csr`` matrix as a :class:`FusedCsr`, a
subclass that answers ``torch.sparse.mm`` (and ``adj_t @ x`` / ``torch.mm`` / ``torch.matmul``)
with fanout's own kernel (``fanout._native.spmm``: the kernel fanout-train's layers run, no
``[num_edges, width]`` message tensor, AVX-512 / AVX2 picked at run time) inside an autograd
function, for ``reduce`` ``"sum"`` or ``"mean"`` on a 2-D float32 CPU matrix. Everything else
(other reductions or dtypes, CUDA, any other operation on the matrix) is PyTorch's own, on the
plain CSR tensor. Its values must be ones (fanout's blocks carry none), which :func:`fused_csr`
guarantees. ``fanout.pyg``'s ``adjs=True`` batches carry these.

**ReLU and dropout.** :func:`relu_dropout` is ``F.dropout(F.relu(x), p, training)`` as
fanout-train computes it: one pass, the mask a hash of a seed and the element's index (drawn from
PyTorch's default generator, so ``torch.manual_seed`` repeats it), nothing but the output kept
for backward. PyTorch's CPU dropout draws a random number per element (``bernoulli_``):
``F.dropout(F.relu(h), 0.5)`` over [60000, 256] took 288-297 ms forward on one thread under
PyTorch 2.15 here, ``relu_dropout`` 9-31 ms (bench/vs_dgl/kernels_vs_torch.py).

Both work with any PyTorch the native extension loads into (no LibTorch linked) and fall back to
PyTorch's own operations where the extension is missing. Not scriptable (TorchScript): for
scripted models, :mod:`fanout.layers` has the same kernels as TorchScript operators.
"""

import warnings
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

try:
    from fanout import _native
except ImportError:  # the package without its native half (documentation builds)
    _native = None

# torch.sparse.mm's reduce argument -> the kernel's mean flag; the products it answers
# (torch.sparse.mm is torch._sparse_mm underneath; adj @ x is __matmul__).
_REDUCE = {None: False, "sum": False, "mean": True}
_PRODUCTS = ("_sparse_mm", "mm", "matmul", "__matmul__")


def _disabled():
    # PyTorch 2.x skips subclasses' overrides only; 1.13 has just the all-overrides switch.
    if hasattr(torch._C, "DisableTorchFunctionSubclass"):
        return torch._C.DisableTorchFunctionSubclass()
    return torch._C.DisableTorchFunction()


class _FusedSpmm(torch.autograd.Function):
    """out = A @ x (or its row means) for A given as (indptr, indices), on fanout's kernel."""

    @staticmethod
    def forward(ctx, x: Tensor, indptr: Tensor, indices: Tensor, mean: bool) -> Tensor:
        x_c = x.detach().contiguous()
        out = torch.empty((indptr.numel() - 1, x_c.shape[1]), dtype=x_c.dtype)
        _native.spmm(indptr.numpy(), indices.numpy(), x_c.numpy(), out.numpy(), mean, torch.get_num_threads())
        ctx.save_for_backward(indptr, indices)
        ctx.mean = mean
        ctx.num_src = x_c.shape[0]
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        indptr, indices = ctx.saved_tensors
        g = grad_out.detach().contiguous()
        grad_x = torch.zeros((ctx.num_src, g.shape[1]), dtype=g.dtype)
        _native.spmm_backward_x(indptr.numpy(), indices.numpy(), g.numpy(), grad_x.numpy(), ctx.mean,
                                torch.get_num_threads())
        return grad_x, None, None, None


def _operands(func, args, kwargs):
    """(adj, x, reduce) when func is a sparse-dense product fanout's kernel takes, else None."""
    if getattr(func, "__name__", "") not in _PRODUCTS or len(args) < 2 or set(kwargs) - {"reduce"}:
        return None
    adj, x = args[0], args[1]
    reduce = args[2] if len(args) > 2 else kwargs.get("reduce")
    if not isinstance(adj, FusedCsr) or reduce not in _REDUCE:
        return None
    if not isinstance(x, Tensor) or isinstance(x, FusedCsr) or x.dim() != 2 or x.dtype != torch.float32:
        return None
    if x.device.type != "cpu" or x.layout != torch.strided or x.shape[0] != adj.shape[1]:
        return None
    return adj, x, reduce


class FusedCsr(torch.Tensor):
    """A ``torch.sparse_csr`` matrix [num_dst, num_src] of ones whose products with dense float32
    CPU matrices run on fanout's fused kernel (see the module's text). Make one with
    :func:`fused_csr`; every other operation sees a plain sparse CSR tensor."""

    _indptr: Tensor
    _indices: Tensor

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        found = _operands(func, args, kwargs)
        if found is not None:
            adj, x, reduce = found
            with _disabled():
                return _FusedSpmm.apply(x, adj._indptr, adj._indices, _REDUCE[reduce])
        with _disabled():
            return func(*args, **kwargs)


def _csr(indptr: Tensor, indices: Tensor, values: Tensor, size) -> Tensor:
    # A block's rows may repeat a column and need not sort them (sampling with replacement):
    # skip the invariant checks (keyword since PyTorch 2.0; 1.13 has the unchecked constructor).
    if hasattr(torch, "_sparse_csr_tensor_unsafe"):
        return torch._sparse_csr_tensor_unsafe(indptr, indices, values, size)
    return torch.sparse_csr_tensor(indptr, indices, values, size=size, check_invariants=False)


def fused_csr(indptr: Tensor, indices: Tensor, num_dst: int, num_src: int,
              ones: Optional[Tensor] = None) -> Tensor:
    """The CSR matrix [num_dst, num_src] with a one at (v, indices[e]) for v's edges
    indptr[v]:indptr[v+1], as a :class:`FusedCsr` (a plain ``torch.sparse_csr_tensor`` when the
    native extension is missing). indptr and indices: int64 CPU tensors, used without a copy when
    contiguous. ``ones``: a float32 buffer of at least len(indices) ones to slice the values from
    (one allocation shared by many matrices), else a new one."""
    indptr = indptr.contiguous()
    indices = indices.contiguous()
    if indptr.dtype != torch.int64 or indices.dtype != torch.int64:
        raise TypeError(f"fused_csr: indptr and indices must be int64, got {indptr.dtype} and {indices.dtype}")
    ne = indices.numel()
    values = ones[:ne] if ones is not None and ones.numel() >= ne else torch.ones(ne)
    with warnings.catch_warnings():  # torch's note that sparse CSR is "beta", once per process
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        adj = _csr(indptr, indices, values, (num_dst, num_src))
    if _native is None:
        return adj
    out = torch.Tensor._make_subclass(FusedCsr, adj)
    out._indptr = indptr
    out._indices = indices
    return out


def _seed() -> int:
    """A mask seed from PyTorch's default CPU generator (torch.manual_seed repeats it)."""
    return int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item())


class _FusedDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, p: float, relu: bool) -> Tensor:
        x_c = x.detach().contiguous()
        out = torch.empty_like(x_c)
        seed = _seed()
        _native.dropout(x_c.numpy(), out.numpy(), seed, p, relu, torch.get_num_threads())
        ctx.seed, ctx.p, ctx.relu = seed, p, relu
        if relu:  # the output says which elements pass a gradient
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        g = grad_out.detach().contiguous()
        grad_x = torch.empty_like(g)
        out = ctx.saved_tensors[0].numpy() if ctx.relu else None
        _native.dropout_backward(out, g.numpy(), grad_x.numpy(), ctx.seed, ctx.p, ctx.relu, torch.get_num_threads())
        return grad_x, None, None


def relu_dropout(x: Tensor, p: float = 0.5, training: bool = True, relu: bool = True) -> Tensor:
    """``F.dropout(F.relu(x), p, training)`` (``relu=False``: ``F.dropout(x, p, training)``) on
    fanout's fused kernel for float32 CPU tensors: kept elements scaled by 1 / (1 - p), the mask
    its own (not PyTorch's draws), so equal in distribution, not element for element. Other
    dtypes and devices, and evaluation, are PyTorch's."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"relu_dropout: p must be in [0, 1), got {p}")
    if not training or p == 0.0:
        return F.relu(x) if relu else x
    if _native is None or x.dtype != torch.float32 or x.device.type != "cpu" or x.layout != torch.strided:
        return F.dropout(F.relu(x) if relu else x, p, True)
    return _FusedDropout.apply(x, float(p), bool(relu))
