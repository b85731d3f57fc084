"""fanout.kernels: a block's CSR adjacency whose products run on fanout's fused kernel
(fanout._native.spmm) against the same products written densely, forward and backward; the
operations it does not take fall back to PyTorch's; bad arrays are refused by name. And
relu_dropout (fanout._native.dropout): what it keeps, scales and passes back, its seed from
PyTorch's generator, the same mask on any number of threads.

Runs on Debian's python3-torch (1.13: no `reduce` argument to torch.sparse.mm, so the mean is
checked through the native call) and on PyTorch 2.x; exits 77 (skipped) without torch.
"""

import sys
import unittest

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

import fanout.kernels as fk  # noqa: E402
from fanout import _native  # noqa: E402

HAS_REDUCE = int(torch.__version__.split(".")[0]) >= 2  # torch.sparse.mm(..., reduce) since 2.0


def random_csr(num_dst, num_src, max_degree, seed):
    """indptr, indices of a CSR with empty rows, repeated and unsorted columns, and its dense
    [num_dst, num_src] matrix of edge counts."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, max_degree + 1, (num_dst,), generator=g)
    deg[::7] = 0
    indptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    indptr[1:] = deg.cumsum(0)
    indices = torch.randint(0, num_src, (int(indptr[-1]),), generator=g)
    if indices.numel() > 3:
        indices[1] = indices[0]  # a repeated edge
    dense = torch.zeros(num_dst, num_src)
    rows = torch.repeat_interleave(torch.arange(num_dst), deg)
    dense.index_put_((rows, indices), torch.ones(indices.numel()), accumulate=True)
    return indptr, indices, dense


class FusedCsrTest(unittest.TestCase):
    def setUp(self):
        self.threads = torch.get_num_threads()

    def tearDown(self):
        torch.set_num_threads(self.threads)

    def check_product(self, adj, dense, x, mean, product):
        """product(adj, x) and its gradient against the dense matrix's."""
        m = dense / dense.sum(1, keepdim=True).clamp(min=1) if mean else dense
        w = torch.randn(dense.shape[0], x.shape[1])
        xa = x.detach().clone().requires_grad_(True)
        xb = x.detach().clone().requires_grad_(True)
        got = product(adj, xa)
        want = m @ xb
        self.assertNotIsInstance(got, fk.FusedCsr)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        (got * w).sum().backward()
        (want * w).sum().backward()
        torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-5, atol=1e-5)

    def test_products_equal_the_dense_ones(self):
        """Sum through torch.sparse.mm, torch.mm, @ and matmul (and mean where PyTorch takes a
        reduce argument), on one and on three threads, widths under and over a column chunk."""
        for threads in (1, 3):
            torch.set_num_threads(threads)
            for width, seed in ((5, 0), (37, 1), (64, 2)):
                indptr, indices, dense = random_csr(300, 500, 9, seed)
                adj = fk.fused_csr(indptr, indices, 300, 500)
                self.assertIsInstance(adj, fk.FusedCsr)
                self.assertEqual(adj.layout, torch.sparse_csr)
                self.assertEqual(tuple(adj.shape), (300, 500))
                x = torch.randn(500, width)
                with self.subTest(threads=threads, width=width):
                    self.check_product(adj, dense, x, False, lambda a, h: torch.sparse.mm(a, h))
                    self.check_product(adj, dense, x, False, lambda a, h: a @ h)
                    self.check_product(adj, dense, x, False, torch.mm)
                    self.check_product(adj, dense, x, False, torch.matmul)
                    if HAS_REDUCE:
                        self.check_product(adj, dense, x, False, lambda a, h: torch.sparse.mm(a, h, "sum"))
                        self.check_product(adj, dense, x, True, lambda a, h: torch.sparse.mm(a, h, "mean"))

    def test_the_kernel_runs_and_the_mean_divides_by_the_in_degree(self):
        indptr, indices, dense = random_csr(200, 90, 6, 3)
        x = torch.randn(90, 17)
        calls = []
        spmm = fk._native.spmm

        def counted(*args):
            calls.append(args[4])
            return spmm(*args)

        fk._native.spmm = counted
        try:
            adj = fk.fused_csr(indptr, indices, 200, 90)
            torch.sparse.mm(adj, x)
            self.assertEqual(calls, [False])
            if HAS_REDUCE:
                torch.sparse.mm(adj, x, "mean")
                self.assertEqual(calls, [False, True])
        finally:
            fk._native.spmm = spmm
        out = torch.empty(200, 17)
        _native.spmm(indptr.numpy(), indices.numpy(), x.numpy(), out.numpy(), True, 2)
        mean = dense / dense.sum(1, keepdim=True).clamp(min=1)
        torch.testing.assert_close(out, mean @ x, rtol=1e-5, atol=1e-5)
        self.assertTrue(torch.equal(out[0], torch.zeros(17)))  # row 0 has no edges (random_csr)
        grad_x = torch.ones(90, 17)  # accumulated into
        g = torch.randn(200, 17)
        _native.spmm_backward_x(indptr.numpy(), indices.numpy(), g.numpy(), grad_x.numpy(), True, 1)
        torch.testing.assert_close(grad_x, 1 + mean.t() @ g, rtol=1e-5, atol=1e-5)
        self.assertIn(_native.kernel_isa(), ("baseline", "avx2", "avx512"))

    def test_inputs_the_kernel_does_not_take_go_to_pytorch(self):
        """float64, a non-contiguous x and a dense left operand still give PyTorch's results."""
        indptr, indices, dense = random_csr(40, 30, 5, 4)
        adj = fk.fused_csr(indptr, indices, 40, 30)
        x64 = torch.randn(30, 3, dtype=torch.float64)
        torch.testing.assert_close(torch.sparse.mm(adj.to(torch.float64), x64), dense.double() @ x64)
        xt = torch.randn(4, 30).t()  # not contiguous: the kernel's copy of it
        self.check_product(adj, dense, xt, False, lambda a, h: torch.sparse.mm(a, h))
        self.assertTrue(torch.equal(adj.crow_indices(), indptr))
        self.assertTrue(torch.equal(adj.col_indices(), indices))
        torch.testing.assert_close(adj.to_dense(), dense)

    def test_bad_arrays_are_refused_by_name(self):
        indptr, indices, _ = random_csr(10, 8, 4, 5)
        x = np.zeros((8, 3), np.float32)
        out = np.zeros((10, 3), np.float32)
        ip, ix = indptr.numpy(), indices.numpy()
        bad_index = ix.copy()
        bad_index[-1] = 8
        decreasing = ip.copy()
        decreasing[3] = decreasing[4] + 1
        cases = [
            ((ip, bad_index, x, out), ValueError, "outside the 8 source rows"),
            ((decreasing, ix, x, out), ValueError, "indptr decreases at"),
            ((ip[:-1], ix, x, out), ValueError, "indptr ends at"),
            ((ip, ix, x, np.zeros((10, 4), np.float32)), ValueError, "out: expected [10, 3]"),
            ((ip, ix, x.astype(np.float64), out), TypeError, "x: expected a C-contiguous float32"),
            ((ip, ix, np.zeros((3, 8), np.float32).T, out), TypeError, "x: expected a C-contiguous"),
            ((ip.astype(np.int32), ix, x, out), TypeError, "indptr: expected a C-contiguous int64"),
            ((ip, ix, x, x[:0]), ValueError, "out: expected [10, 3]"),
        ]
        for args, error, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(error) as e:
                    _native.spmm(*args, False)
                self.assertIn(message, str(e.exception))
        shared = np.zeros((10, 3), np.float32)
        with self.assertRaisesRegex(ValueError, "overlaps"):
            _native.spmm(ip, ix, shared[:8], shared, False)


class ReluDropoutTest(unittest.TestCase):
    def setUp(self):
        self.threads = torch.get_num_threads()

    def tearDown(self):
        torch.set_num_threads(self.threads)

    def test_kept_elements_are_scaled_and_pass_their_gradient(self):
        for relu in (True, False):
            for p in (0.5, 0.1):
                with self.subTest(relu=relu, p=p):
                    x = torch.randn(300, 301, requires_grad=True)  # not a multiple of any vector width
                    out = fk.relu_dropout(x, p, True, relu)
                    self.assertIn("_FusedDropout", type(out.grad_fn).__name__)  # fanout's backward, not PyTorch's
                    base = x.detach().clamp(min=0) if relu else x.detach()
                    kept = out.detach() != 0
                    torch.testing.assert_close(out.detach()[kept], base[kept] / (1 - p))
                    live = base != 0
                    rate = (kept & live).sum().item() / live.sum().item()
                    self.assertAlmostEqual(rate, 1 - p, delta=0.01)
                    g = torch.randn_like(out)
                    out.backward(g)
                    torch.testing.assert_close(x.grad[kept], g[kept] / (1 - p))
                    self.assertTrue(torch.equal(x.grad[~kept & live], torch.zeros_like(x.grad[~kept & live])))

    def test_the_mask_follows_torchs_seed_not_the_thread_count(self):
        x = torch.randn(1000, 70)
        outs = []
        for threads in (1, 3, 1):
            torch.set_num_threads(threads)
            torch.manual_seed(5)
            outs.append(fk.relu_dropout(x, 0.5))
        self.assertTrue(torch.equal(outs[0], outs[1]))
        self.assertTrue(torch.equal(outs[0], outs[2]))
        torch.manual_seed(6)
        self.assertFalse(torch.equal(outs[0], fk.relu_dropout(x, 0.5)))
        # The mask is fanout's kernel's for the seed drawn from torch's generator.
        torch.manual_seed(5)
        want = np.empty((1000, 70), np.float32)
        _native.dropout(x.numpy(), want, fk._seed(), 0.5, True)
        self.assertTrue(torch.equal(outs[0], torch.from_numpy(want)))

    def test_evaluation_and_other_tensors_are_pytorchs(self):
        x = torch.randn(50, 8)
        self.assertTrue(torch.equal(fk.relu_dropout(x, 0.5, training=False), torch.relu(x)))
        self.assertIs(fk.relu_dropout(x, 0.5, training=False, relu=False), x)
        self.assertTrue(torch.equal(fk.relu_dropout(x, 0.0), torch.relu(x)))
        x64 = torch.randn(50, 8, dtype=torch.float64)
        out = fk.relu_dropout(x64, 0.5)
        self.assertEqual(out.dtype, torch.float64)
        kept = out != 0
        torch.testing.assert_close(out[kept], x64.clamp(min=0)[kept] * 2)
        with self.assertRaisesRegex(ValueError, r"p must be in \[0, 1\), got 1.0"):
            fk.relu_dropout(x, 1.0)

    def test_bad_arrays_are_refused_by_name(self):
        x = np.ones(10, np.float32)
        with self.assertRaisesRegex(ValueError, "out has 9 elements, x 10"):
            _native.dropout(x, np.ones(9, np.float32), 1, 0.5, True)
        with self.assertRaisesRegex(TypeError, "out: expected a C-contiguous float32"):
            _native.dropout(x, np.ones(10, np.float64), 1, 0.5, True)
        with self.assertRaisesRegex(ValueError, "p must be in"):
            _native.dropout(x, x, 1, -0.1, True)
        with self.assertRaisesRegex(ValueError, "relu=True needs the forward's output"):
            _native.dropout_backward(None, x, np.ones(10, np.float32), 1, 0.5, True)
        with self.assertRaisesRegex(ValueError, "overlaps"):
            big = np.ones(20, np.float32)
            _native.dropout(big[:10], big[5:15], 1, 0.5, False)
        _native.dropout(x, x, 1, 0.5, False)  # in place is fine
        self.assertTrue(set(np.unique(x)) <= {0.0, 2.0})


if __name__ == "__main__":
    unittest.main()
