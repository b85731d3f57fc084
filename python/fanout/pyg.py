"""PyG's distributed names on fanout: a PyG script's ``torch_geometric.distributed`` imports
(deprecated by PyG in 2.7) pointed at fanout's data path, with batches as real
``torch_geometric.data.Data`` objects::

    from fanout.pyg import (DistContext, DistLinkNeighborLoader, DistNeighborLoader,
                            LocalFeatureStore, LocalGraphStore)

    graph = LocalGraphStore.from_partition("parts/", node_rank)      # a fanout partition folder
    feature = LocalFeatureStore.from_partition("parts/", node_rank)
    ctx = DistContext(rank=node_rank, global_rank=node_rank, world_size=n, global_world_size=n,
                      group_name="train")
    loader = DistNeighborLoader((feature, graph), num_neighbors=[15, 10, 5], input_nodes=train_idx,
                                batch_size=1024, shuffle=True, current_ctx=ctx,
                                master_addr=addr, master_port=port)
    for batch in loader:                       # torch_geometric.data.Data
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])

**IDs are the user's own**, as PyG's ``Partitioner`` keeps them: every node or edge ID a script
passes (``input_nodes``, a link loader's edge IDs, the stores' ``index``) or reads (``n_id``,
``e_id``, ``input_id``'s targets, ``get_global_id``, ``get_edge_index``) is the graph's ID as the
``Data`` numbered it before partitioning (type-wise on a ``HeteroData``). fanout numbers nodes its
own way inside (each partition's contiguous, DGL's convention) and maps at this boundary through
the partition's ``id_maps/`` (fanout-partition writes them); an ID no input node or stored edge
has is refused by name, and a partition without maps is refused, never guessed.

The script is started by ``fanout-launch ... -- python3 train.py`` (which starts the graph
servers and says where they are); the stores and loaders then read the job's graph through
``fanout.distributed``. A batch has PyG's fields: ``x`` (input features of every sampled node),
``edge_index`` (``[2, E]``, source to target, local indices into ``n_id``), ``n_id`` (the graph's
node IDs, the seeds first and then each hop's new nodes, as PyG orders them), ``e_id``, ``batch_size``,
``num_sampled_nodes`` and ``num_sampled_edges`` (per hop, so that ``trim_to_layer`` works),
``input_id`` and ``y``; with ``adjs=True``, also ``adjs``: per layer (input layer first)
``(adj_t, e_id, size)`` as PyG's old ``NeighborSampler`` gave them, ``adj_t`` a
``torch.sparse_csr`` matrix of the layer's block, for layer-by-layer models on CPU
(``conv((x, x[:size[1]]), adj_t)``: one fused sparse product over the layer's own
destinations instead of a gather and a scatter per edge; docs/python.md). Its products with
float32 CPU features (``torch.sparse.mm``, PyG's ``spmm`` with ``sum`` or ``mean``) run on
fanout's own kernel (:mod:`fanout.kernels`), with autograd; anything else is PyTorch's. Unlike
PyG's ``y`` (every sampled node's label), ``y`` holds the seeds' labels only, the rows PyG
scripts read (``batch.y[:batch.batch_size]``): fanout fetches labels for the seeds alone. Link batches add ``edge_label_index`` and ``edge_label`` (binary negative
sampling) or ``src_index``, ``dst_pos_index`` and ``dst_neg_index`` (triplet), as PyG's
``LinkNeighborLoader``. On a typed graph ``DistNeighborLoader`` yields ``HeteroData``:
``input_nodes=(node type, IDs)``, ``num_neighbors`` a list (every relation) or PyG's dict per edge
type, and per node type ``x``, ``n_id`` (type-wise IDs), per edge type ``edge_index`` and ``e_id``,
``num_sampled_nodes``/``num_sampled_edges`` as PyG's dicts, and the seed type's ``batch_size``,
``input_id`` and ``y``; ``to_hetero`` models and ``trim_to_layer`` run on it. PyG itself is
imported only when a loader is made, and its absence is an ImportError saying what to install.
docs/python.md has the rest.
"""

import concurrent.futures
import contextlib
import glob
import json
import os
from typing import Iterator, List, Optional, Sequence

import numpy as np

import torch

from fanout import distributed as _fd
from fanout import partition as _partition
from fanout.distributed import EID, NID
from fanout.distributed.graph import _count
from fanout.id_maps import IdMaps
from fanout.kernels import fused_csr

__all__ = ["DistContext", "LocalGraphStore", "LocalFeatureStore", "Partitioner", "DistNeighborSampler", "DistLoader",
           "DistNeighborLoader", "DistLinkNeighborLoader", "write_example_inputs"]


def _pyg(hetero: bool = False):
    """torch_geometric's Data (or HeteroData) class, or an ImportError that says what to install."""
    try:
        from torch_geometric.data import Data, HeteroData
    except ImportError as e:
        raise ImportError("fanout.pyg yields torch_geometric.data.Data batches: install PyG into this environment "
                          f"(pip install torch_geometric); the import failed with: {e}") from e
    return HeteroData if hetero else Data


class DistContext:
    """PyG's ``DistContext``: this process's place in the job. fanout takes the ranks from
    ``fanout-launch``'s environment; these are kept for the script's own use."""

    def __init__(self, rank: int, global_rank: int, world_size: int, global_world_size: int, group_name: str,
                 role=None):
        self.rank, self.global_rank = int(rank), int(global_rank)
        self.world_size, self.global_world_size = int(world_size), int(global_world_size)
        self.group_name, self.role = group_name, role

    def __repr__(self) -> str:
        return (f"DistContext(rank={self.rank}, global_rank={self.global_rank}, world_size={self.world_size}, "
                f"global_world_size={self.global_world_size}, group_name={self.group_name!r})")


def _node_store_fields(store) -> dict:
    """A PyG node store's x, y and split masks as fanout fields (feat, label, the masks)."""
    fields = {}
    if getattr(store, "x", None) is not None:
        fields["feat"] = _partition.numpy(store.x)
    if getattr(store, "y", None) is not None:
        fields["label"] = _partition.numpy(store.y).astype(np.int64)
    for mask in ("train_mask", "val_mask", "test_mask"):
        if getattr(store, mask, None) is not None:
            fields[mask] = _partition.numpy(getattr(store, mask))
    return fields


class Partitioner:
    """PyG's ``Partitioner(data, num_parts, root)``: ``generate_partition()`` writes a fanout
    partition of ``data`` into ``root``, by METIS, with fanout-partition, keeping ``data``'s own
    node and edge IDs as the IDs fanout.pyg takes and returns (PyG's contract; fanout numbers
    them its own way inside and maps at the boundary, through the partition's ``id_maps/``). A
    ``Data``: its ``edge_index`` (edge ``i`` = column ``i``) and, where present, ``x``, ``y``
    and ``train_mask``/``val_mask``/``test_mask``. A ``HeteroData``: every node type's count,
    ``x``, ``y`` and masks and every edge type's ``edge_index``. ``fanout_args`` adds flags
    (``["--add-reverse-edges"]`` for a graph stored one way, as PyG's ``ToUndirected`` would
    make it: a reverse edge's ID is then ``E + i`` for input edge ``i``). ``recursive`` is
    METIS's bisection in PyG and is refused here (fanout uses k-way)."""

    def __init__(self, data, num_parts: int, root: str, recursive: bool = False, *, graph_name: str = "graph",
                 fanout_args: Sequence[str] = ()):
        if recursive:
            raise NotImplementedError("Partitioner: recursive=True (METIS recursive bisection) is not supported; "
                                      "fanout-partition uses k-way METIS")
        typed = bool(getattr(data, "edge_types", None))
        if not typed and not hasattr(data, "edge_index"):
            raise NotImplementedError("Partitioner: a Data with edge_index, or a HeteroData")
        if typed:
            for src, rel, dst in data.edge_types:
                if "edge_index" not in data[src, rel, dst]:
                    raise ValueError(f"Partitioner: edge type {(src, rel, dst)} has no edge_index")
        self.data, self.num_parts, self.root, self.typed = data, int(num_parts), root, typed
        self.graph_name, self.fanout_args = graph_name, list(fanout_args)

    def _write(self, d: str) -> None:
        data = self.data
        if self.typed:
            _partition.write_typed(
                d, {t: data[t].num_nodes for t in data.node_types},
                {et: tuple(_partition.numpy(data[et].edge_index)) for et in data.edge_types},
                {t: _node_store_fields(data[t]) for t in data.node_types}, {})
        else:
            src, dst = _partition.numpy(data.edge_index)
            _partition.write_plain(d, src, dst, _node_store_fields(data), {})

    def generate_partition(self) -> str:
        """Writes the partition; returns its config file (ROOT/<graph_name>.json)."""
        sizes = [] if self.typed else ["--num-nodes", str(int(self.data.num_nodes))]
        try:
            return _partition.run(self._write, self.root, self.num_parts, self.graph_name,
                                  [*sizes, *self.fanout_args])
        except RuntimeError as e:
            raise RuntimeError(f"Partitioner: {e}") from None


def write_example_inputs(part_config: str, root: str, dataset: str, node_type: Optional[str] = None) -> None:
    """The files PyG's distributed examples (``node_ogb_cpu.py``) read besides the partition, made
    from a fanout partition instead of PyG's ``partition_graph.py``: under ``root``,
    ``{dataset}-partitions`` (a link to the partition's folder), ``{dataset}-label/label.pt`` (every
    node's label by the graph's own node ID; on a typed graph ``node_type``'s, by its type-wise
    ID) and ``{dataset}-{train,test}-partitions/partition{k}.pt`` (the graph's own IDs of the
    training and test nodes partition ``k`` holds, as PyG's script splits them). Reads the
    partition's files and ID maps; no servers needed. ``python -m fanout.pyg --part-config
    PARTS/g.json --root ROOT --dataset ogbn-products`` runs it."""
    config_path = _partition_config(part_config)
    with open(config_path) as f:
        config = json.load(f)
    maps = IdMaps(config_path)
    base = os.path.dirname(os.path.abspath(config_path))
    num_parts = int(config["num_parts"])
    typed = maps.node_types != ["_N"]
    if typed and node_type is None:
        labelled = [t for t in maps.node_types if os.path.exists(os.path.join(base, "part0", "node_data", t, "label.npy"))]
        if len(labelled) != 1:
            raise ValueError(f"{config_path}: name the labelled node type (node_type=; types with labels: "
                             f"{', '.join(labelled) or 'none'})")
        node_type = labelled[0]
    sub = os.path.join("node_data", node_type) if typed else "node_data"
    # Each partition's rows of the type are fanout's IDs [b, e) (DGL's node_map); the maps say
    # whose they are.
    ranges = maps.ranges("node", maps.node_types.index(node_type) if typed else 0)
    labels = np.full(maps.num_nodes(node_type), -1, dtype=np.int64)
    split = {"train": [], "test": []}
    for k in range(num_parts):
        part = os.path.join(base, f"part{k}", sub)
        if not os.path.exists(os.path.join(part, "label.npy")):
            raise FileNotFoundError(f"{os.path.join(part, 'label.npy')}: the partition has no labels")
        orig = maps.node_orig(np.arange(*ranges[k], dtype=np.int64))
        labels[orig] = np.load(os.path.join(part, "label.npy"))
        for which in split:
            path = os.path.join(part, f"{which}_mask.npy")
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: the partition has no {which} split (partition a dataset with "
                                        "train/valid/test indices)")
            split[which].append(torch.from_numpy(np.sort(orig[np.flatnonzero(np.load(path))])))
    os.makedirs(root, exist_ok=True)
    link = os.path.join(root, f"{dataset}-partitions")
    if os.path.islink(link):
        os.remove(link)
    os.symlink(base, link)
    os.makedirs(os.path.join(root, f"{dataset}-label"), exist_ok=True)
    torch.save(torch.from_numpy(labels), os.path.join(root, f"{dataset}-label", "label.pt"))
    for which, parts in split.items():
        os.makedirs(os.path.join(root, f"{dataset}-{which}-partitions"), exist_ok=True)
        for k, ids in enumerate(parts):
            torch.save(ids, os.path.join(root, f"{dataset}-{which}-partitions", f"partition{k}.pt"))


class DistNeighborSampler:
    """PyG's name, for imports: fanout's loaders make their batches with fanout's own sampler
    (threads or sampler processes), so this is not constructed by scripts."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("fanout.pyg: DistNeighborLoader / DistLinkNeighborLoader make their own sampler; "
                                  "pass num_neighbors to them instead of a DistNeighborSampler")


class DistLoader:
    """PyG's base-class name, for imports and isinstance checks: both of fanout.pyg's loaders."""


def _partition_config(root: str) -> str:
    """The partition config of a fanout partition folder (or the config file itself)."""
    if os.path.isfile(root):
        return root
    found = []
    for path in sorted(glob.glob(os.path.join(root, "*.json"))):
        with open(path) as f:
            if "num_parts" in json.load(f):
                found.append(path)
    if len(found) != 1:
        raise FileNotFoundError(f"{root}: expected one fanout partition config (<graph>.json, written by "
                                f"fanout-partition), found {len(found)}")
    return found[0]


class _Ids:
    """fanout.pyg's boundary between the user's IDs (PyG's: the graph's own, as its ``Data``
    numbered them before partitioning; type-wise on a typed graph) and the IDs fanout.distributed
    speaks (fanout's renumbered ones: graph-wide on a one-type graph, fanout's type-wise IDs of a
    typed graph's type). Vectorised lookups in the partition's mapped ID maps
    (:class:`fanout.id_maps.IdMaps`), no Python loop per ID."""

    def __init__(self, maps: IdMaps, g: "_fd.DistGraph"):
        self.maps, self._g = maps, g
        self._typed = g.is_typed()

    def ntype(self, ntype) -> int:
        return self._g.get_ntype_id(None if ntype in (None, "_N") and not self._typed else ntype)

    def etype(self, etype) -> int:
        return self._g.get_etype_id(None if etype in (None, "_E", (None, None)) and not self._typed else etype)

    def nodes_in(self, orig, ntype=None) -> torch.Tensor:
        """fanout's IDs of the user's node IDs (ValueError names one no input node has)."""
        t = self.ntype(ntype)
        new = self.maps.node_new(orig, t)
        return torch.from_numpy(self._g._ntypes.to_typewise(new)[1] if self._typed else new)

    def nodes_out(self, ids, ntype=None) -> torch.Tensor:
        """The user's IDs of fanout's node IDs."""
        ids = np.asarray(ids.cpu() if isinstance(ids, torch.Tensor) else ids, dtype=np.int64)
        if self._typed:
            ids = self._g._ntypes.to_homo(self.ntype(ntype), ids)
        return torch.from_numpy(self.maps.node_orig(ids))

    def edges_in(self, orig, etype=None) -> torch.Tensor:
        """fanout's IDs of the user's edge IDs (ValueError names one no stored edge has)."""
        new = self.maps.edge_new(orig, self.etype(etype))
        return torch.from_numpy(self._g._etypes.to_typewise(new)[1] if self._typed else new)

    def edges_out(self, ids, etype=None) -> torch.Tensor:
        """The user's IDs of fanout's edge IDs (a one-type graph's ``e >= input edges``: the
        reverse ``--add-reverse-edges`` stored for input edge ``e - input edges``)."""
        ids = np.asarray(ids.cpu() if isinstance(ids, torch.Tensor) else ids, dtype=np.int64)
        if self._typed:
            ids = self._g._etypes.to_homo(self.etype(etype), ids)
        return torch.from_numpy(self.maps.edge_orig(ids))

    def partitions(self, new, of_nodes: bool) -> torch.Tensor:
        """The partition of each of fanout's graph-wide IDs `new` (-1 stays -1: not stored)."""
        ranges = self._g._native.node_ranges if of_nodes else self._g._native.edge_ranges
        part = np.searchsorted(np.array([e for _, e in ranges], dtype=np.int64), new, side="right")
        part[new < 0] = -1
        return torch.from_numpy(part)

    def local_nodes(self, ntype=None) -> torch.Tensor:
        """fanout's IDs of this machine's partition's nodes (of ``ntype``), in local row order."""
        k = self._g._native.machine_id
        b, e = self._g._ntypes.part_range(self.ntype(ntype), k) if self._typed else self._g._native.node_ranges[k]
        return torch.arange(b, e, dtype=torch.int64)

    def local_edges(self, etype=None) -> torch.Tensor:
        """fanout's IDs of the edges this machine's partition stores (of ``etype``), in order."""
        k = self._g._native.machine_id
        b, e = self._g._etypes.part_range(self.etype(etype), k) if self._typed else self._g._native.edge_ranges[k]
        return torch.arange(b, e, dtype=torch.int64)


def _whole(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


class _Store:
    """What LocalGraphStore and LocalFeatureStore share: the partition, its ID maps and, once a
    read or a loader needs it, the job's graph (fanout.distributed.DistGraph, through the servers
    fanout-launch started). Every ID they take or give is the user's own (module docstring)."""

    def __init__(self, config_path: str, partition_id: int):
        with open(config_path) as f:
            config = json.load(f)
        self._config_path = config_path
        self.partition_idx = int(partition_id)
        self.num_partitions = int(config["num_parts"])
        if not 0 <= self.partition_idx < self.num_partitions:
            raise ValueError(f"{config_path}: partition {partition_id} of {self.num_partitions}")
        self._maps = IdMaps(config_path)  # refused by name when the partition has none
        # DGL's keys: "ntypes" {name: index}, "etypes" {"SRC:REL:DST": index} (one "_N"/"_E" untyped).
        node_types = sorted(config.get("ntypes") or {}, key=lambda t: config["ntypes"][t])
        edge_types = [tuple(t.split(":")) if ":" in t else t
                      for t in sorted(config.get("etypes") or {}, key=lambda t: config["etypes"][t])]
        if node_types == ["_N"]:
            node_types, edge_types = [], []
        # PyG's META.json keys; fanout's partitions store each node's in-edges by destination.
        self.meta = {"num_parts": self.num_partitions, "is_hetero": len(node_types) > 1,
                     "node_types": node_types or None, "edge_types": edge_types or None, "is_sorted": True,
                     "graph_name": config.get("graph_name"), "partition_idx": self.partition_idx}
        self._name = config.get("graph_name")
        self._graph = None
        self._ids = None
        self._pb = {}

    @classmethod
    def from_partition(cls, root: str, partition_id: int):
        """The store of partition ``partition_id`` of the fanout partition in folder ``root`` (or
        its config file)."""
        return cls(_partition_config(root), partition_id)

    def graph(self) -> "_fd.DistGraph":
        """The job's graph, opened once (fanout.distributed.initialize first, if the script did not)."""
        if self._graph is None:
            if not _fd.is_initialized():
                _fd.initialize(part_config=self._config_path, machine_id=self.partition_idx)
            self._graph = _fd.DistGraph(self._name)
        return self._graph

    def ids(self) -> _Ids:
        """The boundary between the user's IDs and fanout's (:class:`_Ids`)."""
        if self._ids is None:
            self._ids = _Ids(self._maps, self.graph())
        return self._ids

    @property
    def is_hetero(self) -> bool:
        return self.meta["is_hetero"]

    def _partition_book(self, of_nodes: bool):
        """PyG's node_pb / edge_pb: the partition of every node (edge) by the user's ID, a tensor,
        or on a typed graph {type: tensor}; an edge no partition stores (held out) is -1."""
        if of_nodes not in self._pb:
            ids = self.ids()

            def book(t):
                i = ids.ntype(t) if of_nodes else ids.etype(t)
                return ids.partitions(self._maps.inverse("node" if of_nodes else "edge", i), of_nodes)

            types = self.meta["node_types"] if of_nodes else self.meta["edge_types"]
            self._pb[of_nodes] = {t: book(t) for t in types} if self.is_hetero else book(None)
        return self._pb[of_nodes]


class LocalGraphStore(_Store):
    """PyG's ``LocalGraphStore`` of one partition: ``from_partition(root, partition_id)``,
    ``meta``, ``num_partitions``, ``partition_idx``, ``node_pb`` / ``edge_pb`` (the partition of
    every node / edge, by the user's ID), ``get_partition_ids_from_nids`` /
    ``get_partition_ids_from_eids``, and the partition's own edges as PyG's store holds them:
    ``get_edge_index(edge_type, layout="coo")`` (``[2, E]``, the user's node IDs, sorted by
    destination), ``get_edge_id(...)`` (the user's edge IDs of the same edges),
    ``get_all_edge_attrs()``."""

    @property
    def node_pb(self):
        return self._partition_book(True)

    @property
    def edge_pb(self):
        return self._partition_book(False)

    def get_partition_ids_from_nids(self, ids, node_type=None) -> torch.Tensor:
        io = self.ids()
        return io.partitions(self._maps.node_new(ids, io.ntype(node_type)), True)

    def get_partition_ids_from_eids(self, eids, edge_type=None) -> torch.Tensor:
        io = self.ids()
        return io.partitions(self._maps.edge_new(eids, io.etype(edge_type)), False)

    @staticmethod
    def _edge_type(args, kwargs):
        """The edge type of PyG's GraphStore call forms: an EdgeAttr, positional or keyword."""
        attr = args[0] if args else kwargs.get("edge_attr", kwargs.get("edge_type"))
        layout = kwargs.get("layout", getattr(attr, "layout", "coo"))
        layout = getattr(layout, "value", layout)
        if layout != "coo":
            raise NotImplementedError(f"fanout.pyg: get_edge_index(layout={layout!r}): the partition's edges come as "
                                      "'coo' (PyG's LocalGraphStore holds them so too)")
        return getattr(attr, "edge_type", attr)

    def get_edge_index(self, *args, **kwargs) -> torch.Tensor:
        """The edges this partition stores (of the edge type), ``[2, E]`` source over target in the
        user's node IDs, sorted by target (PyG's ``is_sorted``): what PyG's
        ``LocalGraphStore.from_partition`` holds for the partition."""
        etype = self._edge_type(args, kwargs)
        ids, g = self.ids(), self.graph()
        local = ids.local_edges(etype)
        homo = g._etypes.to_homo(ids.etype(etype), local.numpy()) if g.is_typed() else local.numpy()
        src, dst = g._native.find_edges(np.ascontiguousarray(homo))
        if g.is_typed():
            s, _, d = g.canonical_etypes[ids.etype(etype)]
            src, dst = g._ntypes.to_typewise(src)[1], g._ntypes.to_typewise(dst)[1]
            return torch.stack([ids.nodes_out(src, s), ids.nodes_out(dst, d)])
        return torch.stack([ids.nodes_out(src), ids.nodes_out(dst)])

    def get_edge_id(self, *args, **kwargs) -> torch.Tensor:
        """The user's IDs of the edges ``get_edge_index`` gives, in the same order."""
        etype = self._edge_type(args, kwargs)
        ids = self.ids()
        return ids.edges_out(ids.local_edges(etype), etype)

    def get_all_edge_attrs(self) -> list:
        """PyG's ``EdgeAttr`` of every edge type the graph has (layout coo, sorted)."""
        from torch_geometric.data import EdgeAttr
        g = self.graph()
        if not g.is_typed():
            return [EdgeAttr(None, "coo", True, (g.num_nodes(), g.num_nodes()))]
        return [EdgeAttr(cet, "coo", True, (g.num_nodes(cet[0]), g.num_nodes(cet[2]))) for cet in g.canonical_etypes]


class LocalFeatureStore(_Store):
    """PyG's ``LocalFeatureStore`` of one partition, over the job's servers: ``from_partition(root,
    partition_id)``, ``meta``, ``num_partitions``, ``partition_idx``, ``node_feat_pb`` /
    ``edge_feat_pb``, and PyG's reads, every ID the user's own:

    - ``get_global_id(group_name)``: the user's IDs of this partition's nodes (of the node type),
      the order of its local rows;
    - ``store[group, attr]``, ``store[group, attr, index]``, ``get_tensor(...)``: this
      partition's rows (``index``: positions among them, as PyG's local store takes it);
    - ``get_tensor_from_global_id(group_name=, attr_name=, index=)`` and
      ``lookup_features(index, is_node_feat=True, input_type=None)`` (a completed
      ``torch.futures.Future``): the rows of any node of the graph, by the user's IDs (PyG's
      local store answers its own nodes only; fanout fetches the rest from their servers);
    - ``labels``: every node's label by the user's ID (``{node type: labels}`` on a typed graph,
      for the types that have one), or what the script set (PyG's ``feature.labels = ...``).

    ``attr`` ``"x"`` is the graph's feature field (``feat``), ``"y"`` its labels (``label``);
    any other name is the node field of that name."""

    _labels = None  # set by a script (PyG's ``feature.labels = torch.load(...)``)
    _ATTRS = {"x": ("feat", "features"), "y": ("label", "labels")}

    @property
    def node_feat_pb(self):
        return self._partition_book(True)

    @property
    def edge_feat_pb(self):
        return self._partition_book(False)

    @property
    def labels(self):
        if self._labels is not None:
            return self._labels
        g = self.graph()
        if not g.is_typed():
            return self._rows(None, "y", _whole(g.num_nodes()))
        return {t: self._rows(t, "y", _whole(g.num_nodes(t))) for t in g.ntypes if "label" in g.nodes[t].data}

    @labels.setter
    def labels(self, value):
        """PyG's: the labels batches take ``y`` from, by the user's node ID (on a typed graph the
        seed type's, or ``{node type: labels}``), instead of the partition's ``label`` field."""
        self._labels = value

    def _field(self, group, attr):
        """The DistTensor of PyG's (group, attr): a node type's field on a typed graph."""
        g = self.graph()
        if isinstance(group, tuple):  # an edge type, or (None, None): PyG's edges of a one-type graph
            raise NotImplementedError(f"fanout.pyg: edge features ({group!r}, {attr!r}) are read by the loaders "
                                      "(prefetch of edge fields), not through the feature store")
        data = g.nodes[group].data if g.is_typed() else g.ndata
        for name in self._ATTRS.get(attr, (attr,)):
            if name in data:
                return data[name]
        raise KeyError(f"no node field {attr!r} (this graph has: {', '.join(sorted(data))}; 'x' is 'feat', 'y' "
                       "is 'label')")

    def _rows(self, group, attr, orig) -> torch.Tensor:
        """Rows of (group, attr) of the user's node IDs `orig`."""
        return self._field(group, attr)[self.ids().nodes_in(orig, group)]

    @staticmethod
    def _attr(args, kwargs):
        """(group_name, attr_name, index) of PyG's FeatureStore call forms: a TensorAttr, a tuple,
        positional or keyword arguments."""
        if len(args) == 1 and hasattr(args[0], "attr_name"):
            a = args[0]
            return a.group_name, a.attr_name, getattr(a, "index", None)
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        names = ("group_name", "attr_name", "index")
        values = dict(zip(names, args), **kwargs)
        index = values.get("index")
        unset = getattr(index, "name", None) == "UNSET"  # PyG's _FieldStatus.UNSET
        return values.get("group_name"), values.get("attr_name"), None if unset else index

    def get_global_id(self, group_name=None) -> torch.Tensor:
        """The user's IDs of this partition's nodes of ``group_name`` (a node type; None on a
        one-type graph), in the order of its local rows (PyG's)."""
        ids = self.ids()
        return ids.nodes_out(ids.local_nodes(group_name), group_name)

    def get_tensor(self, *args, **kwargs) -> torch.Tensor:
        """PyG's: this partition's rows of (group, attr), ``index`` positions among them."""
        group, attr, index = self._attr(args, kwargs)
        local = self.ids().local_nodes(group)
        if index is not None:
            pos = torch.as_tensor(index)
            pos = pos.nonzero().flatten() if pos.dtype == torch.bool else pos.long()
            if pos.numel() and (int(pos.min()) < -len(local) or int(pos.max()) >= len(local)):
                raise IndexError(f"LocalFeatureStore[{group!r}, {attr!r}, index]: index holds positions among this "
                                 f"partition's {len(local)} rows (PyG's local index); for any node by its ID use "
                                 "get_tensor_from_global_id(group_name=, attr_name=, index=IDs)")
            local = local[pos]
        return self._field(group, attr)[local]

    __getitem__ = get_tensor

    def get_tensor_from_global_id(self, *args, **kwargs) -> torch.Tensor:
        """The rows of (group, attr) of the user's node IDs ``index`` (any node of the graph)."""
        group, attr, index = self._attr(args, kwargs)
        if index is None:
            raise ValueError("get_tensor_from_global_id needs index= (the user's node IDs)")
        return self._rows(group, attr, index)

    def lookup_features(self, index, is_node_feat: bool = True, input_type=None):
        """PyG's: the features (``x``) of the user's node IDs ``index``, as a completed
        ``torch.futures.Future``."""
        if not is_node_feat:
            raise NotImplementedError("fanout.pyg: lookup_features(is_node_feat=False): edge features come with "
                                      "the loaders' batches")
        fut = torch.futures.Future()
        fut.set_result(self._rows(input_type, "x", index))
        return fut

    def get_all_tensor_attrs(self) -> list:
        """PyG's ``TensorAttr`` (group, name) of every node field."""
        from torch_geometric.data import TensorAttr
        g = self.graph()
        return [TensorAttr(f["node_type"] or None, f["name"]) for f in g._native.node_fields]


_TYPED_ADJS = ("adjs=True is for graphs with one node type: a typed graph's batches are HeteroData, whose "
               "relations' edge_index to_hetero models take")


def _stores(data):
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and isinstance(data[0], LocalFeatureStore)
            and isinstance(data[1], LocalGraphStore)):
        raise TypeError("data must be (LocalFeatureStore, LocalGraphStore), as PyG's "
                        "(LocalFeatureStore.from_partition(...), LocalGraphStore.from_partition(...))")
    return data


def _refuse(name, value, default, why):
    if value != default:
        raise NotImplementedError(f"fanout.pyg: {name}={value!r} is not supported ({why})")


def _check_common(loader: str, kwargs, time_attr, dist_sampler, disjoint, subgraph_type, concurrency):
    """What both loaders refuse: unknown keywords, temporal sampling, another sampler, disjoint
    or non-directional subgraphs, a concurrency below 1."""
    _pyg()
    if kwargs:
        raise TypeError(f"{loader} got unexpected keyword argument(s): {', '.join(sorted(kwargs))}")
    _refuse("time_attr", time_attr, None, "temporal sampling")
    _refuse("dist_sampler", dist_sampler, None, "fanout's own sampler makes the batches")
    _refuse("disjoint", disjoint, False, "one subgraph per batch")
    _refuse("subgraph_type", str(getattr(subgraph_type, "value", subgraph_type)), "directional",
            "sampled in-edges, PyG's default")
    if int(concurrency) < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")


def _fanouts(num_neighbors, typed: bool) -> list:
    """PyG's num_neighbors (hop 1 first; on a typed graph a list for every relation or a dict
    {edge type: counts}) as fanout's fanouts (input layer first; per layer an int or a dict)."""
    if isinstance(num_neighbors, dict):
        if not typed:
            raise NotImplementedError("fanout.pyg: num_neighbors per edge type is for a typed graph; this one has one "
                                      "node type: pass a list")
        hops = {len(v) for v in num_neighbors.values()}
        if len(hops) != 1:
            raise ValueError("num_neighbors: every edge type needs the same number of hops")
        n = hops.pop()
        return [{tuple(k) if isinstance(k, (list, tuple)) else k: _count(v[h], "num_neighbors")
                 for k, v in num_neighbors.items()} for h in range(n)][::-1]
    hops = [_count(n, "num_neighbors") for n in num_neighbors]
    if not hops or any(n < -1 or n == 0 for n in hops):
        raise ValueError(f"num_neighbors: {list(num_neighbors)} must be counts >= 1 (or -1 for all), hop 1 first")
    return hops[::-1]


class _PygLoader(DistLoader):
    """The iteration, length, device and ``with`` of both loaders over a fanout.distributed
    loader whose batches `_to_data` turns into Data."""

    def __init__(self, transform, device, num_workers: int = 0, adjs: bool = False):
        self._transform = transform
        self._device = device
        self.num_workers = int(num_workers)  # PyG's attribute: sampler processes (0: threads here)
        self._adjs = bool(adjs)
        self._ones = torch.ones(0)  # the adjacencies' values, one buffer sliced (they are never written)

    def _layer_adjs(self, blocks, e_ids):
        """PyG's NeighborSampler ``adjs`` of fanout's blocks: per layer, input layer first,
        ``(adj_t, e_id, size)`` with ``adj_t`` the block as a ``torch.sparse_csr`` matrix
        ``[num_dst, num_src]`` (the block's own CSC arrays, not copied), ``size`` ``(num_src,
        num_dst)``. PyG's ``SAGEConv`` and other convolutions with ``message_and_aggregate``
        multiply by it (one fused sparse product, fanout's kernel: :func:`fanout.kernels.fused_csr`)
        and compute only the layer's destinations."""
        need = max(b.num_edges() for b in blocks)
        if self._ones.numel() < need:
            self._ones = torch.ones(max(need, 2 * self._ones.numel()))
        out = []
        for b, e_id in zip(blocks, e_ids):
            nd, ns = b.num_dst_nodes(), b.num_src_nodes()
            adj_t = fused_csr(b.indptr, b.indices, nd, ns, self._ones)
            out.append((adj_t, e_id, (ns, nd)))
        return out

    def __len__(self) -> int:
        return len(self._loader)

    def __iter__(self) -> Iterator:
        # Each batch is taken from fanout's loader and made into PyG's form (its IDs mapped to the
        # graph's own: gathers from the mapped ID maps, ~10-20 ms a batch of a 500K-node graph)
        # on a helper thread one batch ahead, while the script computes on the one before; NumPy's
        # gathers and PyTorch's operators both let go of the GIL.
        batches = iter(self._loader)

        def make():
            batch = next(batches, None)
            return None if batch is None else self._to_data(*batch)

        ahead = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fanout-pyg")
        try:
            pending = ahead.submit(make)
            while True:
                data = pending.result()
                if data is None:
                    return
                pending = ahead.submit(make)
                if self._device is not None:
                    data = data.to(self._device)
                yield self._transform(data) if self._transform is not None else data
        finally:
            ahead.shutdown(wait=True)  # a batch being made finishes before its loader is let go
            batches.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def enable_multithreading(self, num_threads: Optional[int] = None):
        """PyG's: the sampling threads of this process, used from the next epoch on when the job
        has no sampler processes (fanout's loaders then sample in threads here). Usable as PyG's
        context manager (``with loader.enable_multithreading(10): ...``); leaving it keeps the
        loader as it is."""
        if num_threads is not None:
            self._loader._loader["num_threads"] = max(1, int(num_threads))
        return contextlib.nullcontext(self)

    def close(self):
        self._loader.close()

    def _subgraph(self, Data, blocks, feat_name):
        """The sampled subgraph of fanout's blocks (input layer first) in PyG's layout, its
        ``n_id`` and ``e_id`` the user's IDs (and with ``adjs``, each layer's too)."""
        ids = self._ids
        n_id = ids.nodes_out(blocks[0].srcdata[NID])
        e_ids = [ids.edges_out(b.edata[EID]) for b in blocks]
        hops = blocks[::-1]  # hop 1 (the seeds' in-edges) first
        edge_index = torch.cat([torch.stack([b.indices, b.dst]) for b in hops], 1)
        num_nodes = [hops[0].num_dst_nodes()] + [b.num_src_nodes() - b.num_dst_nodes() for b in hops]
        data = Data(edge_index=edge_index, n_id=n_id, e_id=torch.cat(e_ids[::-1]), num_nodes=int(n_id.numel()),
                    num_sampled_nodes=num_nodes, num_sampled_edges=[b.num_edges() for b in hops])
        if feat_name in blocks[0].srcdata:
            data.x = blocks[0].srcdata[feat_name]
        if self._adjs:
            data.adjs = self._layer_adjs(blocks, e_ids)
        return data

    def _hetero_subgraph(self, HeteroData, blocks, feat_name):
        """The same for typed blocks (fanout.distributed.HeteroBlock): per node type its sources
        of the input layer (each inner layer's are a prefix of them, so the per-type indices of
        every layer's edges hold), per relation its edges hop 1 first."""
        data = HeteroData()
        first, hops = blocks[0], blocks[::-1]
        feats = first.srcdata[feat_name] if feat_name in first.srcdata else {}
        ids = self._ids
        for t in first.ntypes:
            data[t].n_id = ids.nodes_out(first.srcnodes[t].data[NID], t)
            data[t].num_nodes = first.num_src_nodes(t)
            if t in feats:
                data[t].x = feats[t]
        for cet in first.canonical_etypes:
            data[cet].edge_index = torch.cat([b.edge_index_dict[cet] for b in hops], 1)
            data[cet].e_id = torch.cat([ids.edges_out(b.edge_ids(cet), cet) for b in hops])
        data.num_sampled_nodes = {t: [hops[0].num_dst_nodes(t)] + [b.num_src_nodes(t) - b.num_dst_nodes(t) for b in hops]
                                  for t in first.ntypes}
        data.num_sampled_edges = {cet: [b.num_edges(cet) for b in hops] for cet in first.canonical_etypes}
        return data


class DistNeighborLoader(_PygLoader):
    """PyG's ``DistNeighborLoader``: batches of ``batch_size`` seeds from ``input_nodes`` (global
    node IDs or a boolean mask; None: every node), ``num_neighbors`` per hop (hop 1 first; -1:
    all), as ``Data`` (module docstring). ``shuffle``/``drop_last`` as PyG's;
    ``num_workers`` > 0 makes that many fanout sampler processes (0: the job's, else threads);
    ``concurrency`` is how many batches are made ahead. ``master_addr``, ``master_port``,
    ``current_ctx``, ``num_rpc_threads``, ``async_sampling``, ``filter_per_worker`` and
    ``persistent_workers`` are accepted and not needed (fanout's batches come from its own
    samplers). Temporal sampling, ``disjoint`` and other subgraph types are refused by name."""

    def __init__(self, data, num_neighbors, master_addr: Optional[str] = None, master_port=None,
                 current_ctx: Optional[DistContext] = None, input_nodes=None, input_time=None, dist_sampler=None,
                 replace: bool = False, subgraph_type="directional", disjoint: bool = False,
                 temporal_strategy: str = "uniform", time_attr: Optional[str] = None, transform=None,
                 concurrency: int = 1, num_rpc_threads: int = 16, filter_per_worker: Optional[bool] = False,
                 async_sampling: bool = True, device=None, *, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, num_workers: int = 0, persistent_workers: bool = False, seed: int = 0,
                 adjs: bool = False, **kwargs):
        _check_common("DistNeighborLoader", kwargs, time_attr, dist_sampler, disjoint, subgraph_type, concurrency)
        _refuse("input_time", input_time, None, "temporal sampling")
        feature, graph = _stores(data)
        super().__init__(transform, device, num_workers, adjs)
        self._feature = feature
        g = graph.graph()
        self._typed = g.is_typed()
        if adjs and self._typed:
            raise ValueError(_TYPED_ADJS)
        self._input_type = None
        if isinstance(input_nodes, tuple):  # PyG's (node type, IDs or mask) of a typed graph
            if not self._typed:
                raise ValueError("input_nodes=(node type, IDs) is for a typed graph; this one has one node type")
            self._input_type, input_nodes = input_nodes
        elif self._typed:
            raise ValueError(f"input_nodes on a typed graph: pass (node type, IDs), e.g. ({g.ntypes[0]!r}, ids) "
                             f"(types: {', '.join(g.ntypes)})")
        # The user's IDs (PyG's contract) in, fanout's to its loader: input_id and the script's own
        # labels index the former.
        self._ids = ids = graph.ids()
        count = ids.maps.num_nodes(ids.ntype(self._input_type))
        if input_nodes is None:
            orig = torch.arange(count)
        else:
            t = torch.as_tensor(input_nodes)
            if t.dtype == torch.bool and t.numel() != count:
                raise ValueError(f"input_nodes: a mask of {t.numel()} entries for {count} nodes"
                                 f"{f' of type {self._input_type!r}' if self._typed else ''}")
            orig = t.nonzero().flatten() if t.dtype == torch.bool else t.long().flatten()
        self._input_orig = orig
        nids = ids.nodes_in(orig, self._input_type)
        self._input = nids
        self._order = torch.argsort(nids)  # for input_id: a seed's position in input_nodes
        sampler = _fd.NeighborSampler(_fanouts(num_neighbors, self._typed), replace=replace)
        self._loader = _fd.DistNodeDataLoader(
            g, {self._input_type: nids} if self._typed else nids, sampler, batch_size=batch_size, shuffle=shuffle,
            drop_last=drop_last, seed=seed, num_samplers=int(num_workers) if num_workers else None,
            prefetch=int(concurrency) + 1, to_dgl=False)
        self._feat = self._loader._feat
        self._label = self._loader._label

    def _to_data(self, input_nodes, seeds, blocks):
        if self._typed:
            data = self._hetero_subgraph(_pyg(hetero=True), blocks, self._feat)
            seeds, store = seeds[self._input_type], data[self._input_type]
            labels = blocks[-1].dstdata[self._label].get(self._input_type) if self._label in blocks[-1].dstdata else None
        else:
            data = store = self._subgraph(_pyg(), blocks, self._feat)
            labels = blocks[-1].dstdata.get(self._label) if self._label else None
        store.batch_size = int(seeds.numel())
        at = torch.searchsorted(self._input[self._order].contiguous(), seeds.cpu().contiguous())
        store.input_id = self._order[at]
        override = self._feature._labels  # the script's own labels, by the user's node ID
        if override is not None:
            if isinstance(override, dict):
                override = override[self._input_type]
            labels = torch.as_tensor(override)[self._input_orig[store.input_id]]
        if labels is not None:
            store.y = labels
        return data


class DistLinkNeighborLoader(_PygLoader):
    """PyG's ``DistLinkNeighborLoader``: batches of ``batch_size`` positive edges with their
    negatives and the sampled subgraph around every endpoint, as ``Data`` (module docstring).
    The positives are stored edges: ``edge_label_index=None`` takes this rank's share of them
    (fanout-train ``--task link``'s, ``fanout.distributed.edge_split``), a 1-D tensor names stored
    edge IDs; PyG's ``[2, N]`` node pairs are refused (fanout looks positives up by edge ID). On
    a typed graph partitioned for link prediction (``--link-etype``) it is PyG's
    ``(edge type, None or type-wise edge IDs)`` of one of those relations, and batches are
    ``HeteroData`` with ``edge_label_index`` / ``edge_label`` / ``input_id`` on that edge type
    (triplet: ``src_index`` on its source type, ``dst_pos_index`` / ``dst_neg_index`` on its
    destination type), the pairs indexing each type's nodes.
    ``neg_sampling`` is ``"binary"`` or ``"triplet"``, a dict, or PyG's ``NegativeSampling``, its
    ``amount`` the negatives per positive (an integer, default 1; ``neg_sampling_ratio`` is PyG's
    older spelling of a binary amount). A negative keeps its positive's source and draws the
    destination uniformly (PyG's binary mode draws both ends). The batch's positives are left out
    of its subgraph in both directions. Other arguments as ``DistNeighborLoader``."""

    def __init__(self, data, num_neighbors, master_addr: Optional[str] = None, master_port=None,
                 current_ctx: Optional[DistContext] = None, edge_label_index=None, edge_label=None,
                 edge_label_time=None, dist_sampler=None, replace: bool = False, subgraph_type="directional",
                 disjoint: bool = False, temporal_strategy: str = "uniform", neg_sampling=None,
                 neg_sampling_ratio=None, time_attr: Optional[str] = None, transform=None, concurrency: int = 1,
                 num_rpc_threads: int = 16, filter_per_worker: Optional[bool] = False, async_sampling: bool = True,
                 device=None, *, batch_size: int = 1, shuffle: bool = True, drop_last: bool = False,
                 num_workers: int = 0, persistent_workers: bool = False, seed: int = 0, adjs: bool = False,
                 **kwargs):
        _check_common("DistLinkNeighborLoader", kwargs, time_attr, dist_sampler, disjoint, subgraph_type,
                      concurrency)
        _refuse("edge_label_time", edge_label_time, None, "temporal sampling")
        if edge_label is not None:
            raise NotImplementedError("fanout.pyg: edge_label is not supported (positives are labelled 1, "
                                      "negatives 0)")
        if not shuffle:
            raise ValueError("DistLinkNeighborLoader: link batches are always shuffled (shuffle=False is not supported)")
        self._mode, negatives = self._negatives(neg_sampling, neg_sampling_ratio)
        feature, graph = _stores(data)
        super().__init__(transform, device, num_workers, adjs)
        g = graph.graph()
        # A typed graph: PyG's (edge type, IDs or None) of one relation it was partitioned to predict.
        self._edge_type = None
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2 and \
                isinstance(edge_label_index[0], (tuple, list, str)):
            if not graph.is_hetero:
                raise ValueError("edge_label_index=(edge type, IDs) is for a typed graph; this one has one edge type")
            self._edge_type, edge_label_index = g.to_canonical_etype(edge_label_index[0]), edge_label_index[1]
        elif graph.is_hetero:
            link = [tuple(x.split(":")) for x in g._native.link_etypes]
            if len(link) != 1:
                raise ValueError("edge_label_index on a typed graph: pass (edge type, None or type-wise edge IDs), e.g. "
                                 f"({link[0] if link else g.canonical_etypes[0]!r}, None) (link relations: "
                                 f"{', '.join(map(str, link)) or 'none: fanout-partition --link-etype'})")
            self._edge_type = link[0]
        if adjs and self._edge_type is not None:
            raise ValueError(_TYPED_ADJS)
        self._ids = graph.ids()
        if edge_label_index is None:
            eids = _fd.edge_split(None, g.get_partition_book(), **({"etype": self._edge_type} if self._edge_type else {}))
        else:
            eids = torch.as_tensor(edge_label_index)
            if eids.dim() != 1:
                raise NotImplementedError("fanout.pyg: edge_label_index as [2, N] node pairs is not supported: pass "
                                          "None (this rank's stored edges) or a 1-D tensor of the graph's edge IDs "
                                          "(columns of the edge_index it was partitioned from"
                                          f"{', rows of the relation' if self._edge_type else ''})")
            eids = self._ids.edges_in(eids, self._edge_type)  # the user's edge IDs -> fanout's
        sampler = _fd.as_edge_prediction_sampler(
            _fd.NeighborSampler(_fanouts(num_neighbors, self._edge_type is not None), replace=replace),
            negative_sampler=negatives)
        self._eids = eids.long()
        self._order = torch.argsort(self._eids)
        self._loader = _fd.DistEdgeDataLoader(
            g, {self._edge_type: eids} if self._edge_type else eids, sampler, batch_size=batch_size, shuffle=True,
            drop_last=drop_last, seed=seed, num_samplers=int(num_workers) if num_workers else None,
            prefetch=int(concurrency) + 1, to_dgl=False)
        self._feat = self._loader._feat

    @staticmethod
    def _negatives(neg_sampling, ratio):
        """(mode, fanout negative sampler) of PyG's neg_sampling / neg_sampling_ratio. Besides
        PyG's forms, fanout's own kinds: a ``fanout.distributed.negative_sampler`` object
        (``Joint(k)``, ``InBatch(k)``, ``Local(k)``, ``Hard(k, field)``, ...; triplet mode), or a
        dict ``{"mode": ..., "sampler": that object}``."""
        if neg_sampling is None and ratio is not None:
            neg_sampling = {"mode": "binary", "amount": ratio}
        if neg_sampling is None:
            raise ValueError("DistLinkNeighborLoader: fanout's link batches carry negatives: pass "
                             "neg_sampling='binary' or 'triplet' (amount: negatives per positive)")
        sampler = None
        if isinstance(neg_sampling, _fd.dataloader._NegativeSampler):
            mode, sampler = "triplet", neg_sampling
        elif isinstance(neg_sampling, str):
            mode, amount = neg_sampling, 1
        elif isinstance(neg_sampling, dict):
            mode, amount, sampler = neg_sampling.get("mode"), neg_sampling.get("amount", 1), neg_sampling.get("sampler")
            if sampler is not None and not isinstance(sampler, _fd.dataloader._NegativeSampler):
                raise TypeError("neg_sampling['sampler'] must be a fanout.distributed.negative_sampler object, "
                                f"e.g. negative_sampler.Joint(8); got {type(sampler).__name__}")
        else:  # PyG's NegativeSampling
            mode, amount = getattr(neg_sampling.mode, "value", neg_sampling.mode), neg_sampling.amount
            if getattr(neg_sampling, "weight", None) is not None:
                raise NotImplementedError("fanout.pyg: NegativeSampling(weight=...) is not supported; fanout's "
                                          "degree-weighted negatives are negative_sampler.DegreePow75(k)")
        if mode not in ("binary", "triplet"):
            raise ValueError(f"neg_sampling mode {mode!r} must be 'binary' or 'triplet'")
        if sampler is not None:
            return mode, sampler
        if float(amount) != int(amount) or int(amount) < 1:
            raise ValueError(f"neg_sampling amount {amount} must be a whole number >= 1 (negatives per positive)")
        return mode, _fd.negative_sampler.Uniform(int(amount))

    def _to_data(self, input_nodes, pos, neg, blocks):
        if self._edge_type is not None:
            # Typed: the pairs index each end's type's nodes (data[type].n_id, whose first ones are
            # the batch's seeds), PyG's hetero link batch layout.
            data = self._hetero_subgraph(_pyg(hetero=True), blocks, self._feat)
            src_type, _, dst_type = et = self._edge_type
            u, v = pos.edges(etype=et)
            nu, nv = neg.edges(etype=et)
            eids = pos.edata[EID][et]
            store = data[et]
            src_store, dst_store = data[src_type], data[dst_type]
        else:
            data = store = src_store = dst_store = self._subgraph(_pyg(), blocks, self._feat)
            u, v = pos.edges()
            nu, nv = neg.edges()
            eids = pos.edata[EID]
        n = int(u.numel())
        store.batch_size = n
        store.input_id = self._order[torch.searchsorted(self._eids[self._order].contiguous(), eids.cpu().contiguous())]
        if self._mode == "binary":
            store.edge_label_index = torch.stack([torch.cat([u, nu]), torch.cat([v, nv])])
            store.edge_label = torch.cat([torch.ones(n), torch.zeros(int(nu.numel()))])
        else:
            src_store.src_index = u
            dst_store.dst_pos_index = v
            dst_store.dst_neg_index = nv.view(n, -1)
        return data


def _main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m fanout.pyg", description=write_example_inputs.__doc__.split("\n\n")[0])
    parser.add_argument("--part-config", required=True, help="the fanout partition (its folder or config file)")
    parser.add_argument("--root", required=True, help="where to write (the example's --dataset_root_dir)")
    parser.add_argument("--dataset", required=True, help="the example's --dataset name (ogbn-products, ogbn-mag)")
    parser.add_argument("--node-type", default=None, help="typed graphs: the labelled node type (the only one by default)")
    args = parser.parse_args(argv)
    write_example_inputs(args.part_config, args.root, args.dataset, args.node_type)
    print(f"wrote {args.root}/{args.dataset}-{{partitions,label,train-partitions,test-partitions}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
