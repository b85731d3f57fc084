"""Author GNN models for fanout in plain PyTorch and export them to TorchScript.

A fanout model is a ``torch.nn.Module`` whose ``forward(blocks, x)`` takes the mini-batch's
blocks (see :mod:`fanout.blocks`) and the input features, and returns one row of logits per seed
node. ``fanout-train --model FILE.pt`` trains the exported (scripted) module as it trains its
built-in models: same sampling, gradient averaging, checkpoints and evaluation.

Needs only PyTorch. Export with the same PyTorch version as the LibTorch fanout links (Debian 12:
``python3-torch`` 1.13); see docs/models.md.
"""

# The native extension (fanout._native, for fanout.distributed) may be built apart from these
# sources (build/python/fanout when run from a clone): any `fanout` folder on sys.path joins the
# package.
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)

# Under fanout-launch, the script's own torch.distributed Gloo group is told which interface
# reaches the other machines, before any init_process_group (fanout/_network.py).
from fanout import _network

_network.choose_gloo_interface()

from fanout.blocks import Block, block_keys
from fanout.layers import GATConv, GCNConv, GINConv, SAGEConv
from fanout.models import GNN, MLPScorer, build

__all__ = ["Block", "block_keys", "SAGEConv", "GCNConv", "GATConv", "GINConv", "GNN", "MLPScorer", "build"]
