"""Partitioning a graph a script holds in memory (PyG's ``Data``/``HeteroData``, DGL's
``DGLGraph``) with ``fanout-partition``: one writer of the input layouts fanout-partition reads
(README "Dataset layouts"), fed plain arrays by each dialect's front door
(``fanout.pyg.Partitioner``, ``fanout.distributed.partition_graph``), and one runner.
"""

import json
import os
import shutil
import subprocess
import tempfile
from typing import Mapping, Sequence, Tuple

import numpy as np

# Split masks as the dialects name them -> fanout-partition's split index files.
SPLITS = (("train", ("train_mask",)), ("valid", ("val_mask", "valid_mask")), ("test", ("test_mask",)))


def program() -> str:
    """fanout-partition: $FANOUT_PARTITION_BIN, a clone's build/bin beside the built extension, or
    the one on PATH."""
    explicit = os.environ.get("FANOUT_PARTITION_BIN")
    if explicit:
        return explicit
    from fanout import _native
    beside = os.path.join(os.path.dirname(os.path.abspath(_native.__file__)), "..", "..", "bin", "fanout-partition")
    if os.access(beside, os.X_OK):
        return os.path.normpath(beside)
    found = shutil.which("fanout-partition")
    if not found:
        raise FileNotFoundError("partitioning runs fanout-partition: put fanout's build/bin on PATH or set "
                                "FANOUT_PARTITION_BIN (pip install ./python installs the Python side only)")
    return found


def _save(path: str, array) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, np.ascontiguousarray(array))


def _node_fields(folder: str, fields: Mapping[str, np.ndarray], split_dir: str, split_suffix: str) -> None:
    """A node type's fields: split masks as index files, every other field as node_data/NAME.npy."""
    masks = {name: which for which, names in SPLITS for name in names}
    for name, values in fields.items():
        if name in masks:
            _save(os.path.join(split_dir, f"{masks[name]}{split_suffix}"), np.flatnonzero(values).astype(np.int64))
        else:
            _save(os.path.join(folder, f"{name}.npy"), values)


def write_plain(d: str, src: np.ndarray, dst: np.ndarray, node_fields: Mapping[str, np.ndarray],
                edge_fields: Mapping[str, np.ndarray]) -> None:
    """The plain layout: edges.npy as [2, E] (edge i = input edge i), node_data/NAME.npy (the
    features and labels included, under their own names), {train,valid,test}_idx.npy from the
    masks, edge_data/NAME.npy."""
    _save(os.path.join(d, "edges.npy"), np.stack([np.asarray(src, np.int64), np.asarray(dst, np.int64)]))
    _node_fields(os.path.join(d, "node_data"), node_fields, d, "_idx.npy")
    for name, values in edge_fields.items():
        _save(os.path.join(d, "edge_data", f"{name}.npy"), values)


def write_typed(d: str, num_nodes: Mapping[str, int], edges: Mapping[Tuple[str, str, str], Tuple[np.ndarray, np.ndarray]],
                node_fields: Mapping[str, Mapping[str, np.ndarray]],
                edge_fields: Mapping[Tuple[str, str, str], Mapping[str, np.ndarray]]) -> None:
    """The typed .npy layout: num_nodes.json, edges/SRC___REL___DST.npy ([2, E], row i = the
    relation's input edge i), node_data/TYPE/NAME.npy, split/TYPE/*_idx.npy from the masks,
    edge_data/SRC___REL___DST/NAME.npy."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "num_nodes.json"), "w") as f:
        json.dump({t: int(n) for t, n in num_nodes.items()}, f)
    for (s, r, t), (src, dst) in edges.items():
        _save(os.path.join(d, "edges", f"{s}___{r}___{t}.npy"),
              np.stack([np.asarray(src, np.int64), np.asarray(dst, np.int64)]))
    for t, fields in node_fields.items():
        _node_fields(os.path.join(d, "node_data", t), fields, os.path.join(d, "split", t), "_idx.npy")
    for (s, r, t), fields in edge_fields.items():
        for name, values in fields.items():
            _save(os.path.join(d, "edge_data", f"{s}___{r}___{t}", f"{name}.npy"), values)


def run(write, out: str, num_parts: int, graph_name: str, args: Sequence[str] = ()) -> str:
    """Writes the input with ``write(folder)`` into a temporary folder, runs fanout-partition on
    it into ``out`` and returns the config's path (``out/<graph_name>.json``). Its error comes
    back as RuntimeError with fanout-partition's own message."""
    with tempfile.TemporaryDirectory() as d:
        write(d)
        argv = [program(), "--input", d, "--num-parts", str(int(num_parts)), "--out", out, "--graph-name",
                graph_name, "--quiet", *args]
        done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"fanout-partition exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return os.path.join(out, f"{graph_name}.json")


def numpy(t) -> np.ndarray:
    """A tensor (any device) or array as NumPy."""
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
