"""Tests of the Python data plane (python/fanout/distributed, the extension fanout._native).

Run by CTest with Debian's python3 and python3-torch, PYTHONPATH=python:build/python and
FANOUT_BIN_DIR=build/bin; exits 77 (skipped) where torch is missing. Each TestCase starts its own
servers (or a whole job through fanout-launch) on loopback.
"""

import contextlib
import glob
import json
import math
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types
import unittest

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

import fanout.distributed as dist
from fanout import _native
from fanout.distributed.dataloader import EdgePredictionSampler

BIN = os.environ.get("FANOUT_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "data")
# A user's own training script (plain PyTorch GraphSAGE, DDP), as docs/python.md runs it.
SAGE_SCRIPT = os.path.join(HERE, "..", "..", "python", "examples", "sage_train.py")


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def free_base_port(hosts=("127.0.0.1", "127.0.0.2"), span=4):
    """A port P with P..P+span-1 free on every host (servers, coordinator, MASTER_PORT)."""
    for _ in range(100):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        if p + span > 65535:
            continue
        ok = True
        for h in hosts:
            for q in range(p, p + span):
                t = socket.socket()
                try:
                    t.bind((h, q))
                except OSError:
                    ok = False
                t.close()
        if ok:
            return p
    raise RuntimeError("no free ports")


def make_graph(work, parts, nodes=3000, edges=24000, feat_dim=16, name="g", edge_weights=False, feature_dtype=None,
               dgl_example_names=False):
    """With `edge_weights`, an edge field "weight" of WEIGHT_SCALE * src + dst per input edge (its
    reverse, stored with --add-reverse-edges, carries the same number); with `feature_dtype`, the
    features stored so (fanout-partition --feature-dtype); with `dgl_example_names`, the features
    and labels are the fields "features" and "labels", as DGL's distributed examples name them."""
    ds = os.path.join(work, "ds")
    run([f"{BIN}/fanout-generate", "--out", ds, "--num-nodes", str(nodes), "--num-edges", str(edges),
         "--feat-dim", str(feat_dim), "--num-classes", "5", "--seed", "1"] + (["--edge-weights"] if edge_weights else []))
    if dgl_example_names:
        os.makedirs(os.path.join(ds, "node_data"), exist_ok=True)
        os.rename(os.path.join(ds, "node_feat.npy"), os.path.join(ds, "node_data", "features.npy"))
        os.rename(os.path.join(ds, "node_label.npy"), os.path.join(ds, "node_data", "labels.npy"))
    if edge_weights:
        e = np.load(os.path.join(ds, "edges.npy")).astype(np.int64)
        src, dst = (e[:, 0], e[:, 1]) if e.shape[1] == 2 else (e[0], e[1])
        np.save(os.path.join(ds, "edge_data", "weight.npy"), (WEIGHT_SCALE * src + dst).astype(np.float32))
    out = os.path.join(work, f"parts{parts}")
    run([f"{BIN}/fanout-partition", "--input", ds, "--num-parts", str(parts), "--out", out, "--graph-name", name,
         "--add-reverse-edges"] + (["--feature-dtype", feature_dtype] if feature_dtype else []))
    return os.path.join(out, f"{name}.json")


WEIGHT_SCALE = 4096  # > the nodes of make_graph's graphs; WEIGHT_SCALE * src + dst stays exact in float32


def make_typed_graph(work, parts, scale="0.002", feature_dtype=None, link_etypes=None, edge_fields=False):
    """The ogbn-mag-shaped typed graph (4 node types, 4 relations and their reverses); with
    `feature_dtype`, the papers' features stored so (fanout-partition --feature-dtype); with
    `link_etypes` ("writes,cites"), those relations' pairs split for link prediction; with
    `edge_fields`, the writes edges carry a weight `w` and two numbers `ef` each."""
    ds = os.path.join(work, "mag")
    run([f"{BIN}/fanout-generate", "--preset", "mag", "--scale", scale, "--out", ds])
    if edge_fields:
        n = len(np.load(os.path.join(ds, "edges", "author___writes___paper.npy")))
        os.makedirs(os.path.join(ds, "edge_data", "author___writes___paper"))
        np.save(os.path.join(ds, "edge_data", "author___writes___paper", "w.npy"),
                (1 + 0.25 * (np.arange(n) % 8)).astype(np.float32))
        np.save(os.path.join(ds, "edge_data", "author___writes___paper", "ef.npy"),
                np.arange(2 * n, dtype=np.float32).reshape(n, 2))
    out = os.path.join(work, f"typed{parts}")
    run([f"{BIN}/fanout-partition", "--input", ds, "--num-parts", str(parts), "--out", out, "--graph-name", "g",
         "--add-reverse-edges"] + (["--feature-dtype", feature_dtype] if feature_dtype else []) +
        (["--edge-split", "0.8,0.1,0.1", "--link-etype", link_etypes] if link_etypes else []))
    return os.path.join(out, "g.json")


def launch(work, part_config, command, *, samplers=0, parts=2, extra=(), timeout=600):
    port = free_base_port()
    ip = os.path.join(work, "ip_config.txt")
    with open(ip, "w") as f:
        for k in range(parts):
            f.write(f"127.0.0.{k + 1} {port}\n")
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    argv = [f"{BIN}/fanout-launch", "--ip-config", ip, "--part-config", part_config, "--num-servers", "1",
            "--num-trainers", "1", "--num-samplers", str(samplers), "--log-dir", os.path.join(work, "logs"),
            *extra, "--", *command]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=work)


def checksum_lines(text):
    return sorted(re.findall(r"rank \d+ batch \d+ \d+ crc \d+", text))


def fewest_seeds_of_two_ranks(rank, port):
    """Rank `rank` of a 2-process gloo group on loopback, holding 5 + rank seeds: the count the
    training loaders take per epoch."""
    from fanout.distributed.dataloader import _fewest_on_any_rank
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        return _fewest_on_any_rank(5 + rank)
    finally:
        torch.distributed.destroy_process_group()


@contextlib.contextmanager
def dgl_importable():
    """DGL in sys.modules while inside (a loader made then yields DGL blocks): the real one where
    it is installed, else a stand-in with the one call fanout's to_dgl makes
    (``dgl.create_block``), whose blocks hold srcdata, dstdata and edata dicts."""
    try:
        import dgl  # noqa: F401
        yield
        return
    except ImportError:
        pass

    class StandInBlock:
        def __init__(self, num_src_nodes, num_dst_nodes):
            self.num_src, self.num_dst = num_src_nodes, num_dst_nodes
            self.srcdata, self.dstdata, self.edata = {}, {}, {}

    m = types.ModuleType("dgl")
    m.NID = m.EID = "_ID"
    m.create_block = lambda data, num_src_nodes, num_dst_nodes, device=None: StandInBlock(num_src_nodes, num_dst_nodes)
    sys.modules["dgl"] = m
    try:
        yield
    finally:
        del sys.modules["dgl"]


class ServersTestCase(unittest.TestCase):
    """A 2-partition graph with `servers_per_part` fanout-servers per partition, this process as
    machine 0."""

    allow_push = False
    servers_per_part = 1
    typed = False
    link_etypes = None  # typed graphs: the relations split for link prediction
    typed_edge_fields = False  # typed graphs: make_typed_graph's edge_fields
    edge_weights = False
    feature_dtype = None
    dgl_example_names = False

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        if cls.typed:
            cls.config = make_typed_graph(cls.tmp.name, 2, feature_dtype=cls.feature_dtype, link_etypes=cls.link_etypes,
                                          edge_fields=cls.typed_edge_fields)
        else:
            cls.config = make_graph(cls.tmp.name, 2, edge_weights=cls.edge_weights, feature_dtype=cls.feature_dtype,
                                    dgl_example_names=cls.dgl_example_names)
        cls.servers = []
        addresses = []
        for k in range(2):
            for _ in range(cls.servers_per_part):
                port = free_base_port(hosts=("127.0.0.1",), span=1)
                argv = [f"{BIN}/fanout-server", "--part-config", cls.config, "--part-id", str(k), "--host",
                        "127.0.0.1", "--port", str(port)] + (["--allow-push"] if cls.allow_push else [])
                cls.servers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
                addresses.append(f"{k}=127.0.0.1:{port}")
        os.environ["FANOUT_SERVERS"] = ",".join(addresses)
        dist.initialize(part_config=cls.config, machine_id=0, deadline_seconds=10)
        cls.g = dist.DistGraph("g")

    @classmethod
    def tearDownClass(cls):
        dist.exit_client()
        for s in cls.servers:
            if s.poll() is None:
                s.terminate()
            s.wait()
        os.environ.pop("FANOUT_SERVERS", None)
        cls.tmp.cleanup()

    def expect_the_epoch_fails(self, kill, within):
        """Takes a batch from a loader with one sampler process, runs `kill` (which returns the
        error the rest of the epoch must raise), and checks that it is raised within `within`
        seconds and that no sampler process is left after close()."""
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([5, 5]), batch_size=16, shuffle=True,
                                         num_samplers=1, prefetch=1)
        it = iter(loader)
        next(it)
        pattern = kill()
        start = time.monotonic()
        with self.assertRaisesRegex(dist.FanoutError, pattern):
            for _ in it:
                pass
        self.assertLess(time.monotonic() - start, within)
        loader.close()
        self.assertEqual(sampler_children(), [])

    def part_rows(self, field):
        """Every node's row of `field`, read from the partition files with NumPy."""
        with open(self.config) as f:
            cfg = json.load(f)
        base = os.path.dirname(self.config)
        return np.concatenate([np.load(os.path.join(base, f"part{k}", "node_data", f"{field}.npy"))
                               for k in range(cfg["num_parts"])])


class DistTensorTest(ServersTestCase):
    def test_reads_equal_the_partitioned_data(self):
        feat = self.part_rows("feat")
        ids = torch.tensor([0, 5, self.g.num_nodes() - 1, 1500, 7, 2999, 5])  # both partitions, repeats
        got = self.g.ndata["feat"][ids]
        self.assertEqual(got.dtype, torch.float32)
        np.testing.assert_array_equal(got.numpy(), feat[ids.numpy()])
        np.testing.assert_array_equal(self.g.ndata["label"][np.arange(10, 20)].numpy(), self.part_rows("label")[10:20])
        self.assertEqual(self.g.ndata["feat"].shape, feat.shape)
        self.assertEqual(len(self.g.ndata["feat"][torch.tensor([], dtype=torch.int64)]), 0)

    def test_bad_reads_name_the_culprit(self):
        with self.assertRaisesRegex(dist.FanoutError, "INVALID_ARGUMENT.*3000"):
            self.g.ndata["feat"][torch.tensor([1, 3000])]
        with self.assertRaisesRegex(KeyError, "no node field 'nope'.*feat"):
            self.g.ndata["nope"]
        with self.assertRaisesRegex(TypeError, "boolean mask"):
            self.g.ndata["feat"][torch.tensor([True, False])]

    def test_the_partitions_data_is_read_only_without_allow_push_the_jobs_own_tensors_are_not(self):
        with self.assertRaisesRegex(dist.FanoutError, "PERMISSION_DENIED.*partition [01].*--allow-push"):
            self.g.ndata["feat"][torch.tensor([1, 2000])] = torch.zeros(2, 16)
        np.testing.assert_array_equal(self.g.ndata["feat"][[1]].numpy(), self.part_rows("feat")[[1]])
        h = dist.DistTensor((self.g.num_nodes(), 2), torch.float32, "h_no_flag")
        rows = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        h[torch.tensor([1, 2000])] = rows
        self.assertTrue(torch.equal(h[torch.tensor([1, 2000])], rows))

    def test_partition_book_and_split(self):
        pb = self.g.get_partition_book()
        self.assertEqual(pb.num_partitions(), 2)
        self.assertEqual(pb.partid, 0)
        n0 = pb.partid2nids(0)
        n1 = pb.partid2nids(1)
        self.assertEqual(len(n0) + len(n1), self.g.num_nodes())
        self.assertTrue(torch.equal(pb.nid2partid(torch.tensor([int(n0[0]), int(n1[0]), int(n1[-1])])),
                                    torch.tensor([0, 1, 1])))
        mask = self.part_rows("train_mask").astype(bool)
        shares = [dist.node_split(self.g.ndata["train_mask"], pb, rank=r) for r in range(2)]
        union = torch.cat(shares).sort().values
        self.assertTrue(torch.equal(union, torch.from_numpy(np.flatnonzero(mask))))
        self.assertLessEqual(abs(len(shares[0]) - len(shares[1])), 1)
        # A mask as a plain tensor gives the same split.
        self.assertTrue(torch.equal(dist.node_split(torch.from_numpy(mask), pb, rank=0), shares[0]))


class DistTensorWriteTest(ServersTestCase):
    allow_push = True
    servers_per_part = 2  # a write must reach both; reads take the servers in turn

    def test_rows_written_are_read_back_from_every_server(self):
        ids = torch.tensor([3, 2990])  # one row in each partition
        rows = torch.arange(32, dtype=torch.float32).reshape(2, 16)
        self.g.ndata["feat"][ids] = rows
        for _ in range(4):  # each server of each partition answers at least once
            np.testing.assert_array_equal(self.g.ndata["feat"][ids].numpy(), rows.numpy())
        with self.assertRaisesRegex(ValueError, r"\(3, 16\) rows for 2 IDs"):
            self.g.ndata["feat"][ids] = torch.zeros(3, 16)

    def test_created_tensors_live_on_the_servers(self):
        n = self.g.num_nodes()
        h = dist.DistTensor((n, 4), torch.float32, "h", persistent=True)  # DGL's example, for inference
        self.assertEqual((h.shape, h.dtype), ((n, 4), torch.float32))
        ids = torch.tensor([1, n - 1, 1500])
        np.testing.assert_array_equal(h[ids].numpy(), np.zeros((3, 4), np.float32))
        rows = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        h[ids] = rows
        again = dist.DistTensor((n, 4), torch.float32, "h")  # another trainer's view: the same rows
        for _ in range(4):  # from each server of each partition in turn
            np.testing.assert_array_equal(again[ids].numpy(), rows.numpy())
        np.testing.assert_array_equal(again[torch.arange(n)].numpy()[ids.numpy()], rows.numpy())
        with self.assertRaisesRegex(dist.FanoutError, "ALREADY_EXISTS.*created as float32 \\[4\\]"):
            dist.DistTensor((n, 4), torch.int64, "h")
        with self.assertRaisesRegex(NotImplementedError, "only node tensors"):
            dist.DistTensor((7, 4), torch.float32, "small")
        # DGL's examples' names for the features and labels.
        self.assertIs(self.g.ndata["features"], self.g.ndata["feat"])
        self.assertIs(self.g.ndata["labels"], self.g.ndata["label"])


def batch_file_bytes() -> int:
    """Bytes of the sampler processes' batch files this process maps now (memfd fanout-batch)."""
    total = 0
    with open("/proc/self/maps") as f:
        for line in f:
            if "memfd:fanout-batch" in line:
                begin, end = (int(x, 16) for x in line.split()[0].split("-"))
                total += end - begin
    return total


class LoaderTest(ServersTestCase):
    def test_batch_rows_fetched_leaves_this_machines_rows_out_of_the_batch_files(self):
        """batch_rows="fetched" (fanout-train's --batch-rows): the sampler processes' batch files
        hold only the rows fetched from the other machine, this process copies its machine's own
        in, and the script receives the same batches as with "all" (and "auto", the default)."""
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        got = {}
        for rows in ("all", "fetched", "auto"):
            loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([5, 5]), batch_size=64, shuffle=True,
                                             num_samplers=1, prefetch=1, batch_rows=rows, seed=3, to_dgl=False)
            batches, mapped = [], 0
            for input_nodes, _, blocks in loader:
                batches.append((input_nodes.clone(), blocks[0].srcdata["feat"].clone()))
                mapped = max(mapped, batch_file_bytes())
            loader.close()
            got[rows] = batches, mapped
        feat = self.g.ndata["feat"]
        for rows in ("fetched", "auto"):
            self.assertEqual(len(got[rows][0]), len(got["all"][0]))
            for (ids, x), (ids_all, x_all) in zip(got[rows][0], got["all"][0]):
                self.assertTrue(torch.equal(ids, ids_all) and torch.equal(x, x_all))
                self.assertTrue(torch.equal(x, feat[ids]))
        # About half the input rows are this machine's: the files shrink by their share.
        self.assertLess(got["fetched"][1], 0.8 * got["all"][1])
        # The default keeps them in (the files' count varies with timing, by one file or so).
        self.assertGreater(got["auto"][1], got["fetched"][1])
        with self.assertRaisesRegex(ValueError, "batch_rows must be"):
            dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=2, batch_rows="some")

    def test_sampler_processes_run_below_the_trainers_priority(self):
        """Sampler processes start at the trainer's priority and lower it by the job's
        sampler_nice (fanout-launch --sampler-nice; default 10) once their batches are ahead of
        the step (over their last 8 batches they waited for the trainer at least half as long as
        they spent making them), so they yield the CPU to the step then and not while the
        trainer waits for them; 0 keeps it."""
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())

        def nice_of(pid):
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
            return int(text[text.rindex(")") + 2:].split()[16])

        ctx = dist.context.current()
        saved = ctx.sampler_nice
        self.assertEqual(saved, 10)  # the default, outside fanout-launch
        try:
            for asked, want in ((10, 10), (3, 3), (0, 0)):
                ctx.sampler_nice = asked
                loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=2,
                                                 num_samplers=1, prefetch=1)
                self.assertGreaterEqual(len(loader), 12)
                batches = iter(loader)
                next(batches)
                children = sampler_children()
                self.assertEqual(len(children), 1)
                own = nice_of(os.getpid())
                # Two batches made at most: no window of 8 yet.
                self.assertEqual(nice_of(children[0]), own, f"sampler_nice {asked}, first batch")
                for _ in range(11):  # a step slower than the sampler: it waits 50 ms before each batch
                    time.sleep(0.05)
                    next(batches)
                self.assertEqual(nice_of(children[0]), min(19, own + want), f"sampler_nice {asked}")
                loader.close()
        finally:
            ctx.sampler_nice = saved

    def test_batches_are_dgl_blocks_with_their_data(self):
        feat = self.part_rows("feat")
        label = self.part_rows("label")
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4, 3]), batch_size=50, shuffle=True,
                                         num_samplers=0, to_dgl=False)  # (DGL blocks: the test below)
        per_epoch = int(self.part_rows("train_mask").sum()) // 2  # an even split: total // world size
        self.assertIn(len(nids), (per_epoch, per_epoch + 1))
        # No process group here: this rank trains on all of its share (LaunchedScriptTest and
        # test_ranks_train_on_the_fewest_seeds_any_rank_has check the ranks' agreement).
        self.assertEqual(len(loader), -(-len(nids) // 50))
        # fanout-train's fanout rule, and its words.
        with self.assertRaisesRegex(ValueError, "NeighborSampler fanouts: layer 1 has fanout 0; a fanout is a "
                                    "positive count or -1"):
            dist.NeighborSampler([4, 0])
        n = 0
        for input_nodes, seeds, blocks in loader:
            n += 1
            self.assertEqual(len(blocks), 2)
            b0, b1 = blocks
            self.assertEqual(b1.num_dst_nodes(), len(seeds))
            self.assertTrue(torch.equal(b1.dstdata[dist.NID], seeds))
            # A block's destinations are its first sources; layer 1's sources are layer 0's destinations.
            self.assertTrue(torch.equal(b0.srcdata[dist.NID][:b0.num_dst_nodes()], b0.dstdata[dist.NID]))
            self.assertTrue(torch.equal(b1.srcdata[dist.NID], b0.dstdata[dist.NID]))
            np.testing.assert_array_equal(b0.srcdata["feat"].numpy(), feat[input_nodes.numpy()])
            np.testing.assert_array_equal(b1.dstdata["label"].numpy(), label[seeds.numpy()])
            ei = b1.edge_index
            self.assertEqual(tuple(ei.shape), (2, b1.num_edges()))
            self.assertTrue(bool((ei[0] < b1.num_src_nodes()).all()) and bool((ei[1] < b1.num_dst_nodes()).all()))
            self.assertTrue(bool((b1.in_degrees() <= 3).all()))
            # The edges are real: each sampled edge's global ID has these endpoints.
            src, dst = self.g.find_edges(b1.edata[dist.EID])
            self.assertTrue(torch.equal(src, b1.srcdata[dist.NID][ei[0]]))
            self.assertTrue(torch.equal(dst, b1.dstdata[dist.NID][ei[1]]))
            # g.ndata reads of exactly the batch's inputs are the batch's own rows.
            self.assertIs(self.g.ndata["feat"][input_nodes], b0.srcdata["feat"])
            self.assertIs(self.g.ndata["label"][seeds], b1.dstdata["label"])
            # Tensors are the script's own: writing them is allowed.
            b0.srcdata["feat"].mul_(2)
        self.assertEqual(n, len(loader))

    def test_dgl_blocks_are_the_batch_blocks(self):
        # Block.to_dgl builds DGL's block from the batch's CSC: the same edges in the same order
        # (so the same edge IDs) and the same data as DGL's own (src, dst) construction. Runs
        # where DGL is importable (bench/vs_dgl's virtual environment), else skips.
        try:
            import dgl
        except ImportError:
            self.skipTest("needs DGL")
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4, 3]), batch_size=50, num_samplers=0,
                                         to_dgl=False)
        for _, _, blocks in loader:
            for blk in blocks:
                b = blk.to_dgl()
                want = dgl.create_block((blk.indices, blk.dst), num_src_nodes=blk.num_src_nodes(),
                                        num_dst_nodes=blk.num_dst_nodes())
                self.assertEqual((b.num_src_nodes(), b.num_dst_nodes()), (want.num_src_nodes(), want.num_dst_nodes()))
                for got, exp in zip(b.edges(form="all"), want.edges(form="all")):
                    self.assertTrue(torch.equal(got, exp))
                self.assertTrue(torch.equal(b.in_degrees(), want.in_degrees()))
                self.assertTrue(torch.equal(b.srcdata[dgl.NID], blk.srcdata[dist.NID]))
                self.assertTrue(torch.equal(b.dstdata[dgl.NID], blk.dstdata[dist.NID]))
                self.assertTrue(torch.equal(b.edata[dgl.EID], blk.edata[dist.EID]))
                # DGL's mean aggregation on it equals the fanout block's own.
                x = torch.randn(blk.num_src_nodes(), 3)
                b.srcdata["x"] = x
                b.update_all(dgl.function.copy_u("x", "m"), dgl.function.mean("m", "h"))
                deg = blk.in_degrees().clamp(min=1).unsqueeze(1).to(x.dtype)
                agg = torch.zeros(blk.num_dst_nodes(), 3).index_add_(0, blk.dst, x[blk.indices]) / deg
                torch.testing.assert_close(b.dstdata["h"], agg)

    def test_ranks_train_on_the_fewest_seeds_any_rank_has(self):
        # Two processes of one gloo group, given 5 and 6 seeds: both train on 5 an epoch.
        ctx = multiprocessing.get_context("spawn")  # this process runs a gRPC client: no fork
        port = free_base_port(hosts=("127.0.0.1",), span=1)
        with ctx.Pool(2) as pool:
            self.assertEqual(pool.starmap(fewest_seeds_of_two_ranks, [(r, port) for r in range(2)]), [5, 5])

    def test_a_training_loader_takes_the_fewest_seeds_of_any_rank(self):
        # The loader's side of the rule (the all-reduce itself is the test above): a rank that
        # hears that another has 60 fewer seeds trains on as many; evaluation visits all of its own.
        from fanout.distributed import dataloader as dl
        real = dl._fewest_on_any_rank
        dl._fewest_on_any_rank = lambda count: count - 60
        try:
            for shuffle, steps in ((True, 3), (False, 4)):
                loader = dist.DistNodeDataLoader(self.g, torch.arange(200), dist.NeighborSampler([2]), batch_size=50,
                                                 shuffle=shuffle, num_samplers=0, to_dgl=False)
                self.assertEqual(len(loader), steps)
                self.assertEqual(sum(len(seeds) for _, seeds, _ in loader), 140 if shuffle else 200)
                loader.close()
        finally:
            dl._fewest_on_any_rank = real

    def test_epochs_reshuffle_and_repeat_exactly(self):
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())

        def epochs(loader, count):
            return [[seeds.clone() for _, seeds, _ in loader] for _ in range(count)]

        a = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=64, shuffle=True, seed=7,
                                    num_samplers=0)
        b = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=64, shuffle=True, seed=7,
                                    num_samplers=1)
        ea, eb = epochs(a, 2), epochs(b, 2)
        for x, y in zip(ea, eb):
            self.assertEqual(len(x), len(y))
            for s, t in zip(x, y):
                self.assertTrue(torch.equal(s, t))
        self.assertFalse(torch.equal(torch.cat(ea[0]), torch.cat(ea[1])))  # reshuffled
        # An epoch left early: the next pass is the next epoch, from its start.
        c = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=64, shuffle=True, seed=7,
                                    num_samplers=1)
        for _ in c:
            break
        again = epochs(c, 1)[0]
        self.assertTrue(all(torch.equal(s, t) for s, t in zip(again, ea[1])))
        # drop_last: full batches only.
        d = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=64, shuffle=True,
                                    drop_last=True, num_samplers=0)
        self.assertTrue(all(len(s) == 64 for _, s, _ in d))
        for x in (a, b, c, d):
            x.close()

    def test_an_evaluation_loader_holds_no_sampler_between_its_passes(self):
        """A training (shuffled) loader's sampler processes make the next epoch's batches while the
        script does something else; an evaluation (unshuffled) loader's stop at the end of each
        pass, holding no batch and no memory until the next pass, which starts them again and
        yields the same batches."""
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        train = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([3]), batch_size=64, shuffle=True,
                                        num_samplers=1)
        val = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([3]), batch_size=64, num_samplers=1)
        for _ in train:
            pass
        self.assertEqual(len(sampler_children()), 1)
        first = [seeds.clone() for _, seeds, _ in val]
        self.assertEqual(len(sampler_children()), 1)  # the training loader's alone
        second = [seeds.clone() for _, seeds, _ in val]
        self.assertEqual(len(first), len(val))
        self.assertTrue(len(first) == len(second) and all(torch.equal(a, b) for a, b in zip(first, second)))
        train.close()
        self.assertEqual(sampler_children(), [])
        val.close()

    def test_a_script_may_change_its_batches_in_place_and_later_ones_stay_whole(self):
        # A sampler process's batch files are mapped writable and reused: what the script writes
        # lands in a file its sampler rewrites in full before handing it out again.
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())

        def loader(num_samplers):
            return dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4, 3]), batch_size=32, shuffle=True,
                                           seed=3, num_samplers=num_samplers, prefetch=1, to_dgl=False)

        def contents(input_nodes, seeds, blocks):
            return [input_nodes.clone(), seeds.clone(), blocks[0].srcdata["feat"].clone()] + \
                [t.clone() for b in blocks for t in (b.indptr, b.indices, b.dst)]

        threads, process = loader(0), loader(1)
        for _ in range(2):  # more batches than the sampler process has files: each file is reused
            for want, got in zip(threads, process):
                expected = contents(*want)
                self.assertEqual([bool(torch.equal(a, b)) for a, b in zip(expected, contents(*got))],
                                 [True] * len(expected))
                input_nodes, _, blocks = got
                blocks[0].srcdata["feat"].mul_(-1)
                input_nodes.fill_(-1)
                for b in blocks:
                    b.indices.fill_(-3)
                    b.indptr.zero_()
                del want, got, input_nodes, blocks
        self.assertGreater(len(threads), 4)
        threads.close()
        process.close()

    def test_every_loaders_sampler_processes_map_the_one_halo_cache_this_process_holds(self):
        # As fanout-train's: the halo cache is pulled once, into shared memory this process holds,
        # and each loader's sampler processes map it instead of pulling a copy each (an
        # evaluation makes a loader per layer in DGL's examples).
        def halo_caches(pid):
            with open(f"/proc/{pid}/maps") as f:
                return {line.split()[4] for line in f if "memfd:fanout-halo-cache" in line}

        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        seen = []
        for seeds, fanouts in ((nids, [4, 3]), (torch.arange(0, self.g.num_nodes(), 7), [-1])):
            loader = dist.DistNodeDataLoader(self.g, seeds, dist.NeighborSampler(fanouts), batch_size=64,
                                             num_samplers=2, to_dgl=False)
            it = iter(loader)
            for _ in range(2):  # a batch from each sampler process: both have mapped what they use
                _, _, blocks = next(it)
                np.testing.assert_array_equal(blocks[0].srcdata["feat"].numpy(),
                                              self.part_rows("feat")[blocks[0].srcdata[dist.NID].numpy()])
            children = sampler_children()
            self.assertEqual(len(children), 2)
            for pid in children:
                seen.append(halo_caches(pid))
            loader.close()
        mine = halo_caches(os.getpid())
        self.assertEqual(len(seen[0]), 1)
        self.assertTrue(seen[0] <= mine, "the sampler processes map a halo cache this process holds")
        self.assertEqual(seen, [seen[0]] * 4, "every sampler process of both loaders maps the same one")
        # Sampler threads read through the script's graph, which holds none.
        threads = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=64, num_samplers=0,
                                          to_dgl=False)
        next(iter(threads))
        threads.close()
        self.assertEqual(halo_caches(os.getpid()), mine)

    def test_a_presampled_cache_makes_the_same_batches_from_a_memfd_of_its_own(self):
        # feature_cache_rows="presample" (fanout-train's --feature-cache-rows): the loader's
        # sampler processes map a cache ranked by its own presampled epoch, not the halo cache
        # every other loader shares, holding rows beyond the halo; the batches are the same.
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        check_presampled_cache(
            self, lambda rows: dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4, 3]), batch_size=32,
                                                       shuffle=True, seed=3, num_samplers=1, to_dgl=False,
                                                       feature_cache_rows=rows),
            lambda input_nodes, seeds, blocks: [input_nodes, seeds, blocks[0].srcdata["feat"]])
        with self.assertRaisesRegex(ValueError, "feature_cache_rows must be 'halo' or 'presample', got 'often'"):
            dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4]), batch_size=32, feature_cache_rows="often")

    def test_a_killed_sampler_process_is_an_exception_naming_it(self):
        def kill():
            children = sampler_children()
            self.assertEqual(len(children), 1)
            os.kill(children[0], signal.SIGKILL)
            return rf"sampler process 0 \(pid {children[0]}\) was killed by signal 9"

        self.expect_the_epoch_fails(kill, within=10)


class InterruptTest(ServersTestCase):
    SCRIPT = """
import sys, time, torch
import fanout.distributed as dist
dist.initialize(part_config=sys.argv[1], machine_id=0)
g = dist.DistGraph("g")
nids = dist.node_split(g.ndata["train_mask"], g.get_partition_book())
loader = dist.DistNodeDataLoader(g, nids, dist.NeighborSampler([3, 3]), batch_size=8, shuffle=True, num_samplers=2)
for epoch in range(1000):
    for step, batch in enumerate(loader):
        if epoch == 0 and step == 0:
            print("ready", flush=True)
        time.sleep(0.01)
"""

    def test_ctrl_c_ends_the_script_and_leaves_no_sampler_running(self):
        proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, self.config], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        self.assertEqual(proc.stdout.readline().strip(), "ready", proc.stderr.read() if proc.poll() else "")
        samplers = [p for p in all_samplers() if self.config in cmdline(p)]
        self.assertEqual(len(samplers), 2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("KeyboardInterrupt", err)
        for p in samplers:  # gone, not orphaned
            self.assertFalse(os.path.exists(f"/proc/{p}") and "fanout-sampler" in cmdline(p), f"sampler {p} left")


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def all_samplers():
    return [int(os.path.basename(os.path.dirname(p))) for p in glob.glob("/proc/[0-9]*/comm")
            if open_text(p).startswith("fanout-sampler")]


def open_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


class EdgeLoaderTest(ServersTestCase):
    def test_edge_split_covers_every_stored_edge_once(self):
        pb = self.g.get_partition_book()
        shares = [dist.edge_split(None, pb, rank=r) for r in range(2)]
        self.assertTrue(torch.equal(torch.cat(shares), torch.arange(self.g.num_edges())))
        self.assertTrue(torch.equal(shares[0], pb.partid2eids(0)))

    def test_joint_in_batch_and_local_negatives(self):
        """fanout's own negative kinds through DistEdgeDataLoader: joint negatives are k nodes
        shared by the batch, in-batch ones the other positives' destinations (no node beyond the
        positives'), local ones nodes of the trainer's partition."""
        eids = dist.edge_split(None, self.g.get_partition_book())
        ns = dist.negative_sampler
        for kind in (ns.Joint(3), ns.InBatch(4), ns.Local(2)):
            sampler = dist.as_edge_prediction_sampler(dist.NeighborSampler([3, 3]), negative_sampler=kind)
            loader = dist.DistEdgeDataLoader(self.g, eids, sampler, batch_size=32, seed=1, to_dgl=False)
            for input_nodes, pos, neg, blocks in loader:
                seeds = pos.ndata[dist.NID]
                u, v = pos.edges()
                nu, nv = neg.edges()
                n = len(u)
                k = len(nu) // n
                self.assertTrue(torch.equal(nu, u.repeat_interleave(k)), kind.kind)
                if kind.kind == "joint":
                    self.assertEqual(k, 3)
                    self.assertTrue(torch.equal(nv.view(n, k), nv[:k].expand(n, k)))
                elif kind.kind == "in-batch":
                    self.assertEqual(k, min(4, n - 1))
                    want = torch.stack([v[(torch.arange(n) + 1 + j) % n] for j in range(k)], 1).flatten()
                    self.assertTrue(torch.equal(nv, want))
                    self.assertTrue(torch.equal(torch.unique(seeds), torch.unique(torch.cat([seeds[u], seeds[v]]))))
                else:
                    owners = self.g.get_partition_book().nid2partid(seeds[nv])
                    self.assertTrue(bool((owners == self.g.get_partition_book().partid).all()))
            loader.close()

    def test_link_batches_pair_their_seeds_and_exclude_the_positives(self):
        eids = dist.edge_split(None, self.g.get_partition_book())
        sampler = dist.as_edge_prediction_sampler(dist.NeighborSampler([3, 3]),
                                                  negative_sampler=dist.negative_sampler.Uniform(2))
        runs = []
        for samplers in (0, 1):
            loader = dist.DistEdgeDataLoader(self.g, eids, sampler, batch_size=64, seed=5, num_samplers=samplers,
                                             to_dgl=False)
            batches = []
            for input_nodes, pos, neg, blocks in loader:
                seeds = pos.ndata[dist.NID]
                self.assertTrue(torch.equal(seeds, blocks[-1].dstdata[dist.NID]))
                self.assertTrue(torch.equal(neg.ndata[dist.NID], seeds))
                self.assertEqual(neg.num_edges(), 2 * pos.num_edges())
                u, v = pos.edges()
                # The positives are real edges of the graph: their endpoints, among the seeds.
                src, dst = self.g.find_edges(pos.edata[dist.EID])
                self.assertTrue(torch.equal(src, seeds[u]) and torch.equal(dst, seeds[v]))
                nu, _ = neg.edges()
                self.assertTrue(torch.equal(nu, u.repeat_interleave(2)))  # negatives keep the source
                n = self.g.num_nodes()  # a pair (a, c) as the key a * n + c
                pairs = torch.cat([src * n + dst, dst * n + src])
                for b in blocks:  # no block carries a positive pair, in either direction
                    es = b.srcdata[dist.NID][b.indices]
                    ed = b.dstdata[dist.NID][b.dst]
                    self.assertFalse(torch.isin(es * n + ed, pairs).any())
                self.assertEqual(blocks[0].srcdata["feat"].shape, (len(input_nodes), 16))
                batches.append(pos.edata[dist.EID].clone())
            self.assertEqual(len(batches), len(loader))
            runs.append(batches)
            loader.close()
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(*runs)))  # threads and processes agree
        # Every rank runs the same number of steps: the smaller partition's share.
        least = min(e - s for s, e in self.g.get_partition_book()._edge_ranges)
        self.assertEqual(len(runs[0]), -(-least // 64))

    def test_a_presampled_cache_makes_the_same_link_batches(self):
        # DistEdgeDataLoader(feature_cache_rows="presample"): as the node loader's, ranked by its
        # own presampled epoch of link batches (negatives and all).
        eids = dist.edge_split(None, self.g.get_partition_book())
        sampler = dist.as_edge_prediction_sampler(dist.NeighborSampler([3, 3]),
                                                  negative_sampler=dist.negative_sampler.Uniform(2))
        check_presampled_cache(
            self, lambda rows: dist.DistEdgeDataLoader(self.g, eids, sampler, batch_size=64, seed=5, num_samplers=1,
                                                       to_dgl=False, feature_cache_rows=rows),
            lambda input_nodes, pos, neg, blocks: [input_nodes, pos.edata[dist.EID], neg.edges()[1],
                                                   blocks[0].srcdata["feat"]])
        with self.assertRaisesRegex(ValueError, "DistEdgeDataLoader: feature_cache_rows must be 'halo' or 'presample'"):
            dist.DistEdgeDataLoader(self.g, eids, sampler, batch_size=32, feature_cache_rows="often")


class DglExampleNamesTest(ServersTestCase):
    """DGL's distributed examples call the features and labels "features" and "labels" (their
    partition_graph.py renames them) and read g.ndata["features"][input_nodes] in the loop: a
    loader fetches those fields with the batch as it does "feat" and "label", so that read is the
    batch's own tensor, not a second pull of the same rows (on DGL's own GraphSAGE example, 4-5 s
    of an 11-12 s epoch)."""

    dgl_example_names = True

    def test_the_batch_brings_features_and_labels(self):
        names = {f["name"] for f in self.g._native.node_fields}
        self.assertTrue({"features", "labels"} <= names and not {"feat", "label"} & names, names)
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        for samplers in (0, 1):
            # fanout's blocks (DGL's carry only what prefetch_node_feats names: the next test).
            loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4, 4]), batch_size=64, shuffle=True,
                                             num_samplers=samplers, to_dgl=False)
            steps = 0
            for input_nodes, seeds, blocks in loader:
                rows = blocks[0].srcdata["features"]
                self.assertIs(self.g.ndata["features"][input_nodes], rows)
                self.assertIs(self.g.ndata["labels"][seeds], blocks[-1].dstdata["labels"])
                # The bytes of the partition files (read here with NumPy), not zeros.
                want = self.part_rows("features")[input_nodes.numpy()]
                self.assertTrue(np.array_equal(rows.numpy(), want))
                steps += 1
                if steps == 3:
                    break
            self.assertEqual(steps, 3)
            loader.close()
        # A sampler that asks for no fields gets none.
        loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([4], prefetch_node_feats=[],
                                                                            prefetch_labels=[]),
                                         batch_size=64, num_samplers=0)
        _, _, blocks = next(iter(loader))
        self.assertNotIn("features", blocks[0].srcdata)
        self.assertNotIn("labels", blocks[-1].dstdata)
        loader.close()


    def test_on_dgl_blocks_the_rows_follow_the_script(self):
        """DGL's blocks carry the fields prefetch_node_feats names and no other, as DGL's do; the
        rows of the field fanout picked itself ("features") are fetched while the script reads
        them by g.ndata["features"][input_nodes], and not while it reads the inputs' rows from
        another table, as the layers of DGL's example's layer-wise inference do from their own
        DistTensor: its evaluation then moves no rows it does not read (issue 65). Whether a batch
        carries them or not, the script reads the same rows."""
        want = self.part_rows("features")
        nids = np.arange(self.g.num_nodes())
        for samplers in (0, 1):
            carried = []
            with dgl_importable():
                loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([-1]), batch_size=64,
                                                 num_samplers=samplers)
                for i, (input_nodes, seeds, blocks) in enumerate(loader):
                    self.assertNotIn("features", blocks[0].srcdata)
                    self.assertIn("labels", blocks[-1].dstdata)
                    carried.append(any(key == "features" for key, _ in self.g._last_batch))
                    if 10 <= i < 20:  # reads its input from elsewhere
                        self.g.ndata["train_mask"][input_nodes]
                    else:
                        rows = self.g.ndata["features"][input_nodes]
                        self.assertTrue(np.array_equal(rows.numpy(), want[input_nodes.numpy()]), f"batch {i}")
                    if i == 29:
                        break
                loader.close()
            # It starts without them; a switch reaches the batches not yet made (a few are ahead).
            self.assertEqual(carried[0], False)
            self.assertEqual(carried[5:10], [True] * 5, (samplers, carried))
            self.assertEqual(carried[15:20], [False] * 5, (samplers, carried))
            self.assertEqual(carried[25:30], [True] * 5, (samplers, carried))
        # A field the sampler names (DGL's prefetch_node_feats) is on every batch's blocks, read
        # or not.
        with dgl_importable():
            loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([-1], prefetch_node_feats=["features"]),
                                             batch_size=64, num_samplers=1)
            for i, (input_nodes, _, blocks) in enumerate(loader):
                rows = blocks[0].srcdata["features"]
                self.assertTrue(np.array_equal(rows.numpy(), want[input_nodes.numpy()]), f"batch {i}")
                if i == 5:
                    break
            loader.close()


class CompressedFeaturesTest(ServersTestCase):
    """Features stored as int8 rows (fanout-partition --feature-dtype int8) read as float32 from
    g.ndata and from batches of threads and sampler processes alike: each row's codes times its
    scale plus its offset, decoded on the script's side (issue 40)."""

    feature_dtype = "int8"

    def decoded_rows(self):
        stored = self.part_rows("feat")  # uint8 [n, 16 + 8]
        tail = np.ascontiguousarray(stored[:, 16:]).view(np.float32)
        return stored[:, :16].astype(np.float32) * tail[:, :1] + tail[:, 1:]

    def test_rows_read_decoded_from_the_tensor_and_from_batches(self):
        want = self.decoded_rows()
        feat = self.g.ndata["feat"]
        self.assertEqual((feat.shape, feat.dtype), ((self.g.num_nodes(), 16), torch.float32))
        ids = torch.tensor([5, 0, 2999, 1500])
        np.testing.assert_array_equal(feat[ids].numpy(), want[ids.numpy()])
        with self.assertRaisesRegex(TypeError, "stored compressed"):
            feat[ids] = torch.zeros(4, 16)
        for samplers in (0, 1):
            loader = dist.DistNodeDataLoader(self.g, torch.arange(300), dist.NeighborSampler([3, 3]), batch_size=100,
                                             num_samplers=samplers, to_dgl=False)
            for input_nodes, _, blocks in loader:
                rows = blocks[0].srcdata["feat"]
                self.assertEqual(rows.dtype, torch.float32)
                np.testing.assert_array_equal(rows.numpy(), want[input_nodes.numpy()])
            loader.close()


class TypedCompressedFeaturesTest(ServersTestCase):
    """A typed graph's features stored as int8 rows read decoded through the typed loader, from
    threads and sampler processes alike, and through g.nodes[ntype].data (issue 40)."""

    typed = True
    feature_dtype = "int8"

    def test_typed_batches_carry_decoded_rows(self):
        g = self.g
        with open(self.config) as f:
            cfg = json.load(f)
        base = os.path.dirname(self.config)
        # The papers' stored rows by type-wise ID: each partition holds a run of them, in order.
        stored = np.concatenate([np.load(os.path.join(base, f"part{k}", "node_data", "paper", "feat.npy"))
                                 for k in range(cfg["num_parts"])])
        dim = stored.shape[1] - 8
        tail = np.ascontiguousarray(stored[:, dim:]).view(np.float32)
        want = stored[:, :dim].astype(np.float32) * tail[:, :1] + tail[:, 1:]
        self.assertEqual(len(want), g.num_nodes("paper"))
        ids = torch.tensor([0, 7, g.num_nodes("paper") - 1, 3])
        feat = g.nodes["paper"].data["feat"]
        self.assertEqual(feat.dtype, torch.float32)
        np.testing.assert_array_equal(feat[ids].numpy(), want[ids.numpy()])
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], g.get_partition_book(), ntype="paper")
        for samplers in (0, 1):
            loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([4, 3]), batch_size=40,
                                             num_samplers=samplers)
            n = 0
            for input_nodes, _, blocks in loader:
                rows = blocks[0].srcdata["feat"]["paper"]
                self.assertEqual((rows.dtype, rows.shape[1]), (torch.float32, dim))
                np.testing.assert_array_equal(rows.numpy(), want[input_nodes["paper"].numpy()])
                n += 1
            loader.close()
            self.assertGreater(n, 0)


class SettingsTest(ServersTestCase):
    """The loaders' settings reach the sampler whole (issue 41): edge fields for node and link
    batches alike, and a misspelt keyword is a TypeError, as in DGL, never dropped."""

    edge_weights = True

    def test_pyg_names_without_pyg_say_what_to_install(self):
        """fanout.pyg imports without PyG (Debian's python3 has none); a loader then names it."""
        try:
            import torch_geometric  # noqa: F401
            self.skipTest("PyG is installed here: tests/python/pyg_test.py tests fanout.pyg with it")
        except ImportError:
            pass
        from fanout import pyg
        root = os.path.dirname(self.config)
        data = (pyg.LocalFeatureStore.from_partition(root, 0), pyg.LocalGraphStore.from_partition(root, 0))
        with self.assertRaisesRegex(ImportError, "pip install torch_geometric"):
            pyg.DistNeighborLoader(data, num_neighbors=[2], batch_size=4)

    def test_counts_are_whole_numbers_taken_as_given(self):
        """A fanout or batch size that int() would round (3.5) or parse ("5") is a TypeError naming
        the argument, never a silently different count; NumPy's integers are counts."""
        with self.assertRaisesRegex(TypeError, r"NeighborSampler fanouts: 3\.5 is not a whole number"):
            dist.NeighborSampler([3.5, 2])
        with self.assertRaisesRegex(TypeError, r"NeighborSampler fanouts: '5' is not a whole number"):
            dist.NeighborSampler(["5"])
        self.assertEqual(dist.NeighborSampler([np.int64(5), -1]).fanouts, [5, -1])
        nids = dist.node_split(self.g.ndata["train_mask"], self.g.get_partition_book())
        with self.assertRaisesRegex(TypeError, r"DistNodeDataLoader: batch_size: 32\.5 is not a whole number"):
            dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2]), batch_size=32.5)

    def expect_weights(self, blocks, field, per_edge_shape):
        for b in blocks:
            w = b.edata[field]
            self.assertEqual(tuple(w.shape), (b.num_edges(),) + per_edge_shape)
            w = w.reshape(-1).to(torch.int64)
            # The weights were made from input IDs; fanout's IDs number nodes partition by partition.
            src = self.orig_nids[b.srcdata[dist.NID][b.indices]]
            dst = self.orig_nids[b.dstdata[dist.NID][b.dst]]
            # Each sampled edge carries its own input edge's weight (in either direction: reverses).
            self.assertTrue(torch.all((w == WEIGHT_SCALE * src + dst) | (w == WEIGHT_SCALE * dst + src)))

    def test_edge_fields_reach_node_and_link_batches(self):
        parts = os.path.dirname(self.config)
        self.orig_nids = torch.from_numpy(np.concatenate(
            [np.load(os.path.join(parts, f"part{k}", "graph", "orig_nids.npy")) for k in range(2)]).astype(np.int64))
        self.assertEqual(len(self.orig_nids), self.g.num_nodes())
        pb = self.g.get_partition_book()
        nids = dist.node_split(torch.ones(self.g.num_nodes(), dtype=torch.bool), pb)
        # The weight (one number per edge) and the same field as an edge feature (a row per edge).
        for samplers, weight, feats, shape in ((0, "weight", None, ()), (1, "weight", None, ()),
                                               (0, None, ["weight"], (1,)), (1, None, ["weight"], (1,))):
            ns = dist.NeighborSampler([3, 3], edge_weight=weight, prefetch_edge_feats=feats)
            loader = dist.DistNodeDataLoader(self.g, nids, ns, batch_size=128, shuffle=True, num_samplers=samplers,
                                             to_dgl=False)
            _, _, blocks = next(iter(loader))
            self.expect_weights(blocks, "weight", shape)
            loader.close()
            # DistEdgeDataLoader once dropped NeighborSampler(edge_weight=...) without a word.
            sampler = dist.as_edge_prediction_sampler(ns, negative_sampler=dist.negative_sampler.Uniform(1))
            loader = dist.DistEdgeDataLoader(self.g, dist.edge_split(None, pb), sampler, batch_size=64,
                                             num_samplers=samplers, to_dgl=False)
            _, _, _, blocks = next(iter(loader))
            self.expect_weights(blocks, "weight", shape)
            loader.close()

    def test_a_misspelt_keyword_is_a_type_error(self):
        ns = dist.NeighborSampler([2])
        nids = torch.arange(10)
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'fanout'"):
            dist.NeighborSampler([2], fanout=[2])
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'batchsize'"):
            dist.DistNodeDataLoader(self.g, nids, ns, batchsize=4)
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'negative_samplers'"):
            dist.as_edge_prediction_sampler(ns, negative_samplers=dist.negative_sampler.Uniform(1))
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'negative_samplers'"):
            EdgePredictionSampler(ns, negative_samplers=dist.negative_sampler.Uniform(1))
        sampler = dist.as_edge_prediction_sampler(ns, negative_sampler=dist.negative_sampler.Uniform(1))
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'num_sampler'"):
            dist.DistEdgeDataLoader(self.g, nids, sampler, batch_size=4, num_sampler=0)
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'ip_confg'"):
            dist.initialize(ip_confg="ip.txt")
        # DGL's own names are taken: device, queue_size, and the sampler's output_device.
        loader = dist.DistNodeDataLoader(self.g, nids, dist.NeighborSampler([2], output_device="cpu"), batch_size=4,
                                         num_samplers=0, queue_size=3, device="cpu", to_dgl=False)
        self.assertEqual(len(list(loader)), 3)
        loader.close()

    def test_batches_on_another_device_keep_their_rows_free_to_read(self):
        # 'meta' stands in for a GPU here: the batch moves there, and g.ndata[feat][input_nodes] is
        # still the batch's own (moved) tensor rather than a second fetch of the same rows.
        meta = torch.device("meta")
        for device, ns in ((meta, dist.NeighborSampler([2])), (None, dist.NeighborSampler([2], output_device=meta))):
            loader = dist.DistNodeDataLoader(self.g, torch.arange(64), ns, batch_size=32, num_samplers=0, to_dgl=False,
                                             device=device)
            input_nodes, seeds, blocks = next(iter(loader))
            self.assertTrue(input_nodes.is_meta and seeds.is_meta and all(b.indices.is_meta for b in blocks))
            self.assertIs(self.g.ndata["feat"][input_nodes], blocks[0].srcdata["feat"])
            self.assertIs(self.g.ndata["label"][seeds], blocks[-1].dstdata["label"])
            loader.close()
        sampler = dist.as_edge_prediction_sampler(dist.NeighborSampler([2]),
                                                  negative_sampler=dist.negative_sampler.Uniform(1))
        loader = dist.DistEdgeDataLoader(self.g, dist.edge_split(None, self.g.get_partition_book()), sampler,
                                         batch_size=16, num_samplers=0, to_dgl=False, device=meta)
        input_nodes, pos, neg, blocks = next(iter(loader))
        self.assertTrue(pos.edge_index.is_meta and neg.edge_index.is_meta)
        self.assertIs(self.g.ndata["feat"][input_nodes], blocks[0].srcdata["feat"])
        loader.close()

    def test_the_native_loaders_take_exactly_the_settings_cplusplus_has(self):
        defaults = _native.default_settings()
        self.assertIn("edge_weight_field", defaults["sampler"])
        args = dict(sampler=dict(defaults["sampler"], fanouts=[2], feature_field="", label_field=""),
                    loader=dict(defaults["loader"], num_threads=1))
        loader = _native.NodeLoader(self.g._native, np.arange(8), **args)
        self.assertEqual(loader.steps_per_epoch, 1)
        loader.close()
        missing = dict(args["sampler"])
        del missing["edge_feature_field"]
        with self.assertRaisesRegex(dist.FanoutError, "'edge_feature_field' is missing"):
            _native.NodeLoader(self.g._native, np.arange(8), sampler=missing, loader=args["loader"])
        with self.assertRaisesRegex(dist.FanoutError, "unknown setting 'prefech'"):
            _native.NodeLoader(self.g._native, np.arange(8), sampler=args["sampler"],
                               loader=dict(args["loader"], prefech=2))


class LinkLossTest(unittest.TestCase):
    """fanout.link's losses and rankings are fanout-train's (trainer/link_loss.h, AddRankings):
    checked against the formulas on numbers worked by hand."""

    def test_rankings_count_higher_negatives_and_half_the_ties(self):
        from fanout.link import rankings
        pos = torch.tensor([2.0, 0.5])
        neg = torch.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, -2.0]])
        # Positive 0: one negative higher, one tied: rank 2.5. Positive 1: none higher: rank 1.
        r = rankings(pos, neg, ks=(1, 2, 10))
        self.assertAlmostEqual(r["mrr"], (1 / 2.5 + 1) / 2)
        self.assertEqual((r["hits@1"], r["hits@2"], r["hits@10"]), (0.5, 0.5, 1.0))

    def test_losses_are_fanout_trains(self):
        from fanout.link import link_loss
        pos = torch.tensor([1.5, -0.5], requires_grad=True)
        neg = torch.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
        sp = lambda x: math.log1p(math.exp(x))  # noqa: E731  softplus: -log sigmoid(-x)
        pairs = [(1.5, 1), (-0.5, 1), (0.5, 0), (-1.0, 0), (2.0, 0), (0.0, 0)]
        bce = sum(sp(-s) if y else sp(s) for s, y in pairs) / 6
        self.assertAlmostEqual(float(link_loss(pos, neg, "bce")), bce, places=6)
        w = torch.tensor([2.0, 0.5])
        wbce = (2.0 * sp(-1.5) + 0.5 * sp(0.5) + sp(0.5) + sp(-1.0) + sp(2.0) + sp(0.0)) / 6
        self.assertAlmostEqual(float(link_loss(pos, neg, "weighted-bce", weight=w)), wbce, places=6)
        self.assertAlmostEqual(float(link_loss(pos, neg, "weighted-bce", weight=torch.ones(2))), bce, places=6)
        t = 0.5
        adv_neg = 0.0
        for row in ([0.5, -1.0], [2.0, 0.0]):
            e = [math.exp(x * t) for x in row]
            adv_neg += sum(ei / sum(e) * sp(x) for ei, x in zip(e, row)) / 2
        adv = ((sp(-1.5) + sp(0.5)) / 2 + adv_neg) / 2
        self.assertAlmostEqual(float(link_loss(pos, neg, "adversarial", temperature=t)), adv, places=6)
        con = 0.0
        for p_, row in ((1.5, [0.5, -1.0]), (-0.5, [2.0, 0.0])):
            z = [p_ / t] + [x / t for x in row]
            con += -(z[0] - math.log(sum(math.exp(v) for v in z))) / 2
        self.assertAlmostEqual(float(link_loss(pos, neg, "contrastive", temperature=t)), con, places=5)
        link_loss(pos, neg, "adversarial").backward()  # differentiable, the weights detached
        self.assertIsNotNone(pos.grad)
        with self.assertRaisesRegex(ValueError, "is not a link loss"):
            link_loss(pos, neg, "hinge")
        with self.assertRaisesRegex(ValueError, r"expected \[n\] and \[n, k\]"):
            link_loss(pos, neg.flatten())


class TypedLinkLoaderTest(ServersTestCase):
    """Link prediction on a typed graph from Python (DGL's names): edge_split's {relation: IDs}
    of the partition's link relations, DistEdgeDataLoader's typed pair graphs over the blocks'
    per-type seeds, negatives of each relation's destination type."""

    typed = True
    link_etypes = "writes,cites"

    def test_typed_edge_batches_pair_the_seeds_of_each_relation(self):
        g = self.g
        writes, cites = ("author", "writes", "paper"), ("paper", "cites", "paper")
        mine = dist.edge_split(None, g.get_partition_book())
        self.assertEqual(sorted(mine), sorted([writes, cites]))
        self.assertTrue(torch.equal(dist.edge_split(None, g.get_partition_book(), etype="cites"), mine[cites]))
        sampler = dist.as_edge_prediction_sampler(dist.NeighborSampler([3, 3]),
                                                  negative_sampler=dist.negative_sampler.Uniform(2))
        loader = dist.DistEdgeDataLoader(g, mine, sampler, batch_size=64, shuffle=True, seed=3)
        seen = set()
        for step, (input_nodes, pos, neg, blocks) in enumerate(loader):
            self.assertEqual(set(input_nodes), set(g.ntypes))
            for cet in pos.canonical_etypes:
                seen.add(cet)
                src_t, _, dst_t = cet
                u, v = pos.edges(etype=cet)
                nu, nv = neg.edges(etype=cet)
                self.assertEqual(len(nu), 2 * len(u))
                self.assertTrue(torch.equal(nu, u.repeat_interleave(2)))  # a negative keeps its source
                # The pairs index each type's seeds, which are the last block's outputs.
                self.assertTrue(torch.equal(pos.ndata[dist.NID][dst_t], blocks[-1].dstnodes[dst_t].data[dist.NID]))
                self.assertLess(int(v.max()), pos.num_nodes(dst_t))
                self.assertLess(int(nv.max()), neg.num_nodes(dst_t))
                # Each positive is its stored edge, as type-wise IDs of the relation's types.
                r = g.canonical_etypes.index(cet)
                eids = pos.edata[dist.EID][cet]
                homo = torch.from_numpy(g._etypes.to_homo(r, eids.numpy()))
                s_all, d_all = g.find_edges(homo)
                _, s_tw = g._ntypes.to_typewise(s_all.numpy())
                _, d_tw = g._ntypes.to_typewise(d_all.numpy())
                self.assertTrue(torch.equal(pos.ndata[dist.NID][src_t][u], torch.from_numpy(s_tw)))
                self.assertTrue(torch.equal(pos.ndata[dist.NID][dst_t][v], torch.from_numpy(d_tw)))
            if step == 3:
                break
        loader.close()
        self.assertEqual(seen, {writes, cites})
        # Only the partition's link relations can be positives; a typed graph takes a dict.
        with self.assertRaisesRegex(ValueError, "is not a link relation"):
            dist.DistEdgeDataLoader(g, {"has_topic": torch.arange(5)}, sampler, batch_size=8)
        with self.assertRaisesRegex(ValueError, r"\{relation: type-wise edge IDs\}"):
            dist.DistEdgeDataLoader(g, torch.arange(5), sampler, batch_size=8)


def dgl_module():
    """DGL when this Python has it (bench/vs_dgl's virtualenv), else None."""
    try:
        import dgl
        return dgl
    except ImportError:
        return None


class TypedEdgeFieldsTest(ServersTestCase):
    """Edge fields on typed blocks (issue 67): NeighborSampler's edge_weight and
    prefetch_edge_feats name each relation's own field; a block's edata has them by relation for
    the relations that hold them, and fanout_block() in its edge order, the others weighing 1."""

    typed = True
    typed_edge_fields = True

    def test_each_relations_fields_reach_edata_and_fanout_block(self):
        g = self.g
        data = os.path.join(self.tmp.name, "mag")
        w = np.load(os.path.join(data, "edge_data", "author___writes___paper", "w.npy"))
        ef = np.load(os.path.join(data, "edge_data", "author___writes___paper", "ef.npy"))
        base = os.path.dirname(self.config)
        orig_eids = np.concatenate([np.load(os.path.join(base, f"part{k}", "graph", "orig_eids.npy")) for k in range(2)])
        writes = ("author", "writes", "paper")
        r = g.canonical_etypes.index(writes)
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], g.get_partition_book(), ntype="paper")
        sampler = dist.NeighborSampler([4, 3], edge_weight="w", prefetch_edge_feats=["ef"])
        for samplers in (0, 1):
            loader = dist.DistNodeDataLoader(g, {"paper": nids}, sampler, batch_size=40, num_samplers=samplers,
                                             to_dgl=False)
            weighed = 0
            for _, _, blocks in loader:
                for b in blocks:
                    self.assertEqual(set(b.edata), {"w", "ef"})
                    self.assertEqual(set(b.edata["w"]), {writes})  # the one relation that has them
                    rows = orig_eids[g._etypes.to_homo(r, b.edge_ids(writes).numpy())]
                    np.testing.assert_array_equal(b.edata["w"][writes].numpy(), w[rows])
                    np.testing.assert_array_equal(b.edata["ef"][writes].numpy(), ef[rows])
                    fb = b.fanout_block()
                    mine = fb["etype"] == r
                    self.assertEqual(fb["edge_weight"].dtype, torch.float32)
                    self.assertTrue(bool((fb["edge_weight"][~mine] == 1).all()))
                    self.assertTrue(bool((fb["edge_feat"][~mine] == 0).all()))
                    np.testing.assert_array_equal(np.sort(fb["edge_weight"][mine].numpy()), np.sort(w[rows]))
                    weighed += len(rows)
                    if dgl_module() is not None and len(rows):  # DGL's heterograph block: edges[etype].data
                        db = b.to_dgl()
                        np.testing.assert_array_equal(db.edges[writes].data["w"].numpy(), w[rows])
                        np.testing.assert_array_equal(db.edges[writes].data["ef"].numpy(), ef[rows])
                        # DGL's own heterograph edata: {canonical etype: rows} of the relations that hold it.
                        self.assertEqual(set(db.edata["w"]), set(b.edata["w"]))
                        self.assertTrue(torch.equal(db.edata["w"][writes], b.edata["w"][writes]))
            loader.close()
            self.assertGreater(weighed, 100, samplers)


class TypedGraphTest(ServersTestCase):
    """DistDGL's heterograph questions on a typed graph (issue 29): types, per-type IDs and fields,
    node_split of one type, typed mini-batches with per-type and per-relation views."""

    typed = True

    def original(self):
        """For every graph-wide node ID: its type's name and its ID in the input files."""
        with open(self.config) as f:
            cfg = json.load(f)
        base = os.path.dirname(self.config)
        orig = np.concatenate([np.load(os.path.join(base, f"part{k}", "graph", "orig_nids.npy"))
                               for k in range(cfg["num_parts"])])
        types = np.empty(len(orig), dtype=object)
        for name, ranges in cfg["node_map"].items():
            for b, e in ranges:
                types[b:e] = name
        return types, orig

    def test_types_ids_and_fields_answer_as_dgl(self):
        g = self.g
        data = os.path.join(self.tmp.name, "mag")
        with open(os.path.join(data, "num_nodes.json")) as f:
            counts = json.load(f)
        self.assertTrue(g.is_typed() and not g.is_homogeneous)
        self.assertEqual(g.ntypes, ["author", "field_of_study", "institution", "paper"])
        self.assertIn(("author", "writes", "paper"), g.canonical_etypes)
        self.assertIn(("paper", "rev_writes", "author"), g.canonical_etypes)
        self.assertEqual(len(g.canonical_etypes), 8)
        self.assertEqual(g.to_canonical_etype("cites"), ("paper", "cites", "paper"))
        for nt, n in counts.items():
            self.assertEqual(g.num_nodes(nt), n)
        self.assertEqual(sum(counts.values()), g.num_nodes())
        writes = np.load(os.path.join(data, "edges", "author___writes___paper.npy"))
        self.assertEqual(g.num_edges("writes"), len(writes))
        self.assertEqual(g.num_edges(("paper", "rev_writes", "author")), len(writes))
        with self.assertRaisesRegex(KeyError, "no node type 'venue'"):
            g.num_nodes("venue")
        with self.assertRaisesRegex(KeyError, r"typed graph: its fields are by node type, g.nodes\[TYPE\]"):
            g.ndata["feat"]
        # Per-type IDs: g.nodes['paper'].data['feat'][i] is paper i's row, i numbering the papers
        # partition by partition (DGL's per-type IDs); the partition book maps them.
        feat = np.load(os.path.join(data, "node_data", "paper", "feat.npy"))
        types, orig = self.original()
        gpb = g.get_partition_book()
        papers = torch.arange(g.num_nodes("paper"))
        homo = gpb.map_to_homo_nid(papers, "paper")
        self.assertTrue(all(t == "paper" for t in types[homo.numpy()]))
        t_back, typewise = gpb.map_to_per_ntype(homo)
        self.assertTrue(torch.equal(typewise, papers) and bool((t_back == g.ntypes.index("paper")).all()))
        ids = torch.tensor([0, 3, g.num_nodes("paper") - 1, 5, 3])
        np.testing.assert_array_equal(g.nodes["paper"].data["feat"][ids].numpy(), feat[orig[homo[ids].numpy()]])
        self.assertEqual(g.nodes["paper"].data["feat"].shape, (g.num_nodes("paper"), feat.shape[1]))
        self.assertEqual(len(g.nodes["author"].data), 0)  # the authors have no fields
        with self.assertRaisesRegex(IndexError, "node ID 1473 of type 'paper' is out of range"):
            g.nodes["paper"].data["feat"][[1473]]
        # partid2nids: type-wise IDs per partition, covering the type once.
        parts = [gpb.partid2nids(k, "paper") for k in range(2)]
        self.assertTrue(torch.equal(torch.cat(parts), papers))
        self.assertTrue(bool((gpb.nid2partid(parts[1], "paper") == 1).all()))

    def test_fanouts_typed_layers_run_on_the_loaders_blocks(self):
        """fanout.layers' typed layers on a typed loader's block (block.fanout_block(), rows by
        block.input_rows / output_rows) compute what the per-relation view says: RelGraphConv's
        per-relation means written with edge_index_dict; RelGATConv and HGTConv give one row per
        destination, finite, the fused and plain forms equal."""
        from fanout import ops
        from fanout.layers import HGTConv, RelGATConv, RelGraphConv
        g = self.g
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], g.get_partition_book(), ntype="paper")
        loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([4, 3]), batch_size=40)
        _, _, blocks = next(iter(loader))
        b = blocks[0]
        loader.close()
        fb = b.fanout_block()
        torch.manual_seed(0)
        rows = {t: torch.randn(b.num_src_nodes(t), 6) for t in g.ntypes}
        x = b.input_rows(rows)
        num_rel = len(g.canonical_etypes)
        conv = RelGraphConv(6, 5, num_rel, fused=False)
        got = b.output_rows(conv(fb, x).detach())
        w_self, w_rel = conv.fc_self.weight.detach(), conv.fc_rel.weight.detach()
        want = {t: rows[t][:b.num_dst_nodes(t)] @ w_self.T + conv.bias.detach() for t in g.ntypes}
        for r, (st, _, dt) in enumerate(g.canonical_etypes):
            src, dst = b.edge_index_dict[g.canonical_etypes[r]]
            n = b.num_dst_nodes(dt)
            total = torch.zeros(n, 6).index_add_(0, dst, rows[st][src])
            mean = total / torch.bincount(dst, minlength=n).clamp(min=1).unsqueeze(1)
            want[dt] = want[dt] + mean @ w_rel[:, r * 6:(r + 1) * 6].T
        for t in g.ntypes:
            self.assertTrue(torch.allclose(got[t], want[t], atol=1e-5), t)
        self.assertGreater(b.num_dst_nodes("author"), 0)
        for layer in (lambda f: RelGATConv(6, 4, 2, num_rel, fused=f), lambda f: HGTConv(6, 8, 2, len(g.ntypes), num_rel, fused=f)):
            outs = []
            for fused in (False, True) if ops.load() else (False,):  # (a PyTorch the library is not for)
                torch.manual_seed(1)
                m = layer(fused).eval()
                outs.append(m(fb, x).detach().reshape(b.num_dst_nodes(), -1))
            self.assertTrue(torch.isfinite(outs[0]).all())
            self.assertTrue(torch.allclose(outs[0], outs[-1], atol=1e-5))

    def test_typed_batches_have_per_type_and_per_relation_views(self):
        g = self.g
        data = os.path.join(self.tmp.name, "mag")
        feat = np.load(os.path.join(data, "node_data", "paper", "feat.npy"))
        label = np.load(os.path.join(data, "node_data", "paper", "label.npy"))
        types, orig = self.original()
        train = np.load(os.path.join(data, "split", "paper", "train_idx.npy"))
        gpb = g.get_partition_book()
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], gpb, ntype="paper")
        # This rank's half of the training papers, type-wise; both halves cover them once.
        other = dist.node_split(g.nodes["paper"].data["train_mask"], gpb, ntype="paper", rank=1)
        all_train = torch.cat([nids, other]).sort().values
        got_orig = np.sort(orig[gpb.map_to_homo_nid(all_train, "paper").numpy()])
        np.testing.assert_array_equal(got_orig, np.sort(train))
        with self.assertRaisesRegex(ValueError, "pass the seeds as {ntype: IDs}"):
            dist.DistNodeDataLoader(g, nids, dist.NeighborSampler([4, 3]), batch_size=40)
        loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([4, 3]), batch_size=40,
                                         shuffle=True, num_samplers=0)
        self.assertEqual(len(loader), -(-len(nids) // 40))
        n = 0
        for input_nodes, seeds, blocks in loader:
            n += 1
            b0, b1 = blocks
            self.assertEqual(set(input_nodes), set(g.ntypes))
            self.assertEqual(list(seeds), ["paper"])
            self.assertTrue(torch.equal(b1.dstnodes["paper"].data[dist.NID], seeds["paper"]))
            self.assertEqual(b1.num_dst_nodes("paper"), len(seeds["paper"]))
            self.assertEqual(b1.num_dst_nodes("author"), 0)
            for nt in g.ntypes:
                # Per type, destinations are the first sources; layer 1's sources are layer 0's destinations.
                self.assertTrue(torch.equal(b0.srcnodes[nt].data[dist.NID][:b0.num_dst_nodes(nt)],
                                            b0.dstnodes[nt].data[dist.NID]))
                self.assertTrue(torch.equal(b1.srcnodes[nt].data[dist.NID], b0.dstnodes[nt].data[dist.NID]))
                self.assertTrue(torch.equal(input_nodes[nt], b0.srcnodes[nt].data[dist.NID]))
            # Features of the featured type, labels of the seeds, from the input files.
            homo_in = gpb.map_to_homo_nid(input_nodes["paper"], "paper").numpy()
            np.testing.assert_array_equal(b0.srcdata["feat"]["paper"].numpy(), feat[orig[homo_in]])
            self.assertNotIn("author", b0.srcdata["feat"])
            homo_seeds = gpb.map_to_homo_nid(seeds["paper"], "paper").numpy()
            np.testing.assert_array_equal(b1.dstdata["label"]["paper"].numpy(), label[orig[homo_seeds]])
            # Every relation's edges are real edges of that relation, between the right types,
            # with at most the fanout per destination.
            edges = b1.edge_index_dict
            self.assertEqual(set(edges), set(g.canonical_etypes))
            total = 0
            for (st, rel, dt), ei in edges.items():
                total += ei.shape[1]
                if ei.shape[1] == 0:
                    continue
                self.assertTrue(bool((ei[0] < b1.num_src_nodes(st)).all()) and
                                bool((ei[1] < b1.num_dst_nodes(dt)).all()))
                src_homo = gpb.map_to_homo_nid(b1.srcnodes[st].data[dist.NID][ei[0]], st)
                dst_homo = gpb.map_to_homo_nid(b1.dstnodes[dt].data[dist.NID][ei[1]], dt)
                eids = g._etypes.to_homo(g.canonical_etypes.index((st, rel, dt)),
                                         b1.edge_ids((st, rel, dt)).numpy())
                fs, fd = g.find_edges(torch.from_numpy(eids))
                self.assertTrue(torch.equal(fs, src_homo) and torch.equal(fd, dst_homo), (st, rel, dt))
                self.assertLessEqual(int(torch.bincount(ei[1]).max()), 3)
            self.assertEqual(total, b1.num_edges())
            with self.assertRaisesRegex(TypeError, "edge_index_dict"):
                b1.edge_index
        self.assertEqual(n, len(loader))

    def test_typed_block_layout_groups_stably_and_refuses_bad_input(self):
        """The extension's typed_block_layout (HeteroBlock's grouping) against NumPy's stable sort
        on a random block, and its refusals of types, relations and endpoints out of range."""
        from fanout import _native
        rng = np.random.default_rng(3)
        n, nd, e = 500, 120, 3000
        types = rng.integers(0, 4, n).astype(np.int8)
        src, dst = rng.integers(0, n, e), np.sort(rng.integers(0, nd, e)).astype(np.int32)
        rel = rng.integers(0, 6, e).astype(np.uint8)
        by_type, counts, dst_counts, within, by_rel, rel_counts, rel_src, rel_dst = _native.typed_block_layout(
            types, 4, nd, src, dst, rel, 6)
        np.testing.assert_array_equal(by_type, np.argsort(types, kind="stable"))
        np.testing.assert_array_equal(counts, np.bincount(types, minlength=4))
        np.testing.assert_array_equal(dst_counts, np.bincount(types[:nd], minlength=4))
        np.testing.assert_array_equal(by_rel, np.argsort(rel, kind="stable"))
        np.testing.assert_array_equal(rel_counts, np.bincount(rel, minlength=6))
        local = np.empty(n, dtype=np.int64)
        for t in range(4):
            local[types == t] = np.arange(int((types == t).sum()))
        np.testing.assert_array_equal(within, local)
        np.testing.assert_array_equal(rel_src, local[src[by_rel]])
        np.testing.assert_array_equal(rel_dst, local[dst[by_rel]])
        with self.assertRaisesRegex(ValueError, "source 1 has node type 4 of 4"):
            _native.typed_block_layout(np.array([0, 4]), 4, 1, np.zeros(0), np.zeros(0), np.zeros(0), 6)
        with self.assertRaisesRegex(ValueError, "edge 0 has relation 6 of 6"):
            _native.typed_block_layout(types, 4, nd, src[:1], dst[:1], np.array([6]), 6)
        with self.assertRaisesRegex(ValueError, f"edge 0 joins source {n} to destination 0"):
            _native.typed_block_layout(types, 4, nd, np.array([n]), dst[:1], rel[:1], 6)
        with self.assertRaisesRegex(ValueError, "3 edge sources but 2 destinations"):
            _native.typed_block_layout(types, 4, nd, src[:3], dst[:2], rel[:3], 6)

    def test_the_names_dgls_rgcn_example_uses(self):
        """What DGL 2.1's distributed R-GCN example (entity_classify_dist.py) asks of a typed
        graph besides the loader: type and relation indices, MultiLayerNeighborSampler, the
        batch's features and labels read back by type without a second fetch, a created tensor
        over one node type (by its shape, or a partition policy, with init_func), DistDataLoader."""
        g = self.g
        self.assertEqual(g.get_ntype_id("paper"), g.ntypes.index("paper"))
        self.assertEqual(g.get_etype_id("cites"), g.canonical_etypes.index(("paper", "cites", "paper")))
        self.assertEqual(g.get_etype_id(("author", "writes", "paper")),
                         g.canonical_etypes.index(("author", "writes", "paper")))
        with self.assertRaisesRegex(KeyError, "venue"):
            g.get_ntype_id("venue")
        self.assertIs(dist.MultiLayerNeighborSampler, dist.NeighborSampler)
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], g.get_partition_book(), ntype="paper",
                               force_even=True)
        loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.MultiLayerNeighborSampler([4, 3]), batch_size=40,
                                         shuffle=True, num_samplers=0)
        input_nodes, seeds, blocks = next(iter(loader))
        loader.close()
        # The example's embedding layer reads g.nodes[ntype].data["feat"][input_nodes[ntype]] and
        # its labels g.nodes["paper"].data["labels"] (DGL's name; fanout's "label"): the batch's rows.
        feat = g.nodes["paper"].data["feat"]
        self.assertIs(feat[input_nodes["paper"]], blocks[0].srcnodes["paper"].data["feat"])
        self.assertTrue(torch.equal(feat[input_nodes["paper"].clone()], blocks[0].srcnodes["paper"].data["feat"]))
        self.assertIs(g.nodes["paper"].data["labels"][seeds["paper"]], blocks[-1].dstnodes["paper"].data["label"])
        self.assertNotIn("feat", g.nodes["author"].data)
        self.assertNotIn("trainer_id", g.nodes["paper"].data)
        # A tensor the job creates over one node type: the type with that many nodes (DGL decides
        # by shape), rows by type-wise ID, zeros until written.
        papers = g.num_nodes("paper")
        results = dist.DistTensor((papers,), torch.int64, "results", persistent=True)
        self.assertEqual(results.shape, (papers,))
        some = torch.tensor([3, 0, papers - 1])
        results[some] = torch.tensor([7, 8, 9])
        self.assertEqual(results[torch.tensor([0, 1, 3, papers - 1])].tolist(), [8, 0, 7, 9])
        # A second trainer making the same tensor attaches to it.
        self.assertEqual(dist.DistTensor((papers,), torch.int64, "results")[some].tolist(), [7, 8, 9])
        # Another type's by its partition policy, its rows from init_func(shape, dtype).
        authors = g.num_nodes("author")
        init = lambda shape, dtype: torch.arange(shape[0] * shape[1], dtype=dtype).reshape(shape)  # noqa: E731
        emb = dist.DistTensor((authors, 2), torch.float32, "a_rows", init_func=init,
                              part_policy=g.get_node_partition_policy("author"))
        ids = torch.tensor([authors - 1, 0, 5])
        self.assertTrue(torch.equal(emb[ids], init((authors, 2), torch.float32)[ids]))
        counts = {t: g.num_nodes(t) for t in g.ntypes}
        missing = max(counts.values()) + 1
        with self.assertRaisesRegex(ValueError, f"no node type has {missing} nodes"):
            dist.DistTensor((missing,), torch.float32, "nowhere")
        with self.assertRaisesRegex(TypeError, "part_policy must be"):
            dist.DistTensor((papers,), torch.float32, "bad", part_policy="node~paper")
        # DistDataLoader: the dataset's IDs in batches through collate_fn (as a NumPy array).
        seen = list(dist.DistDataLoader(torch.arange(10), batch_size=4, collate_fn=lambda b: b * 2))
        self.assertEqual([b.tolist() for b in seen], [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]])
        self.assertIsInstance(seen[0], np.ndarray)
        dl = dist.DistDataLoader(torch.arange(10), batch_size=4, shuffle=True, drop_last=True)
        self.assertEqual(len(dl), 2)
        got = np.concatenate(list(dl))
        self.assertEqual(len(got), 8)
        self.assertEqual(len(set(got.tolist())), 8)

    def test_per_relation_fanouts_are_dgls_dicts(self):
        g = self.g
        nids = dist.node_split(g.nodes["paper"].data["train_mask"], g.get_partition_book(), ntype="paper")
        # cites: 2 per layer; rev_cites: none; every other relation: 4 then 3.
        layers = []
        for f in (4, 3):
            d = {rel: f for rel in g.canonical_etypes if rel[1] not in ("cites", "rev_cites")}
            d["cites"] = 2  # by name
            d[("paper", "rev_cites", "paper")] = 0
            layers.append(d)
        loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler(layers), batch_size=40,
                                         num_samplers=0)
        seen = set()
        for _, _, blocks in loader:
            for b in blocks:
                for cet, ei in b.edge_index_dict.items():
                    if ei.shape[1] == 0:
                        continue
                    seen.add(cet[1])
                    most = int(torch.bincount(ei[1]).max())
                    self.assertLessEqual(most, 2 if cet[1] == "cites" else 4, cet)
        self.assertIn("cites", seen)
        self.assertNotIn("rev_cites", seen)
        # (Not for lack of rev_cites edges: one fanout for all samples them.)
        plain = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([4, 3]), batch_size=40,
                                        num_samplers=0)
        self.assertTrue(any(b.num_edges("rev_cites") > 0 for _, _, blocks in plain for b in blocks))
        with self.assertRaisesRegex(ValueError, r"layer 0 gives \('paper', 'cites', 'paper'\) twice"):
            dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([{**layers[0], ("paper", "cites", "paper"): 3}, 3]),
                                    batch_size=40, num_samplers=0)
        with self.assertRaisesRegex(ValueError, "layer 0 has no fanout for"):
            dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([{"cites": 2}, 3]), batch_size=40,
                                    num_samplers=0)
        with self.assertRaisesRegex(KeyError, "no edge type 'likes'"):
            dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([{"likes": 2}, 3]), batch_size=40,
                                    num_samplers=0)
        # Edge fields on a typed graph are each relation's own (TypedEdgeFieldsTest): one no relation has
        # is refused by name.
        with self.assertRaisesRegex(dist.FanoutError, "no edge type of graph 'g' has an edge weight field 'w'"):
            loader = dist.DistNodeDataLoader(g, {"paper": nids}, dist.NeighborSampler([4, 3], edge_weight="w"),
                                             batch_size=40, num_samplers=0)
            next(iter(loader))

    def test_link_prediction_needs_a_partition_split_for_it(self):
        # (TypedLinkLoaderTest trains on one that is.)
        with self.assertRaisesRegex(ValueError, "was not partitioned for link prediction: fanout-partition "
                                                "--edge-split TRAIN,VALID,TEST --link-etype"):
            dist.DistEdgeDataLoader(self.g, {"cites": torch.arange(10)}, dist.as_edge_prediction_sampler(
                dist.NeighborSampler([2]), negative_sampler=dist.negative_sampler.Uniform(1)), batch_size=4)


class ServerLossTest(ServersTestCase):
    def test_a_killed_server_is_an_exception_naming_its_partition(self):
        def kill():
            self.servers[1].kill()
            self.servers[1].wait()
            return "partition 1"

        self.expect_the_epoch_fails(kill, within=30)


class UnreachableMachineTest(ServersTestCase):
    """A machine that stops answering (its server frozen: as a cut link looks from here) ends a
    script within initialize's unreachable_timeout_seconds, naming the machine, with exit status 1,
    instead of leaving it blocked; 0 turns the watch off."""

    def run_script(self, timeout_s, wait):
        script = os.path.join(self.tmp.name, f"wait{timeout_s}.py")
        with open(script, "w") as f:
            f.write("import time\nfrom fanout import distributed as dist\n"
                    f"dist.initialize(part_config={self.config!r}, machine_id=0, deadline_seconds=5, "
                    f"unreachable_timeout_seconds={timeout_s})\n"
                    "g = dist.DistGraph('g')\nprint('ready', flush=True)\ntime.sleep(60)\n")
        p = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline().strip(), "ready", p.stderr.read() if p.poll() is not None else "")
        os.kill(self.servers[1].pid, signal.SIGSTOP)
        start = time.monotonic()
        try:
            try:
                _, err = p.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
                err = None
        finally:
            os.kill(self.servers[1].pid, signal.SIGCONT)
        return p.returncode, err, time.monotonic() - start

    def test_a_frozen_machine_ends_the_script_naming_it(self):
        rc, err, took = self.run_script(2, wait=15)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"fanout: error: machine 1 \(server 127\.0\.0\.1:\d+\) has not answered machine 0")
        self.assertLess(took, 10)

    def test_zero_turns_the_watch_off(self):
        rc, err, _ = self.run_script(0, wait=5)
        self.assertIsNone(err, "the script kept waiting")


def check_presampled_cache(test, make_loader, tensors_of):
    """A loader of feature_cache_rows="halo" and one of "presample" (``make_loader(rows)``, one
    sampler process each) make the same batches (``tensors_of(*batch)``); the presampled one's
    sampler process maps a cache of its own, not the halo cache, which holds more rows and finds
    more of the batches' remote rows (its report at exit)."""
    def caches(pid):
        with open(f"/proc/{pid}/maps") as f:
            return {line.split()[4] for line in f if "memfd:fanout-halo-cache" in line}

    batches, maps, reports = {}, {}, {}
    for rows in ("halo", "presample"):
        with tempfile.TemporaryFile() as err:  # the sampler process's stderr: its cache report
            saved = os.dup(2)
            os.dup2(err.fileno(), 2)
            try:
                loader = make_loader(rows)
                batches[rows] = [[t.clone() for t in tensors_of(*batch)] for batch in loader]
                children = sampler_children()
                test.assertEqual(len(children), 1)
                maps[rows] = caches(children[0])
                loader.close()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            err.seek(0)
            reports[rows] = err.read().decode()
    test.assertGreater(len(batches["halo"]), 2)
    test.assertEqual(len(batches["halo"]), len(batches["presample"]))
    for want, got in zip(batches["halo"], batches["presample"]):
        test.assertEqual([bool(torch.equal(a, b)) for a, b in zip(want, got)], [True] * len(want))
    test.assertEqual(len(maps["presample"]), 1)
    test.assertNotEqual(maps["presample"], maps["halo"], "the presampled loader maps a cache of its own")
    # Its cache holds the halo and the remote rows beyond it that the epoch took, and finds more.
    held = {}
    for rows, label in (("halo", "halo cache"), ("presample", "presampled row cache")):
        m = re.search(label + r": (\d+) of (\d+) remote rows .* from its (\d+) rows of 'feat'", reports[rows])
        test.assertIsNotNone(m, reports[rows])
        held[rows] = (int(m.group(1)) / int(m.group(2)), int(m.group(3)))
    test.assertGreater(held["presample"][1], held["halo"][1])
    test.assertGreater(held["presample"][0], held["halo"][0])


def sampler_children():
    """PIDs of this process's fanout-sampler children."""
    pids = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        if ppid == os.getpid() and comm.startswith("fanout-sampler") and text[text.rindex(")") + 2] != "Z":
            pids.append(int(text.split()[0]))
    return pids


class GlooInterfaceTest(unittest.TestCase):
    """fanout._network: under fanout-launch, the interface that reaches MASTER_ADDR is named for a
    script's own Gloo group (the 4-machine case runs in tests/integration/cluster_test.sh)."""

    def test_the_lookups_find_the_loopback_interface(self):
        from fanout import _network
        self.assertEqual(_network.address_towards("127.0.0.1", 29500), "127.0.0.1")
        self.assertEqual(_network.interface_with("127.0.0.1"), "lo")
        self.assertIsNone(_network.interface_with("192.0.2.77"))  # TEST-NET-1: nobody's

    def test_only_a_launched_job_routed_off_this_host_gets_a_name(self):
        from fanout import _network
        launched = {"FANOUT_WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
        for env in ({}, {"MASTER_ADDR": "10.0.0.1"},  # not under fanout-launch
                    dict(launched),  # machines on one host: Gloo's default works
                    dict(launched, GLOO_SOCKET_IFNAME="eth7"),  # the user's choice stays
                    dict(launched, MASTER_PORT="x")):
            before = dict(env)
            self.assertIsNone(_network.choose_gloo_interface(env))
            self.assertEqual(env, before)


class LaunchedScriptTest(unittest.TestCase):
    """python/examples/sage_train.py as a user runs it: fanout-launch ... -- python3 sage_train.py."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_script_sees_exactly_fanout_trains_batches(self):
        config = make_graph(self.work, 2)
        common = ["--fanouts", "5,4", "--batch-size", "100", "--epochs", "2"]
        cpp = launch(self.work, config, [f"{BIN}/fanout-train", *common, "--seed", "3", "--print-batch-checksums",
                                         "--hidden", "8", "--eval-every", "0"], samplers=1)
        self.assertEqual(cpp.returncode, 0, cpp.stdout + cpp.stderr)
        expected = checksum_lines(cpp.stdout)
        self.assertGreater(len(expected), 4)
        for samplers in ("1", "0"):  # sampler processes, then threads in the script
            py = launch(self.work, config, [sys.executable, SAGE_SCRIPT, "--mode",
                                            "checksums", *common, "--seeds", "3", "--num-samplers", samplers],
                        samplers=1)
            self.assertEqual(py.returncode, 0, py.stdout + py.stderr)
            self.assertEqual(checksum_lines(py.stdout), expected, f"num_samplers={samplers}")

    def test_ddp_training_on_cora_matches_fanout_train(self):
        if not os.path.exists(os.path.join(SHARED, "cora", "raw", "edge.csv.gz")):
            self.skipTest("../shared/data/cora not present")
        out = os.path.join(self.work, "cora")
        run([f"{BIN}/fanout-partition", "--input", os.path.join(SHARED, "cora"), "--num-parts", "2", "--out", out,
             "--add-reverse-edges", "--graph-name", "cora"])
        config = os.path.join(out, "cora.json")
        flags = ["--fanouts", "10,10", "--hidden", "64", "--lr", "0.01", "--weight-decay", "5e-4", "--batch-size",
                 "32", "--epochs", "30"]
        seeds = [0, 1, 2]
        py = launch(self.work, config, [sys.executable, SAGE_SCRIPT, *flags, "--seeds",
                                        ",".join(map(str, seeds))], samplers=1)
        self.assertEqual(py.returncode, 0, py.stdout + py.stderr)
        python_acc = float(re.search(r"mean test accuracy ([0-9.]+)", py.stdout).group(1))
        cpp_acc = []
        for seed in seeds:
            r = launch(self.work, config, [f"{BIN}/fanout-train", *flags, "--eval-fanouts", "-1,-1", "--seed",
                                           str(seed), "--eval-every", "0"], samplers=1)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            cpp_acc.append(float(re.search(r"test accuracy ([0-9.]+)", r.stdout).group(1)))
        cpp_mean = sum(cpp_acc) / len(cpp_acc)
        print(f"Cora, 2 machines, mean of seeds {seeds}: Python script {python_acc:.4f}, fanout-train {cpp_mean:.4f}")
        self.assertGreater(python_acc, 0.75)
        self.assertLess(abs(python_acc - cpp_mean), 0.01 + 1e-9)


if __name__ == "__main__":
    unittest.main()
