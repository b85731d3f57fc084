"""Typed graphs in fanout.distributed: DistDGL's heterograph view over fanout's one ID space.

fanout numbers every node of a partitioned graph in one ID space, each node type a contiguous
range in every partition (docs/architecture.md, "Typed graphs"); DGL's heterograph API speaks of
per-type IDs (a paper's ID among the papers, OGB's numbering). ``TypeRanges`` maps between the
two; ``HeteroBlock`` is a typed layer of a mini-batch with DGL's per-type views, made from the
batch fanout's sampler returns (one block per layer with an edge-type column and each input
node's type).
"""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from fanout import _native

NID = "_ID"
EID = "_ID"


class TypeRanges:
    """Types as ranges of fanout's IDs: a type's own IDs (type-wise: DGL's per-type IDs) number its
    nodes partition by partition. The conversions are ``core::TypeMap``'s, through the extension
    (``Graph.node_type_map`` / ``edge_type_map``); out-of-range IDs are ``IndexError``."""

    def __init__(self, native_map, kind: str):
        self._map = native_map
        self.names = list(native_map.names)
        self.kind = kind

    def count(self, t: int) -> int:
        return self._map.count(t)

    def part_range(self, t: int, part: int) -> Tuple[int, int]:
        """Type t's type-wise IDs in partition `part`: [begin, end)."""
        return tuple(self._map.part_range(t, part))

    def to_homo(self, t: int, ids) -> np.ndarray:
        """fanout's IDs of type t's type-wise `ids` (same shape)."""
        ids = np.asarray(ids, dtype=np.int64)
        return self._map.to_homo(t, ids.reshape(-1)).reshape(ids.shape)

    def to_typewise(self, ids) -> Tuple[np.ndarray, np.ndarray]:
        """(type, type-wise ID) of each of fanout's `ids` (same shape)."""
        ids = np.asarray(ids, dtype=np.int64)
        types, typewise = self._map.to_typewise(ids.reshape(-1))
        return types.reshape(ids.shape), typewise.reshape(ids.shape)


def canonical(etype, canonical_etypes: List[Tuple[str, str, str]]) -> int:
    """The index of an edge type given as DGL takes it: a relation name (when unique) or a
    (src type, relation, dst type) triple (``core::FindEdgeType``; KeyError names the choices)."""
    if isinstance(etype, (tuple, list)) and len(etype) != 3:
        raise KeyError(f"edge type {tuple(etype)}: a canonical edge type is (src type, relation, dst type)")
    name = ":".join(etype) if isinstance(etype, (tuple, list)) else str(etype)
    return _native.find_edge_type(canonical_etypes, name)


class _TypedView:
    """``block.srcnodes[ntype]`` / ``block.dstnodes[ntype]``: ``.data`` holds that type's rows."""

    def __init__(self, data: Dict[str, torch.Tensor]):
        self.data = data


class _ByType:
    def __init__(self, data: Dict[str, Dict[str, torch.Tensor]]):
        self._data = data

    def __getitem__(self, ntype: str) -> _TypedView:
        if ntype not in self._data:
            raise KeyError(f"no node type {ntype!r} (this graph has: {list(self._data)})")
        return _TypedView(self._data[ntype])


class _FieldsByType(dict):
    """``block.srcdata``: name -> {node type: rows}, as DGL's heterograph blocks answer it."""

    def __init__(self, by_type: Dict[str, Dict[str, torch.Tensor]]):
        super().__init__()
        for ntype, fields in by_type.items():
            for name, rows in fields.items():
                self.setdefault(name, {})[ntype] = rows


class HeteroBlock:
    """One layer of a typed mini-batch, as DGL's heterograph block: per node type, its source nodes
    (the first ``num_dst_nodes(ntype)`` of which are its destinations, in order) and, per relation,
    edges from sources to destinations. IDs are type-wise (DGL's per-type IDs):
    ``srcnodes[ntype].data[NID]``, ``edges_of(etype)``'s ``[EID]``. ``srcdata[NAME]`` and
    ``dstdata[NAME]`` are {node type: rows}; ``edata[NAME]`` is {(src, rel, dst): rows}, the
    sampler's edge fields split by relation like ``edge_ids``; ``edge_index_dict`` is PyG's
    {(src, rel, dst): [2, E]} (row 0 indexes the relation's source type's sources, row 1 its
    destination type's destinations); ``to_dgl()`` is the same block as a DGL heterograph block.

    `fields`: the batch's per-edge fields ({name: rows in the block's edge order}, as fanout's
    sampler names them: ``edge_weight``, ``edge_feat``), in ``edata`` under `names`' name for
    each (default: its own), for the relations `holders` lists for it (default: all; the others'
    edges carry weight 1 and zero features in the batch but have no such field), and in
    :meth:`fanout_block` under their own."""

    def __init__(self, ntypes: List[str], canonical_etypes: List[Tuple[str, str, str]], node_types: TypeRanges,
                 edge_types: TypeRanges, src_nodes: torch.Tensor, src_types: torch.Tensor, num_dst: int,
                 indices: torch.Tensor, dst: torch.Tensor, etype: torch.Tensor, eids: torch.Tensor,
                 fields: Optional[Dict[str, torch.Tensor]] = None, names: Optional[Dict[str, str]] = None,
                 holders: Optional[Dict[str, set]] = None):
        self.ntypes = list(ntypes)
        self.canonical_etypes = list(canonical_etypes)
        _, typewise = node_types.to_typewise(src_nodes.numpy())
        typewise = torch.from_numpy(typewise)
        # The sources grouped by type and the edges by relation, each in input order, each source's
        # index among its type's (`_local`) and the edges' endpoints as such indices (one counting
        # pass in the extension).
        by_type, count, count_dst, self._local, by_rel, per_rel, rel_src, rel_dst = (
            torch.from_numpy(a) for a in _native.typed_block_layout(
                src_types.numpy(), len(self.ntypes), int(num_dst), indices.numpy(), dst.numpy(), etype.numpy(),
                len(self.canonical_etypes)))
        typewise_by_type = typewise.index_select(0, by_type)
        self._src: Dict[str, Dict[str, torch.Tensor]] = {}
        self._dst: Dict[str, Dict[str, torch.Tensor]] = {}
        self._positions: Dict[str, torch.Tensor] = {}  # input positions of each type's sources
        self._num_src: Dict[str, int] = {}
        self._num_dst: Dict[str, int] = {}
        b = 0
        for name, n, nd in zip(self.ntypes, count.tolist(), count_dst.tolist()):
            self._positions[name] = by_type[b:b + n]
            self._num_src[name] = n
            self._num_dst[name] = nd
            self._src[name] = {NID: typewise_by_type[b:b + n]}
            self._dst[name] = {NID: typewise_by_type[b:b + nd]}
            b += n
        _, typewise_eids = edge_types.to_typewise(eids.numpy())
        per_rel = per_rel.tolist()
        parts = (rel_src.split(per_rel), rel_dst.split(per_rel),
                 torch.from_numpy(typewise_eids).index_select(0, by_rel).split(per_rel))
        self._edges: Dict[Tuple[str, str, str], Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {
            cet: (parts[0][r], parts[1][r], parts[2][r]) for r, cet in enumerate(self.canonical_etypes)}
        fields, names, holders = fields or {}, names or {}, holders or {}
        self._edata: Dict[Tuple[str, str, str], Dict[str, torch.Tensor]] = {cet: {} for cet in self.canonical_etypes}
        for name, rows in fields.items():
            for cet, part in zip(self.canonical_etypes, rows.index_select(0, by_rel).split(per_rel)):
                if name not in holders or cet in holders[name]:
                    self._edata[cet][names.get(name) or name] = part
        self.srcnodes = _ByType(self._src)
        self.dstnodes = _ByType(self._dst)
        # One numbering of all sources, as the batch has it, for fanout_block (int64 when asked for).
        self._homogeneous = {"src": indices, "dst": dst, "etype": etype, "src_type": src_types, **fields}

    def _set_src(self, name: str, rows_by_type: Dict[str, torch.Tensor]) -> None:
        for ntype, rows in rows_by_type.items():
            self._src[ntype][name] = rows
            self._dst[ntype][name] = rows[:self._num_dst[ntype]]

    def _set_dst(self, name: str, rows_by_type: Dict[str, torch.Tensor]) -> None:
        for ntype, rows in rows_by_type.items():
            self._dst[ntype][name] = rows

    @property
    def srcdata(self) -> Dict[str, Dict[str, torch.Tensor]]:
        return _FieldsByType(self._src)

    @property
    def dstdata(self) -> Dict[str, Dict[str, torch.Tensor]]:
        return _FieldsByType(self._dst)

    @property
    def edata(self) -> Dict[str, Dict[Tuple[str, str, str], torch.Tensor]]:
        """name -> {canonical edge type: rows}: each relation's rows of an edge field, in the order
        of its ``edges(etype)`` (DGL's heterograph ``block.edata[NAME]``)."""
        out: Dict[str, Dict[Tuple[str, str, str], torch.Tensor]] = {}
        for cet, fields in self._edata.items():
            for name, rows in fields.items():
                out.setdefault(name, {})[cet] = rows
        return out

    @property
    def srctypes(self) -> List[str]:
        return self.ntypes

    @property
    def dsttypes(self) -> List[str]:
        return self.ntypes

    @property
    def is_block(self) -> bool:
        return True

    def num_src_nodes(self, ntype: Optional[str] = None) -> int:
        return sum(self._num_src.values()) if ntype is None else self._num_src[ntype]

    def num_dst_nodes(self, ntype: Optional[str] = None) -> int:
        return sum(self._num_dst.values()) if ntype is None else self._num_dst[ntype]

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return sum(len(e[0]) for e in self._edges.values())
        return len(self._edges[self.canonical_etypes[canonical(etype, self.canonical_etypes)]][0])

    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes
    number_of_edges = num_edges

    def edges(self, etype) -> Tuple[torch.Tensor, torch.Tensor]:
        """(sources, destinations) of a relation's edges, as indices among its types' nodes."""
        src, dst, _ = self._edges[self.canonical_etypes[canonical(etype, self.canonical_etypes)]]
        return src, dst

    def edge_ids(self, etype) -> torch.Tensor:
        """The relation's edges' type-wise IDs (DGL's ``block.edges[etype].data[dgl.EID]``)."""
        return self._edges[self.canonical_etypes[canonical(etype, self.canonical_etypes)]][2]

    @property
    def edge_index_dict(self) -> Dict[Tuple[str, str, str], torch.Tensor]:
        """PyG's ``edge_index_dict`` (HeteroConv's input): per relation ``[2, E]``."""
        return {cet: torch.stack([s, d]) for cet, (s, d, _) in self._edges.items()}

    @property
    def edge_index(self):
        raise TypeError("a typed block has one edge_index per relation: use block.edge_index_dict "
                        "(PyG's HeteroData form)")

    def to(self, device, non_blocking: bool = False) -> "HeteroBlock":
        mv = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        b = HeteroBlock.__new__(HeteroBlock)
        b.ntypes, b.canonical_etypes = self.ntypes, self.canonical_etypes
        b._num_src, b._num_dst = dict(self._num_src), dict(self._num_dst)
        b._positions = {k: mv(v) for k, v in self._positions.items()}
        b._local = self._local  # host bookkeeping (the link loader pairs seeds with it)
        b._src = {t: {k: mv(v) for k, v in d.items()} for t, d in self._src.items()}
        b._dst = {t: {k: mv(v) for k, v in d.items()} for t, d in self._dst.items()}
        b._edges = {k: tuple(mv(x) for x in v) for k, v in self._edges.items()}
        b._edata = {k: {n: mv(x) for n, x in v.items()} for k, v in self._edata.items()}
        b._homogeneous = {k: mv(v) for k, v in self._homogeneous.items()}
        b.srcnodes, b.dstnodes = _ByType(b._src), _ByType(b._dst)
        return b

    def fanout_block(self) -> Dict[str, torch.Tensor]:
        """The block as fanout's layers take it (``fanout.blocks``: every source in one numbering,
        destinations first, with ``etype``, ``num_relations`` and ``src_type``), for
        ``fanout.layers``' typed layers (``RelGraphConv``, ``RelGATConv``, ``HGTConv``); their
        input is :meth:`input_rows`, their output :meth:`output_rows`'s argument."""
        out = {k: v if v.is_floating_point() else v.to(torch.int64) for k, v in self._homogeneous.items()}
        num_dst = self.num_dst_nodes()
        out["in_degree"] = torch.bincount(out["dst"], minlength=num_dst)
        out["indptr"] = torch.cat([out["in_degree"].new_zeros(1), out["in_degree"].cumsum(0)])
        out["num_src"] = torch.tensor(self.num_src_nodes(), dtype=torch.int64)
        out["num_dst"] = torch.tensor(num_dst, dtype=torch.int64)
        out["num_relations"] = torch.tensor(len(self.canonical_etypes), dtype=torch.int64)
        return out

    def input_rows(self, rows_by_type: Dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-type rows of the sources (``srcdata`` form: ``{ntype: [num_src_nodes(ntype), ...]}``)
        as one tensor in :meth:`fanout_block`'s source order; a type left out gets zeros."""
        first = next(iter(rows_by_type.values()))
        out = first.new_zeros((self.num_src_nodes(),) + tuple(first.shape[1:]))
        for ntype, rows in rows_by_type.items():
            out[self._positions[ntype]] = rows
        return out

    def output_rows(self, rows: torch.Tensor) -> Dict[str, torch.Tensor]:
        """A typed layer's output (one row per destination, :meth:`fanout_block`'s order) per
        destination type, as ``dstdata``'s form: ``{ntype: [num_dst_nodes(ntype), ...]}``."""
        return {t: rows[self._positions[t][:self._num_dst[t]]] for t in self.ntypes}

    def to_dgl(self):
        """The same block as a DGL heterograph block (``dgl.create_block``; DGL 1.x and 2.x), with
        the same per-type node data and ``dgl.EID`` per relation. As DistDGL's sampled blocks, it
        has every node type but only the relations with edges in this block (all of them when
        none has any), so that ``HeteroGraphConv`` outputs only the types that receive messages
        (DGL's R-GCN example asserts the last layer's output is the seeds' type alone). Needs DGL
        importable."""
        import dgl
        first = next(iter(self._edges.values()))[0]
        edges = {cet: e for cet, e in self._edges.items() if len(e[0]) > 0} or self._edges
        b = dgl.create_block({cet: (s, d) for cet, (s, d, _) in edges.items()},
                             num_src_nodes=dict(self._num_src), num_dst_nodes=dict(self._num_dst),
                             device=first.device)
        for ntype, fields in self._src.items():
            for k, v in fields.items():
                b.srcnodes[ntype].data[dgl.NID if k == NID else k] = v
        for ntype, fields in self._dst.items():
            for k, v in fields.items():
                b.dstnodes[ntype].data[dgl.NID if k == NID else k] = v
        for cet, (_, _, e) in edges.items():
            b.edges[cet].data[dgl.EID] = e
            for k, v in self._edata[cet].items():
                b.edges[cet].data[k] = v
        return b

    def __repr__(self) -> str:
        return (f"HeteroBlock(num_src_nodes={self._num_src}, num_dst_nodes={self._num_dst}, "
                f"num_edges={ {c[1]: len(e[0]) for c, e in self._edges.items()} })")


def typed_rows(rows: torch.Tensor, src_types: torch.Tensor, of_types: Sequence[int], ntypes: List[str],
               positions: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Per node type, the rows of `rows`, which hold one row per input node whose type is in
    `of_types`, in input order (a typed batch's features). With one such type they are its rows
    already, in its order: no copy."""
    if len(of_types) == 1 and len(positions[ntypes[of_types[0]]]) == len(rows):
        return {ntypes[of_types[0]]: rows}
    src_types = src_types.to(torch.int64)
    holds = torch.zeros_like(src_types, dtype=torch.bool)
    for t in of_types:
        holds |= src_types == t
    row_of = torch.cumsum(holds.to(torch.int64), 0) - 1  # each holding input's row
    out = {}
    for t in of_types:
        pos = positions[ntypes[t]]
        out[ntypes[t]] = rows.index_select(0, row_of[pos]) if len(pos) else rows[:0]
    return out
