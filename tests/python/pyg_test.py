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

try:
    import torch
    import torch_geometric  # noqa: F401
    from torch_geometric.data import Data
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import trim_to_layer
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distributed_test as base  # noqa: E402  (the servers fixture and graph maker)
import fanout.distributed as dist  # noqa: E402
from fanout import pyg  # noqa: E402


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
        feat, label = self.g.ndata["feat"], self.g.ndata["label"]
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
                src, dst = self.g.find_edges(batch.e_id)
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
            else:
                self.assertEqual(batch.dst_neg_index.shape, (32, 3))
                pos_src, pos_dst = n_id[batch.src_index], n_id[batch.dst_pos_index]
            # The positives are the edges input_id names, in this rank's edge share.
            eids = dist.edge_split(None, self.g.get_partition_book())[batch.input_id]
            src, dst = self.g.find_edges(eids)
            self.assertTrue(torch.equal(src, pos_src) and torch.equal(dst, pos_dst))
            loader.close()
        with self.assertRaisesRegex(ValueError, "neg_sampling='binary' or 'triplet'"):
            pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=4)
        with self.assertRaisesRegex(NotImplementedError, r"\[2, N\] node pairs"):
            pyg.DistLinkNeighborLoader((feature, graph), num_neighbors=[3], batch_size=4, neg_sampling="binary",
                                       edge_label_index=torch.zeros(2, 3, dtype=torch.long))

    def test_unsupported_arguments_are_refused_by_name(self):
        data = self.stores()
        for kw, message in (({"disjoint": True}, "disjoint"), ({"time_attr": "t"}, "time_attr"),
                            ({"num_neighbors": {("a", "b", "c"): [1]}}, "per edge type"),
                            ({"spam": 1}, "unexpected keyword")):
            args = dict(num_neighbors=[2], batch_size=4)
            args.update(kw)
            with self.assertRaisesRegex((NotImplementedError, TypeError), message):
                pyg.DistNeighborLoader(data, **args)


if __name__ == "__main__":
    unittest.main()
