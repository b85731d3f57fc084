"""The whole graph's ID maps between fanout's IDs and the input's own (``OUT/id_maps/``, written by
``fanout-partition``; partition/id_maps.h has the layout).

fanout renumbers nodes so that each partition's are contiguous (DGL's convention); a script that
speaks the user's own IDs (``fanout.pyg``, as PyG's ``Partitioner`` keeps them) maps through these
at its boundary, and ``fanout.distributed.partition_graph(return_mapping=True)`` returns them as
DGL does. The arrays are mapped read-only: a process holds the pages it touches, and every process
of a machine shares them. Original IDs of a typed graph are type-wise (a node's ID among its
type's input nodes, an edge's row among its relation's input edges).
"""

import json
import os
import numpy as np

_DIR, _META = "id_maps", "id_maps.json"


def _int64(ids) -> np.ndarray:
    """IDs (a tensor on any device, an array, a list or a scalar) as a flat int64 array."""
    if hasattr(ids, "detach"):  # a torch tensor, without importing torch here
        if str(ids.dtype) == "torch.bool":
            raise TypeError("expected IDs, got a boolean mask (use mask.nonzero())")
        ids = ids.detach().cpu().numpy()
    a = np.asarray(ids)
    if a.dtype == np.bool_:
        raise TypeError("expected IDs, got a boolean mask (use mask.nonzero())")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"expected integer IDs, got {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1), dtype=np.int64)


class IdMaps:
    """The ID maps of the partition whose config is ``config_path``. A partition without them is
    refused (FileNotFoundError naming the file and the command that writes them), never guessed.

    ``node_orig(new)``/``edge_orig(new)`` map fanout IDs (graph-wide) to original IDs;
    ``node_new(orig, type)``/``edge_new(orig, type)`` map original IDs of a type (its index in
    ``node_types``/``edge_types``, or its name; 0 on a one-type graph) to fanout's graph-wide IDs,
    refusing (ValueError) an ID no input node or stored edge has."""

    def __init__(self, config_path: str):
        # The real folder, so that the maps stay readable when a link to it goes away.
        base = os.path.dirname(os.path.realpath(config_path))
        self.dir = os.path.join(base, _DIR)
        meta_path = os.path.join(self.dir, _META)
        if not os.path.exists(meta_path):
            raise FileNotFoundError(
                f"{meta_path}: the partition has no ID maps (fanout-partition writes them since 2026-12; for a "
                f"partition made before, run `fanout-partition --write-id-maps {config_path}` where every "
                f"partition's graph/ folder is, then copy {self.dir}/ beside the config on every machine)")
        with open(meta_path) as f:
            meta = json.load(f)
        with open(config_path) as f:
            config = json.load(f)
        if meta.get("graph_name") != config.get("graph_name") or meta.get("num_nodes") != config.get("num_nodes"):
            raise ValueError(f"{meta_path} describes graph {meta.get('graph_name')!r} of {meta.get('num_nodes')} nodes, "
                             f"but {config_path} is {config.get('graph_name')!r} of {config.get('num_nodes')}: the "
                             "ID maps belong to another partition")
        self._config = config
        self.node_types = list(meta["node_types"])
        self.edge_types = list(meta["edge_types"])
        self._node_offsets = list(meta["node_type_offsets"])
        self._edge_offsets = list(meta["edge_type_offsets"])
        self._arrays = {}

    def _array(self, name: str) -> np.ndarray:
        a = self._arrays.get(name)
        if a is None:
            a = self._arrays[name] = np.asarray(np.load(os.path.join(self.dir, f"{name}.npy"), mmap_mode="r"))
        return a

    @staticmethod
    def _type_index(types, t, what) -> int:
        if t is None or isinstance(t, (int, np.integer)):
            i = 0 if t is None else int(t)
            if t is None and len(types) > 1:
                raise ValueError(f"a typed graph's {what} IDs need their type (one of {', '.join(map(str, types))})")
            return i
        name = ":".join(t) if isinstance(t, (tuple, list)) else t
        if name in types:
            return types.index(name)
        named = [i for i, full in enumerate(types) if full.split(":")[1:2] == [name]]
        if len(named) == 1:
            return named[0]
        raise KeyError(f"no {what} type {t!r} (this graph has: {', '.join(types)})")

    def _span(self, offsets, inverse, i) -> tuple:
        end = offsets[i + 1] if i + 1 < len(offsets) else len(self._array(inverse))
        return offsets[i], end

    def inverse(self, kind: str, i: int) -> np.ndarray:
        """The whole inverse map of type ``i`` (``kind`` "node" or "edge"), indexed by original
        ID: fanout's graph-wide IDs, -1 for an edge no partition stores. A mapped view."""
        name, offsets = ("new_nids", self._node_offsets) if kind == "node" else ("new_eids", self._edge_offsets)
        b, e = self._span(offsets, name, i)
        return self._array(name)[b:e]

    def ranges(self, kind: str, i: int) -> list:
        """Type ``i``'s ranges of fanout's graph-wide IDs, one [begin, end) per partition: its
        type-wise IDs number them in this order (the config's node_map / edge_map)."""
        key, types = ("node_map", self.node_types) if kind == "node" else ("edge_map", self.edge_types)
        table = self._config[key]  # {type name: [[begin, end] per partition]}
        return table[types[i]] if isinstance(table, dict) else table

    def typewise_orig(self, kind: str, i: int) -> np.ndarray:
        """Original IDs of type ``i``'s nodes (``kind`` "node") or stored edges ("edge") in the
        order of fanout's type-wise IDs: DGL's ``orig_nids[ntype]`` / ``orig_eids[etype]``."""
        new = np.concatenate([np.arange(b, e, dtype=np.int64) for b, e in self.ranges(kind, i)])
        return (self.node_orig if kind == "node" else self.edge_orig)(new)

    def num_nodes(self, ntype=None) -> int:
        b, e = self._span(self._node_offsets, "new_nids", self._type_index(self.node_types, ntype, "node"))
        return e - b

    def node_orig(self, new) -> np.ndarray:
        """Original IDs (type-wise on a typed graph) of fanout node IDs."""
        return self._array("orig_nids")[_int64(new)]

    def edge_orig(self, new) -> np.ndarray:
        """Original edge IDs of fanout edge IDs (one-type graph: ``e >= input edges`` is the
        reverse fanout-partition --add-reverse-edges stored for input edge ``e - input edges``)."""
        return self._array("orig_eids")[_int64(new)]

    def node_new(self, orig, ntype=None) -> np.ndarray:
        """fanout's graph-wide IDs of original node IDs of ``ntype``; ValueError names an ID
        outside the type's ``[0, count)``."""
        i = self._type_index(self.node_types, ntype, "node")
        return self._lookup("new_nids", self._node_offsets, i, _int64(orig), "node", self.node_types[i])

    def edge_new(self, orig, etype=None) -> np.ndarray:
        """fanout's graph-wide edge IDs of original edge IDs of stored relation ``etype``;
        ValueError names an ID no stored edge has (out of range, or held out for link
        prediction, a removed duplicate or self loop)."""
        i = self._type_index(self.edge_types, etype, "edge")
        return self._lookup("new_eids", self._edge_offsets, i, _int64(orig), "edge", self.edge_types[i])

    def _lookup(self, inverse, offsets, i, orig, what, type_name) -> np.ndarray:
        b, e = self._span(offsets, inverse, i)
        if orig.size:
            lo, hi = int(orig.min()), int(orig.max())
            if lo < 0 or hi >= e - b:
                bad = lo if lo < 0 else hi
                typed = "" if type_name in ("_N", "_N:_E:_N") else f" of type {type_name}"
                raise ValueError(f"{what} ID {bad}{typed} is not an ID of the partitioned graph's input "
                                 f"(valid: 0..{e - b - 1}); fanout.pyg takes and returns the graph's own IDs")
        new = self._array(inverse)[orig + b] if b else self._array(inverse)[orig]
        if what == "edge" and new.size and new.min() < 0:
            bad = int(orig[np.argmax(new < 0)])
            raise ValueError(f"edge ID {bad} is not stored in the partitioned graph (held out for link prediction, "
                             "or a duplicate or self loop fanout-partition removed)")
        return new

