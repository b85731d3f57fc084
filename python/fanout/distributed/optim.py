"""DGL's ``dgl.distributed.optim``: ``SparseAdam`` and ``SparseAdagrad`` for
:class:`~fanout.distributed.DistEmbedding`.

A step takes the gradients of the rows the embeddings handed out since the last step, sums those
of the same row, and, when the script runs several trainers (torch.distributed initialised),
gathers every trainer's, averages them over the trainers (as DDP averages the dense gradients)
and has each row updated once, by the trainer ``row mod world size``; the servers apply the
update where the rows live (fanout-train's own sparse optimizers, core/sparse_optim.h: Adam per
row with its own step count, so that rows no batch touched never change). Every trainer then
waits for the others, so that the next step reads updated rows. The rows are the job's own: no
``--allow-push`` is needed.
"""

from typing import Iterable, List

import torch

from fanout import _native
from fanout.distributed.embedding import DistEmbedding, _ranks


def _gather(ids: torch.Tensor, grads: torch.Tensor, world: int):
    """Every trainer's (ids, grads), concatenated (padded all_gather: sizes differ)."""
    n = torch.tensor([len(ids)])
    sizes = [torch.zeros_like(n) for _ in range(world)]
    torch.distributed.all_gather(sizes, n)
    most = int(max(s.item() for s in sizes))
    pad_ids = torch.zeros(most, dtype=torch.int64)
    pad_ids[:len(ids)] = ids
    pad_grads = torch.zeros(most, grads.shape[1], dtype=grads.dtype)
    pad_grads[:len(ids)] = grads
    all_ids = [torch.zeros_like(pad_ids) for _ in range(world)]
    all_grads = [torch.zeros_like(pad_grads) for _ in range(world)]
    torch.distributed.all_gather(all_ids, pad_ids)
    torch.distributed.all_gather(all_grads, pad_grads)
    keep = [slice(0, int(s.item())) for s in sizes]
    return (torch.cat([t[k] for t, k in zip(all_ids, keep)]), torch.cat([t[k] for t, k in zip(all_grads, keep)]))


class _SparseOptimizer:
    _kind = ""

    def __init__(self, params: Iterable[DistEmbedding], lr: float, beta1: float, beta2: float, eps: float):
        self._params: List[DistEmbedding] = list(params)
        for p in self._params:
            if not isinstance(p, DistEmbedding):
                raise TypeError(f"{type(self).__name__} takes DistEmbedding parameters, got {type(p).__name__}")
        if not lr > 0:
            raise ValueError(f"{type(self).__name__}: lr must be > 0, got {lr}")
        self._lr, self._beta1, self._beta2, self._eps = float(lr), float(beta1), float(beta2), float(eps)
        for p in self._params:  # the state beside each table, created zero on the servers
            width = _native.Graph.sparse_state_width(self._kind, p.embedding_dim)
            p._graph._native.create_node_field(f"{p.name}.{self._kind}", "float32", [width],
                                               node_type=p._ntype or "")

    def zero_grad(self) -> None:
        for p in self._params:
            p.reset_trace()

    def step(self) -> None:
        rank, world = _ranks()
        for p in self._params:
            traced = [(ids, rows.grad) for ids, rows in p._trace if rows.grad is not None]
            p.reset_trace()
            if traced:
                ids = torch.cat([i for i, _ in traced])
                grads = torch.cat([g for _, g in traced]).to(torch.float32)
            else:
                ids, grads = torch.zeros(0, dtype=torch.int64), torch.zeros(0, p.embedding_dim)
            if world > 1:
                ids, grads = _gather(ids, grads, world)
            rows, where = torch.unique(ids, return_inverse=True)
            summed = torch.zeros(len(rows), p.embedding_dim).index_add_(0, where, grads) / world
            mine = rows % world == rank
            if bool(mine.any()):
                state = p._field_key(f"{p.name}.{self._kind}")
                p._graph._native.sparse_update(p._key, state, p._graph_ids(rows[mine]), summed[mine].contiguous().numpy(),
                                               self._kind, self._lr, self._beta1, self._beta2, self._eps)
        if world > 1:
            torch.distributed.barrier()  # the next step reads updated rows


class SparseAdam(_SparseOptimizer):
    """DGL's ``SparseAdam(params, lr, betas=(0.9, 0.999), eps=1e-08)``."""

    _kind = "adam"

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-08):
        super().__init__(params, lr, betas[0], betas[1], eps)


class SparseAdagrad(_SparseOptimizer):
    """DGL's ``SparseAdagrad(params, lr, eps=1e-10)``."""

    _kind = "adagrad"

    def __init__(self, params, lr: float, eps: float = 1e-10):
        super().__init__(params, lr, 0.9, 0.999, eps)
