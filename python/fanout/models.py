"""Multi-layer models over fanout's blocks, ready to script."""

from typing import Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fanout.layers import GATConv, GCNConv, GINConv, HGTConv, RelGATConv, RelGraphConv, SAGEConv, relu_dropout

# A model's dropout when none is given: fanout-train's --dropout default, from its model table
# (trainer/model_kinds.cc; ScriptedModelTest.PythonDropoutDefaultsAreFanoutTrains checks that
# the two agree). MLPerf's R-GAT rate for rgat, 0.5 for the others.
_DROPOUT = {"rgat": 0.2}


def default_dropout(kind: str) -> float:
    """The dropout fanout-train's ``--model KIND`` uses by default."""
    return _DROPOUT.get(kind, 0.5)


class GNN(nn.Module):
    """A stack of one layer kind, as fanout's built-in models: ReLU and dropout between layers;
    for GAT, ELU between layers (its layers drop their input features), hidden heads
    concatenated and the output layer's heads averaged. (``rgat`` and ``hgt``: :class:`HeteroGNN`.)

    The attributes ``in_dim``, ``num_classes`` and ``num_layers`` are read by fanout-train to
    check the model against the graph and ``--fanouts`` before training starts.
    """

    in_dim: torch.jit.Final[int]
    num_classes: torch.jit.Final[int]
    num_layers: torch.jit.Final[int]

    def __init__(self, kind: str, in_dim: int, hidden: int, num_classes: int, num_layers: int,
                 dropout: Optional[float] = None, heads: List[int] = [4], fused: Optional[bool] = None,
                 num_relations: int = 1):
        super().__init__()
        if num_layers < 1:
            raise ValueError("num_layers must be >= 1")
        dropout = default_dropout(kind) if dropout is None else dropout
        self.in_dim = in_dim
        self.num_classes = num_classes
        self.num_layers = num_layers
        self.is_gat = kind == "gat"
        heads = list(heads) + [heads[-1]] * max(0, num_layers - len(heads))
        layers = []
        width = in_dim
        for i in range(num_layers):
            out = num_classes if i == num_layers - 1 else hidden
            if kind == "sage":
                layers.append(SAGEConv(width, out, fused))
            elif kind == "gcn":
                layers.append(GCNConv(width, out, fused))
            elif kind == "gin":
                layers.append(GINConv(width, out, fused))
            elif kind == "rgcn":  # typed graphs: the built-in rgcn's layers
                layers.append(RelGraphConv(width, out, num_relations, fused))
            elif kind == "gat":
                layers.append(GATConv(width, out, heads[i], dropout, fused=fused))
                out = out * heads[i]
            else:
                raise ValueError(f"unknown layer kind '{kind}' (sage, gcn, gat, gin, rgcn; rgat and hgt: HeteroGNN)")
            width = out
        self.layers = nn.ModuleList(layers)
        # Between layers: ReLU and dropout (GAT: ELU; its layers drop their own input features).
        self.between = relu_dropout(dropout, relu=True, fused=fused)

    def forward(self, blocks: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
        h = x
        for i in range(len(self.layers)):
            h = self.forward_layer(i, blocks[i], h)
        return h

    @torch.jit.export
    def forward_layer(self, i: int, block: Dict[str, Tensor], x: Tensor) -> Tensor:
        """Layer ``i`` alone, with what ``forward`` applies after it: fanout-train calls it for
        layer-wise inference over the whole graph (``--save-embeddings``), one layer for every node
        before the next. A model without this method is evaluated with full neighbourhoods in
        every layer instead (the same result, more work)."""
        last = len(self.layers) - 1
        h = x
        # TorchScript indexes a ModuleList only with constants: find layer i by iterating.
        for j, layer in enumerate(self.layers):
            if j == i:
                h = layer(block, x)
                if self.is_gat:
                    h = h.mean(1) if j == last else F.elu(h.flatten(1))
                elif j != last:
                    h = self.between(h)
        return h


class HeteroGNN(nn.Module):
    """fanout-train's ``rgat`` and ``hgt`` (MLPerf's R-GAT, PyG's HGT example): ``num_layers``
    layers of width ``hidden`` (``heads[i]`` heads of ``hidden / heads[i]``), one per block, then a
    linear ``classifier`` on the output nodes. ``rgat``: :class:`RelGATConv` layers, heads
    concatenated, ELU after each; ``hgt``: :class:`HGTConv` layers, nothing between them. The
    same attributes as :class:`GNN`."""

    in_dim: torch.jit.Final[int]
    num_classes: torch.jit.Final[int]
    num_layers: torch.jit.Final[int]
    is_rgat: torch.jit.Final[bool]

    def __init__(self, kind: str, in_dim: int, hidden: int, num_classes: int, num_layers: int,
                 dropout: Optional[float] = None, heads: List[int] = [4], fused: Optional[bool] = None,
                 num_relations: int = 1, num_node_types: int = 1):
        super().__init__()
        if num_layers < 1:
            raise ValueError("num_layers must be >= 1")
        if kind not in ("rgat", "hgt"):
            raise ValueError(f"HeteroGNN: unknown kind '{kind}' (rgat, hgt)")
        dropout = default_dropout(kind) if dropout is None else dropout
        self.in_dim = in_dim
        self.num_classes = num_classes
        self.num_layers = num_layers
        self.is_rgat = kind == "rgat"
        heads = list(heads) + [heads[-1]] * max(0, num_layers - len(heads))
        layers = []
        for i in range(num_layers):
            width = in_dim if i == 0 else hidden
            if hidden % heads[i] != 0:
                raise ValueError(f"hidden {hidden} is not a multiple of layer {i}'s {heads[i]} heads")
            if self.is_rgat:
                layers.append(RelGATConv(width, hidden // heads[i], heads[i], num_relations, dropout, fused=fused))
            else:
                layers.append(HGTConv(width, hidden, heads[i], num_node_types, num_relations, dropout, fused))
        self.layers = nn.ModuleList(layers)
        self.classifier = nn.Linear(hidden, num_classes)
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, blocks: List[Dict[str, Tensor]], x: Tensor) -> Tensor:
        h = x
        for i in range(len(self.layers)):
            h = self.forward_layer(i, blocks[i], h)
        return h

    @torch.jit.export
    def forward_layer(self, i: int, block: Dict[str, Tensor], x: Tensor) -> Tensor:
        """Layer ``i`` alone (the last with the classifier), as :meth:`GNN.forward_layer`."""
        h = x
        for j, layer in enumerate(self.layers):
            if j == i:
                h = layer(block, x)
                if self.is_rgat:
                    h = F.elu(h.flatten(1))
                if j == len(self.layers) - 1:
                    h = self.classifier(h)
        return h


def build(kind: str, in_dim: int, hidden: int, num_classes: int, num_layers: int,
          dropout: Optional[float] = None, heads: List[int] = [4], seed: int = 0,
          fused: Optional[bool] = None, num_relations: int = 1, num_node_types: int = 1) -> torch.jit.ScriptModule:
    """Builds GNN(...) (HeteroGNN(...) for ``rgat`` and ``hgt``) with parameters drawn from ``seed``
    and scripts it; ``dropout`` None: :func:`default_dropout`."""
    torch.manual_seed(seed)
    if kind in ("rgat", "hgt"):
        return torch.jit.script(HeteroGNN(kind, in_dim, hidden, num_classes, num_layers, dropout, heads, fused,
                                          num_relations, num_node_types))
    return torch.jit.script(GNN(kind, in_dim, hidden, num_classes, num_layers, dropout, heads, fused, num_relations))


class MLPScorer(nn.Module):
    """``fanout-train --task link --scorer mlp``'s pair scorer, to read its trained parameters
    back: the checkpoint's ``scorer.*`` tensors load into ``MLPScorer(dim)`` as they are, the rest of its
    state dict into :class:`GNN`::

        sd = torch.load("ckpt/best.pt")["state_dict"]
        scorer = MLPScorer(dim)
        scorer.load_state_dict({k: v for k, v in sd.items() if k.startswith("scorer.")})
        gnn.load_state_dict({k: v for k, v in sd.items() if not k.startswith("scorer.")})

    ``forward(a, b)`` is the score (a logit) of pairs whose two ends have embeddings ``a`` and
    ``b`` ([n, dim] each): an MLP over their element-wise product. ``--scorer dot`` has no
    parameters: its score is ``(a * b).sum(1)``.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.scorer = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(),
                                    nn.Linear(dim, 1))

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.scorer(a * b).squeeze(1)


class DistMultScorer(nn.Module):
    """``fanout-train --task link --scorer distmult``'s pair scorer: ``sum(a * r * b)`` with a
    learnable vector ``r`` per relation, the checkpoint's ``scorer.relations`` ([relations, dim]: one
    row per edge type of the graph, one on a graph of one type). ``relation`` picks the row scored
    with (the link relation's index among the partition config's edge types; 0 on one type), or
    ``forward(a, b, rel)`` each pair's (``rel``: [n] edge type indices, as fanout-train scores a
    partition split on several relations)::

        scorer = DistMultScorer(dim, num_relations, relation)
        scorer.load_state_dict({k: v for k, v in sd.items() if k.startswith("scorer.")})
    """

    def __init__(self, dim: int, num_relations: int = 1, relation: int = 0):
        super().__init__()
        if not 0 <= relation < num_relations:
            raise ValueError(f"DistMultScorer: relation {relation} of {num_relations}")
        self.relation = relation
        self.scorer = nn.ParameterDict({"relations": nn.Parameter(torch.empty(num_relations, dim))})
        nn.init.xavier_uniform_(self.scorer["relations"], gain=nn.init.calculate_gain("relu"))

    def forward(self, a: Tensor, b: Tensor, rel: Optional[Tensor] = None) -> Tensor:
        r = self.scorer["relations"][self.relation] if rel is None else self.scorer["relations"][rel]
        return (a * r * b).sum(1)
