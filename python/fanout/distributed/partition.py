"""DGL's ``dgl.distributed.partition_graph`` on fanout's partitioner, so a DGL script's
partitioning step ports by its imports too."""

import torch

from fanout import partition as _partition
from fanout.id_maps import IdMaps


def _fields(frame) -> dict:
    """A DGL node or edge frame (``g.ndata``, ``g.nodes[t].data``, ...) as {name: array}."""
    return {name: _partition.numpy(values) for name, values in frame.items()}


def _write_dgl(g, d: str) -> None:
    if g.is_homogeneous:
        src, dst = g.edges()  # in edge ID order: input edge i is DGL's edge i
        _partition.write_plain(d, _partition.numpy(src), _partition.numpy(dst), _fields(g.ndata), _fields(g.edata))
        return
    edges, edge_fields = {}, {}
    for cet in g.canonical_etypes:
        src, dst = g.edges(etype=cet)
        edges[cet] = (_partition.numpy(src), _partition.numpy(dst))
        edge_fields[cet] = _fields(g.edges[cet].data)
    _partition.write_typed(d, {t: g.num_nodes(t) for t in g.ntypes}, edges,
                           {t: _fields(g.nodes[t].data) for t in g.ntypes}, edge_fields)


def partition_graph(g, graph_name: str, num_parts: int, out_path: str, num_hops: int = 1, part_method: str = "metis",
                    balance_ntypes=None, balance_edges: bool = False, return_mapping: bool = False,
                    num_trainers_per_machine: int = 1, objtype: str = "cut", graph_formats=None,
                    use_graphbolt: bool = False, **kwargs):
    """DGL's ``partition_graph`` for a ``dgl.DGLGraph`` (one type or several): its edges, node
    and edge data (``train_mask``/``val_mask``/``test_mask`` become the split, every other
    field keeps its name) cut by ``fanout-partition`` into ``out_path/<graph_name>.json`` and
    ``part<k>/``, read by ``fanout.distributed.DistGraph`` and ``fanout-launch``.

    With ``return_mapping=True`` it returns ``(orig_nids, orig_eids)`` as DGL does: fanout
    renumbers nodes (each partition's contiguous, DGL's convention), and ``orig_nids[i]`` is the
    input ID of node ``i`` of the partitioned graph, ``orig_eids[j]`` the input ID of edge ``j``;
    on a typed graph dicts by node type and by canonical edge type of type-wise IDs. So a script
    maps its own arrays the way DGL's users do (``labels[orig_nids]``).

    ``num_hops`` is the halo (0 or 1), ``part_method`` ``"metis"`` or ``"random"``, ``objtype``
    ``"cut"`` or ``"vol"``, ``balance_edges`` balances in-edges; fanout always balances the
    training nodes (DGL's ``balance_ntypes``), and splits each machine's seeds between its
    trainers itself (``num_trainers_per_machine`` needs no partitioning of its own).
    ``graph_formats`` is accepted and not needed; ``use_graphbolt`` and other keywords are
    refused by name."""
    if kwargs:
        raise TypeError(f"partition_graph got unexpected keyword argument(s): {', '.join(sorted(kwargs))}")
    if use_graphbolt:
        raise NotImplementedError("partition_graph(use_graphbolt=True): fanout's partitions are read by fanout's own "
                                  "sampler; leave use_graphbolt off")
    if int(num_hops) not in (0, 1):
        raise ValueError(f"partition_graph: num_hops={num_hops}: fanout records 0 or 1 hop of halo")
    if part_method not in ("metis", "random"):
        raise ValueError(f"partition_graph: part_method={part_method!r} must be 'metis' or 'random'")
    if objtype not in ("cut", "vol"):
        raise ValueError(f"partition_graph: objtype={objtype!r} must be 'cut' or 'vol'")
    if not hasattr(g, "canonical_etypes"):
        raise TypeError(f"partition_graph takes a dgl.DGLGraph, got {type(g).__name__}")
    args = ["--halo-hops", str(int(num_hops)), "--part-method", part_method, "--objtype", objtype, "--overwrite"]
    if balance_edges:
        args.append("--balance-edges")
    if g.is_homogeneous:
        args += ["--num-nodes", str(int(g.num_nodes()))]
    config = _partition.run(lambda d: _write_dgl(g, d), out_path, num_parts, graph_name, args)
    if return_mapping:
        return mapping(config)
    return None


def mapping(config: str):
    """``(orig_nids, orig_eids)`` of a fanout partition, as ``partition_graph(...,
    return_mapping=True)`` returns them (DGL's form: on a typed graph keyed by node type and by
    canonical edge type)."""
    maps = IdMaps(config)
    if maps.node_types == ["_N"]:
        return torch.from_numpy(maps.typewise_orig("node", 0)), torch.from_numpy(maps.typewise_orig("edge", 0))
    return ({t: torch.from_numpy(maps.typewise_orig("node", i)) for i, t in enumerate(maps.node_types)},
            {tuple(et.split(":")): torch.from_numpy(maps.typewise_orig("edge", i))
             for i, et in enumerate(maps.edge_types)})
