"""DGL's NeighborSampler and DistNodeDataLoader, fed by fanout's sampler.

A batch is made by the same code as fanout-train's (threads in this process, or fanout-sampler
processes handing it over in shared memory), so batch (seed, epoch, step) is exactly the one
fanout-train would train on with the same seeds and options. Its arrays reach Python without a
copy (NumPy arrays over the batch's memory, wrapped by torch.from_numpy); they are private to the
script, which may change them in place.
"""

import sys
from typing import Dict, Optional, Sequence

import numpy as np
import torch

from fanout import _native
from fanout.distributed import context
from fanout.distributed.graph import DistGraph, _count, _ids, decode_rows
from fanout.distributed.hetero import HeteroBlock, canonical, typed_rows

NID = "_ID"
EID = "_ID"
_NUM_EPOCHS = 1 << 30  # a loader runs until closed: each pass over it is the next epoch
_KEEP_FREE_BETWEEN_BATCHES = 256 << 20  # an unshuffled loader's heap trim (_run)


class NeighborSampler:
    """DGL's ``dgl.dataloading.NeighborSampler``: ``fanouts[i]`` in-neighbours per node for layer
    i, input layer first (-1: all). On a typed graph a layer's fanout applies to every relation,
    or is a dict giving each relation its own (DGL's form: every relation listed, by name or
    ``(src, rel, dst)``; 0 samples none of it). The node fields to fetch with every batch are DGL's
    ``prefetch_node_feats`` (the input nodes' rows, ``blocks[0].srcdata[NAME]``) and
    ``prefetch_labels`` (the seeds' rows, ``blocks[-1].dstdata[NAME]``); fanout fetches one of
    each, by default the first of ``feat``, ``features`` (``label``, ``labels``) the graph has:
    the names of DGL's datasets and of its distributed examples. ``prefetch_edge_feats``
    names one edge field fetched per sampled edge (``block.edata[NAME]``, float32, one row per
    edge), and ``edge_weight`` one edge field of one number per edge (``block.edata[NAME]``; the
    weight fanout-train's models use). ``output_device`` moves each batch there (DGL's);
    ``fused`` is accepted (DGL's choice of its own kernel). Any other keyword is a ``TypeError``,
    as in DGL."""

    def __init__(self, fanouts: Sequence[int], edge_dir: str = "in", prob: Optional[str] = None, mask=None,
                 replace: bool = False, prefetch_node_feats: Optional[Sequence[str]] = None,
                 prefetch_labels: Optional[Sequence[str]] = None, prefetch_edge_feats: Optional[Sequence[str]] = None,
                 output_device=None, fused: bool = True, *, edge_weight: Optional[str] = None):
        if edge_dir != "in":
            raise NotImplementedError("NeighborSampler: only edge_dir='in' (DGL's default) is supported")
        if prob is not None:
            raise NotImplementedError("NeighborSampler: prob= (weighted sampling) is not supported yet")
        if mask is not None:
            raise NotImplementedError("NeighborSampler: mask= (masked sampling) is not supported yet")
        # Per layer: an int, or {relation: int} (typed graphs; resolved against the graph by the loader).
        self.relation_fanouts = [dict(f) if isinstance(f, dict) else None for f in fanouts]
        if any(r is not None for r in self.relation_fanouts):
            for layer in self.relation_fanouts:
                for v in (layer or {}).values():
                    if _count(v, "NeighborSampler fanouts") < -1:
                        raise ValueError(f"NeighborSampler fanouts: {v} is not a fanout (a count >= 0, or -1 for all)")
            # The layer's fanout where a dict gives none: the largest, -1 if any is -1 (what the
            # sampler checks layer counts against).
            self.fanouts = [_count(f, "NeighborSampler fanouts") if r is None else
                            (-1 if any(int(v) == -1 for v in r.values()) else max([int(v) for v in r.values()] + [1]))
                            for f, r in zip(fanouts, self.relation_fanouts)]
        else:
            self.relation_fanouts = []
            self.fanouts = [_count(f, "NeighborSampler fanouts") for f in fanouts]
        _native.check_layer_fanouts("NeighborSampler fanouts", self.fanouts)
        self.replace = bool(replace)
        self.prefetch_node_feats = _one_field(prefetch_node_feats, "prefetch_node_feats")
        self.prefetch_labels = _one_field(prefetch_labels, "prefetch_labels")
        self.edge_feature = _one_field(prefetch_edge_feats, "prefetch_edge_feats") or ""
        self.edge_weight = edge_weight or ""
        if self.edge_weight and self.edge_weight == self.edge_feature:
            raise ValueError(f"NeighborSampler: '{self.edge_weight}' is both the edge_weight and a prefetch_edge_feats "
                             "field; both land in block.edata under that name: pick one")
        self.output_device = output_device

    def _settings(self, *, batch_size: int, shuffle: bool, seed: int, rank: int, seeds_per_epoch: int,
                  feature_field: str, label_field: str, relation_fanouts) -> dict:
        """fanout's sampler settings (``_native.default_settings()["sampler"]``): every key, each
        set here, so that none is left at a default Python never chose."""
        return dict(fanouts=self.fanouts, relation_fanouts=relation_fanouts, batch_size=int(batch_size),
                    replace=self.replace, shuffle=bool(shuffle), seed=int(seed), rank=int(rank),
                    seeds_per_epoch=int(seeds_per_epoch), feature_field=feature_field, label_field=label_field,
                    edge_weight_field=self.edge_weight, edge_feature_field=self.edge_feature)


# DGL's other name for it (dgl.dataloading.MultiLayerNeighborSampler, which its older examples use).
MultiLayerNeighborSampler = NeighborSampler


class DistDataLoader:
    """DGL's ``dgl.distributed.DistDataLoader``: batches of ``dataset`` (node or edge IDs, or DGL's
    ``(type, ID)`` pairs) handed to ``collate_fn``, which makes the mini-batch. DGL runs
    ``collate_fn`` in its sampler processes; here it runs in this process when the batch is asked
    for (fanout's sampler processes make ``DistNodeDataLoader`` / ``DistEdgeDataLoader`` batches:
    prefer those). As in DGL, ``collate_fn`` receives a NumPy array of the batch's IDs (a list of
    ``(type, ID)`` pairs for such a dataset); ``shuffle`` reorders with torch's generator at
    every pass; ``drop_last`` drops a last short batch; ``queue_size`` is accepted."""

    def __init__(self, dataset, batch_size: int, shuffle: bool = False, collate_fn=None, drop_last: bool = False,
                 queue_size: Optional[int] = None):
        self.batch_size = _count(batch_size, "DistDataLoader: batch_size")
        _native.check_batch_size("DistDataLoader: batch_size", self.batch_size)
        self.dataset = dataset
        self.shuffle = bool(shuffle)
        self.collate_fn = collate_fn
        self.drop_last = bool(drop_last)
        self.queue_size = queue_size

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        order = torch.randperm(n) if self.shuffle else torch.arange(n)
        for b in range(len(self)):
            items = [self.dataset[i] for i in order[b * self.batch_size:(b + 1) * self.batch_size].tolist()]
            if items and isinstance(items[0], tuple):
                batch = [(t, int(i)) for t, i in items]
            else:
                batch = np.asarray([int(i) for i in items], dtype=np.int64)
            yield self.collate_fn(batch) if self.collate_fn is not None else batch


# What a loader fetches with each batch when the sampler names no field (DGL's prefetch_node_feats
# / prefetch_labels): the first of these the graph has. DGL's datasets say "feat" and "label";
# its distributed examples' partition_graph.py renames them "features" and "labels", and a
# script reads g.ndata["features"][input_nodes], which is then the batch's own tensor rather than
# a second pull of the same rows (on DGL's own GraphSAGE example, 4-5 s of an 11-12 s epoch).
_FEATURE_NAMES = ("feat", "features")
_LABEL_NAMES = ("label", "labels")


def _one_field(names, what) -> Optional[str]:
    if names is None:
        return None
    names = list(names)
    if len(names) > 1:
        raise NotImplementedError(f"NeighborSampler: {what} takes one field, got {names}")
    return names[0] if names else ""


class Block:
    """One layer of a mini-batch, as DGL's block (message-flow graph): ``num_src_nodes()`` source
    nodes, the first ``num_dst_nodes()`` of which are the destinations, in order; edges by
    destination (CSC). ``srcdata[NID]``/``dstdata[NID]`` are global node IDs, ``edata[EID]``
    global edge IDs."""

    def __init__(self, src_nodes, num_dst, indptr, indices, eids, dst, srcdata=None, dstdata=None, edata=None):
        self.indptr = indptr        # [num_dst + 1]
        self.indices = indices      # [num_edges]: source of each edge, an index into the sources
        self.dst = dst              # [num_edges]: destination of each edge (non-decreasing)
        self._num_dst = int(num_dst)
        self.srcdata: Dict[str, torch.Tensor] = {NID: src_nodes}
        self.dstdata: Dict[str, torch.Tensor] = {NID: src_nodes[:num_dst]}
        self.edata: Dict[str, torch.Tensor] = {EID: eids}
        self.srcdata.update(srcdata or {})
        self.dstdata.update(dstdata or {})
        self.edata.update(edata or {})

    def num_src_nodes(self, ntype=None) -> int:
        return int(self.srcdata[NID].shape[0])

    def num_dst_nodes(self, ntype=None) -> int:
        return self._num_dst

    def num_edges(self, etype=None) -> int:
        return int(self.indices.shape[0])

    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes
    number_of_edges = num_edges

    @property
    def is_block(self) -> bool:
        return True

    @property
    def edge_index(self) -> torch.Tensor:
        """PyG's ``[2, num_edges]``: row 0 indexes the block's sources, row 1 its destinations
        (for bipartite layers: ``conv((x, x[:block.num_dst_nodes()]), block.edge_index)``)."""
        return torch.stack([self.indices, self.dst])

    def in_degrees(self) -> torch.Tensor:
        return self.indptr[1:] - self.indptr[:-1]

    def to(self, device, non_blocking: bool = False) -> "Block":
        """The block with every tensor on `device` (DGL's ``block.to``)."""
        mv = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        b = Block.__new__(Block)
        b.indptr, b.indices, b.dst, b._num_dst = mv(self.indptr), mv(self.indices), mv(self.dst), self._num_dst
        b.srcdata = {k: mv(v) for k, v in self.srcdata.items()}
        b.dstdata = {k: mv(v) for k, v in self.dstdata.items()}
        b.edata = {k: mv(v) for k, v in self.edata.items()}
        return b

    def to_dgl(self):
        """The same block as a DGL block (``dgl.create_block``; DGL 1.x and 2.x), with the same
        srcdata, dstdata and edata. Needs DGL importable."""
        import dgl
        # From the CSC the block already is, with edges in its order (the same IDs as from
        # (indices, dst)): DGL then needs neither a pass over the destinations to check them nor
        # a COO -> CSC conversion before its first aggregation (3-10 ms for a 650K-edge block on
        # this project's 2-core machine).
        no_eids = self.indices.new_empty(0)
        b = dgl.create_block(("csc", (self.indptr, self.indices, no_eids)), num_src_nodes=self.num_src_nodes(),
                             num_dst_nodes=self.num_dst_nodes(), device=self.indices.device)
        for k, v in self.srcdata.items():
            b.srcdata[dgl.NID if k == NID else k] = v
        for k, v in self.dstdata.items():
            b.dstdata[dgl.NID if k == NID else k] = v
        for k, v in self.edata.items():
            b.edata[dgl.EID if k == EID else k] = v
        return b

    def __repr__(self) -> str:
        return f"Block(num_src_nodes={self.num_src_nodes()}, num_dst_nodes={self.num_dst_nodes()}, " \
               f"num_edges={self.num_edges()})"


class _EpochLoader:
    """What both loaders share: one pass = one epoch; the native loader (fanout's, started for
    2^30 epochs from the current one) keeps running from pass to pass, and is restarted at the
    next epoch when a pass is left early (its batches are never drained); close() stops its
    sampler processes, as do exit_client() and interpreter exit."""

    def __init__(self, g: DistGraph, to_dgl: Optional[bool], feat: Optional[str], device=None):
        self._g = g
        self._edata_cache = None  # _edata_layout's
        self._device = None if device is None else torch.device(device)
        # DGL blocks for a script that has imported DGL (its layers take nothing else).
        self._to_dgl = ("dgl" in sys.modules) if to_dgl is None else bool(to_dgl)
        self._feat = self._field(feat, _FEATURE_NAMES)
        # Rows of a field the sampler did not name, on DGL's blocks (which carry only what
        # prefetch_node_feats names, as DGL's): fetched while the script reads them
        # (_follow_reads). A loader that may follow its script sets _follows.
        self._follows = False
        self._fetching = True  # whether the batches being made carry the feature rows
        # Whether the native loader makes the next pass's batches ahead while the script is busy
        # elsewhere (a training loop's next epoch); otherwise it stops at the end of a pass.
        self._runs_ahead = True
        self._steps = 0
        self._epoch = 0
        self._native = None
        self._native_epoch = -1  # the epoch the running native loader is at the start of
        context._open_loaders.add(self)

    def _field(self, asked: Optional[str], usual: Sequence[str]) -> str:
        """The field a sampler asked for, else the first of the `usual` names the graph has, else
        none."""
        if asked is not None:
            return asked
        have = {f["name"] for f in self._g._native.node_fields}
        return next((name for name in usual if name in have), "")

    def _making(self, num_samplers: Optional[int], num_threads: int, prefetch: int, batch_timeout_seconds: float,
                queue_size: Optional[int], batch_rows: str) -> dict:
        """How batches are made (``_native.default_settings()["loader"]`` less the epochs, which
        ``_start`` sets): the job's sampler processes unless `num_samplers` says otherwise (0:
        threads here). DGL's ``queue_size`` (batches made ahead) is ``prefetch``. ``batch_rows``
        is fanout-train's ``--batch-rows``: ``"fetched"`` has sampler processes put in their batch
        files only the input rows they fetched from other machines (or disk), this process copying
        the rest in from the memory every process of the machine shares (the partition's mapped
        features, the halo cache), so batches in flight hold a fraction of the memory; ``"all"``
        (and ``"auto"``, the default) every row. Unlike fanout-train's, the Python loaders' auto
        is all: on DGL's GraphSAGE example the copy cost the script's thread 0.6-0.8 s an epoch of
        10 (its wait 0.16-0.22 s -> 0.82-0.98 s) for no lower peak (the rows moved from the batch
        files into the script's heap; docs/benchmarks.md)."""
        if batch_rows not in ("auto", "fetched", "all"):
            raise ValueError(f"{type(self).__name__}: batch_rows must be 'auto', 'fetched' or 'all', got {batch_rows!r}")
        args = dict(num_samplers=context.current().num_samplers if num_samplers is None else int(num_samplers),
                    num_threads=int(num_threads), prefetch=int(prefetch if queue_size is None else queue_size),
                    sampler_binary=context.sampler_binary(), batch_timeout_seconds=float(batch_timeout_seconds),
                    sampler_nice=context.current().sampler_nice,
                    machine_rows=batch_rows == "fetched", fetch_features=True)
        if args["num_samplers"] > 0 and not args["sampler_binary"]:
            raise FileNotFoundError(f"{type(self).__name__}: no fanout-sampler program for num_samplers="
                                    f"{args['num_samplers']}: put fanout's build/bin on PATH, set "
                                    "FANOUT_SAMPLER_BIN, or pass num_samplers=0 (sampler threads)")
        return args

    def _loader_settings(self, first_epoch: int, num_epochs: int) -> dict:
        return dict(self._loader, first_epoch=int(first_epoch), num_epochs=int(num_epochs),
                    fetch_features=self._fetching)

    def _follow_reads(self) -> None:
        """Fetches the feature rows of a field the sampler did not name (DGL's blocks do not carry
        them) for as long as the script reads them, by ``g.ndata[feat][input_nodes]``: a loader
        starts without them, asks for them from the next batch made once the script has read a
        batch's rows (pulled then), and stops once it has left a batch's rows unread: a
        layer-wise inference that reads each layer's input from its own ``DistTensor`` then
        moves no rows it does not read, and a training loop pulls only its first few batches'
        rows itself. Decided on the previous batch, when it was the graph's latest."""
        g = self._g
        if g._batch_source is None or g._batch_source() is not self:
            return
        want = self._feat in g._batch_reads
        if want != self._fetching:
            self._fetching = want
            self._native.fetch_features(want)

    def _start(self, first_epoch: int, num_epochs: int):  # the native loader
        raise NotImplementedError

    def _convert(self, batch):  # a native batch -> what the loop receives
        raise NotImplementedError

    def __len__(self) -> int:
        return self._steps

    @property
    def epoch(self) -> int:
        """The epoch the next pass will run."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Runs `epoch` next (resuming a run at its epoch)."""
        self._epoch = int(epoch)

    def close(self) -> None:
        """Stops the sampler processes now (also at exit, and when the loader is collected)."""
        if self._native is not None:
            self._native.close()
            self._native = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __iter__(self):
        epoch = self._epoch
        self._epoch += 1
        if self._native is None or self._native_epoch != epoch:
            self.close()
            self._native = self._start(epoch, _NUM_EPOCHS - epoch)
            self._native_epoch = epoch
        return self._run(epoch)

    def _run(self, epoch):
        native = self._native
        finished = False
        try:
            for step in range(self._steps):
                if not self._runs_ahead:
                    # An evaluation's batches and tensors are not a training step's: the buffers
                    # kept from the steps (initialize's keep_large_allocations) go back before its
                    # first batch, and its own when it ends. Its batches may be far larger than a
                    # step's (a layer-wise inference's 100,000 seeds with all their neighbours):
                    # what one left free, beyond a small batch's working set, goes back before
                    # the next.
                    _native.trim_heap(_KEEP_FREE_BETWEEN_BATCHES if step else 0)
                yield self._convert(native.next())
            finished = True
        finally:
            # An epoch left early leaves its batches in the pipe: the next pass starts afresh at its
            # own epoch instead of reading them.
            self._native_epoch = epoch + 1 if finished else -1
        if not self._runs_ahead:
            self.close()
            _native.trim_heap()

    def _blocks(self, b, sampler: NeighborSampler, label: str = ""):
        """fanout Blocks over a native batch's arrays (no copies), the features in blocks[0]'s
        srcdata, the labels in the last block's dstdata and the sampler's edge fields in each
        block's edata."""
        blocks = []
        nb = len(b["blocks"])
        for i, raw in enumerate(b["blocks"]):
            t = {k: torch.from_numpy(v) for k, v in raw.items() if isinstance(v, np.ndarray)}
            srcdata, dstdata, edata = {}, {}, {}
            if i == 0 and b["features"] is not None and self._feat:
                srcdata[self._feat] = torch.from_numpy(b["features"])
            if i == nb - 1 and label and len(b["labels"]) > 0:
                dstdata[label] = torch.from_numpy(b["labels"])
            edata.update(_edge_fields(t, sampler))
            blocks.append(Block(t["src_nodes"], raw["num_dst"], t["indptr"], t["indices"], t["eids"], t["dst"],
                                srcdata, dstdata, edata))
        # On the output device before the graph remembers the batch's rows: g.ndata[feat][input_nodes]
        # then still finds them (by identity) instead of fetching them again. Compressed features
        # cross as stored and are decoded there.
        blocks = [self._on_device(blk) for blk in blocks]
        if blocks and b["features"] is not None and self._feat and b["features_codec"]:
            blocks[0].srcdata[self._feat] = decode_rows(blocks[0].srcdata[self._feat], b["features_codec"])
        return blocks

    def _on_device(self, t):
        """`t` (a tensor or a block) on the output device (DGL's ``output_device``), if one is named."""
        return t.to(self._device) if self._device is not None else t

    def _edata_layout(self):
        """The names of the batch's edge fields in a block's edata, and for each the relations
        that hold it (a typed graph's field is per relation): worked out once per loader."""
        if self._edata_cache is None:
            g = self._g
            names = _edata_names(self._sampler)
            have = {(f["edge_type"], f["name"]) for f in g._native.edge_fields}
            holders = {k: {cet for cet in g.canonical_etypes if (":".join(cet), n) in have}
                       for k, n in names.items() if n}
            self._edata_cache = (names, holders)
        return self._edata_cache

    def _typed_blocks(self, b, label: str = "", label_type: Optional[str] = None):
        """HeteroBlocks over a typed native batch (IDs type-wise), the features by type in
        blocks[0]'s srcdata, the labels (of `label_type`) in the last block's dstdata; on the
        output device."""
        g = self._g
        types = torch.from_numpy(b["input_types"])
        names, holders = self._edata_layout()
        blocks = []
        for raw in b["blocks"]:
            t = {k: torch.from_numpy(v) for k, v in raw.items() if isinstance(v, np.ndarray)}
            n = len(t["src_nodes"])
            fields = {k: v for k, v in t.items() if k not in _BLOCK_STRUCTURE}
            blocks.append(HeteroBlock(g.ntypes, g.canonical_etypes, g._ntypes, g._etypes, t["src_nodes"], types[:n],
                                      raw["num_dst"], t["indices"], t["dst"], t["etype"], t["eids"], fields,
                                      names, holders))
        if b["features"] is not None and self._feat:
            featured = [g._ntype_id(f["node_type"]) for f in g._native.node_fields
                        if f["name"] == self._feat and f["node_type"]]
            rows = decode_rows(torch.from_numpy(b["features"]), b["features_codec"])
            blocks[0]._set_src(self._feat, typed_rows(rows, types, sorted(featured),
                                                      g.ntypes, blocks[0]._positions))
        if label and len(b["labels"]) > 0:
            blocks[-1]._set_dst(label, {label_type: torch.from_numpy(b["labels"])})
        return [self._on_device(blk) for blk in blocks]

    def _remember_typed(self, input_nodes: Dict[str, torch.Tensor], first: HeteroBlock, more=()) -> None:
        """A typed batch's rows for the graph to hand back: ``g.nodes[TYPE].data[feat][input_nodes[TYPE]]``
        (how DGL's R-GCN example reads its features) is then the batch's own tensor."""
        self._g._remember_batch([(f"{nt}/{self._feat}", ids, first.srcnodes[nt].data.get(self._feat))
                                 for nt, ids in input_nodes.items()] + list(more), input_nodes)


_BLOCK_STRUCTURE = frozenset(("src_nodes", "indptr", "indices", "eids", "dst", "etype"))


def _edge_fields(t: Dict[str, torch.Tensor], sampler: NeighborSampler) -> Dict[str, torch.Tensor]:
    """A native block's per-edge fields (every array but its structure) under the names the
    script asked for them by: the sampler's weight and feature fields under the graph's field
    names, any other under its own."""
    names = _edata_names(sampler)
    return {names.get(k) or k: v for k, v in t.items() if k not in _BLOCK_STRUCTURE}


def _edata_names(sampler: NeighborSampler) -> Dict[str, str]:
    """The names of the batch's edge fields in a block's edata: the graph's field names."""
    return {"edge_weight": sampler.edge_weight, "edge_feat": sampler.edge_feature}


class DistNodeDataLoader(_EpochLoader):
    """DGL's ``DistNodeDataLoader``: iterating it runs one epoch and yields
    ``(input_nodes, seeds, blocks)``; the next pass is the next epoch, reshuffled (``seed``,
    epoch and rank decide the order, so a run repeats exactly).

    ``len(loader)`` is the number of steps of an epoch. With ``even_steps`` (the default when
    shuffling, i.e. for training) every rank runs the same number of steps, so collectives stay in
    step: each trains on as many seeds an epoch as the rank given the fewest (one all-reduce of the
    counts when the loader is made, so every rank makes its training loaders in the same order, as
    with DDP; without a ``torch.distributed`` process group a rank takes all of its own). Over
    ``node_split``'s IDs that is fanout-train's ``total // world_size``, the one seed a larger share
    has left out turning with the epoch. Without it (the default for an unshuffled loader:
    evaluation) every given node is visited once per epoch.

    Batches are made ahead by the job's sampler processes (``fanout-launch --num-samplers N``, or
    ``num_samplers=``), or by ``num_threads`` threads in this process when there are none.
    ``to_dgl=True`` yields DGL blocks instead of fanout's; by default it does exactly when the
    script has imported DGL. Errors of a server or a sampler
    process are raised as ``FanoutError`` naming it.
    """

    def __init__(self, g: DistGraph, nids, graph_sampler: NeighborSampler, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, *, seed: int = 0, num_samplers: Optional[int] = None, num_threads: int = 1,
                 prefetch: int = 2, to_dgl: Optional[bool] = None, batch_timeout_seconds: float = 600.0,
                 feature_cache_bytes: int = 512 << 20, even_steps: Optional[bool] = None, device=None,
                 queue_size: Optional[int] = None, batch_rows: str = "auto", feature_cache_rows: str = "halo"):
        self._cache_rows = _cache_rows("DistNodeDataLoader", feature_cache_rows)
        batch_size = _count(batch_size, "DistNodeDataLoader: batch_size")
        _native.check_batch_size("DistNodeDataLoader: batch_size", batch_size)
        if not isinstance(graph_sampler, NeighborSampler):
            raise TypeError(f"DistNodeDataLoader takes a NeighborSampler, got {type(graph_sampler).__name__}")
        super().__init__(g, to_dgl, graph_sampler.prefetch_node_feats,
                         graph_sampler.output_device if device is None else device)
        # A typed graph's seeds: {ntype: type-wise IDs} of one node type (DGL's form).
        self._seed_type = None
        if isinstance(nids, dict) or g.is_typed():
            if not isinstance(nids, dict) or len(nids) != 1:
                raise ValueError(f"DistNodeDataLoader: on a typed graph, pass the seeds as {{ntype: IDs}} of one node "
                                 f"type (types: {', '.join(g.ntypes)})")
            (self._seed_type, typewise), = nids.items()
            typewise = _ids(typewise)
        self._nids = _ids(nids) if self._seed_type is None else typewise
        self._sampler = graph_sampler
        self._label = self._field(graph_sampler.prefetch_labels, _LABEL_NAMES)
        # Training (shuffled) keeps every rank at the same step count; evaluation visits every node.
        even = bool(shuffle) if even_steps is None else bool(even_steps)
        per_epoch = _fewest_on_any_rank(len(self._nids)) if even else len(self._nids)
        if drop_last:
            per_epoch -= per_epoch % batch_size
        if self._seed_type is not None:  # fanout's sampler takes graph-wide IDs
            self._typewise_nids = self._nids
            self._nids = np.ascontiguousarray(g._ntypes.to_homo(g._ntype_id(self._seed_type), self._nids))
        self._settings = graph_sampler._settings(
            batch_size=batch_size, shuffle=bool(shuffle), seed=seed, rank=context.current().rank,
            seeds_per_epoch=per_epoch, feature_field=self._feat, label_field=self._label,
            relation_fanouts=_relation_fanouts(g, graph_sampler))
        self._steps = _native.steps_per_epoch(self._settings, len(self._nids))  # known before any sampler starts
        self._loader = self._making(num_samplers, num_threads, prefetch, batch_timeout_seconds, queue_size, batch_rows)
        self._cache_bytes = int(feature_cache_bytes)
        self._follows = (graph_sampler.prefetch_node_feats is None and bool(self._feat) and self._to_dgl
                         and self._seed_type is None)
        self._fetching = not self._follows
        # An evaluation's loader (unshuffled) would otherwise hold its next pass's first batches,
        # and its sampler processes' memory, until the script evaluates again or lets it go: a
        # layer-wise inference's loader of one layer then still held them through the next layer.
        self._runs_ahead = bool(shuffle)

    def _start(self, first_epoch, num_epochs):
        return _native.NodeLoader(self._g._native, self._nids, sampler=self._settings,
                                  loader=self._loader_settings(first_epoch, num_epochs),
                                  cache_max_bytes=self._cache_bytes, cache_rows=self._cache_rows)

    def _convert(self, b):
        if self._seed_type is not None:
            return self._convert_typed(b)
        blocks = self._blocks(b, self._sampler, self._label)
        input_nodes = blocks[0].srcdata[NID]
        seeds = self._on_device(torch.from_numpy(b["seeds"]))
        rows = blocks[0].srcdata.get(self._feat)
        if self._follows:
            self._follow_reads()
            blocks[0].srcdata.pop(self._feat, None)
        self._g._remember_batch([(self._feat, input_nodes, rows),
                                 (self._label, seeds, blocks[-1].dstdata.get(self._label))], input_nodes, self)
        if self._to_dgl:
            blocks = [blk.to_dgl() for blk in blocks]
        return input_nodes, seeds, blocks


    def _convert_typed(self, b):
        """A typed batch: ({ntype: input IDs}, {seed type: seed IDs}, HeteroBlocks), IDs type-wise."""
        g = self._g
        blocks = self._typed_blocks(b, self._label, self._seed_type)
        input_nodes = {nt: blocks[0].srcnodes[nt].data[NID] for nt in g.ntypes}
        seeds = {self._seed_type: blocks[-1].dstnodes[self._seed_type].data[NID]}
        self._remember_typed(input_nodes, blocks[0], [(f"{self._seed_type}/{self._label}", seeds[self._seed_type],
                                                       blocks[-1].dstnodes[self._seed_type].data.get(self._label))])
        if self._to_dgl:
            blocks = [blk.to_dgl() for blk in blocks]
        return input_nodes, seeds, blocks


def _relation_fanouts(g: DistGraph, sampler: NeighborSampler):
    """The sampler's per-relation fanouts as [layer][relation] in the graph's relation order, or []
    when every layer has one fanout for all."""
    if not sampler.relation_fanouts:
        return []
    if not g.is_typed():
        raise ValueError("NeighborSampler: per-relation fanouts (dicts) need a typed graph")
    rels = g.canonical_etypes
    out = []
    for i, (f, layer) in enumerate(zip(sampler.fanouts, sampler.relation_fanouts)):
        if layer is None:
            out.append([f] * len(rels))
            continue
        row = [None] * len(rels)
        for etype, v in layer.items():
            r = canonical(etype, rels)
            if row[r] is not None:
                raise ValueError(f"NeighborSampler fanouts: layer {i} gives {rels[r]} twice")
            row[r] = _count(v, f"NeighborSampler fanouts: layer {i}'s {rels[r]}")
        missing = [rels[r] for r in range(len(rels)) if row[r] is None]
        if missing:  # DGL's rule: a dict lists every relation
            raise ValueError(f"NeighborSampler fanouts: layer {i} has no fanout for {missing}; a dict gives one for "
                             f"every relation (0 samples none)")
        out.append(row)
    return out


class _NegativeSampler:
    def __init__(self, k: int, kind: str, hard_field: str = "", hard: int = 0):
        if int(k) < 1:
            raise ValueError(f"negative sampler: k must be >= 1, got {k}")
        self.k = int(k)
        self.kind = kind  # fanout-train's --negative-sampling name
        self.hard_field = hard_field
        self.hard = int(hard)


class negative_sampler:  # noqa: N801  (DGL's module name: dgl.dataloading.negative_sampler)
    """Negatives per positive edge, as DGL's ``dgl.dataloading.negative_sampler``: the source is
    kept and the destination corrupted, drawn uniformly (``Uniform(k)``, or DGL's other name for
    it, ``PerSourceUniform(k)``) or with probability proportional to in-degree^0.75
    (``DegreePow75(k)``, word2vec's). fanout's own kinds, as fanout-train's
    ``--negative-sampling``: ``Joint(k)`` draws k nodes per batch shared by all its positives;
    ``InBatch(k)`` takes the destinations of the batch's other positives (min(k, batch - 1) each, no
    extra nodes); ``Local(k)`` draws among the trainer's own partition's nodes. A batch's
    ``neg_graph`` has k edges per positive (row ``i * k + j`` for positive i), in every kind."""

    @staticmethod
    def Uniform(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "uniform")

    @staticmethod
    def PerSourceUniform(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "uniform")

    @staticmethod
    def DegreePow75(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "degree")

    @staticmethod
    def Joint(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "joint")

    @staticmethod
    def InBatch(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "in-batch")

    @staticmethod
    def Local(k: int) -> _NegativeSampler:  # noqa: N802
        return _NegativeSampler(k, "local")

    @staticmethod
    def Hard(k: int, field: str, hard: int = 0, fill: str = "uniform") -> _NegativeSampler:  # noqa: N802
        """k negatives per positive, the first of them its edge's hard negatives from the edge field
        ``field`` (fanout-partition --hard-negative-field; at most ``hard``, 0: up to k), the rest
        drawn by ``fill`` ("uniform", "degree" or "local"), as fanout-train's
        ``--hard-negative-field``."""
        if fill not in ("uniform", "degree", "local"):
            raise ValueError(f"negative_sampler.Hard: fill={fill!r} must be 'uniform', 'degree' or 'local'")
        return _NegativeSampler(k, fill, field, hard)


class EdgePredictionSampler:
    """DGL's ``as_edge_prediction_sampler``: node sampling around a batch's edge endpoints, with
    negatives, and the batch's positive edges left out of the blocks (both directions, DGL's
    ``exclude="reverse_id"`` on a graph stored with reverse edges) unless ``exclude`` is None.
    fanout finds the reverse of an edge by its endpoints, so DGL's ``reverse_eids`` /
    ``reverse_etypes`` (which tell DGL where the reverses are) are accepted and not needed."""

    def __init__(self, sampler: NeighborSampler, exclude="reverse_id", reverse_eids=None, reverse_etypes=None,
                 negative_sampler=None, prefetch_labels=None):
        if not isinstance(sampler, NeighborSampler):
            raise TypeError(f"as_edge_prediction_sampler takes a NeighborSampler, got {type(sampler).__name__}")
        if exclude not in (None, "self", "reverse_id", "reverse_types"):
            raise ValueError(f"as_edge_prediction_sampler: exclude={exclude!r} is not supported (None, or 'self', "
                             "'reverse_id', 'reverse_types': the batch's pairs left out in both directions)")
        if prefetch_labels:
            raise NotImplementedError("as_edge_prediction_sampler: prefetch_labels (edge labels) is not supported yet")
        self.sampler = sampler
        self.exclude_seed_edges = exclude is not None
        self.negative_sampler = negative_sampler


def as_edge_prediction_sampler(sampler: NeighborSampler, exclude="reverse_id", reverse_eids=None,
                               reverse_etypes=None, negative_sampler=None,
                               prefetch_labels=None) -> EdgePredictionSampler:
    return EdgePredictionSampler(sampler, exclude=exclude, reverse_eids=reverse_eids, reverse_etypes=reverse_etypes,
                                 negative_sampler=negative_sampler, prefetch_labels=prefetch_labels)


class PairGraph:
    """DGL's ``pos_graph`` / ``neg_graph`` of an edge batch: ``num_nodes()`` nodes, the batch's
    seeds (the blocks' output nodes, ``ndata[NID]``), and the pairs between them as edges whose
    endpoints index the seeds (``edges()``; PyG: ``edge_index``)."""

    def __init__(self, seeds: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, eids: Optional[torch.Tensor]):
        self._src, self._dst = src, dst
        self.ndata: Dict[str, torch.Tensor] = {NID: seeds}
        self.edata: Dict[str, torch.Tensor] = {EID: eids} if eids is not None else {}

    def num_nodes(self, ntype=None) -> int:
        return int(self.ndata[NID].shape[0])

    def num_edges(self, etype=None) -> int:
        return int(self._src.shape[0])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def edges(self, form="uv", order="eid"):
        return self._src, self._dst

    @property
    def edge_index(self) -> torch.Tensor:
        return torch.stack([self._src, self._dst])

    def to(self, device, non_blocking: bool = False) -> "PairGraph":
        mv = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        eids = self.edata.get(EID)
        return PairGraph(mv(self.ndata[NID]), mv(self._src), mv(self._dst), mv(eids) if eids is not None else None)

    def to_dgl(self):
        import dgl
        g = dgl.graph((self._src, self._dst), num_nodes=self.num_nodes(), device=self._src.device)
        g.ndata[dgl.NID] = self.ndata[NID]
        if EID in self.edata:
            g.edata[dgl.EID] = self.edata[EID]
        return g


class TypedPairGraph:
    """A typed edge batch's ``pos_graph`` / ``neg_graph`` (DGL's heterograph of the batch's
    pairs): per node type its seeds (the blocks' output nodes of that type, ``ndata[NID][ntype]``,
    type-wise IDs), per relation of the batch's positives its pairs as edges whose endpoints index
    the seeds of the relation's source and destination types (``edges(etype=...)``; PyG:
    ``edge_index_dict``), and for positives ``edata[EID][etype]``, type-wise edge IDs."""

    def __init__(self, nodes: Dict[str, torch.Tensor], pairs: Dict[tuple, tuple], eids: Optional[Dict[tuple, torch.Tensor]]):
        self.ntypes = list(nodes)
        self.canonical_etypes = list(pairs)
        self._pairs = pairs
        self.ndata: Dict[str, Dict[str, torch.Tensor]] = {NID: nodes}
        self.edata: Dict[str, Dict[tuple, torch.Tensor]] = {EID: eids} if eids is not None else {}

    @property
    def etypes(self):
        return [c[1] for c in self.canonical_etypes]

    def _cet(self, etype) -> tuple:
        if etype is None:
            if len(self.canonical_etypes) != 1:
                raise KeyError(f"this pair graph has {len(self.canonical_etypes)} relations "
                               f"({', '.join(map(str, self.canonical_etypes))}): name one with etype=")
            return self.canonical_etypes[0]
        if isinstance(etype, (tuple, list)) and tuple(etype) in self._pairs:
            return tuple(etype)
        hits = [c for c in self.canonical_etypes if c[1] == etype]
        if len(hits) != 1:
            raise KeyError(f"edge type {etype!r} is not one relation of this pair graph "
                           f"({', '.join(map(str, self.canonical_etypes))})")
        return hits[0]

    def num_nodes(self, ntype=None) -> int:
        nodes = self.ndata[NID]
        return sum(int(t.shape[0]) for t in nodes.values()) if ntype is None else int(nodes[ntype].shape[0])

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return sum(int(u.shape[0]) for u, _ in self._pairs.values())
        return int(self._pairs[self._cet(etype)][0].shape[0])

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def edges(self, form="uv", order="eid", etype=None):
        return self._pairs[self._cet(etype)]

    @property
    def edge_index_dict(self) -> Dict[tuple, torch.Tensor]:
        return {c: torch.stack(uv) for c, uv in self._pairs.items()}

    def to(self, device, non_blocking: bool = False) -> "TypedPairGraph":
        mv = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        eids = self.edata.get(EID)
        return TypedPairGraph({t: mv(x) for t, x in self.ndata[NID].items()},
                              {c: (mv(u), mv(v)) for c, (u, v) in self._pairs.items()},
                              {c: mv(x) for c, x in eids.items()} if eids is not None else None)

    def to_dgl(self):
        import dgl
        any_t = next(iter(self.ndata[NID].values()))
        g = dgl.heterograph({c: uv for c, uv in self._pairs.items()},
                            num_nodes_dict={t: int(x.shape[0]) for t, x in self.ndata[NID].items()},
                            device=any_t.device)
        for t, x in self.ndata[NID].items():
            g.nodes[t].data[dgl.NID] = x
        for c, x in self.edata.get(EID, {}).items():
            g.edges[c].data[dgl.EID] = x
        return g


def _typed_rank_edges(graph: DistGraph, ctx, rank: int) -> Dict[tuple, torch.Tensor]:
    """fanout-train's positive edges of `rank` on a typed graph as {relation: type-wise IDs}."""
    ids = _native.rank_edge_ids(graph._native, ctx.num_trainers, rank)
    types, typewise = graph._etypes.to_typewise(ids)
    return {graph.canonical_etypes[t]: torch.from_numpy(np.ascontiguousarray(typewise[types == t]))
            for t in sorted(set(types.tolist()))}


def edge_split(edges=None, partition_book=None, etype: str = "_E", rank: Optional[int] = None,
               force_even: bool = True) -> torch.Tensor:
    """This trainer's positive edges (DGL's ``edge_split``). Without ``edges``: fanout-train's own
    (``--task link``): the edges its partition stores, cut into one contiguous slice per trainer
    of the machine. With a tensor of edge IDs (or a boolean mask over all edges): an even,
    contiguous share of them in ID order."""
    graph = partition_book._graph if partition_book is not None else DistGraph._current
    if graph is None:
        raise RuntimeError("edge_split needs a DistGraph (or its partition book)")
    ctx = context.current()
    rank = ctx.rank if rank is None else rank
    if edges is None and graph.is_typed():
        # {relation: type-wise IDs} of the link relations (DistEdgeDataLoader's form), or one
        # relation's IDs when `etype` names it.
        mine = _typed_rank_edges(graph, ctx, rank)
        if etype == "_E":
            return mine
        return mine.get(graph.to_canonical_etype(etype), torch.zeros(0, dtype=torch.int64))
    if edges is None:
        begin, end = _native.rank_edge_range(graph._native, ctx.num_trainers, rank)
        return torch.arange(begin, end, dtype=torch.int64)
    t = torch.as_tensor(edges)
    ids = np.flatnonzero(t.cpu().numpy()) if t.dtype == torch.bool else np.unique(_ids(t))
    return torch.from_numpy(np.ascontiguousarray(np.array_split(ids, ctx.world_size)[rank]).astype(np.int64))


def _fewest_on_any_rank(count: int) -> int:
    """The smallest ``count`` any rank of the ``torch.distributed`` process group passes (this
    rank's own without a group of more than one process): the seeds each rank trains on per epoch."""
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return count
    if torch.distributed.get_world_size() < 2:
        return count
    on = torch.device("cuda", torch.cuda.current_device()) if torch.distributed.get_backend() == "nccl" else "cpu"
    t = torch.tensor([count], dtype=torch.int64, device=on)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MIN)
    return int(t.item())


def _cache_rows(loader: str, value: str) -> str:
    """A loader's ``feature_cache_rows``: "halo" or "presample"."""
    if value not in ("halo", "presample"):
        raise ValueError(f"{loader}: feature_cache_rows must be 'halo' or 'presample', got {value!r}")
    return value


def _min_rank_edges(graph: DistGraph, ctx) -> int:
    """The fewest edges any rank gets from ``edge_split()`` (every rank runs that many per epoch,
    as fanout-train does)."""
    return min(_native.rank_edge_count(graph._native, ctx.num_trainers, r) for r in range(ctx.world_size))


class DistEdgeDataLoader(_EpochLoader):
    """DGL's ``DistEdgeDataLoader`` for link prediction: each pass over it is an epoch of
    ``batch_size`` positive edges a step (always shuffled, from ``seed``, epoch and rank), and
    yields ``(input_nodes, pos_graph, neg_graph, blocks)``: the blocks embed the batch's seeds
    (every endpoint of its positive and negative pairs), ``pos_graph`` and ``neg_graph`` are the
    pairs as graphs over those seeds (``PairGraph``, or DGL graphs when the script imported DGL).
    Over ``edge_split()``'s edges every rank runs the same number of steps.

    On a typed graph partitioned for link prediction (``fanout-partition --link-etype
    REL[,REL...]``) the positives are ``{relation: type-wise edge IDs}`` of those relations
    (``edge_split(None, pb)`` gives this trainer's), each negative of its positive's relation's
    destination type; the batch is ``({ntype: input IDs}, TypedPairGraph, TypedPairGraph,
    HeteroBlocks)``, per-relation fanouts (dicts) allowed."""

    def __init__(self, g: DistGraph, eids, graph_sampler: EdgePredictionSampler, batch_size: int = 1,
                 shuffle: bool = True, drop_last: bool = False, *, seed: int = 0, num_samplers: Optional[int] = None,
                 num_threads: int = 1, prefetch: int = 2, to_dgl: Optional[bool] = None,
                 batch_timeout_seconds: float = 600.0, feature_cache_bytes: int = 512 << 20, device=None,
                 queue_size: Optional[int] = None, batch_rows: str = "auto", feature_cache_rows: str = "halo"):
        self._cache_rows = _cache_rows("DistEdgeDataLoader", feature_cache_rows)
        ctx = context.current()
        batch_size = _count(batch_size, "DistEdgeDataLoader: batch_size")
        if not isinstance(graph_sampler, EdgePredictionSampler):
            raise TypeError("DistEdgeDataLoader takes as_edge_prediction_sampler(NeighborSampler(...), "
                            "negative_sampler=negative_sampler.Uniform(k))")
        if graph_sampler.negative_sampler is None:
            raise NotImplementedError("DistEdgeDataLoader: a negative_sampler is required (e.g. "
                                      "negative_sampler.Uniform(1))")
        _native.check_batch_size("DistEdgeDataLoader: batch_size", batch_size)
        if not shuffle:
            raise ValueError("DistEdgeDataLoader: link batches are always shuffled (shuffle=False is not supported)")
        ns = graph_sampler.sampler
        super().__init__(g, to_dgl, ns.prefetch_node_feats, ns.output_device if device is None else device)
        self._sampler = ns
        self._typed = g.is_typed()
        self._eids = self._typed_eids(g, eids) if self._typed else _ids(eids)
        per_epoch = len(self._eids)
        if per_epoch == _native.rank_edge_count(g._native, ctx.num_trainers, ctx.rank):
            if self._typed:
                own = _native.rank_edge_ids(g._native, ctx.num_trainers, ctx.rank)
            else:  # one range
                own = np.arange(*_native.rank_edge_range(g._native, ctx.num_trainers, ctx.rank))
            if np.array_equal(self._eids, own):  # edge_split()'s: keep the ranks in step
                per_epoch = _min_rank_edges(g, ctx)
        if drop_last:
            per_epoch -= per_epoch % batch_size
        if ns.relation_fanouts and not self._typed:
            raise ValueError("DistEdgeDataLoader: per-relation fanouts (dicts) need a typed graph")
        # Link batches take no labels and are always shuffled over the rank's edges (the sampler
        # settings' shuffle and seeds_per_epoch do not apply; link.edges_per_epoch does).
        self._settings = ns._settings(batch_size=batch_size, shuffle=True, seed=seed, rank=ctx.rank,
                                      seeds_per_epoch=-1, feature_field=self._feat, label_field="",
                                      relation_fanouts=_relation_fanouts(g, ns) if self._typed else [])
        negatives = graph_sampler.negative_sampler
        self._link = dict(negatives=negatives.k, negative_sampling=negatives.kind,
                          hard_negative_field=negatives.hard_field, hard_negatives=negatives.hard,
                          exclude_seed_edges=graph_sampler.exclude_seed_edges, edges_per_epoch=per_epoch)
        self._steps = _native.link_steps_per_epoch(self._settings, self._link, len(self._eids))
        self._loader = self._making(num_samplers, num_threads, prefetch, batch_timeout_seconds, queue_size, batch_rows)
        self._cache_bytes = int(feature_cache_bytes)

    def _start(self, first_epoch, num_epochs):
        return _native.EdgeLoader(self._g._native, self._eids, sampler=self._settings, link=self._link,
                                  loader=self._loader_settings(first_epoch, num_epochs),
                                  cache_max_bytes=self._cache_bytes, cache_rows=self._cache_rows)

    @staticmethod
    def _typed_eids(g: DistGraph, eids) -> np.ndarray:
        """Graph-wide edge IDs of {relation: type-wise IDs}, each relation one the graph was
        partitioned to predict (config link_etypes: its negatives' type and held-out pairs)."""
        link = [tuple(x.split(":")) for x in g._native.link_etypes]
        if not link:
            raise ValueError(f"DistEdgeDataLoader: the typed graph {g.graph_name!r} was not partitioned for link "
                             "prediction: fanout-partition --edge-split TRAIN,VALID,TEST --link-etype REL[,REL...]")
        if not isinstance(eids, dict):
            raise ValueError("DistEdgeDataLoader: on a typed graph, pass the positives as {relation: type-wise edge "
                             "IDs} (edge_split(None, g.get_partition_book()) gives this trainer's)")
        parts = {}
        for etype, ids in eids.items():
            cet = g.to_canonical_etype(etype)
            if cet not in link:
                raise ValueError(f"DistEdgeDataLoader: {cet} is not a link relation of {g.graph_name!r} (partitioned "
                                 f"for: {', '.join(map(str, link))})")
            parts[cet] = g._etypes.to_homo(g.canonical_etypes.index(cet), _ids(ids))
        # In the partition's link relation order, fanout-train's (rank_edge_ids): edge_split()'s
        # dict then gives exactly fanout-train's positives, in its order.
        ordered = [parts[cet] for cet in link if cet in parts]
        return np.ascontiguousarray(np.concatenate(ordered)) if ordered else np.zeros(0, dtype=np.int64)

    def _convert_typed(self, b):
        """({ntype: input IDs}, TypedPairGraph, TypedPairGraph, HeteroBlocks), IDs type-wise."""
        g = self._g
        blocks = self._typed_blocks(b)
        # Each seed's index among the seeds of its type: the seeds are the last block's
        # destinations, a prefix of its sources, whose indices within their type it has.
        local = blocks[-1]._local[:len(b["seeds"])]
        nodes = {name: blocks[-1].dstnodes[name].data[NID] for name in g.ntypes}
        pos_src, pos_dst = torch.from_numpy(b["pos_src"]), torch.from_numpy(b["pos_dst"])
        neg_src, neg_dst = torch.from_numpy(b["neg_src"]), torch.from_numpy(b["neg_dst"])
        rel, typewise = g._etypes.to_typewise(b["pos_eids"])
        rel, typewise = torch.from_numpy(rel), torch.from_numpy(typewise)
        k = len(neg_dst) // max(1, len(pos_src))
        pos, neg, eids = {}, {}, {}
        for r in sorted(set(rel.tolist())):
            cet = g.canonical_etypes[r]
            mine = (rel == r).nonzero().flatten()
            pos[cet] = (local[pos_src[mine]], local[pos_dst[mine]])
            eids[cet] = typewise[mine]
            negs = (mine.unsqueeze(1) * k + torch.arange(k)).flatten()  # its positives' negatives
            neg[cet] = (local[neg_src[negs]], local[neg_dst[negs]])
        device = lambda d: {key: self._on_device(x) for key, x in d.items()}  # noqa: E731
        pos_graph = TypedPairGraph(device(nodes), {c: tuple(map(self._on_device, uv)) for c, uv in pos.items()},
                                   device(eids))
        neg_graph = TypedPairGraph(device(nodes), {c: tuple(map(self._on_device, uv)) for c, uv in neg.items()}, None)
        input_nodes = {nt: blocks[0].srcnodes[nt].data[NID] for nt in g.ntypes}
        self._remember_typed(input_nodes, blocks[0])
        if self._to_dgl:
            blocks = [blk.to_dgl() for blk in blocks]
            pos_graph, neg_graph = pos_graph.to_dgl(), neg_graph.to_dgl()
        return input_nodes, pos_graph, neg_graph, blocks

    def _convert(self, b):
        if self._typed:
            return self._convert_typed(b)
        blocks = self._blocks(b, self._sampler)
        seeds = torch.from_numpy(b["seeds"])  # the pair graphs' own, moved with them
        pos = self._on_device(PairGraph(seeds, torch.from_numpy(b["pos_src"]), torch.from_numpy(b["pos_dst"]),
                                        torch.from_numpy(b["pos_eids"])))
        neg = self._on_device(PairGraph(seeds, torch.from_numpy(b["neg_src"]), torch.from_numpy(b["neg_dst"]), None))
        input_nodes = blocks[0].srcdata[NID]
        self._g._remember_batch([(self._feat, input_nodes, blocks[0].srcdata.get(self._feat))], input_nodes)
        if self._to_dgl:
            blocks = [blk.to_dgl() for blk in blocks]
            pos, neg = pos.to_dgl(), neg.to_dgl()
        return input_nodes, pos, neg, blocks
