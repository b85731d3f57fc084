"""Reference GNN layers on fanout blocks, ready to script.

Semantics follow DGL's layers of the same name (and fanout's built-in models, docs/training.md):
``SAGEConv`` (mean aggregator), ``GCNConv`` (``norm='both'`` with in-block degrees), ``GATConv``
(``GATConv`` with feature and attention dropout), ``GINConv`` (sum aggregator, learnable eps);
on typed graphs, ``RelGraphConv`` (fanout-train's ``rgcn``: per-relation SAGE means, summed,
with a self loop), ``RelGATConv`` (fanout-train's ``rgat``: a GAT per relation, summed, with
a self projection) and ``HGTConv`` (fanout-train's ``hgt``: PyG's ``HGTConv``).

Each aggregates either with fanout's fused kernels (``fused=True``: ``torch.ops.fanout.*``, see
:mod:`fanout.ops`; as fast as the built-in models, runs only where the operators are) or with
plain tensor ops (``fused=False``: ``index_select`` / ``index_add_``, a per-edge message tensor,
slower, runs anywhere). ``fused=None`` picks the kernels when their library can be loaded.
"""

import math
import os
from typing import Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fanout import ops
from fanout.blocks import relation_blocks, relation_slots


def _use_fused(fused: Optional[bool]) -> bool:
    if fused is None:
        return ops.load()
    if fused and not ops.load():
        path, want = ops.library_path(), ops.built_for(ops.library_path())
        if want and os.path.exists(path):
            raise RuntimeError(f"fused=True needs fanout's operator library, and {path} was built for PyTorch {want}, "
                               f"not this {torch.__version__}: use fused=False (plain PyTorch) here")
        raise RuntimeError(f"fused=True needs fanout's operator library ({path}); build fanout "
                           "or set FANOUT_TORCH_OPS")
    return fused


class Aggregate(nn.Module):
    """out[v] = reduce of w[e] * h[u] over v's in-edges (u, v); plain tensor ops."""

    def __init__(self, reduce: str):
        super().__init__()
        self.mean = reduce == "mean"

    def forward(self, block: Dict[str, Tensor], h: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        msg = h.index_select(0, block["src"])
        if edge_weight is not None:
            w = edge_weight
            while w.dim() < msg.dim():
                w = w.unsqueeze(-1)
            msg = msg * w
        shape: List[int] = [int(block["num_dst"])] + list(h.shape[1:])  # eager and TorchScript alike
        out = torch.zeros(shape, dtype=h.dtype, device=h.device)
        out.index_add_(0, block["dst"], msg)
        if self.mean:
            deg = block["in_degree"].clamp(min=1).to(h.dtype)
            while deg.dim() < out.dim():
                deg = deg.unsqueeze(-1)
            out = out / deg
        return out


class FusedAggregate(nn.Module):
    """Aggregate on fanout's fused kernel (torch.ops.fanout.aggregate)."""

    def __init__(self, reduce: str):
        super().__init__()
        self.reduce = reduce

    def forward(self, block: Dict[str, Tensor], h: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        return torch.ops.fanout.aggregate(block, h, self.reduce, edge_weight)


def edge_weight(block: Dict[str, Tensor]) -> Optional[Tensor]:
    """The block's per-edge weights (``fanout-train --edge-weight FIELD``), or None."""
    if "edge_weight" in block:
        return block["edge_weight"]
    return None


def _aggregate(reduce: str, fused: bool) -> nn.Module:
    return FusedAggregate(reduce) if fused else Aggregate(reduce)


class SelfAndMean(nn.Module):
    """[h[:num_dst] | mean of in-neighbours] as one [num_dst, 2 * width] tensor; plain ops."""

    def __init__(self):
        super().__init__()
        self.mean = Aggregate("mean")

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        return torch.cat([h[: int(block["num_dst"])], self.mean(block, h)], 1)


class FusedSelfAndMean(nn.Module):
    """SelfAndMean written directly by fanout's kernel (torch.ops.fanout.aggregate_with_self)."""

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        return torch.ops.fanout.aggregate_with_self(block, h, "mean")


class ReluDropout(nn.Module):
    """dropout(relu(x)) (or dropout(x) with relu=False); plain ops."""

    def __init__(self, p: float, relu: bool = True):
        super().__init__()
        self.drop = nn.Dropout(p)
        self.relu = relu

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(F.relu(x) if self.relu else x)


class FusedReluDropout(nn.Module):
    """ReluDropout as one pass of fanout's kernel (torch.ops.fanout.dropout)."""

    def __init__(self, p: float, relu: bool = True):
        super().__init__()
        self.p = p
        self.relu = relu

    def forward(self, x: Tensor) -> Tensor:
        return torch.ops.fanout.dropout(x, self.p, self.training, self.relu)


def relu_dropout(p: float, relu: bool = True, fused: Optional[bool] = None) -> nn.Module:
    return FusedReluDropout(p, relu) if _use_fused(fused) else ReluDropout(p, relu)


def project_first(num_src: int, num_dst: int, num_edges: int, in_dim: int, out_dim: int) -> bool:
    """Whether projecting the sources before aggregating costs less than aggregating first and
    projecting the destinations (the same result): matrix-product FLOPs plus aggregated elements,
    an aggregated element costing about 16 FLOPs. fanout's built-in layers decide the same way
    (trainer/models.h, ProjectBeforeAggregating)."""
    s, d, e = float(num_src), float(num_dst), float(num_edges)
    return 2.0 * s * in_dim * out_dim + 16.0 * e * out_dim < 16.0 * e * in_dim + 2.0 * d * in_dim * out_dim


class SAGEConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, fused: Optional[bool] = None):
        super().__init__()
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.fc_neigh = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.in_dim = in_dim
        self.out_dim = out_dim
        use_fused = _use_fused(fused)
        self.self_and_mean = FusedSelfAndMean() if use_fused else SelfAndMean()
        self.mean = _aggregate("mean", use_fused)
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_dst = int(block["num_dst"])
        w = edge_weight(block)
        if project_first(h.size(0), num_dst, block["src"].size(0), self.in_dim, self.out_dim):
            # Narrow layers (the output layer): aggregate out_dim-wide rows instead of in_dim.
            neigh = self.mean(block, F.linear(h, self.fc_neigh.weight), w)
            return torch.addmm(self.bias, h[:num_dst], self.fc_self.weight.t()) + neigh
        # Aggregate first, then one product over [h_dst | mean] with the bias folded in.
        if w is not None:
            hs = torch.cat([h[:num_dst], self.mean(block, h, w)], 1)
        else:
            hs = self.self_and_mean(block, h)
        return F.linear(hs, torch.cat([self.fc_self.weight, self.fc_neigh.weight], 1), self.bias)


class GCNConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, fused: Optional[bool] = None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_dim, in_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.sum = _aggregate("sum", _use_fused(fused))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_src = int(block["num_src"])
        # Full-graph inference passes each source's out-degree in the whole graph; a mini-batch
        # counts the source's edges in the block, as DGL does.
        if "out_degree" in block:
            out_deg = block["out_degree"].clamp(min=1).to(h.dtype)
        else:
            out_deg = torch.bincount(block["src"], minlength=num_src).clamp(min=1).to(h.dtype)
        h = h * out_deg.pow(-0.5).unsqueeze(1)
        agg = self.sum(block, h, edge_weight(block))
        agg = agg * block["in_degree"].clamp(min=1).to(h.dtype).pow(-0.5).unsqueeze(1)
        return F.linear(agg, self.weight) + self.bias


class GATConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, heads: int, dropout: float = 0.0,
                 negative_slope: float = 0.2, fused: Optional[bool] = None):
        super().__init__()
        self.fused = _use_fused(fused)
        self.softmax = FusedEdgeSoftmax(negative_slope) if self.fused else EdgeSoftmax(negative_slope)
        self.sum = _aggregate("sum", self.fused)
        self.heads = heads
        self.out_dim = out_dim
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(heads, out_dim))
        self.bias = nn.Parameter(torch.zeros(heads * out_dim))
        self.feat_drop = nn.Dropout(dropout)
        self.attn_drop = nn.Dropout(dropout)
        self.negative_slope = negative_slope
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_dst = int(block["num_dst"])
        z = self.fc(self.feat_drop(h)).view(-1, self.heads, self.out_dim)
        el = (z * self.attn_l.unsqueeze(0)).sum(-1)  # [num_src, heads]
        er = (z[:num_dst] * self.attn_r.unsqueeze(0)).sum(-1)  # [num_dst, heads]
        a = self.attn_drop(self.softmax(block, el, er))  # [num_edges, heads]
        w = edge_weight(block)
        if w is not None:
            a = a * w.unsqueeze(1)
        return self.sum(block, z, a) + self.bias.view(1, self.heads, self.out_dim)


class EdgeSoftmax(nn.Module):
    """Softmax over each destination's in-edges of LeakyReLU(el[u] + er[v]); plain tensor ops."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, block: Dict[str, Tensor], el: Tensor, er: Tensor) -> Tensor:
        src, dst = block["src"], block["dst"]
        num_dst = int(block["num_dst"])
        e = F.leaky_relu(el.index_select(0, src) + er.index_select(0, dst), self.negative_slope)
        # Shifted by each destination's maximum for stability.
        emax = torch.full((num_dst, e.size(1)), -math.inf, dtype=e.dtype, device=e.device)
        emax = emax.scatter_reduce(0, dst.unsqueeze(1).expand_as(e), e, reduce="amax", include_self=True)
        a = torch.exp(e - emax.index_select(0, dst))
        denom = torch.zeros(num_dst, e.size(1), dtype=e.dtype, device=e.device).index_add_(0, dst, a)
        return a / denom.index_select(0, dst)


class FusedEdgeSoftmax(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, block: Dict[str, Tensor], el: Tensor, er: Tensor) -> Tensor:
        return torch.ops.fanout.edge_softmax(block, el, er, self.negative_slope)


class GINConv(nn.Module):
    """GIN (Xu et al.): MLP((1 + eps) * h_v + sum of neighbours), eps learnable."""

    def __init__(self, in_dim: int, out_dim: int, fused: Optional[bool] = None):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.sum = _aggregate("sum", _use_fused(fused))
        self.mlp = nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim))

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        h_dst = h[: int(block["num_dst"])]
        return self.mlp((1 + self.eps) * h_dst + self.sum(block, h, edge_weight(block)))


def _relation_parts(block: Dict[str, Tensor], num_relations: int, layer: str) -> List[Dict[str, Tensor]]:
    """The block per relation (:func:`relation_blocks`); a block without ``etype`` is relation 0
    of 1. Raises ValueError naming ``layer`` when the block's relations are not the layer's."""
    if "etype" in block:
        if int(block["num_relations"]) != num_relations:
            raise ValueError(layer + ": the block's graph has a different number of relations")
        return relation_blocks(block)
    if num_relations != 1:
        raise ValueError(layer + ": a block without edge types on a layer of several relations")
    return [block]


class RelGraphConv(nn.Module):
    """fanout-train's ``rgcn`` layer on a typed block (DGL's ``RelGraphConv`` with a self loop and
    one weight per relation, the means SAGE-style as DGL's ``HeteroGraphConv({rel:
    SAGEConv('mean')}, aggregate='sum')``)::

        out_v = fc_self h_v + sum_r fc_rel[r] (mean over v's relation-r in-edges of w_e h_u) + bias

    a relation's mean 0 where v has none of its edges. ``fc_rel.weight`` is [out, R * in], relation
    r's weight its columns r * in ... (r + 1) * in - 1, as the built-in's (so state dicts move
    between them). A block without ``etype`` (a graph of one type) is relation 0 of 1."""

    def __init__(self, in_dim: int, out_dim: int, num_relations: int, fused: Optional[bool] = None):
        super().__init__()
        self.in_dim = in_dim
        self.num_relations = num_relations
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.fc_rel = nn.Linear(num_relations * in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        for r in range(num_relations):  # each relation's [out, in] block as the built-in initialises it
            nn.init.xavier_uniform_(self.fc_rel.weight.data[:, r * in_dim:(r + 1) * in_dim], gain=gain)
        self.mean = _aggregate("mean", _use_fused(fused))

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_dst = int(block["num_dst"])
        if "etype" in block:
            if int(block["num_relations"]) != self.num_relations:
                raise ValueError("RelGraphConv: the block's graph has a different number of relations")
            # Every relation's mean in one aggregation over (destination, relation) slots.
            slots = relation_slots(block)
            means = self.mean(slots, h, edge_weight(slots)).view(num_dst, self.num_relations * self.in_dim)
        else:
            if self.num_relations != 1:
                raise ValueError("RelGraphConv: a block without edge types on a layer of several relations")
            means = self.mean(block, h, edge_weight(block))
        return self.fc_self(h[:num_dst]) + self.fc_rel(means) + self.bias


class RelGATConv(nn.Module):
    """fanout-train's ``rgat`` layer on a typed block: a GAT per relation (as :class:`GATConv`, the
    softmax over a destination's in-edges of that relation only), the relations summed, plus a
    projection of the destination itself (DGL's ``HeteroGraphConv({rel: GATConv}, aggregate='sum')``
    with the skip of DGL's MAG240M R-GAT). Returns [num_dst, heads, out]::

        x = dropout(h);  z_r = fc[r] x  viewed [n, heads, out]
        a_r(u, v) = dropout(softmax_v LeakyReLU(<z_r[u], attn_l[r]> + <z_r[v], attn_r[r]>)) * w_uv
        out_v = fc_self x_v + sum_r sum_(u,v) a_r(u, v) z_r[u] + bias

    ``fc.weight`` is [R * heads * out, in] (relation r's rows r * heads * out ...), ``attn_l`` and
    ``attn_r`` [R * heads, out], as the built-in's, so state dicts move between them. A block
    without ``etype`` (a graph of one type) is relation 0 of 1."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, num_relations: int, dropout: float = 0.0,
                 negative_slope: float = 0.2, fused: Optional[bool] = None):
        super().__init__()
        self.fused = _use_fused(fused)
        self.softmax = FusedEdgeSoftmax(negative_slope) if self.fused else EdgeSoftmax(negative_slope)
        self.sum = _aggregate("sum", self.fused)
        self.in_dim = in_dim
        self.heads = heads
        self.out_dim = out_dim
        self.num_relations = num_relations
        self.fc_self = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.fc = nn.Linear(in_dim, num_relations * heads * out_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(num_relations * heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(num_relations * heads, out_dim))
        self.bias = nn.Parameter(torch.zeros(heads * out_dim))
        self.feat_drop = nn.Dropout(dropout)
        self.attn_drop = nn.Dropout(dropout)
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc_self.weight, gain=gain)
        for r in range(num_relations):  # each relation's blocks as GATConv initialises them
            rows = slice(r * heads * out_dim, (r + 1) * heads * out_dim)
            nn.init.xavier_normal_(self.fc.weight.data[rows], gain=gain)
            nn.init.xavier_normal_(self.attn_l.data[r * heads:(r + 1) * heads], gain=gain)
            nn.init.xavier_normal_(self.attn_r.data[r * heads:(r + 1) * heads], gain=gain)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_dst = int(block["num_dst"])
        parts = _relation_parts(block, self.num_relations, "RelGATConv")
        x = self.feat_drop(h)
        out = (self.fc_self(x[:num_dst]) + self.bias).view(-1, self.heads, self.out_dim)
        fc = self.fc.weight.view(self.num_relations, self.heads * self.out_dim, self.in_dim)
        for r, rb in enumerate(parts):
            z = F.linear(x, fc[r]).view(-1, self.heads, self.out_dim)
            attn_l = self.attn_l[r * self.heads:(r + 1) * self.heads]
            attn_r = self.attn_r[r * self.heads:(r + 1) * self.heads]
            el = (z * attn_l.unsqueeze(0)).sum(-1)  # [num_src, heads]
            er = (z[:num_dst] * attn_r.unsqueeze(0)).sum(-1)  # [num_dst, heads]
            a = self.attn_drop(self.softmax(rb, el, er))
            w = edge_weight(rb)
            if w is not None:
                a = a * w.unsqueeze(1)
            out = out + self.sum(rb, z, a)
        return out


def _by_type(x: Tensor, types: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """Row n of x times weight[types[n]]^T plus bias[types[n]]: one product per node type."""
    out = torch.empty(x.size(0), weight.size(1), dtype=x.dtype, device=x.device)
    for t in range(weight.size(0)):
        idx = (types == t).nonzero().flatten()
        if idx.numel() > 0:
            out = out.index_copy(0, idx, torch.addmm(bias[t], x.index_select(0, idx), weight[t].t()))
    return out


class HGTConv(nn.Module):
    """fanout-train's ``hgt`` layer on a typed block (Hu et al. 2020, as PyG's ``HGTConv``), width
    F = heads * d::

        k, q, v = kqv[type(n)] h_n + kqv_bias[type(n)]              (per node type; [heads, d] each)
        edge e = (u, v) of relation r:  k_e = k_u k_rel[r],  m_e = v_u v_rel[r]    (per head)
        a_e = softmax over all of v's in-edges of <q_v, k_e> * p_rel[r] / sqrt(d)
        out_v = out[type(v)] GELU(sum_e a_e m_e) + out_bias[type(v)], dropped out, then where
                in == F:  s = sigmoid(skip[type(v)]),  out_v = s out_v + (1 - s) h_v

    Parameters as the built-in's (``kqv`` [T * 3F, in], ``kqv_bias``, ``k_rel``/``v_rel``
    [R * heads, d, d], ``p_rel`` [R, heads], ``out`` [T * F, F], ``out_bias``, ``skip`` [T] only
    where in == F), so state dicts move between them. A block without ``src_type``/``etype`` is one
    node type and one relation. Edge weights are not used."""

    def __init__(self, in_dim: int, width: int, heads: int, num_node_types: int, num_relations: int,
                 dropout: float = 0.0, fused: Optional[bool] = None):
        super().__init__()
        if width % heads != 0:
            raise ValueError(f"HGTConv: width {width} is not a multiple of {heads} heads")
        self.fused = _use_fused(fused)
        self.softmax = FusedEdgeSoftmax(1.0) if self.fused else EdgeSoftmax(1.0)  # slope 1: the scores as they are
        self.sum = _aggregate("sum", self.fused)
        self.in_dim, self.width, self.heads, self.d = in_dim, width, heads, width // heads
        self.num_node_types, self.num_relations = num_node_types, num_relations
        self.kqv = nn.Parameter(torch.empty(num_node_types * 3 * width, in_dim))
        self.kqv_bias = nn.Parameter(torch.zeros(num_node_types * 3 * width))
        self.k_rel = nn.Parameter(torch.empty(num_relations * heads, self.d, self.d))
        self.v_rel = nn.Parameter(torch.empty(num_relations * heads, self.d, self.d))
        self.p_rel = nn.Parameter(torch.ones(num_relations, heads))
        self.out = nn.Parameter(torch.empty(num_node_types * width, width))
        self.out_bias = nn.Parameter(torch.zeros(num_node_types * width))
        if in_dim == width:
            self.skip = nn.Parameter(torch.ones(num_node_types))
        else:
            self.register_parameter("skip", None)
        self.drop = nn.Dropout(dropout)
        for t in range(num_node_types):
            nn.init.xavier_uniform_(self.kqv.data[t * 3 * width:(t + 1) * 3 * width])
            nn.init.xavier_uniform_(self.out.data[t * width:(t + 1) * width])
        for i in range(num_relations * heads):
            nn.init.xavier_uniform_(self.k_rel.data[i])
            nn.init.xavier_uniform_(self.v_rel.data[i])

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_src, num_dst = h.size(0), int(block["num_dst"])
        f, heads, d = self.width, self.heads, self.d
        src, dst = block["src"], block["dst"]
        num_edges = src.size(0)
        types = block["src_type"] if "src_type" in block else torch.zeros(num_src, dtype=torch.long, device=h.device)
        etype = block["etype"] if "etype" in block else torch.zeros(num_edges, dtype=torch.long, device=h.device)
        kqv = _by_type(h, types, self.kqv.view(self.num_node_types, 3 * f, self.in_dim),
                       self.kqv_bias.view(self.num_node_types, 3 * f))
        k = kqv[:, :f].reshape(num_src, heads, d)
        q = kqv[:num_dst, f:2 * f].reshape(num_dst, heads, d)
        v = kqv[:, 2 * f:].reshape(num_src, heads, d)
        key = torch.zeros(num_edges, heads, d, dtype=h.dtype, device=h.device)
        msg = torch.zeros(num_edges, heads, d, dtype=h.dtype, device=h.device)
        for r in range(self.num_relations):
            m = (etype == r).nonzero().flatten()
            u = src.index_select(0, m)
            key = key.index_copy(0, m, torch.einsum("nhd,hdf->nhf", k.index_select(0, u),
                                                    self.k_rel[r * heads:(r + 1) * heads]))
            msg = msg.index_copy(0, m, torch.einsum("nhd,hdf->nhf", v.index_select(0, u),
                                                    self.v_rel[r * heads:(r + 1) * heads]))
        score = (q.index_select(0, dst) * key).sum(-1) * self.p_rel.index_select(0, etype) / math.sqrt(d)
        # Each edge its own source: the softmax over a destination's edges, and their weighted sum.
        per_edge: Dict[str, Tensor] = {}
        for name, t in block.items():
            per_edge[name] = t
        per_edge["src"] = torch.arange(num_edges, dtype=torch.long, device=h.device)
        per_edge["num_src"] = torch.tensor(num_edges, dtype=torch.long)
        zero = torch.zeros(num_dst, heads, dtype=h.dtype, device=h.device)
        a = self.softmax(per_edge, score, zero)
        agg = self.sum(per_edge, msg, a).reshape(num_dst, f)
        dst_types = types[:num_dst]
        out = self.drop(_by_type(F.gelu(agg), dst_types, self.out.view(self.num_node_types, f, f),
                                 self.out_bias.view(self.num_node_types, f)))
        skip = self.skip
        if skip is not None:
            gate = torch.sigmoid(skip.index_select(0, dst_types)).unsqueeze(1)
            out = gate * out + (1 - gate) * h[:num_dst]
        return out
