"""DGL's ``DistEmbedding``: learnable node rows that live on the graph servers, trained by the
sparse optimizers of :mod:`fanout.distributed.optim` (DGL's ``SparseAdam``/``SparseAdagrad``).

The table is a node field created in the servers' memory (as fanout-train's
``--embed-featureless`` tables), so every trainer reads a row from one place and no trainer holds
the whole table; the optimizer's state is a second field beside it, and the servers apply each
step to the rows a batch touched, where they live. The rows are the job's own: no
``--allow-push`` is needed.
"""

import concurrent.futures
from typing import Callable, List, Optional, Tuple

import torch

from fanout.distributed.graph import DistGraph, NodePartitionPolicy, init_rows, torch_ranks


_PULLER = None


def _puller() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that pull DistEmbedding rows ahead (the extension's pulls release the GIL)."""
    global _PULLER
    if _PULLER is None:
        _PULLER = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="fanout-rows")
    return _PULLER


class DistEmbedding:
    """``DistEmbedding(num_embeddings, embedding_dim, name=None, init_func=None,
    part_policy=None)``: ``num_embeddings`` rows of ``embedding_dim`` float32, one per node (of
    the node type of ``part_policy``, ``g.get_node_partition_policy(ntype)``, on a typed graph;
    rows by type-wise ID). Rows start at zero, or at ``init_func((n, dim), torch.float32)``, each
    trainer writing a disjoint share of them. ``emb(ids)`` pulls the rows and, while gradients
    are recorded, remembers them so that the sparse optimizer can send their gradients to the
    servers. Every trainer makes the same embeddings in the same order (as DGL's)."""

    _unnamed = 0

    def __init__(self, num_embeddings: int, embedding_dim: int, name: Optional[str] = None,
                 init_func: Optional[Callable] = None, part_policy: Optional[NodePartitionPolicy] = None):
        g = DistGraph._current
        if g is None:
            raise RuntimeError("DistEmbedding needs a DistGraph: create the DistGraph first")
        self._ntype = part_policy.type_name if part_policy is not None else None
        if g.is_typed() and self._ntype is None:
            raise ValueError("DistEmbedding on a typed graph: pass part_policy=g.get_node_partition_policy(ntype)")
        rows = g.num_nodes(self._ntype) if self._ntype is not None else g.num_nodes()
        if int(num_embeddings) != rows:
            raise ValueError(f"DistEmbedding: num_embeddings {num_embeddings} must be the "
                             f"{'node type ' + repr(self._ntype) + ' has' if self._ntype else 'graph has'} {rows} nodes")
        if int(embedding_dim) < 1:
            raise ValueError(f"DistEmbedding: embedding_dim must be >= 1, got {embedding_dim}")
        if name is None:
            DistEmbedding._unnamed += 1
            name = f"_embedding{DistEmbedding._unnamed}"
        self._graph, self._name = g, name
        self._num, self._dim = int(num_embeddings), int(embedding_dim)
        self._key = self._field_key(name)
        g._native.create_node_field(name, "float32", [self._dim], node_type=self._ntype or "")
        self._trace: List[Tuple[torch.Tensor, torch.Tensor]] = []
        # Rows pulled ahead (see _pull_ahead): (the ids tensor, the table's version then, a future).
        self._follows_loader = False  # the script's last lookup was by the latest batch's inputs
        self._ahead = None
        g._embeddings.append(self)
        if init_func is not None:  # each trainer writes its share; all wait for all
            init_rows(g, self._key, (self._num, self._dim), torch.float32, init_func, self._graph_ids)
        elif torch_ranks()[1] > 1:
            torch.distributed.barrier()  # the table made everywhere before any trainer reads it

    @property
    def name(self) -> str:
        return self._name

    @property
    def num_embeddings(self) -> int:
        return self._num

    @property
    def embedding_dim(self) -> int:
        return self._dim

    def _field_key(self, name: str) -> str:
        """How the servers name a field of this table's rows: TYPE/NAME on a typed graph."""
        return f"{self._ntype}/{name}" if self._ntype is not None else name

    def _graph_ids(self, ids: torch.Tensor):
        """The servers address a typed table's rows by graph-wide node ID."""
        if self._ntype is None:
            return ids.numpy()
        g = self._graph
        return g._ntypes.to_homo(g._ntype_id(self._ntype), ids.numpy())

    @property
    def _version(self) -> int:
        """The table's version, bumped by every optimizer step that updates it (kept on the graph
        by table, so that every DistEmbedding object of one table sees every step)."""
        return self._graph._table_versions.get(self._key, 0)

    def _updated(self) -> None:
        self._graph._table_versions[self._key] = self._version + 1

    def _pull(self, idx) -> torch.Tensor:
        ids = torch.as_tensor(idx).to(torch.int64).cpu()
        return torch.from_numpy(self._graph._native.pull_node_rows(self._key, self._graph_ids(ids)))

    def _pull_ahead(self, input_nodes) -> None:
        """A loader made a batch: if the script looked this table up by the previous batch's input
        nodes (DGL's R-GCN example does, once per featureless type and step), start pulling the
        new batch's rows now, on a worker thread, while the loader finishes the batch. The rows
        are taken only if the script then asks for exactly those IDs (the same tensor) and no
        optimizer step updated the table in between; otherwise they are pulled again."""
        self._ahead = None
        if not self._follows_loader:
            return
        ids = input_nodes.get(self._ntype) if isinstance(input_nodes, dict) else input_nodes
        if ids is not None:
            self._ahead = (ids, self._version, _puller().submit(self._pull, ids))

    def __call__(self, idx, device=None) -> torch.Tensor:
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] is idx and ahead[1] == self._version:
            rows = ahead[2].result()
        else:
            rows = self._pull(idx)
        ids = torch.as_tensor(idx).to(torch.int64).cpu()
        self._follows_loader = self._graph._is_batch_input(idx, self._ntype)
        if torch.is_grad_enabled():
            rows.requires_grad_(True)
            self._trace.append((ids, rows))
        return rows.to(device) if device is not None else rows

    def reset_trace(self) -> None:
        self._trace = []
