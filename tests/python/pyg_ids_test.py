"""Each Python dialect keeps its peer's ID convention (docs/python.md, at its top), tested against the
peer's own contract:

- fanout.pyg speaks the user's IDs, as PyG's Partitioner keeps them: a PyG-API script
  (pyg_script.py) partitions its own Data with Partitioner, trains on its own train_mask IDs on 2
  machines under fanout-launch, evaluates on its own test_mask IDs, and checks every seed's label,
  every row of x and every e_id against its own arrays;
- fanout.distributed.partition_graph(return_mapping=True) returns DGL's (orig_nids, orig_eids):
  the partitioned graph's node i is input node orig_nids[i], its edge j input edge orig_eids[j];
- a partition without ID maps is refused by name, and fanout-partition --write-id-maps makes
  them for one made before.

Runs with the real PyG when the Python has it (CTest's python.pyg_ids_torch2, with
FANOUT_PYG_PYTHON), else with tests/python/standin's torch_geometric (CTest's python.pyg_ids,
Debian's python3): the invariants are fanout's side of the contract either way. Exits 77
(skipped) without torch.
"""

import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)
try:
    import torch_geometric  # noqa: F401
    STANDIN = None
except ImportError:
    STANDIN = os.path.join(HERE, "standin")
    sys.path.insert(0, STANDIN)

sys.path.insert(0, HERE)
import distributed_test as base  # noqa: E402  (BIN, run, launch)
from fanout import pyg  # noqa: E402
from fanout.distributed import partition_graph  # noqa: E402
from fanout.id_maps import IdMaps  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

SCRIPT = os.path.join(HERE, "pyg_script.py")
# A pip-installed fanout (the PyG Python's) finds no build/bin beside its extension.
os.environ.setdefault("FANOUT_PARTITION_BIN", os.path.join(base.BIN, "fanout-partition"))


def user_graph(work):
    """A user's own graph (fanout-generate's, its nodes renumbered by a random permutation and
    its edges made undirected, as PyG's ToUndirected stores them): x, y, edge_index and masks."""
    ds = os.path.join(work, "generated")
    base.run([f"{base.BIN}/fanout-generate", "--out", ds, "--num-nodes", "3000", "--num-edges", "20000",
              "--feat-dim", "16", "--num-classes", "5", "--seed", "4"])
    e = np.load(os.path.join(ds, "edges.npy")).astype(np.int64)
    src, dst = (e[:, 0], e[:, 1]) if e.shape[1] == 2 else (e[0], e[1])
    n = np.load(os.path.join(ds, "node_feat.npy")).shape[0]
    perm = np.random.default_rng(7).permutation(n)  # generated node v is the user's node perm[v]
    user = {"x": np.empty((n, 16), np.float32), "y": np.empty(n, np.int64)}
    user["x"][perm] = np.load(os.path.join(ds, "node_feat.npy"))
    user["y"][perm] = np.load(os.path.join(ds, "node_label.npy"))
    user["edge_index"] = np.stack([np.concatenate([perm[src], perm[dst]]), np.concatenate([perm[dst], perm[src]])])
    for mask, idx in (("train_mask", "train_idx"), ("test_mask", "test_idx"), ("val_mask", "valid_idx")):
        m = np.zeros(n, bool)
        m[perm[np.load(os.path.join(ds, f"{idx}.npy"))]] = True
        user[mask] = m
    folder = os.path.join(work, "user")
    os.makedirs(folder)
    for k, v in user.items():
        np.save(os.path.join(folder, f"{k}.npy"), v)
    return folder, {k: torch.from_numpy(v) for k, v in user.items()}


class PygIdsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.work = cls.tmp.name
        cls.user_dir, cls.user = user_graph(cls.work)
        u = cls.user
        data = Data(edge_index=u["edge_index"], x=u["x"], y=u["y"], train_mask=u["train_mask"],
                    val_mask=u["val_mask"], test_mask=u["test_mask"], num_nodes=u["x"].shape[0])
        cls.root = os.path.join(cls.work, "parts")
        cls.config = pyg.Partitioner(data, 2, cls.root, graph_name="g").generate_partition()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_a_pyg_script_trains_and_tests_on_its_own_ids_on_two_machines(self):
        env_path = os.pathsep.join(p for p in (STANDIN, os.environ.get("PYTHONPATH", "")) if p)
        outs = [os.path.join(self.work, f"result{k}.json") for k in range(2)]
        cmd = ["env", f"PYTHONPATH={env_path}", sys.executable, SCRIPT, "--data", self.user_dir, "--root", self.root,
               "--out", os.path.join(self.work, "result${RANK}.json")]
        r = base.launch(self.work, self.config, ["bash", "-c", " ".join(cmd)], samplers=1)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        correct = total = 0
        for out in outs:
            with open(out) as f:
                result = json.load(f)
            for what, (checked, wrong) in result["counts"].items():
                self.assertGreater(checked, 0, what)
                self.assertEqual(wrong, 0, f"{what}: {wrong} of {checked} wrong ({out})")
            correct, total = correct + result["correct"], total + result["total"]
        self.assertEqual(total, int(self.user["test_mask"].sum()))  # every test node evaluated once
        # Planted communities: a model trained on the right nodes and tested on the right nodes
        # is far above chance (0.2); trained on a mix of train/valid/test IDs by another
        # numbering, it would still learn, so the checks above are what catch a wrong ID.
        self.assertGreater(correct / total, 0.5)

    def test_every_id_maps_both_ways(self):
        maps = IdMaps(self.config)
        n, e = self.user["x"].shape[0], self.user["edge_index"].shape[1]
        new = maps.node_new(np.arange(n))
        self.assertTrue(np.array_equal(np.sort(new), np.arange(n)))
        self.assertTrue(np.array_equal(maps.node_orig(new), np.arange(n)))
        self.assertTrue(np.array_equal(maps.edge_orig(maps.edge_new(np.arange(e))), np.arange(e)))
        with self.assertRaisesRegex(ValueError, f"node ID {n} "):
            maps.node_new([0, n])
        with self.assertRaisesRegex(ValueError, "node ID -1 "):
            maps.node_new([-1])
        # The partition's own rows in fanout's order are the user's rows of orig_nids.
        for k, (b, end) in enumerate(maps.ranges("node", 0)):
            feat = np.load(os.path.join(self.root, f"part{k}", "node_data", "feat.npy"))
            self.assertTrue(np.array_equal(feat, self.user["x"].numpy()[maps.node_orig(np.arange(b, end))]))

    def test_a_partition_without_id_maps_is_refused_and_they_can_be_written(self):
        old = os.path.join(self.work, "old")
        shutil.copytree(self.root, old, ignore=shutil.ignore_patterns("id_maps"))
        config = os.path.join(old, "g.json")
        with self.assertRaisesRegex(FileNotFoundError, "id_maps.json.*--write-id-maps"):
            pyg.LocalGraphStore.from_partition(old, 0)
        base.run([f"{base.BIN}/fanout-partition", "--write-id-maps", config, "--quiet"])
        for name in ("orig_nids.npy", "new_nids.npy", "orig_eids.npy", "new_eids.npy", "id_maps.json"):
            self.assertTrue(filecmp.cmp(os.path.join(old, "id_maps", name), os.path.join(self.root, "id_maps", name),
                                        shallow=False), name)
        again = subprocess.run([f"{base.BIN}/fanout-partition", "--write-id-maps", config], capture_output=True,
                               text=True)
        self.assertNotEqual(again.returncode, 0)
        self.assertIn("exists already", again.stderr)
        self.assertEqual(sorted(os.listdir(old)), sorted(os.listdir(self.root)))  # no temporary folder left


class _Frame:
    def __init__(self, data):
        self.data = data


class _Edges:
    """DGL's ``g.edges``: called, the (src, dst) of a relation in edge ID order; indexed by a
    relation, its frame (``g.edges[etype].data``)."""

    def __init__(self, pairs, data):
        self._pairs, self._data = pairs, data

    def __call__(self, etype=None):
        return self._pairs[etype if etype is not None else next(iter(self._pairs))]

    def __getitem__(self, etype):
        return _Frame(self._data.get(etype, {}))


class _DglStandIn:
    """What partition_graph reads of a dgl.DGLGraph (one type, or several)."""

    def __init__(self, counts, pairs, ndata, edata):
        self._counts = counts
        self.ntypes = sorted(counts)
        self.canonical_etypes = sorted(pairs)
        self.is_homogeneous = len(self.ntypes) == 1 and len(self.canonical_etypes) == 1
        self.edges = _Edges(pairs, edata)
        self.nodes = {t: _Frame(ndata.get(t, {})) for t in self.ntypes}
        self.ndata = ndata.get(self.ntypes[0], {})
        self.edata = edata.get(self.canonical_etypes[0], {})

    def num_nodes(self, ntype=None):
        return self._counts[ntype or self.ntypes[0]]


class DglMappingTest(unittest.TestCase):
    """partition_graph(return_mapping=True) against DGL's contract: ``g.ndata[f][orig_nids]`` is
    the partitioned graph's rows in its own order, and edge j of the partitioned graph is input
    edge orig_eids[j] (its endpoints orig_nids of the stored ones)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def stored_edges(out, k, b, e):
        """Partition k's stored edges (its nodes are fanout's [b, e)) as (fanout src, fanout dst),
        in edge ID order, from its in-edge CSC files."""
        indptr = np.load(os.path.join(out, f"part{k}", "graph", "indptr.npy")).astype(np.int64)
        indices = np.load(os.path.join(out, f"part{k}", "graph", "indices.npy")).astype(np.int64)
        return indices, np.repeat(np.arange(e - b), np.diff(indptr)) + b

    def test_a_dgl_graph_partitions_with_dgls_mapping(self):
        rng = np.random.default_rng(3)
        n, m = 500, 3000
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        feat = torch.from_numpy(rng.standard_normal((n, 8)).astype(np.float32))
        weight = torch.from_numpy(rng.standard_normal(m).astype(np.float32))
        train = torch.zeros(n, dtype=torch.bool)
        train[rng.choice(n, 100, replace=False)] = True
        et = ("_N", "_E", "_N")
        g = _DglStandIn({"_N": n}, {et: (torch.from_numpy(src), torch.from_numpy(dst))},
                        {"_N": {"feat": feat, "label": torch.from_numpy(rng.integers(0, 3, n)), "train_mask": train}},
                        {et: {"weight": weight}})
        out = os.path.join(self.work, "dglparts")
        orig_nids, orig_eids = partition_graph(g, "toy", 2, out, return_mapping=True)
        self.assertTrue(torch.equal(torch.sort(orig_nids).values, torch.arange(n)))
        self.assertTrue(torch.equal(torch.sort(orig_eids).values, torch.arange(m)))
        maps = IdMaps(os.path.join(out, "toy.json"))
        for k, (b, e) in enumerate(maps.ranges("node", 0)):
            rows = np.load(os.path.join(out, f"part{k}", "node_data", "feat.npy"))
            self.assertTrue(np.array_equal(rows, feat[orig_nids[b:e]].numpy()))
            mask = np.load(os.path.join(out, f"part{k}", "node_data", "train_mask.npy"))
            self.assertTrue(np.array_equal(mask.astype(bool), train[orig_nids[b:e]].numpy()))
            s, d = self.stored_edges(out, k, b, e)
            eb, ee = maps.ranges("edge", 0)[k]
            input_edges = orig_eids[eb:ee].numpy()
            self.assertTrue(np.array_equal(src[input_edges], orig_nids[s].numpy()))
            self.assertTrue(np.array_equal(dst[input_edges], orig_nids[d].numpy()))
            w = np.load(os.path.join(out, f"part{k}", "edge_data", "weight.npy"))
            self.assertTrue(np.array_equal(w, weight[input_edges].numpy()))
        with self.assertRaisesRegex(ValueError, "num_hops=2"):
            partition_graph(g, "toy", 2, os.path.join(self.work, "other"), num_hops=2)

    def test_a_typed_dgl_graph_maps_by_type(self):
        rng = np.random.default_rng(5)
        counts = {"author": 60, "paper": 90}
        edges = {("author", "writes", "paper"): (torch.from_numpy(rng.integers(0, 60, 300)),
                                                 torch.from_numpy(rng.integers(0, 90, 300))),
                 ("paper", "cites", "paper"): (torch.from_numpy(rng.integers(0, 90, 400)),
                                               torch.from_numpy(rng.integers(0, 90, 400)))}
        feat = torch.from_numpy(rng.standard_normal((90, 4)).astype(np.float32))
        g = _DglStandIn(counts, edges, {"paper": {"feat": feat}}, {})
        out = os.path.join(self.work, "typed")
        orig_nids, orig_eids = partition_graph(g, "toy", 2, out, return_mapping=True)
        self.assertEqual(set(orig_nids), set(counts))
        self.assertEqual(set(orig_eids), set(edges))
        for t, n in counts.items():
            self.assertTrue(torch.equal(torch.sort(orig_nids[t]).values, torch.arange(n)))
        for cet, (s, d) in edges.items():
            self.assertTrue(torch.equal(torch.sort(orig_eids[cet]).values, torch.arange(len(s))))
        first = 0  # the papers' features, partition by partition, in fanout's type-wise order
        for k in range(2):
            rows = np.load(os.path.join(out, f"part{k}", "node_data", "paper", "feat.npy"))
            self.assertTrue(np.array_equal(rows, feat[orig_nids["paper"][first:first + len(rows)]].numpy()))
            first += len(rows)
        self.assertEqual(first, 90)

    def test_the_mapping_means_what_dgls_own_means(self):
        """With DGL installed: dgl.distributed.partition_graph and fanout's on the same DGLGraph
        give mappings of the same form, each meaning the same for its own partitions (node i's
        features are the input's row orig_nids[i]; the same per type on a heterograph)."""
        try:
            import dgl
        except ImportError:
            self.skipTest("DGL is not installed in this Python (bench/vs_dgl's virtualenv has it)")
        rng = np.random.default_rng(11)
        n, m = 400, 2400
        g = dgl.graph((torch.from_numpy(rng.integers(0, n, m)), torch.from_numpy(rng.integers(0, n, m))), num_nodes=n)
        g.ndata["feat"] = torch.from_numpy(rng.standard_normal((n, 4)).astype(np.float32))
        g.ndata["train_mask"] = torch.from_numpy(rng.random(n) < 0.3)
        g.edata["w"] = torch.from_numpy(rng.standard_normal(m).astype(np.float32))
        hg = dgl.heterograph({("a", "r", "b"): (torch.from_numpy(rng.integers(0, 50, 300)),
                                                torch.from_numpy(rng.integers(0, 80, 300))),
                              ("b", "s", "b"): (torch.from_numpy(rng.integers(0, 80, 200)),
                                                torch.from_numpy(rng.integers(0, 80, 200)))},
                             num_nodes_dict={"a": 50, "b": 80})
        hg.nodes["b"].data["feat"] = torch.from_numpy(rng.standard_normal((80, 3)).astype(np.float32))
        for graph, typed in ((g, False), (hg, True)):
            theirs = dgl.distributed.partition_graph(graph, "toy", 2, os.path.join(self.work, f"dgl{typed}"),
                                                     return_mapping=True)
            ours = partition_graph(graph, "toy", 2, os.path.join(self.work, f"fanout{typed}"), return_mapping=True)
            for dgls, fanouts in zip(theirs, ours):
                self.assertEqual(type(dgls), type(fanouts))
                if typed:
                    self.assertEqual(set(dgls), set(fanouts))
                    for key in dgls:
                        self.assertEqual((dgls[key].dtype, dgls[key].shape), (fanouts[key].dtype, fanouts[key].shape))
                else:
                    self.assertEqual((dgls.dtype, dgls.shape), (fanouts.dtype, fanouts.shape))
            # Each side's node i: the input's row orig_nids[i] (DGL's own partitions read by DGL).
            feat = graph.ndata["feat"] if not typed else graph.nodes["b"].data["feat"]
            config = os.path.join(self.work, f"dgl{typed}", "toy.json")
            first = 0
            for k in range(2):
                _, node_feats, _, gpb, _, _, _ = dgl.distributed.load_partition(config, k)
                key = "_N/feat" if not typed else "b/feat"
                ids = gpb.partid2nids(k) if not typed else gpb.partid2nids(k, "b")
                orig = theirs[0] if not typed else theirs[0]["b"]
                self.assertTrue(torch.equal(node_feats[key], feat[orig[ids]]))
                rows = np.load(os.path.join(self.work, f"fanout{typed}", f"part{k}", "node_data",
                                            *(["b"] if typed else []), "feat.npy"))
                mine = ours[0] if not typed else ours[0]["b"]
                self.assertTrue(np.array_equal(rows, feat[mine[first:first + len(rows)]].numpy()))
                first += len(rows)


if __name__ == "__main__":
    unittest.main()
