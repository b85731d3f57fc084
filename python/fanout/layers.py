"""Reference GNN layers on fanout blocks, written with plain tensor ops so that they script.

Semantics follow DGL's layers of the same name (and fanout's built-in models, docs/training.md):
``SAGEConv`` (mean aggregator), ``GCNConv`` (``norm='both'`` with in-block degrees), ``GATConv``
(``GATConv`` with feature and attention dropout), ``GINConv`` (sum aggregator, learnable eps).
They build per-edge message tensors (``index_select`` / ``index_add_``), so they are slower
than the built-in fused kernels; write your own the same way.
"""

import math
from typing import Dict

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _mean_neighbours(block: Dict[str, Tensor], h: Tensor) -> Tensor:
    num_dst = int(block["num_dst"])
    out = torch.zeros(num_dst, h.size(1), dtype=h.dtype, device=h.device)
    out.index_add_(0, block["dst"], h.index_select(0, block["src"]))
    deg = block["in_degree"].clamp(min=1).to(h.dtype).unsqueeze(1)
    return out / deg


def _sum_neighbours(block: Dict[str, Tensor], h: Tensor) -> Tensor:
    num_dst = int(block["num_dst"])
    out = torch.zeros(num_dst, h.size(1), dtype=h.dtype, device=h.device)
    out.index_add_(0, block["dst"], h.index_select(0, block["src"]))
    return out


class SAGEConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.fc_neigh = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        h_dst = h[: int(block["num_dst"])]
        return self.fc_self(h_dst) + self.fc_neigh(_mean_neighbours(block, h)) + self.bias


class GCNConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_dim, in_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        num_src = int(block["num_src"])
        out_deg = torch.bincount(block["src"], minlength=num_src).clamp(min=1).to(h.dtype)
        h = h * out_deg.pow(-0.5).unsqueeze(1)
        agg = _sum_neighbours(block, h)
        agg = agg * block["in_degree"].clamp(min=1).to(h.dtype).pow(-0.5).unsqueeze(1)
        return F.linear(agg, self.weight) + self.bias


class GATConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, heads: int, dropout: float = 0.0,
                 negative_slope: float = 0.2):
        super().__init__()
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
        src, dst = block["src"], block["dst"]
        z = self.fc(self.feat_drop(h)).view(-1, self.heads, self.out_dim)
        el = (z * self.attn_l.unsqueeze(0)).sum(-1)  # [num_src, heads]
        er = (z[:num_dst] * self.attn_r.unsqueeze(0)).sum(-1)  # [num_dst, heads]
        e = F.leaky_relu(el.index_select(0, src) + er.index_select(0, dst), self.negative_slope)
        # Softmax over each destination's in-edges, shifted by its maximum for stability.
        emax = torch.full((num_dst, self.heads), -math.inf, dtype=e.dtype, device=e.device)
        emax = emax.scatter_reduce(0, dst.unsqueeze(1).expand_as(e), e, reduce="amax", include_self=True)
        a = torch.exp(e - emax.index_select(0, dst))
        denom = torch.zeros(num_dst, self.heads, dtype=e.dtype, device=e.device).index_add_(0, dst, a)
        a = self.attn_drop(a / denom.index_select(0, dst))
        msg = z.index_select(0, src) * a.unsqueeze(-1)
        out = torch.zeros(num_dst, self.heads, self.out_dim, dtype=z.dtype, device=z.device)
        out.index_add_(0, dst, msg)
        return out + self.bias.view(1, self.heads, self.out_dim)


class GINConv(nn.Module):
    """GIN (Xu et al.): MLP((1 + eps) * h_v + sum of neighbours), eps learnable."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim))

    def forward(self, block: Dict[str, Tensor], h: Tensor) -> Tensor:
        h_dst = h[: int(block["num_dst"])]
        return self.mlp((1 + self.eps) * h_dst + _sum_neighbours(block, h))
