"""DGL's ``dgl.distributed.optim``: ``SparseAdam`` and ``SparseAdagrad`` for
:class:`~fanout.distributed.DistEmbedding`.

A step takes the gradients of the rows the embeddings handed out since the last step, sums those
of the same row, and, when the script runs several trainers (torch.distributed initialised),
sends each row's to the trainer that updates it (one on the machine whose partition holds the
row: one all_to_all of all tables together), which averages them over the trainers (as DDP
averages the dense gradients) and has the row updated once, by its own machine's servers, where
the rows live (fanout-train's own sparse optimizers, core/sparse_optim.h: Adam per row with its
own step count, so that rows no batch touched never change). Every trainer then
waits for the others, so that the next step reads updated rows. The rows are the job's own: no
``--allow-push`` is needed.
"""

from typing import Iterable, List

import torch

from fanout import _native
from fanout.distributed import context
from fanout.distributed.embedding import DistEmbedding
from fanout.distributed.graph import torch_ranks


def _to_owners(tables, owners, world: int):
    """Every trainer's rows to the trainer that updates them (`owners[t]`: each row's rank): for
    each table (ids [n], float32 grads [n, dim]) the rows this trainer owns, from every trainer in
    rank order. Three all_to_all calls for all tables together (counts, IDs, gradients), each row
    sent once, to its owner (half of an all-gather's volume with 2 trainers)."""
    sends, counts = [], torch.zeros(world, len(tables), dtype=torch.int64)
    for t, ((ids, grads), owner) in enumerate(zip(tables, owners)):
        order = torch.sort(owner, stable=True).indices
        counts[:, t] = torch.bincount(owner, minlength=world)
        sends.append((ids[order].split(counts[:, t].tolist()), grads[order].split(counts[:, t].tolist())))
    got = torch.empty_like(counts)
    torch.distributed.all_to_all_single(got, counts)  # got[src, t]: rows of table t from trainer src
    dims = torch.tensor([g.shape[1] for _, g in tables], dtype=torch.int64)
    send_ids = torch.cat([sends[t][0][d] for d in range(world) for t in range(len(tables))])
    send_grads = torch.cat([sends[t][1][d].reshape(-1) for d in range(world) for t in range(len(tables))])
    recv_ids = torch.empty(int(got.sum()), dtype=torch.int64)
    recv_grads = torch.empty(int((got * dims).sum()), dtype=torch.float32)
    torch.distributed.all_to_all_single(recv_ids, send_ids, output_split_sizes=got.sum(1).tolist(),
                                        input_split_sizes=counts.sum(1).tolist())
    torch.distributed.all_to_all_single(recv_grads, send_grads, output_split_sizes=(got * dims).sum(1).tolist(),
                                        input_split_sizes=(counts * dims).sum(1).tolist())
    ids_parts = recv_ids.split(got.reshape(-1).tolist())  # [src][t] in order
    grad_parts = recv_grads.split((got * dims).reshape(-1).tolist())
    out = []
    for t in range(len(tables)):
        blocks = [src * len(tables) + t for src in range(world)]
        out.append((torch.cat([ids_parts[b] for b in blocks]),
                    torch.cat([grad_parts[b] for b in blocks]).reshape(-1, int(dims[t]))))
    return out


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
        """Forgets the gradients computed so far (rows looked up and already given a gradient by
        a backward pass), as PyTorch's ``zero_grad``. Rows looked up but not yet through backward
        are kept: DGL's R-GCN example calls ``zero_grad`` between its forward and its backward,
        and those rows' gradients are the step's. ``step`` consumes what it applies."""
        for p in self._params:
            p._trace = [(ids, rows) for ids, rows in p._trace if rows.grad is None]

    @staticmethod
    def _owners(p: DistEmbedding, ids: torch.Tensor, world: int) -> torch.Tensor:
        """The trainer that updates each row: one on the machine whose partition holds the row
        (its partition's trainers taking turns by row ID), so that the update goes to a server of
        its own machine, as DGL's sparse optimizers do; row ID mod world size when the process
        group is not the job's (one trainer per rank of every machine)."""
        per_machine = context.current().num_trainers
        if world != p._graph._native.num_parts * per_machine:
            return ids % world
        part = p._graph.get_partition_book().nid2partid(ids, p._ntype or "_N")  # type-wise IDs of a typed table
        return part * per_machine + ids % per_machine

    def step(self) -> None:
        rank, world = torch_ranks()
        tables = []
        for p in self._params:
            traced = [(ids, rows.grad) for ids, rows in p._trace if rows.grad is not None]
            p.reset_trace()
            if traced:
                tables.append((torch.cat([i for i, _ in traced]), torch.cat([g for _, g in traced]).to(torch.float32)))
            else:
                tables.append((torch.zeros(0, dtype=torch.int64), torch.zeros(0, p.embedding_dim)))
        if world > 1:
            tables = _to_owners(tables, [self._owners(p, ids, world) for p, (ids, _) in zip(self._params, tables)],
                                world)
        for p, (ids, grads) in zip(self._params, tables):
            if len(ids) == 0:
                continue
            rows, where = torch.unique(ids, return_inverse=True)
            summed = torch.zeros(len(rows), p.embedding_dim).index_add_(0, where, grads) / world
            state = p._field_key(f"{p.name}.{self._kind}")
            p._graph._native.sparse_update(p._key, state, p._graph_ids(rows), summed.contiguous().numpy(),
                                           self._kind, self._lr, self._beta1, self._beta2, self._eps)
        for p in self._params:
            p._updated()  # rows pulled ahead before this step are stale
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
