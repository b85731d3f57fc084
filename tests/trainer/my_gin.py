"""A GIN written from scratch for fanout (not from python/fanout): sum aggregation, a learnable
eps per layer, a 2-layer MLP per layer. The tests export it and train it with fanout-train.

    python3 my_gin.py OUT.pt IN_DIM NUM_CLASSES NUM_LAYERS [HIDDEN]
"""

import sys
from typing import Dict, List

import torch
from torch import Tensor, nn


class MyGin(nn.Module):
    in_dim: torch.jit.Final[int]
    num_classes: torch.jit.Final[int]
    num_layers: torch.jit.Final[int]

    def __init__(self, in_dim: int, hidden: int, classes: int, layers: int):
        super().__init__()
        self.in_dim, self.num_classes, self.num_layers = in_dim, classes, layers
        dims = [in_dim] + [hidden] * (layers - 1) + [classes]
        self.eps = nn.Parameter(torch.zeros(layers))
        self.mlps = nn.ModuleList([nn.Sequential(nn.Linear(dims[i], hidden), nn.ReLU(),
                                                 nn.Linear(hidden, dims[i + 1])) for i in range(layers)])

    def forward(self, blocks: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
        h = x
        for i, mlp in enumerate(self.mlps):
            b = blocks[i]
            n = int(b["num_dst"])
            agg = torch.zeros(n, h.size(1)).index_add_(0, b["dst"], h.index_select(0, b["src"]))
            h = mlp((1 + self.eps[i]) * h[:n] + agg)
            if i + 1 < len(self.mlps):
                h = torch.relu(h)
        return h


if __name__ == "__main__":
    out, in_dim, classes, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    hidden = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    torch.manual_seed(0)
    torch.jit.script(MyGin(in_dim, hidden, classes, layers)).save(out)
