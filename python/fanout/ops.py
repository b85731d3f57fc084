"""fanout's fused message-passing kernels as TorchScript operators.

``torch.ops.fanout.aggregate(block, x, reduce="mean", edge_weight=None)``,
``torch.ops.fanout.aggregate_with_self(block, x, reduce="mean")`` (``[x[:num_dst] | aggregate]``)
and ``torch.ops.fanout.edge_softmax(block, el, er, negative_slope=0.2)`` run the kernels of
fanout's built-in models (no ``[num_edges, width]`` message tensor), with their backward passes.
fanout-train always has them; to script a model that calls them, Python loads them from
``libfanout_torch_ops.so`` (built with fanout, in ``build/lib``; ``FANOUT_TORCH_OPS`` names
another path). A model scripted with them runs only in fanout-train (or a Python that loaded
the library). The library is loaded only into the PyTorch it was built for (Debian's 1.13 for a
fanout build); in another, ``fanout.layers`` runs its plain-PyTorch path.
"""

import os
from pathlib import Path

import torch

_loaded = None


def library_path() -> str:
    env = os.environ.get("FANOUT_TORCH_OPS", "")
    if env:
        return env
    return str(Path(__file__).resolve().parents[2] / "build" / "lib" / "libfanout_torch_ops.so")


def built_for(path: str) -> str:
    """The PyTorch major.minor the library at `path` was built against ("" when unrecorded):
    the ``.torch_version`` file the build writes beside it."""
    try:
        with open(os.path.splitext(path)[0] + ".torch_version") as f:
            return f.read().strip()
    except OSError:
        return ""


def load() -> bool:
    """Loads the operators once; False when the library is not there, or was built for another
    PyTorch than this one (plain-PyTorch layers then: a library built against another LibTorch
    would abort the process as it loads)."""
    global _loaded
    if _loaded is None:
        path = library_path()
        want = built_for(path)
        mine = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        _loaded = os.path.exists(path) and (not want or want == mine)
        if _loaded:
            torch.ops.load_library(path)
    return _loaded
