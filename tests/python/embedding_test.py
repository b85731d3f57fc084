"""DistEmbedding and its sparse optimizers (fanout.distributed.optim; DGL's names, issue 42):
rows on the servers, steps equal to PyTorch's dense optimizers on the rows touched, a typed
table, and two trainers through fanout-launch averaging their gradients.

Run by CTest (python.embedding) as distributed_test.py is: Debian's python3 and python3-torch,
PYTHONPATH=python:build/python, FANOUT_BIN_DIR=build/bin; exits 77 (skipped) without torch.
"""

import os
import sys
import tempfile
import unittest

try:
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distributed_test as base  # noqa: E402  (the servers fixture, graph maker and launcher)
import fanout.distributed as dist  # noqa: E402


class EmbeddingTest(base.ServersTestCase):
    """DistEmbedding and its sparse optimizers (DGL's names; issue 42): rows on the servers, a
    step equal to PyTorch's dense optimizer on the rows touched, untouched rows unchanged."""

    allow_push = True

    def test_rows_start_as_asked_and_adam_steps_like_pytorchs(self):
        g = self.g
        n = g.num_nodes()
        zero = dist.DistEmbedding(n, 3, "zero")
        self.assertTrue(torch.equal(zero(torch.tensor([0, n - 1])), torch.zeros(2, 3)))
        gen = torch.Generator().manual_seed(0)
        start = torch.randn(n, 4, generator=gen)
        emb = dist.DistEmbedding(n, 4, "emb", init_func=lambda shape, dtype: start.clone())
        self.assertTrue(torch.equal(emb(torch.arange(n)), start))
        dense = torch.nn.Parameter(start.clone())
        opt = dist.optim.SparseAdam([emb], lr=0.05)
        ref = torch.optim.Adam([dense], lr=0.05)
        ids = torch.tensor([5, 9, 5, 100, 9, 9])  # repeated rows: their gradients add up
        w = torch.randn(len(ids), 4, generator=gen)
        for _ in range(3):
            opt.zero_grad()
            (emb(ids) * w).sum().backward()
            opt.step()
            ref.zero_grad()
            (dense[ids] * w).sum().backward()
            ref.step()
        got = emb(torch.arange(n)).detach()
        self.assertTrue(torch.allclose(got, dense.detach(), atol=1e-6))
        touched = torch.zeros(n, dtype=torch.bool)
        touched[ids] = True
        self.assertTrue(torch.equal(got[~touched], start[~touched]))
        self.assertFalse(torch.allclose(got[touched], start[touched]))
        # DGL's R-GCN example's order: forward, zero_grad, backward, step. zero_grad forgets
        # gradients already computed (a backward without a step), not the rows of the forward
        # before it: both orders step alike.
        other = dist.DistEmbedding(n, 4, "other", init_func=lambda shape, dtype: start.clone())
        opt2 = dist.optim.SparseAdam([other], lr=0.05)
        (other(ids) * 100 * w).sum().backward()  # computed, then dropped by zero_grad
        for _ in range(3):
            loss = (other(ids) * w).sum()
            opt2.zero_grad()
            loss.backward()
            opt2.step()
        self.assertTrue(torch.allclose(other(torch.arange(n)).detach(), got, atol=1e-6))
        emb.reset_trace()
        with torch.no_grad():  # lookups without gradients are not remembered
            emb(ids)
        self.assertEqual(emb._trace, [])

    def test_rows_pulled_ahead_are_the_rows_after_the_last_step(self):
        """Looked up by each batch's input nodes, a table's rows for the next batch are pulled
        while the loader makes it, and are exactly what a pull after the previous step reads;
        rows pulled ahead and then updated by a step are pulled again."""
        g = self.g
        n = g.num_nodes()
        emb = dist.DistEmbedding(n, 4, "ahead", init_func=lambda shape, dtype: torch.randn(shape))
        opt = dist.optim.SparseAdam([emb], lr=0.1)
        loader = dist.DistNodeDataLoader(g, torch.arange(0, n, 3), dist.NeighborSampler([3]), batch_size=16,
                                         num_samplers=0, to_dgl=False)
        ahead = 0
        for input_nodes, _, _ in loader:
            ahead += emb._ahead is not None and emb._ahead[0] is input_nodes
            fresh = emb._pull(input_nodes.clone())
            rows = emb(input_nodes)
            self.assertTrue(torch.equal(rows.detach(), fresh))
            (rows * rows).sum().backward()
            opt.step()
        self.assertEqual(ahead, len(loader) - 1)  # every batch after the first
        # A step between the next batch and its lookup: the rows pulled ahead are stale.
        it = iter(loader)
        b0, _, _ = next(it)
        (emb(b0) ** 2).sum().backward()
        b1, _, _ = next(it)  # b1's rows pulled ahead now, before the step that changes b0's
        self.assertTrue(emb._ahead is not None and emb._ahead[0] is b1)
        stale = emb._ahead[2].result()
        shared = torch.isin(b1, b0)
        self.assertGreater(int(shared.sum()), 0)
        opt.step()
        rows = emb(b1).detach()
        self.assertTrue(torch.equal(rows, emb._pull(b1.clone())))
        self.assertFalse(torch.equal(rows[shared], stale[shared]))
        # A second object of the same table sees the steps made through the first.
        again = dist.DistEmbedding(n, 4, "ahead")  # attaches to the table
        (emb(b1) ** 2).sum().backward()
        again(b1)  # the latest batch's inputs: `again` follows the loader too
        b2, _, _ = next(it)  # b2's rows pulled ahead for both objects
        self.assertTrue(again._ahead is not None and again._ahead[0] is b2)
        again._ahead[2].result()  # pulled before the step, so stale after it
        self.assertGreater(int(torch.isin(b2, b1).sum()), 0)
        opt.step()  # a step through the first object changes rows of b2
        self.assertTrue(torch.equal(again(b2).detach(), again._pull(b2.clone())))
        loader.close()

    def test_each_rows_update_goes_to_its_own_machines_trainer(self):
        """With the job's process group (one rank per trainer of every machine), a row's gradient
        goes to a trainer of the machine whose partition holds it; another group, by row ID."""
        g = self.g
        n = g.num_nodes()
        emb = dist.DistEmbedding(n, 2, "owned")
        ids = torch.tensor([0, n - 1, 5, n - 2])
        owners = dist.optim.SparseAdam._owners(emb, ids, 2)  # 2 machines x 1 trainer
        self.assertTrue(torch.equal(owners, g.get_partition_book().nid2partid(ids)))
        self.assertEqual(set(owners.tolist()), {0, 1})
        self.assertTrue(torch.equal(dist.optim.SparseAdam._owners(emb, ids, 3), ids % 3))

    def test_adagrad_and_refusals(self):
        g = self.g
        n = g.num_nodes()
        emb = dist.DistEmbedding(n, 2, "ada", init_func=lambda shape, dtype: torch.ones(shape))
        dense = torch.nn.Parameter(torch.ones(n, 2))
        opt, ref = dist.optim.SparseAdagrad([emb], lr=0.1), torch.optim.Adagrad([dense], lr=0.1, eps=1e-10)
        ids = torch.tensor([3, 7])
        (emb(ids) * torch.tensor([[1.0, -2.0], [0.5, 4.0]])).sum().backward()
        opt.step()
        (dense[ids] * torch.tensor([[1.0, -2.0], [0.5, 4.0]])).sum().backward()
        ref.step()
        self.assertTrue(torch.allclose(emb(torch.arange(n)).detach(), dense.detach(), atol=1e-6))
        with self.assertRaisesRegex(ValueError, "num_embeddings 5 must be"):
            dist.DistEmbedding(5, 2, "bad")
        with self.assertRaisesRegex(TypeError, "DistEmbedding parameters"):
            dist.optim.SparseAdam([torch.nn.Parameter(torch.zeros(2))], lr=0.1)


class TypedEmbeddingTest(base.ServersTestCase):
    """A typed graph's featureless node type gets learnable rows in a script (DGL's R-GCN
    example's DistEmbedding with part_policy), read by type-wise ID."""

    typed = True
    allow_push = True

    def test_rows_of_one_node_type(self):
        g = self.g
        n = g.num_nodes("author")
        start = torch.arange(n * 3, dtype=torch.float32).view(n, 3)
        emb = dist.DistEmbedding(n, 3, "author_emb", init_func=lambda shape, dtype: start.clone(),
                                 part_policy=g.get_node_partition_policy("author"))
        ids = torch.tensor([0, n - 1, 7])
        self.assertTrue(torch.equal(emb(ids), start[ids]))
        opt = dist.optim.SparseAdam([emb], lr=0.1)
        emb(ids).sum().backward()
        opt.step()
        after = emb(torch.arange(n)).detach()
        self.assertTrue(torch.allclose(after[ids], start[ids] - 0.1, atol=1e-5))  # Adam's first step: lr * sign
        rest = torch.ones(n, dtype=torch.bool)
        rest[ids] = False
        self.assertTrue(torch.equal(after[rest], start[rest]))
        with self.assertRaisesRegex(ValueError, "part_policy"):
            dist.DistEmbedding(n, 3, "no_policy")


class LaunchedEmbeddingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_dist_embedding_steps_average_every_trainers_gradients(self):
        """Two trainers through fanout-launch: SparseAdam applies each row's gradient averaged
        over the trainers once (rows both touched, rows one touched; rows of either machine's
        partition, each updated by that machine's trainer), as PyTorch's Adam on a dense copy with
        those averaged gradients; rows nobody touched stay."""
        self.two_trainers(base.make_graph(self.work, 2), typed=False)

    def test_a_typed_tables_rows_step_alike(self):
        """The same on a typed graph: the tables are the authors' rows, by type-wise ID."""
        self.two_trainers(base.make_typed_graph(self.work, 2), typed=True)

    def two_trainers(self, config, typed):
        script = os.path.join(self.work, "emb.py")
        with open(script, "w") as f:
            f.write(f"typed = {typed}\n" + """import torch
import fanout.distributed as dist
dist.initialize()
torch.distributed.init_process_group("gloo")
rank = torch.distributed.get_rank()
g = dist.DistGraph(None)
n = g.num_nodes("author") if typed else g.num_nodes()
policy = g.get_node_partition_policy("author") if typed else None
emb = dist.DistEmbedding(n, 2, "e", init_func=lambda shape, dtype: torch.ones(shape), part_policy=policy)
# A second table of another width, which only trainer 0 touches: one step exchanges both.
emb3 = dist.DistEmbedding(n, 3, "f", init_func=lambda shape, dtype: torch.full(shape, 2.0), part_policy=policy)
opt = dist.optim.SparseAdam([emb, emb3], lr=0.1)
# Rows of both partitions (each updated by its own machine's trainer): both trainers' and one's.
ids = {r: torch.tensor([1, 2, 3 + r, n - 1, n - 2 - r]) for r in (0, 1)}
w = {r: torch.tensor([[1.0, -1.0], [2.0, 0.5], [-3.0, 1.0], [0.5, 0.5], [1.0, -2.0]]) * (r + 1) for r in (0, 1)}
ids3 = {0: torch.tensor([4, 5, 6]), 1: torch.tensor([], dtype=torch.int64)}
w3 = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.0, 1.0, -4.0]])
dense = torch.nn.Parameter(torch.ones(n, 2))
dense3 = torch.nn.Parameter(torch.full((n, 3), 2.0))
ref = torch.optim.Adam([dense, dense3], lr=0.1)
for _ in range(2):
    opt.zero_grad()
    loss = (emb(ids[rank]) * w[rank]).sum()
    if rank == 0:
        loss = loss + (emb3(ids3[0]) * w3).sum()
    loss.backward()
    opt.step()
    ref.zero_grad()
    (sum((dense[ids[r]] * w[r]).sum() for r in (0, 1)) + (dense3[ids3[0]] * w3).sum()).div(2).backward()
    ref.step()
got, got3 = emb(torch.arange(n)).detach(), emb3(torch.arange(n)).detach()
same = torch.allclose(got, dense.detach(), atol=1e-6) and torch.allclose(got3, dense3.detach(), atol=1e-6)
print("embedding", "ok" if same else f"differs: {got[:6]} {dense[:6]} {got3[:8]} {dense3[:8]}")
torch.distributed.barrier()
""")
        r = base.launch(self.work, config, [sys.executable, script])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("embedding ok"), 2, r.stdout)


if __name__ == "__main__":
    unittest.main()
