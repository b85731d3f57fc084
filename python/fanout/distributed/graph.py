"""DistDGL's DistGraph, DistTensor, partition book and node_split over fanout's servers."""

from typing import Dict, Optional, Tuple

import operator
import weakref

import numpy as np
import torch

from fanout import _native
from fanout.distributed import context
from fanout.distributed.hetero import TypeRanges, canonical

_TORCH_DTYPES = {
    "bool": torch.bool, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "float16": torch.float16, "float32": torch.float32, "float64": torch.float64,
}


def decode_rows(rows: torch.Tensor, codec: str) -> torch.Tensor:
    """Feature rows as ``fanout-partition --feature-dtype`` stored them (``codec``: the field's)
    as values, on the rows' device: int8 rows (``dim`` codes, then the row's float32 scale and
    offset) become float32 ``offset + scale * code``; bfloat16 rows (their bits as int16) become
    torch.bfloat16, as float16 features stay float16."""
    if not codec:
        return rows
    if codec == "bfloat16":
        return rows.view(torch.bfloat16)
    if codec != "int8":
        raise ValueError(f"unknown feature codec {codec!r} (a newer fanout-partition wrote these partitions?)")
    dim = rows.shape[1] - 8
    tail = rows[:, dim:].contiguous().view(torch.float32)  # [n, 2]: scale, offset
    return rows[:, :dim].to(torch.float32).mul_(tail[:, :1]).add_(tail[:, 1:])


def _field_rows(f) -> Tuple[Tuple[int, ...], torch.dtype]:
    """A node field's row shape and dtype as its readers see them (decoded)."""
    if f.get("codec") == "int8":
        return (f["row_shape"][0] - 8,), torch.float32
    if f.get("codec") == "bfloat16":
        return tuple(f["row_shape"]), torch.bfloat16
    return tuple(f["row_shape"]), _TORCH_DTYPES[f["dtype"]]


def _ids(ids) -> np.ndarray:
    """Node IDs as an int64 NumPy array (a tensor on any device, a list, a range or a scalar)."""
    if isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool:
            raise TypeError("expected node IDs, got a boolean mask (use mask.nonzero())")
        ids = ids.detach().to("cpu", torch.int64).reshape(-1).numpy()
    return np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))


def _count(value, what: str) -> int:
    """`value` as an int, refusing what int() would round (3.5) or parse ("5"): a count the caller
    typed (a fanout, a batch size) is taken as given or not at all. TypeError names `what`."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: {value!r} is not a whole number") from None


class NodePartitionPolicy:
    """DGL's NodePartitionPolicy of one node type: rows partitioned with that type's nodes."""

    def __init__(self, ntype: str):
        self.type_name = ntype
        self.policy_str = f"node~{ntype}"


def _tensor_node_type(graph: "DistGraph", shape, name, part_policy) -> str:
    """The node type of a DistTensor on a typed graph, as DGL decides it: the partition policy's
    (``g.get_node_partition_policy(ntype)``), else the one type of a field of that name, else the
    one type with ``shape[0]`` nodes."""
    if part_policy is not None:
        if not isinstance(part_policy, NodePartitionPolicy):
            raise TypeError(f"DistTensor {name!r}: part_policy must be g.get_node_partition_policy(ntype), "
                            f"got {type(part_policy).__name__}")
        graph._ntype_id(part_policy.type_name)
        return part_policy.type_name
    named = sorted({f["node_type"] for f in graph._native.node_fields if f["name"] == name and f["node_type"]})
    if shape is None:
        if len(named) != 1:
            where = f"node types {named}" if named else "no node type"
            raise ValueError(f"DistTensor {name!r}: {where} of this typed graph has a field of that name; pass "
                             f"part_policy=g.get_node_partition_policy(ntype) (or g.nodes[TYPE].data[NAME])")
        return named[0]
    counts = {t: graph.num_nodes(t) for t in graph.ntypes}
    fits = [t for t, n in counts.items() if n == int(shape[0])]
    if len(fits) > 1 and len(set(fits) & set(named)) == 1:
        fits = list(set(fits) & set(named))
    if len(fits) != 1:
        what = "no node type has" if not fits else f"node types {fits} all have"
        raise ValueError(f"DistTensor {name!r}: {what} {int(shape[0])} nodes (node counts: {counts}); pass "
                         f"part_policy=g.get_node_partition_policy(ntype)")
    return fits[0]


def torch_ranks() -> Tuple[int, int]:
    """(rank, world size) of torch.distributed when the script initialised it, else (0, 1)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def init_rows(graph: "DistGraph", key: str, shape, dtype, init_func, to_graph_ids) -> None:
    """Rows of a tensor the job created, from ``init_func((n, *row_shape), dtype)`` (DGL's
    signature): each trainer writes its share (rows rank, rank + world, ...), then all wait, so
    no trainer reads a row before it is written. `to_graph_ids` maps row numbers to the IDs the
    servers address them by."""
    rank, world = torch_ranks()
    mine = torch.arange(rank, int(shape[0]), world)
    values = torch.as_tensor(init_func((len(mine),) + tuple(shape[1:]), dtype)).to("cpu", dtype)
    if tuple(values.shape) != (len(mine),) + tuple(shape[1:]):
        raise ValueError(f"init_func gave shape {tuple(values.shape)} for {(len(mine),) + tuple(shape[1:])}")
    graph._native.push_node_rows(key, to_graph_ids(mine), np.ascontiguousarray(values.contiguous().numpy()))
    if world > 1:
        torch.distributed.barrier()


class DistTensor:
    """A node field of the partitioned graph, read (and, where the servers allow it, written) by
    row: ``t[ids]`` gathers the rows from their owners, ``t[ids] = rows`` writes them to every
    server of the owning partitions (a tensor the job created: always; the partition's own fields:
    servers started with ``--allow-push``, others refuse with ``FanoutError: PERMISSION_DENIED``).

    ``DistTensor(shape, dtype, name)`` attaches to the node field of that name (checking its shape
    and dtype), or creates it: ``(g.num_nodes(), ...)`` rows of zeros held by the servers (each
    partition's rows by its servers) until the job ends, as DGL's example does for layer-wise
    inference. Creating needs no flag and fits within each server's ``--max-created-bytes``;
    every trainer may create the same tensor (the second attaches). Without a name, tensors are
    named in creation order, the same on every trainer. ``init_func(shape, dtype)`` gives the
    first values (each trainer writes its share; with torch.distributed initialised every
    trainer must then make the tensor, as with DGL, since all wait for all). On a typed graph the
    rows are one node type's, by type-wise ID: ``part_policy``'s type, else the one type with
    ``shape[0]`` nodes (DGL's rule).
    """

    _unnamed = 0

    def __init__(self, shape, dtype=None, name=None, init_func=None, part_policy=None, persistent=False,
                 is_gdata=True, attach=True, *, _graph=None, _ntype=None):
        graph = _graph if _graph is not None else DistGraph._current
        if graph is None:
            raise RuntimeError("DistTensor needs a DistGraph: create the DistGraph first")
        self._graph = graph
        if _ntype is None and graph.is_typed():
            _ntype = _tensor_node_type(graph, shape, name, part_policy)
        self._ntype = _ntype  # a typed tensor's node type: rows indexed by type-wise IDs
        if _ntype is not None:
            schemas = {f["name"]: f for f in graph._native.node_fields if f["node_type"] == _ntype}
            rows = graph.num_nodes(_ntype)
        else:
            schemas = {f["name"]: f for f in graph._native.node_fields if not f["node_type"]}
            rows = graph.num_nodes()
        self._created = name not in schemas
        self._codec = ""
        if not self._created:  # a field of the partition (or one created before): attach
            f = schemas[name]
            row_shape, field_dtype = _field_rows(f)
            want = (rows,) + row_shape
            if shape is not None and tuple(shape) != want:
                raise ValueError(f"DistTensor {name!r}: shape {tuple(shape)} does not match the field's {want}")
            if dtype is not None and field_dtype != dtype:
                raise TypeError(f"DistTensor {name!r}: dtype {dtype} does not match the field's {field_dtype}")
            self._name, self._shape, self._dtype = name, want, field_dtype
            self._key, self._codec = f["key"], f["codec"]
            return
        if name is None:
            DistTensor._unnamed += 1
            name = f"_tensor{DistTensor._unnamed}"
        if shape is None or dtype is None:
            raise ValueError(f"DistTensor {name!r}: no node field of that name; creating one needs a shape and a dtype")
        shape = tuple(int(d) for d in shape)
        if len(shape) == 0 or shape[0] != rows:
            what = f"node type {_ntype!r}'s" if _ntype is not None else "the graph's"
            raise NotImplementedError(f"DistTensor {name!r}: only node tensors (shape[0] = {what} {rows} nodes) "
                                      f"can be created, got shape {shape}")
        names = {v: k for k, v in _TORCH_DTYPES.items()}
        if dtype not in names:
            raise TypeError(f"DistTensor {name!r}: dtype {dtype} is not one of {sorted(names.values())}")
        graph._native.create_node_field(name, names[dtype], list(shape[1:]), node_type=_ntype or "")
        self._name, self._shape, self._dtype = name, shape, dtype
        self._key = f"{_ntype}/{name}" if _ntype is not None else name
        if init_func is not None:
            init_rows(graph, self._key, shape, dtype, init_func, self._homo)

    @property
    def name(self) -> str:
        return self._name

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    def __len__(self) -> int:
        return self._shape[0]

    def __repr__(self) -> str:
        typed = f", ntype={self._ntype!r}" if self._ntype is not None else ""
        return f"DistTensor(name={self._name!r}{typed}, shape={self._shape}, dtype={self._dtype})"

    def _homo(self, ids) -> np.ndarray:
        """fanout's IDs of `ids` (type-wise for a typed field)."""
        ids = _ids(ids)
        if self._ntype is None:
            return ids
        return self._graph._ntypes.to_homo(self._graph._ntypes.names.index(self._ntype), ids)

    def __getitem__(self, ids) -> torch.Tensor:
        if isinstance(ids, slice):
            ids = range(*ids.indices(len(self)))
        rows = self._graph._prefetched(self._key, ids)
        if rows is not None:  # the loader's latest batch fetched exactly these rows: no copy, no RPC
            return rows
        # A created tensor is read through the graph that created it (it knows the schema; the
        # rows are on the servers either way).
        reader = self._graph._native if self._created else self._graph._reader()
        return decode_rows(torch.from_numpy(reader.pull_node_rows(self._key, self._homo(ids))), self._codec)

    def __setitem__(self, ids, values) -> None:
        if self._codec:
            raise TypeError(f"DistTensor {self._name!r} is stored compressed ({self._codec}, fanout-partition "
                            f"--feature-dtype): its rows are read-only")
        ids = self._homo(ids)
        if not isinstance(values, torch.Tensor):
            values = torch.as_tensor(values)
        values = values.detach().to("cpu", self._dtype)
        if values.dim() == 0 or (values.shape[0] == 1 and len(ids) != 1):
            values = values.expand((len(ids),) + self._shape[1:])
        if tuple(values.shape) != (len(ids),) + self._shape[1:]:
            raise ValueError(f"DistTensor {self._name!r}: {tuple(values.shape)} rows for {len(ids)} IDs of shape "
                             f"{self._shape[1:]}")
        self._graph._native.push_node_rows(self._key, ids, np.ascontiguousarray(values.contiguous().numpy()))


class _OneType:
    """A graph of one node type and one edge type, named as DGL names them."""

    @property
    def ntypes(self):
        return ["_N"]

    @property
    def etypes(self):
        return ["_E"]


class GraphPartitionBook(_OneType):
    """DGL's range partition book: partition k owns node IDs [start_k, end_k)."""

    def __init__(self, graph: "DistGraph"):
        self._graph = graph
        n = graph._native
        self._node_ranges = n.node_ranges
        self._edge_ranges = n.edge_ranges
        self._node_bounds = torch.tensor([r[1] for r in self._node_ranges], dtype=torch.int64)
        self._edge_bounds = torch.tensor([r[1] for r in self._edge_ranges], dtype=torch.int64)
        self.partid = n.machine_id

    # Types (DGL's names): on a typed graph the methods below take a node type and type-wise IDs.
    @property
    def ntypes(self):
        return self._graph.ntypes

    @property
    def etypes(self):
        return self._graph.etypes

    @property
    def canonical_etypes(self):
        return self._graph.canonical_etypes

    def map_to_homo_nid(self, ids, ntype: str) -> torch.Tensor:
        """fanout's graph-wide IDs of `ntype`'s type-wise `ids`."""
        g = self._graph
        return torch.from_numpy(g._ntypes.to_homo(g._ntype_id(ntype), _ids(ids)))

    def map_to_per_ntype(self, ids) -> Tuple[torch.Tensor, torch.Tensor]:
        """(node type index, type-wise ID) of graph-wide `ids`."""
        types, typewise = self._graph._ntypes.to_typewise(_ids(ids))
        return torch.from_numpy(types), torch.from_numpy(typewise)

    def _homo_nids(self, nids, ntype):
        if ntype in (None, "_N") and not self._graph.is_typed():
            return torch.as_tensor(nids, dtype=torch.int64)
        return self.map_to_homo_nid(nids, ntype)

    def num_partitions(self) -> int:
        return len(self._node_ranges)

    def metadata(self):
        return [{"machine_id": k, "num_nodes": e - s, "num_edges": self._edge_ranges[k][1] - self._edge_ranges[k][0]}
                for k, (s, e) in enumerate(self._node_ranges)]

    def nid2partid(self, nids, ntype="_N") -> torch.Tensor:
        return torch.bucketize(self._homo_nids(nids, ntype), self._node_bounds, right=True)

    def eid2partid(self, eids, etype="_E") -> torch.Tensor:
        return torch.bucketize(torch.as_tensor(eids, dtype=torch.int64), self._edge_bounds, right=True)

    def partid2nids(self, partid: int, ntype="_N") -> torch.Tensor:
        if self._graph.is_typed():  # type-wise IDs, as DGL's heterograph partition book
            s, e = self._graph._ntypes.part_range(self._graph._ntype_id(ntype), partid)
        else:
            s, e = self._node_ranges[partid]
        return torch.arange(s, e, dtype=torch.int64)

    def partid2eids(self, partid: int, etype="_E") -> torch.Tensor:
        s, e = self._edge_ranges[partid]
        return torch.arange(s, e, dtype=torch.int64)

    def nid2localnid(self, nids, partid: int, ntype="_N") -> torch.Tensor:
        if self._graph.is_typed():
            return torch.as_tensor(nids, dtype=torch.int64) - self._graph._ntypes.part_range(
                self._graph._ntype_id(ntype), partid)[0]
        return torch.as_tensor(nids, dtype=torch.int64) - self._node_ranges[partid][0]


class _NodeData(dict):
    """``g.ndata``: the graph's node fields as DistTensors, by name."""

    # DGL's examples call the features and labels "features" and "labels"; fanout-partition names
    # them "feat" and "label" (OGB's names). Those examples run unchanged.
    _ALIASES = {"features": "feat", "labels": "label"}

    typed_hint = ""

    def __missing__(self, name):
        alias = self._ALIASES.get(name)
        if alias is not None and alias in self:
            return self[alias]
        raise KeyError(f"no node field {name!r} (this graph has: {', '.join(sorted(self))}){self.typed_hint}")


class _NodeSpace:
    """``g.nodes[ntype]``: ``.data`` holds the type's fields as DistTensors over type-wise IDs."""

    def __init__(self, data: _NodeData):
        self.data = data


class _NodeSpaces:
    def __init__(self, graph: "DistGraph"):
        self._graph = graph
        self._spaces = {}

    def __getitem__(self, ntype: str) -> _NodeSpace:
        g = self._graph
        g._ntype_id(ntype)
        if not g.is_typed():
            return _NodeSpace(g.ndata)
        if ntype not in self._spaces:
            self._spaces[ntype] = _NodeSpace(_NodeData({
                f["name"]: DistTensor(None, name=f["name"], _graph=g, _ntype=ntype)
                for f in g._native.node_fields if f["node_type"] == ntype}))
        return self._spaces[ntype]


class DistGraph(_OneType):
    """DGL's ``DistGraph`` over fanout's partition and servers.

    ``graph_name`` must match the partition config's ``graph_name``; ``part_config`` defaults to
    the launcher's (``FANOUT_PART_CONFIG``). This machine's partition is read from its files,
    the others from their servers.
    """

    _current: Optional["DistGraph"] = None

    def __init__(self, graph_name: str, gpb=None, part_config: Optional[str] = None):
        ctx = context.current()
        path = part_config or ctx.part_config
        if not path:
            raise ValueError("DistGraph: no partition config (part_config=..., or run under fanout-launch)")
        self._ctx = ctx
        self._native = _native.Graph(path, ctx.machine_id, servers=ctx.servers, ip_config=ctx.ip_config,
                                     num_servers=ctx.num_servers, deadline_seconds=ctx.deadline_seconds,
                                     unreachable_timeout=ctx.unreachable_timeout_seconds)
        context._watching.add(self)
        if graph_name and graph_name != self._native.graph_name:
            raise ValueError(f"DistGraph: graph_name {graph_name!r} does not match {path}'s "
                             f"{self._native.graph_name!r}")
        if not ctx.from_launcher:
            # Alone, this process is trainer 0 of machine `machine_id` of a job of one machine per
            # partition (what node_split and the loader's step count assume).
            ctx.world_size = self._native.num_parts * ctx.num_trainers
        if ctx.world_size != self._native.num_parts * ctx.num_trainers:
            raise ValueError(f"world size {ctx.world_size} != {self._native.num_parts} partitions (machines) x "
                             f"{ctx.num_trainers} trainers per machine; partition config {path}")
        self._reads = None  # reads through the servers (see _reader)
        self._last_batch = {}  # (field, id(ids)) -> (ids, rows) of the loader's latest batch
        self._last_inputs = None  # the latest batch's input nodes (a tensor, or {type: tensor})
        self._batch_source = None  # the loader that made the latest batch (a weak reference)
        self._batch_reads = set()  # fields read by the latest batch's input tensor since it came
        self._embeddings = []  # the job's DistEmbeddings on this graph (their rows pulled ahead)
        self._table_versions = {}  # DistEmbedding table key -> optimizer steps that updated it
        n = self._native
        self._ntypes = TypeRanges(n.node_type_map, "node")
        self._etypes = TypeRanges(n.edge_type_map, "edge")
        self._gpb = GraphPartitionBook(self)
        DistGraph._current = self
        self.ndata = _NodeData({f["name"]: DistTensor(None, name=f["name"], _graph=self)
                                for f in n.node_fields if not f["node_type"]})
        if self.is_typed():
            self.ndata.typed_hint = (f"; {path} is a typed graph: its fields are by node type, "
                                     f"g.nodes[TYPE].data[NAME] (types: {', '.join(self.ntypes)})")
        self.nodes = _NodeSpaces(self)
        self.edata: Dict[str, DistTensor] = {}

    def _reader(self):
        """Row reads go through this machine's servers too when it has any, so that a row written
        with ``t[ids] = rows`` (to every server of its partition) is read back as written; the
        loader keeps reading the partition's files."""
        if self._reads is None:
            if self._native.servers_of(self._native.machine_id):
                ctx = self._ctx
                self._reads = _native.Graph(self._native.part_config, ctx.machine_id, servers=ctx.servers,
                                            ip_config=ctx.ip_config, num_servers=ctx.num_servers,
                                            deadline_seconds=ctx.deadline_seconds, read_local_files=False)
            else:
                self._reads = self._native
        return self._reads

    def _remember_batch(self, rows, input_nodes, source=None):
        """The rows a loader fetched with its latest batch, ``[(field key, ids, rows)]`` (a key per
        type on a typed graph, ``TYPE/NAME``): ``g.ndata[feat][input_nodes]`` (DGL's examples read
        features this way; ``g.nodes[TYPE].data[feat][input_nodes[TYPE]]`` on a typed graph) then
        costs nothing: it is the batch's own tensor (``blocks[0].srcdata[feat]``), not a copy.
        `input_nodes` (a tensor, or {type: tensor}): the batch's inputs, whose DistEmbedding rows
        start coming now for the tables the script looked up by the previous batch's inputs.
        `source`: the loader, told which fields the script read by the inputs (_batch_reads)."""
        self._last_batch = {(key, id(ids)): (ids, x) for key, ids, x in rows if x is not None}
        self._last_inputs = input_nodes
        self._batch_source = weakref.ref(source) if source is not None else None
        self._batch_reads = set()
        for emb in self._embeddings:
            emb._pull_ahead(input_nodes)

    def _is_batch_input(self, ids, ntype) -> bool:
        """Whether `ids` is the latest batch's input tensor (of `ntype` on a typed graph)."""
        last = self._last_inputs
        return (last.get(ntype) if isinstance(last, dict) else last) is ids

    def _prefetched(self, key, ids):
        """The latest batch's rows of field `key` when `ids` is its own tensor of those nodes, else
        None (read elsewhere); a read by the batch's input tensor is noted either way."""
        if ids is self._last_inputs:
            self._batch_reads.add(key)
        hit = self._last_batch.get((key, id(ids)))
        return hit[1] if hit is not None and hit[0] is ids else None

    # DGL's questions.
    def is_typed(self) -> bool:
        """More than one node type or relation (DGL: not ``g.is_homogeneous``)."""
        return len(self._ntypes.names) > 1 or len(self._etypes.names) > 1

    @property
    def is_homogeneous(self) -> bool:
        return not self.is_typed()

    @property
    def ntypes(self):
        return list(self._native.node_types)

    @property
    def canonical_etypes(self):
        return [tuple(e) for e in self._native.edge_types]

    @property
    def etypes(self):
        return [e[1] for e in self.canonical_etypes]

    def _ntype_id(self, ntype: str) -> int:
        if ntype not in self._ntypes.names:
            raise KeyError(f"no node type {ntype!r} (this graph has: {', '.join(self._ntypes.names)})")
        return self._ntypes.names.index(ntype)

    def get_ntype_id(self, ntype) -> int:
        """A node type's index in ``ntypes`` (DGL's; ``None`` on a graph of one type is 0)."""
        if ntype is None and not self.is_typed():
            return 0
        return self._ntype_id(ntype)

    def get_etype_id(self, etype) -> int:
        """A relation's index in ``canonical_etypes``: its name when unique, or (src, rel, dst)."""
        if etype is None and not self.is_typed():
            return 0
        return canonical(etype, self.canonical_etypes)

    def to_canonical_etype(self, etype):
        return self.canonical_etypes[canonical(etype, self.canonical_etypes)]

    def num_nodes(self, ntype=None) -> int:
        if ntype is None:
            return self._native.num_nodes
        return self._ntypes.count(self._ntype_id(ntype))

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return self._native.num_edges
        return self._etypes.count(canonical(etype, self.canonical_etypes))

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    @property
    def graph_name(self) -> str:
        return self._native.graph_name

    @property
    def num_classes(self) -> int:
        return self._native.num_classes

    def get_partition_book(self) -> GraphPartitionBook:
        return self._gpb

    def get_node_partition_policy(self, ntype: str) -> "NodePartitionPolicy":
        """DGL's: where a node type's rows live (DistEmbedding(..., part_policy=...))."""
        if ntype not in self.ntypes:
            raise ValueError(f"get_node_partition_policy: no node type {ntype!r} (types: {', '.join(self.ntypes)})")
        return NodePartitionPolicy(ntype)

    def rank(self) -> int:
        return self._ctx.rank

    def barrier(self) -> None:
        """All trainers of the job wait for each other (torch.distributed's barrier: the script
        initialises the process group, as DGL's examples do)."""
        if self._ctx.world_size == 1:
            return
        if not torch.distributed.is_available() or not torch.distributed.is_initialized():
            raise RuntimeError("DistGraph.barrier() needs torch.distributed.init_process_group() first")
        torch.distributed.barrier()

    def in_degrees(self, v) -> torch.Tensor:
        return torch.from_numpy(self._native.degrees(_ids(v), out=False))

    def out_degrees(self, u) -> torch.Tensor:
        return torch.from_numpy(self._native.degrees(_ids(u), out=True))

    def find_edges(self, edges) -> Tuple[torch.Tensor, torch.Tensor]:
        src, dst = self._native.find_edges(_ids(edges))
        return torch.from_numpy(src), torch.from_numpy(dst)


def node_split(nodes, partition_book: Optional[GraphPartitionBook] = None, ntype: str = "_N",
               rank: Optional[int] = None, force_even: bool = True, node_trainer_ids=None) -> torch.Tensor:
    """This trainer's share of ``nodes`` (a boolean mask over all nodes, as a DistTensor or a
    tensor, or a tensor of node IDs), DGL's ``node_split``.

    With ``force_even`` (the default) it is fanout-train's own split: every trainer gets the same
    number of nodes, give or take one, preferring nodes its machine's partition owns; so a
    script and ``fanout-train`` train on the same seeds. Without it, each machine's trainers
    share only the nodes its partition owns (sizes may differ: keep the steps in step yourself).
    """
    graph = partition_book._graph if partition_book is not None else DistGraph._current
    if graph is None:
        raise RuntimeError("node_split needs a DistGraph (or its partition book)")
    if node_trainer_ids is not None:
        raise NotImplementedError("node_split: node_trainer_ids (DGL's trainer assignment) is not supported; "
                                  "fanout's split prefers each machine's own nodes already")
    ctx = context.current()
    rank = ctx.rank if rank is None else rank
    if graph.is_typed():
        return _typed_node_split(graph, nodes, ntype, rank, force_even, ctx)
    if isinstance(nodes, DistTensor):
        mask = graph._native.whole_node_field(nodes.name)
        ids = np.flatnonzero(mask.reshape(len(mask), -1).any(axis=1)).astype(np.int64)
    else:
        t = torch.as_tensor(nodes)
        if t.dtype == torch.bool or (t.dim() == 1 and len(t) == graph.num_nodes() and t.dtype == torch.uint8):
            ids = np.flatnonzero(t.cpu().numpy()).astype(np.int64)
        else:
            ids = np.unique(_ids(t))
    if force_even:
        return torch.from_numpy(_native.split_seeds(graph._native, ids, ctx.num_trainers, rank))
    s, e = graph._native.node_ranges[rank // ctx.num_trainers]
    local = ids[(ids >= s) & (ids < e)]
    return torch.from_numpy(np.ascontiguousarray(np.array_split(local, ctx.num_trainers)[rank % ctx.num_trainers]))


def _typed_node_split(graph: "DistGraph", nodes, ntype: str, rank: int, force_even: bool, ctx) -> torch.Tensor:
    """node_split on a typed graph: `nodes` (a mask over `ntype`'s nodes, or their type-wise IDs)
    split as on a graph of one type, over the same graph-wide IDs fanout-train splits; the
    result is type-wise IDs of `ntype`."""
    if isinstance(nodes, DistTensor):
        if nodes._ntype is None:
            raise ValueError("node_split: on a typed graph, pass a type's field (g.nodes[TYPE].data[NAME])")
        ntype = nodes._ntype
        mask = graph._native.whole_node_field(nodes._key)  # type-wise rows
        typewise = np.flatnonzero(mask.reshape(len(mask), -1).any(axis=1)).astype(np.int64)
    else:
        t = torch.as_tensor(nodes)
        if t.dtype == torch.bool:
            typewise = np.flatnonzero(t.cpu().numpy()).astype(np.int64)
        else:
            typewise = np.unique(_ids(t))
    if ntype in (None, "_N"):
        raise ValueError(f"node_split: a typed graph needs ntype= (one of {', '.join(graph.ntypes)})")
    t = graph._ntype_id(ntype)
    ids = graph._ntypes.to_homo(t, typewise)
    if force_even:
        mine = _native.split_seeds(graph._native, np.ascontiguousarray(ids), ctx.num_trainers, rank)
    else:
        s, e = graph._native.node_ranges[rank // ctx.num_trainers]
        local = ids[(ids >= s) & (ids < e)]
        mine = np.array_split(local, ctx.num_trainers)[rank % ctx.num_trainers]
    return torch.from_numpy(np.ascontiguousarray(graph._ntypes.to_typewise(mine)[1]))
