"""A stand-in for torch_geometric, for the tests of fanout.pyg where PyG is not installed (CI's
Debian python3): just the containers fanout.pyg fills (``data.Data``, ``data.HeteroData``) and
the attribute records its stores hand out (``data.TensorAttr``, ``data.EdgeAttr``), with PyG's
field access. No layer, no sampler: the tests check fanout's side of PyG's contract (which IDs,
which rows), and tests/python/pyg_test.py checks the rest against the real PyG."""

__version__ = "0.0-standin"
