"""fanout.pyg (PyG's distributed names on fanout) against PyG itself: the batches are
torch_geometric Data objects whose subgraph is real (every edge a graph edge, the features and
labels the graph's), laid out as PyG's NeighborLoader lays them out (seeds first, hop by hop, so
trim_to_layer and a PyG model run on them), and link batches carry PyG's binary and triplet fields.

Needs a Python with PyTorch 2.x and torch_geometric besides fanout's extension (CTest's
python.pyg runs it with FANOUT_PYG_PYTHON, docs/python.md); exits 77 (skipped) without them.
"""

import os
import sys
import unittest

import numpy as np

try:
    import torch
    import torch_geometric  # noqa: F401
    from torch_geometric.data import Data
    from torch_geometric.nn import GraphConv, SAGEConv
    from torch_geometric.utils import trim_to_layer
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distributed_test as base  # noqa: E402  (the servers fixture and graph maker)
import fanout.distributed as dist  # noqa: E402
from fanout import pyg  # noqa: E402
from fanout.kernels import FusedCsr  # noqa: E402


def user_graph(work):
    """make_graph's graph as its user had it before partitioning: x, y and the edge_index
    fanout-partition --add-reverse-edges stored (the input edges, then their reverses: edge
    ``E + i`` reverses input edge ``i``), by the graph's own IDs, the IDs fanout.pyg speaks."""
    ds = os.path.join(work, "ds")
    e = torch.from_numpy(np.load(os.path.join(ds, "edges.npy")).astype(np.int64))
    e = e.t() if e.shape[1] == 2 else e
    x = torch.from_numpy(np.load(os.path.join(ds, "node_feat.npy")))
    y = torch.from_numpy(np.load(os.path.join(ds, "node_label.npy")).astype(np.int64))
    return x, y, torch.cat([e, e.flip(0)], 1)


def hand_mapped(config):
    """fanout node ID -> the graph's own ID, from each partition's graph/orig_nids.npy (the map a
    user made by hand before fanout.pyg did it), and the same for edges."""
    base_dir = os.path.dirname(config)
    parts = sorted(d for d in os.listdir(base_dir) if d.startswith("part"))
    parts.sort(key=lambda d: int(d[4:]))
    load = lambda f: torch.from_numpy(np.concatenate([np.load(os.path.join(base_dir, d, "graph", f)) for d in parts]))
    return load("orig_nids.npy"), load("orig_eids.npy")


class PygLoaderTest(base.ServersTestCase):
    def stores(self):
        root = os.path.dirname(self.config)
        return pyg.LocalFeatureStore.from_partition(root, 0), pyg.LocalGraphStore.from_partition(root, 0)

    def test_stores_describe_the_partition(self):
        feature, graph = self.stores()
        self.assertEqual(graph.num_partitions, 2)
        self.assertEqual(feature.partition_idx, 0)
        self.assertFalse(graph.meta["is_hetero"])
        labels = feature.labels
        self.assertEqual(labels.shape, (self.g.num_nodes(),))
        with self.assertRaises(FileNotFoundError):
            pyg.LocalGraphStore.from_partition(os.path.dirname(os.path.dirname(self.config)), 0)

    def test_node_batches_are_pyg_subgraphs(self):
        feature, graph = self.stores()
        nids = torch.arange(0, self.g.num_nodes(), 7)
        ctx = pyg.DistContext(rank=0, global_rank=0, world_size=1, global_world_size=1, group_name="test")
        loader = pyg.DistNeighborLoader((feature, graph), num_neighbors=[4, 3], input_nodes=nids, batch_size=50,
                                        shuffle=True, current_ctx=ctx, master_addr="127.0.0.1", master_port=1,
                                        num_workers=0)
        self.assertEqual(len(loader), -(-len(nids) // 50))
        feat, label, user_edges = user_graph(self.tmp.name)  # the user's own arrays, by the graph's IDs
        seen = []
        model = torch.nn.ModuleList([SAGEConv(16, 8), SAGEConv(8, 5)])
        with loader:
            for batch in loader:
                self.assertIsInstance(batch, Data)
                n, bs = batch.num_nodes, batch.batch_size
                self.assertEqual(sum(batch.num_sampled_nodes), n)
                self.assertEqual(sum(batch.num_sampled_edges), batch.edge_index.shape[1])
                self.assertEqual(batch.num_sampled_nodes[0], bs)
                self.assertTrue(torch.equal(nids[batch.input_id], batch.n_id[:bs]))
                seen.append(batch.n_id[:bs])
                # Every edge is a graph edge (source -> target), and the rows are the graph's.
                src, dst = user_edges[:, batch.e_id]
                self.assertTrue(torch.equal(src, batch.n_id[batch.edge_index[0]]))
                self.assertTrue(torch.equal(dst, batch.n_id[batch.edge_index[1]]))
                self.assertTrue(torch.equal(batch.x, feat[batch.n_id]))
                self.assertTrue(torch.equal(batch.y, label[batch.n_id[:bs]]))
                # Hop 1's edges point at the seeds, hop 2's at hop 1's nodes.
                e1 = batch.num_sampled_edges[0]
                self.assertTrue(bool((batch.edge_index[1, :e1] < bs).all()))
                # PyG's layer-wise trimming and a PyG model run on the batch.
                x, edge_index = batch.x, batch.edge_index
                for i, conv in enumerate(model):
                    x, edge_index, _ = trim_to_layer(i, batch.num_sampled_nodes, batch.num_sampled_edges, x,
                                                     edge_index)
                    x = conv(x, edge_index)
                self.assertEqual(x[:bs].shape, (bs, 5))
                torch.nn.functional.cross_entropy(x[:bs], batch.y).backward()
        self.assertTrue(torch.equal(torch.sort(torch.cat(seen)).values, nids))

    def test_layer_adjacencies_are_the_blocks(self):
        """adjs=True: per layer (input layer first) PyG's NeighborSampler triple, adj_t the hop's
        edges as a sparse CSR [destinations, sources] whose products run on fanout's kernel; PyG's
        SAGEConv (mean) and GraphConv (sum) over it equal the same layers over the edges as
        edge_index (PyG's gather and scatter), values and gradients."""
        feature, graph = self.stores()
        torch.manual_seed(0)
        nids = torch.arange(0, self.g.num_nodes(), 5)
        for loader in (pyg.DistNeighborLoader((feature, graph), num_neighbors=[4, 3], input_nodes=nids, batch_size=40,
                                              shuffle=True, adjs=True),
                       pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[4, 3], batch_size=16,
                                                  neg_sampling="binary", adjs=True)):
            batches = 0
            with loader:
                for batch in loader:
                    batches += 1
                    hops = len(batch.num_sampled_edges)
                    self.assertEqual(len(batch.adjs), hops)
                    x = batch.x.clone().requires_grad_(True)
                    for i, (adj_t, e_id, size) in enumerate(batch.adjs):
                        hop = hops - 1 - i  # layer i is hop `hop` (0-based, hop 1 first in PyG's lists)
                        at = sum(batch.num_sampled_edges[:hop])
                        edges = batch.edge_index[:, at:at + batch.num_sampled_edges[hop]]
                        ns, nd = sum(batch.num_sampled_nodes[:hop + 2]), sum(batch.num_sampled_nodes[:hop + 1])
                        self.assertEqual(size, (ns, nd))
                        self.assertEqual(adj_t.layout, torch.sparse_csr)
                        self.assertIsInstance(adj_t, FusedCsr)  # products on fanout's kernel
                        self.assertEqual(tuple(adj_t.shape), (nd, ns))
                        self.assertTrue(torch.equal(e_id, batch.e_id[at:at + edges.shape[1]]))
                        crow = adj_t.crow_indices()
                        rows = torch.repeat_interleave(torch.arange(nd), crow[1:] - crow[:-1])
                        self.assertTrue(torch.equal(adj_t.col_indices(), edges[0]))
                        self.assertTrue(torch.equal(rows, edges[1]))
                        conv = SAGEConv(x.shape[1], 6)
                        pair = (x[:ns], x[:nd])
                        fused = conv(pair, adj_t)
                        plain = conv(pair, edges, size=(ns, nd))
                        torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-5)
                        g1, = torch.autograd.grad(fused.square().sum(), x)
                        g2, = torch.autograd.grad(plain.square().sum(), x)
                        torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-5)
                        summed = GraphConv(x.shape[1], 6)  # aggr="add": PyG's spmm with reduce="sum"
                        fused, plain = summed(pair, adj_t), summed(pair, edges, size=(ns, nd))
                        torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-5)
                        g1, = torch.autograd.grad(fused.square().sum(), x)
                        g2, = torch.autograd.grad(plain.square().sum(), x)
                        torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-5)
            self.assertGreater(batches, 0)
        with pyg.DistNeighborLoader((feature, graph), num_neighbors=[2], batch_size=8) as plain:
            self.assertNotIn("adjs", next(iter(plain)))  # only when asked for

    def test_link_batches_carry_pygs_label_fields(self):
        feature, graph = self.stores()
        for mode in ("binary", {"mode": "triplet", "amount": 3}):
            loader = pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3, 3], batch_size=32,
                                                neg_sampling=mode, num_workers=0)
            batch = next(iter(loader))
            self.assertIsInstance(batch, Data)
            n_id = batch.n_id
            if mode == "binary":
                eli, label = batch.edge_label_index, batch.edge_label
                self.assertEqual(eli.shape, (2, 64))
                self.assertTrue(torch.equal(label, torch.cat([torch.ones(32), torch.zeros(32)])))
                pos_src, pos_dst = n_id[eli[0, :32]], n_id[eli[1, :32]]
                self.assertTrue(torch.equal(n_id[eli[0, 32:]], pos_src))  # a negative keeps its source
            else:
                self.assertEqual(batch.dst_neg_index.shape, (32, 3))
                pos_src, pos_dst = n_id[batch.src_index], n_id[batch.dst_pos_index]
                self.assertFalse(bool((batch.dst_neg_index == batch.dst_pos_index.unsqueeze(1)).all()))
            # The positives are the edges input_id names, in this rank's edge share (fanout's
            # edge IDs when edge_label_index is None; PyG's batches speak the graph's own).
            eids = dist.edge_split(None, self.g.get_partition_book())[batch.input_id]
            src, dst = user_graph(self.tmp.name)[2][:, graph.ids().edges_out(eids)]
            self.assertTrue(torch.equal(src, pos_src) and torch.equal(dst, pos_dst))
            loader.close()
        # fanout's own negative kinds: joint negatives are one set shared by the batch, in-batch
        # ones the other positives' destinations.
        for sampler, check in ((dist.negative_sampler.Joint(4), "joint"), (dist.negative_sampler.InBatch(3), "in-batch")):
            loader = pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=16,
                                                neg_sampling=sampler, num_workers=0)
            batch = next(iter(loader))
            loader.close()
            neg = batch.dst_neg_index
            if check == "joint":
                self.assertEqual(neg.shape, (16, 4))
                self.assertTrue(bool((neg == neg[0]).all()))
            else:
                self.assertEqual(neg.shape, (16, 3))
                self.assertTrue(torch.equal(neg[:, 0], batch.dst_pos_index.roll(-1)))
        binary = pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=8, num_workers=0,
                                            neg_sampling={"mode": "binary", "sampler": dist.negative_sampler.Joint(2)})
        batch = next(iter(binary))
        binary.close()
        self.assertEqual(batch.edge_label_index.shape, (2, 24))
        with self.assertRaisesRegex(TypeError, "negative_sampler object"):
            pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=4,
                                       neg_sampling={"mode": "binary", "sampler": "joint"})
        with self.assertRaisesRegex(ValueError, "neg_sampling='binary' or 'triplet'"):
            pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=4)
        with self.assertRaisesRegex(NotImplementedError, r"\[2, N\] node pairs"):
            pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=4, neg_sampling="binary",
                                       edge_label_index=torch.zeros(2, 3, dtype=torch.long))

    def test_partitioner_writes_a_fanout_partition(self):
        """PyG's Partitioner: a Data partitioned by fanout-partition, read back by the stores."""
        import tempfile
        os.environ.setdefault("FANOUT_PARTITION_BIN", os.path.join(base.BIN, "fanout-partition"))
        gen = torch.Generator().manual_seed(0)
        n = 200
        edge_index = torch.randint(0, n, (2, 1500), generator=gen)
        data = Data(edge_index=edge_index, x=torch.randn(n, 4, generator=gen), y=torch.randint(0, 3, (n,), generator=gen),
                    train_mask=torch.arange(n) % 5 == 0, num_nodes=n)
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "parts")
            config = pyg.Partitioner(data, 2, root, graph_name="toy").generate_partition()
            self.assertEqual(config, os.path.join(root, "toy.json"))
            store = pyg.LocalGraphStore.from_partition(root, 1)
            self.assertEqual(store.num_partitions, 2)
            self.assertFalse(store.meta["is_hetero"])
            with open(config) as f:
                import json
                cfg = json.load(f)
            self.assertEqual(cfg["num_nodes"], n)
            self.assertEqual(cfg["num_edges"], 1500)
            with self.assertRaisesRegex(RuntimeError, "fanout-partition exited"):
                pyg.Partitioner(data, 0, os.path.join(d, "bad")).generate_partition()
        self.assertTrue(issubclass(pyg.DistNeighborLoader, pyg.DistLoader))
        with self.assertRaises(NotImplementedError):
            pyg.DistNeighborSampler()

    def test_partitioner_writes_a_typed_partition_of_a_hetero_data(self):
        """PyG's Partitioner on a HeteroData: the typed .npy layout through fanout-partition, every
        type's nodes, features, labels and split and every relation (with reverses) kept."""
        import json
        import tempfile
        from torch_geometric.data import HeteroData
        os.environ.setdefault("FANOUT_PARTITION_BIN", os.path.join(base.BIN, "fanout-partition"))
        gen = torch.Generator().manual_seed(1)
        data = HeteroData()
        data["paper"].x = torch.randn(120, 4, generator=gen)
        data["paper"].y = torch.randint(0, 3, (120,), generator=gen)
        data["paper"].train_mask = torch.arange(120) % 4 == 0
        data["author"].x = torch.randn(80, 4, generator=gen)
        data["venue"].num_nodes = 5
        data["author", "writes", "paper"].edge_index = torch.stack(
            [torch.randint(0, 80, (300,), generator=gen), torch.randint(0, 120, (300,), generator=gen)])
        data["paper", "cites", "paper"].edge_index = torch.randint(0, 120, (2, 400), generator=gen)
        data["paper", "in", "venue"].edge_index = torch.stack([torch.arange(120), torch.arange(120) % 5])
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "parts")
            config = pyg.Partitioner(data, 2, root, graph_name="toy",
                                     fanout_args=["--add-reverse-edges"]).generate_partition()
            with open(config) as f:
                cfg = json.load(f)
            self.assertEqual(cfg["num_nodes"], 205)
            self.assertEqual(set(cfg["ntypes"]), {"paper", "author", "venue"})
            self.assertEqual(len(cfg["etypes"]), 6)  # three relations and their reverses
            store = pyg.LocalGraphStore.from_partition(root, 0)
            self.assertTrue(store.meta["is_hetero"])
            self.assertIn(("author", "writes", "paper"), store.meta["edge_types"])
            bad = HeteroData()
            bad["a"].num_nodes = 2
            bad["a", "r", "a"].edge_attr = torch.zeros(1, 1)
            with self.assertRaisesRegex(ValueError, "has no edge_index"):
                pyg.Partitioner(bad, 2, os.path.join(d, "bad"))

    def test_pygs_example_inputs_and_the_attributes_its_loop_reads(self):
        """What node_ogb_cpu.py reads besides the loaders: write_example_inputs' files (labels in
        the graph's own IDs, each partition's own training and test nodes), feature.labels as y,
        loader.num_workers, and enable_multithreading as a context that leaves the loader usable."""
        import tempfile
        g = self.g
        with tempfile.TemporaryDirectory() as root:
            pyg.write_example_inputs(self.config, root, "ogbn-products")
            labels = torch.load(os.path.join(root, "ogbn-products-label", "label.pt"))
            self.assertTrue(torch.equal(labels, user_graph(self.tmp.name)[1]))
            pb = g.get_partition_book()
            orig, _ = hand_mapped(self.config)
            for k in range(2):
                train = torch.load(os.path.join(root, "ogbn-products-train-partitions", f"partition{k}.pt"))
                mask = g.ndata["train_mask"][torch.arange(g.num_nodes())].bool()
                owned = pb.nid2partid(torch.arange(g.num_nodes())) == k
                self.assertTrue(torch.equal(train, torch.sort(orig[(mask & owned).nonzero().flatten()]).values))
            feature, graph = pyg.LocalFeatureStore.from_partition(os.path.join(root, "ogbn-products-partitions"), 0), \
                pyg.LocalGraphStore.from_partition(os.path.join(root, "ogbn-products-partitions"), 0)
        feature.labels = labels + 1000  # y comes from the script's labels once it sets them
        loader = pyg.DistNeighborLoader((feature, graph), num_neighbors=[2], input_nodes=train, batch_size=16,
                                        num_workers=0)
        self.assertEqual(loader.num_workers, 0)
        for _ in range(2):  # two epochs, each inside the context
            with loader.enable_multithreading(2):
                batch = next(iter(loader))
            self.assertTrue(torch.equal(batch.y, labels[batch.n_id[:batch.batch_size]] + 1000))
        loader.close()

    def test_unsupported_arguments_are_refused_by_name(self):
        data = self.stores()
        for kw, message in (({"disjoint": True}, "disjoint"), ({"time_attr": "t"}, "time_attr"),
                            ({"num_neighbors": {("a", "b", "c"): [1]}}, "per edge type is for a typed graph"),
                            ({"spam": 1}, "unexpected keyword")):
            args = dict(num_neighbors=[2], batch_size=4)
            args.update(kw)
            with self.assertRaisesRegex((NotImplementedError, TypeError), message):
                pyg.DistNeighborLoader(data, **args)


class PygTypedLoaderTest(base.ServersTestCase):
    """On a typed graph DistNeighborLoader yields HeteroData: per type n_id and x, per relation a
    real edge_index, PyG's per-type hop counts, and a to_hetero model runs on it."""

    typed = True

    def test_node_batches_are_heterodata(self):
        from torch_geometric.data import HeteroData
        from torch_geometric.nn import to_hetero
        root = os.path.dirname(self.config)
        data = (pyg.LocalFeatureStore.from_partition(root, 0), pyg.LocalGraphStore.from_partition(root, 0))
        self.assertTrue(data[1].meta["is_hetero"])
        g = self.g
        with self.assertRaisesRegex(ValueError, "adjs=True is for graphs with one node type"):
            pyg.DistNeighborLoader(data, num_neighbors=[2], input_nodes=("paper", None), batch_size=4, adjs=True)
        # The graph's own type-wise IDs of fanout's, mapped by hand from each partition's files.
        orig, orig_e = hand_mapped(self.config)
        own = {t: orig[g._ntypes.to_homo(i, np.arange(g.num_nodes(t)))] for i, t in enumerate(g.ntypes)}
        fanout_of = {t: torch.argsort(own[t]) for t in g.ntypes}  # the graph's ID -> fanout's type-wise
        labels = data[0].labels
        self.assertEqual(sorted(labels), ["paper"])
        label = g.nodes["paper"].data["label"][torch.arange(g.num_nodes("paper"))]
        self.assertTrue(torch.equal(labels["paper"], label[fanout_of["paper"]]))
        feat = g.nodes["paper"].data["feat"][torch.arange(g.num_nodes("paper"))][fanout_of["paper"]]
        papers = torch.arange(0, g.num_nodes("paper"), 3)
        per_relation = {cet: [3, 2] for cet in g.canonical_etypes}
        for num_neighbors in ([3, 2], per_relation):
            loader = pyg.DistNeighborLoader(data, num_neighbors=num_neighbors, input_nodes=("paper", papers),
                                            batch_size=40, num_workers=0)
            batch = next(iter(loader))
            loader.close()
            self.assertIsInstance(batch, HeteroData)
            bs = batch["paper"].batch_size
            self.assertTrue(torch.equal(batch["paper"].n_id[:bs], papers[batch["paper"].input_id]))
            self.assertTrue(torch.equal(batch["paper"].y, labels["paper"][batch["paper"].n_id[:bs]]))
            self.assertTrue(torch.equal(batch["paper"].x, feat[batch["paper"].n_id]))
            edges = 0
            for r, cet in enumerate(g.canonical_etypes):
                src_t, _, dst_t = cet
                ei, eid = batch[cet].edge_index, batch[cet].e_id
                self.assertEqual(sum(batch.num_sampled_edges[cet]), ei.shape[1])
                edges += ei.shape[1]
                if ei.shape[1] == 0:
                    continue
                # e_id is the relation's input row: the stored edge with that row joins n_id's ends.
                homo = torch.from_numpy(g._etypes.to_homo(r, np.arange(g.num_edges(cet))))
                stored = homo[torch.argsort(orig_e[homo])][eid]
                s, d = g.find_edges(stored)
                self.assertTrue(torch.equal(orig[s], batch[src_t].n_id[ei[0]]), cet)
                self.assertTrue(torch.equal(orig[d], batch[dst_t].n_id[ei[1]]), cet)
            self.assertGreater(edges, 0)
            for t in g.ntypes:
                self.assertEqual(sum(batch.num_sampled_nodes[t]), batch[t].num_nodes)
            self.assertEqual(batch.num_sampled_nodes["paper"][0], bs)

        classes = g.num_classes

        class Sage(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = SAGEConv((-1, -1), 8), SAGEConv((-1, -1), classes)

            def forward(self, x, edge_index):
                return self.b(self.a(x, edge_index).relu(), edge_index)

        width = batch["paper"].x.shape[1]
        for t in g.ntypes:  # featureless types: zeros, as a script would give them embeddings
            if "x" not in batch[t]:
                batch[t].x = torch.zeros(batch[t].num_nodes, width)
        model = to_hetero(Sage(), batch.metadata(), aggr="sum")
        out = model(batch.x_dict, batch.edge_index_dict)["paper"][:bs]
        torch.nn.functional.cross_entropy(out, batch["paper"].y).backward()


class PygTypedLinkLoaderTest(base.ServersTestCase):
    """On a typed graph partitioned for link prediction DistLinkNeighborLoader takes PyG's
    (edge type, None) and yields HeteroData with the relation's label fields, the pairs indexing
    each type's nodes, and a to_hetero model scores them."""

    typed = True
    link_etypes = "writes,cites"

    def test_link_batches_are_heterodata_with_the_relations_labels(self):
        from torch_geometric.data import HeteroData
        from torch_geometric.nn import to_hetero
        root = os.path.dirname(self.config)
        data = (pyg.LocalFeatureStore.from_partition(root, 0), pyg.LocalGraphStore.from_partition(root, 0))
        g = self.g
        writes = ("author", "writes", "paper")
        r = g.canonical_etypes.index(writes)
        mine = dist.edge_split(None, g.get_partition_book(), etype="writes")
        for mode in ("binary", {"mode": "triplet", "amount": 2}):
            loader = pyg.DistLinkNeighborLoader(data, num_neighbors=[3, 3], edge_label_index=(writes, None),
                                                batch_size=16, neg_sampling=mode, num_workers=0)
            batch = next(iter(loader))
            loader.close()
            self.assertIsInstance(batch, HeteroData)
            if mode == "binary":
                eli = batch[writes].edge_label_index
                self.assertEqual(eli.shape, (2, 32))
                self.assertTrue(torch.equal(batch[writes].edge_label, torch.cat([torch.ones(16), torch.zeros(16)])))
                src, dst = eli[0, :16], eli[1, :16]
                self.assertLess(int(eli[1].max()), batch["paper"].num_nodes)
            else:
                src, dst = batch["author"].src_index, batch["paper"].dst_pos_index
                self.assertEqual(batch["paper"].dst_neg_index.shape, (16, 2))
            # The positives are the relation's stored edges input_id names (fanout's type-wise IDs
            # from edge_split), their ends the graph's own type-wise IDs.
            eids = mine[batch[writes].input_id]
            s, d = g.find_edges(torch.from_numpy(g._etypes.to_homo(r, eids.numpy())))
            orig, _ = hand_mapped(self.config)
            self.assertTrue(torch.equal(batch["author"].n_id[src], orig[s]))
            self.assertTrue(torch.equal(batch["paper"].n_id[dst], orig[d]))

        class Sage(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = SAGEConv((-1, -1), 8), SAGEConv((-1, -1), 8)

            def forward(self, x, edge_index):
                return self.b(self.a(x, edge_index).relu(), edge_index)

        width = batch["paper"].x.shape[1]
        for t in g.ntypes:
            if "x" not in batch[t]:
                batch[t].x = torch.zeros(batch[t].num_nodes, width)
        h = to_hetero(Sage(), batch.metadata(), aggr="sum")(batch.x_dict, batch.edge_index_dict)
        score = (h["author"][batch["author"].src_index] * h["paper"][batch["paper"].dst_pos_index]).sum(-1)
        score.sum().backward()
        with self.assertRaisesRegex(ValueError, r"pass \(edge type, None or type-wise edge IDs\)"):
            pyg.DistLinkNeighborLoader(data, num_neighbors=[3], batch_size=4, neg_sampling="binary")


if __name__ == "__main__":
    unittest.main()
