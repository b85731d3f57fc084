"""The block type fanout hands a scripted model.

A mini-batch of an L-layer model has L blocks; ``blocks[0]`` is the input layer and
``blocks[-1]`` the output layer (DGL's order). Each block is a ``Dict[str, Tensor]`` with:

``indptr``    int64 [num_dst + 1]   CSC index pointer: destination j's in-edges are
                                    ``indptr[j] .. indptr[j+1]-1``
``src``       int64 [num_edges]     source of each edge, an index into the block's source nodes
``dst``       int64 [num_edges]     destination of each edge (non-decreasing)
``in_degree`` int64 [num_dst]       ``indptr[1:] - indptr[:-1]``
``num_src``   int64 []              number of source nodes
``num_dst``   int64 []              number of destination nodes; they are the first ``num_dst``
                                    source nodes, in order

and, only when they apply:

``edge_weight``  float32 [num_edges]  the weight of each edge (``fanout-train --edge-weight
                                      FIELD``); fanout's layers multiply it into the messages
``edge_feat``    float32 [num_edges, width]  the edge field of ``fanout-train --edge-feature
                                      FIELD`` for each edge
``out_degree``   int64 [num_src]      each source's out-degree in the whole graph (full-graph
                                      inference; GCN normalises by it)

On a typed graph (several node types or relations; docs/models.md, "Typed graphs"), each block
also has:

``etype``         int64 [num_edges]   each edge's relation: an index into the partition config's
                                      edge types; a destination's edges are listed relation by
                                      relation
``num_relations`` int64 []            the graph's number of relations
``src_type``      int64 [num_src]     each source node's type (an index into the node types;
                                      the destinations' types are its first ``num_dst``)

and :func:`relation_blocks` splits such a block into one block per relation, each an ordinary
block over the same source and destination numbering, so that any one-type layer runs on a
relation (DGL's ``HeteroGraphConv``); :func:`relation_slots` makes it one block over
(destination, relation) pairs instead, for a layer whose per-relation work is one aggregation. ``x`` then comes from fanout-train's typed input layer:
projected features, learnable embeddings or zeros per node type.

``x`` given to ``forward`` has one row per source node of ``blocks[0]``; the output must have
``blocks[-1]["num_dst"]`` rows. Tensors are read-only: do not modify them in place.
"""

from typing import Dict, List

import torch

Block = Dict[str, torch.Tensor]


def block_keys() -> List[str]:
    return ["indptr", "src", "dst", "in_degree", "num_src", "num_dst"]


def make_block(src: torch.Tensor, dst: torch.Tensor, num_src: int, num_dst: int) -> Block:
    """A block from an edge list (edges sorted by destination), as fanout builds it. For tests."""
    order = torch.argsort(dst, stable=True)
    src, dst = src[order], dst[order]
    in_degree = torch.bincount(dst, minlength=num_dst)
    indptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(in_degree, 0)
    return {
        "indptr": indptr,
        "src": src.to(torch.int64),
        "dst": dst.to(torch.int64),
        "in_degree": in_degree.to(torch.int64),
        "num_src": torch.tensor(num_src, dtype=torch.int64),
        "num_dst": torch.tensor(num_dst, dtype=torch.int64),
    }


def relation_blocks(block: Block) -> List[Block]:
    """A typed block as one block per relation (``block["num_relations"]`` of them, in relation
    order): relation r's block has the same sources and destinations as ``block`` (its
    ``num_src``, ``num_dst``) and only the edges whose ``etype`` is r, still ordered by
    destination, with their ``edge_weight``/``edge_feat`` rows. Scriptable."""
    etype = block["etype"]
    num_dst = int(block["num_dst"])
    out: List[Block] = []
    for r in range(int(block["num_relations"])):
        m = (etype == r).nonzero().flatten()
        dst = block["dst"].index_select(0, m)
        in_degree = torch.bincount(dst, minlength=num_dst)
        indptr = torch.zeros(num_dst + 1, dtype=torch.int64, device=dst.device)
        indptr[1:] = torch.cumsum(in_degree, 0)
        rb: Block = {
            "indptr": indptr,
            "src": block["src"].index_select(0, m),
            "dst": dst,
            "in_degree": in_degree,
            "num_src": block["num_src"],
            "num_dst": block["num_dst"],
        }
        if "edge_weight" in block:
            rb["edge_weight"] = block["edge_weight"].index_select(0, m)
        if "edge_feat" in block:
            rb["edge_feat"] = block["edge_feat"].index_select(0, m)
        out.append(rb)
    return out


def relation_slots(block: Block) -> Block:
    """A typed block as one block over (destination, relation) slots: slot ``v * R + r`` (R =
    ``block["num_relations"]``) has v's relation-r in-edges, so one mean over it gives every
    relation's mean at once, viewed ``[num_dst, R * width]``. One aggregation instead of one per
    relation, and in backward one gradient for the sources instead of one per relation to be
    summed (fanout-train's R-GCN works the same way). The sampler lists a destination's edges
    relation by relation, so the edges keep their order; edges in any other order are sorted
    (stably) into it. Scriptable."""
    num_relations = int(block["num_relations"])
    num_slots = int(block["num_dst"]) * num_relations
    slot = block["dst"] * num_relations + block["etype"]
    src = block["src"]
    weight = block["edge_weight"] if "edge_weight" in block else None
    if slot.numel() > 1 and not bool(torch.all(slot[1:] >= slot[:-1])):
        order = torch.argsort(slot, stable=True)
        slot = slot.index_select(0, order)
        src = src.index_select(0, order)
        if weight is not None:
            weight = weight.index_select(0, order)
    in_degree = torch.bincount(slot, minlength=num_slots)
    indptr = torch.zeros(num_slots + 1, dtype=torch.int64, device=slot.device)
    indptr[1:] = torch.cumsum(in_degree, 0)
    out: Block = {
        "indptr": indptr,
        "src": src,
        "dst": slot,
        "in_degree": in_degree,
        "num_src": block["num_src"],
        "num_dst": torch.tensor(num_slots, dtype=torch.int64),
    }
    if weight is not None:
        out["edge_weight"] = weight
    return out
