"""bench/vs_dgl/summarize.py and bench/cluster/summarize.py write result files (--results-json)
that scripts/results.py accepts, from small fake runs, and print the same with or without it.

Usage: summarize_results_test.py [REPO_ROOT] [unittest options]   (default: this file's checkout)
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(*args):
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError(f"{args} exited {out.returncode}: {out.stdout}{out.stderr}")
    return out.stdout


class WritersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="summarize_results_test.")
        self.run_dir = os.path.join(self.tmp, "runs", "20261201-101500")
        os.makedirs(self.run_dir)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def metrics(self, name, epochs, val_acc, pss=None):
        d = os.path.join(self.run_dir, name)
        os.makedirs(d)
        with open(os.path.join(d, "metrics.jsonl"), "w") as f:
            for k, t in enumerate(epochs):
                rec = {"event": "epoch", "epoch": k, "epoch_seconds": t, "loss": 1.0, "train_acc": 0.5,
                       "seeds_per_second": 1000.0, "forward_seconds": t / 2}
                if k == len(epochs) - 1:
                    rec["val_acc"] = val_acc
                f.write(json.dumps(rec) + "\n")
        if pss:
            with open(os.path.join(d, "pss.json"), "w") as f:
                json.dump({"machines": {m: {"peak_pss": v, "processes": 3, "anon": v / 2, "file": v / 4, "shmem": v / 4}
                                        for m, v in pss.items()}}, f)
        return os.path.join(d, "metrics.jsonl")

    def vs_dgl_run(self):
        # Setup A, 3 rounds: fanout/DistDGL epochs (the mean of epochs after the first) 8/20, 9/20, 7/20.
        rows = []
        for r, (f, d) in enumerate([(8.0, 20.0), (9.0, 20.0), (7.0, 20.0)], 1):
            mf = self.metrics(f"A-r{r}-fanout", [30.0, f, f], 0.95 + r / 1000, {"0": 2.0e9 + r * 1e8, "1": 1.9e9})
            md = self.metrics(f"A-r{r}-dgl", [40.0, d, d], 0.94, {"0": 4.0e9, "1": 4.2e9})
            rows += [f"A\t{r}\tfanout\t0\t{mf}\t60\tabc@12:00", f"A\t{r}\tdgl\t0\t{md}\t90\tdgl-2.1.0"]
        path = os.path.join(self.run_dir, "results.tsv")
        with open(path, "w") as f:
            f.write("\n".join(rows) + "\n")
        return path

    def load(self, path):
        with open(path) as f:
            return json.load(f)

    def check_accepted(self, result):
        """scripts/results.py's own schema check takes the file."""
        spec = importlib.util.spec_from_file_location("results", os.path.join(ROOT, "scripts", "results.py"))
        results = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(results)
        root = os.path.join(self.tmp, "root")
        os.makedirs(os.path.join(root, "bench", "results"), exist_ok=True)
        shutil.copy(result, os.path.join(root, "bench", "results", os.path.basename(result)))
        return results.load(root)

    def test_vs_dgl_writes_the_median_round(self):
        tsv = self.vs_dgl_run()
        script = os.path.join(ROOT, "bench", "vs_dgl", "summarize.py")
        plain = run(script, tsv)
        out = os.path.join(self.tmp, "setup-A.json")
        with_json = run(script, tsv, "--results-json", out, "--setup", "A", "--command", "bench/vs_dgl/run.sh --setups A",
                        "--machine", "test machine", "--section", "Setups A, B and C")
        self.assertEqual(plain, with_json)
        r = self.load(out)
        self.assertEqual(r["rounds"], [0.4, 0.45, 0.35])
        self.assertEqual((r["fanout"]["value"], r["peer"]["value"], r["ratio"]), (8.0, 20.0, 0.4))  # round 1
        self.assertEqual(r["fanout"]["unit"], "s/epoch")
        self.assertEqual(r["peer"]["name"], "DistDGL 2.1.0")
        self.assertEqual(r["accuracy"], {"fanout": 0.951, "peer": 0.94, "metric": "validation accuracy"})
        self.assertEqual(r["date"], "2026-12-01")
        self.assertEqual(r["job"], "setup A")
        self.assertIn("A", self.check_accepted(out)["setup-A"]["job"])

    def test_vs_dgl_keeps_what_a_run_cannot_know(self):
        tsv = self.vs_dgl_run()
        out = os.path.join(self.tmp, "setup-A.json")
        with open(out, "w") as f:
            json.dump({"job": "my name", "description": "mine", "command": "the command", "section": "S",
                       "readme": True, "series": {"old": {}}}, f)
        run(os.path.join(ROOT, "bench", "vs_dgl", "summarize.py"), tsv, "--results-json", out, "--measure", "memory")
        r = self.load(out)
        self.assertEqual((r["job"], r["description"], r["command"], r["section"], r["readme"]),
                         ("my name", "mine", "the command", "S", True))
        # Memory: each round's largest machine, fanout over DistDGL; the median round is round 2.
        self.assertEqual(r["fanout"]["unit"], "GB")
        self.assertEqual((r["fanout"]["value"], r["peer"]["value"]), (2.2, 4.2))
        self.assertEqual(list(r["series"]), ["peak PSS per machine"])
        self.assertEqual(r["series"]["peak PSS per machine"]["fanout"], [2.2, 1.9])

    def test_cluster_writes_the_headline_row_and_series(self):
        jobs = []
        for m, rate, f, d, fw, dw in [(2, "1gbit", 8.0, 28.0, 140.0, 1900.0), (4, "1gbit", 8.0, 24.0, 170.0, 1400.0),
                                      (4, "200mbit", 10.0, 46.0, 169.0, 1409.0), (8, "1gbit", 8.2, 19.6, 159.0, 825.0)]:
            jobs.append({"system": "fanout", "machines": m, "rate": rate, "rc": 0, "epoch_s": f, "val_acc": 0.9443,
                         "wire_mb": fw})
            jobs.append({"system": "dgl", "machines": m, "rate": rate, "rc": 0, "epoch_s": d, "val_acc": 0.9254,
                         "wire_mb": dw})
        path = os.path.join(self.run_dir, "results.jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(j) + "\n" for j in jobs))
        script = os.path.join(ROOT, "bench", "cluster", "summarize.py")
        plain = run(script, "table", path)
        out = os.path.join(self.tmp, "cluster.json")
        self.assertEqual(plain, run(script, "table", path, "--results-json", out, "--measure", "wire",
                                    "--command", "bench/cluster/run.sh", "--machine", "m",
                                    "--section", "On an emulated cluster"))
        r = self.load(out)
        self.assertEqual((r["fanout"]["value"], r["peer"]["value"], r["fanout"]["unit"]), (170.0, 1400.0, "MB/machine/epoch"))
        self.assertEqual(r["series"]["wire, 1gbit"]["x"], [2, 4, 8])
        self.assertEqual(r["series"]["wire, 1gbit"]["peer"], [1900.0, 1400.0, 825.0])
        self.assertEqual(len(r["table"]["rows"]), 4)
        self.check_accepted(out)
        run(script, "table", path, "--results-json", out, "--headline", "4:200mbit")
        self.assertEqual(self.load(out)["peer"]["value"], 46.0)  # epoch by default; the command kept
        self.assertEqual(self.load(out)["command"], "bench/cluster/run.sh")

    def test_cluster_keeps_each_setup_apart(self):
        script = os.path.join(ROOT, "bench", "cluster", "summarize.py")
        jobs = []
        for setup, f, d in [("A", 8.0, 24.0), ("H", 8.0, 20.0)]:
            for system, epoch, seconds in [("fanout", f, [f + 1, f, f]), ("dgl", d, [d + 1, d, d])]:
                job_dir = os.path.join(self.run_dir, f"{setup}-{system}")
                os.makedirs(job_dir)
                with open(os.path.join(job_dir, "metrics.jsonl"), "w") as out:
                    for e, sec in enumerate(seconds):
                        out.write(json.dumps({"event": "epoch", "epoch": e, "epoch_seconds": sec, "val_acc": 0.9}) + "\n")
                line = run(script, "job", job_dir, system, "4", "1gbit", "3", "0", setup,
                           "DistDGL 2.1.0 + GraphBolt")
                jobs.append(line)
        path = os.path.join(self.run_dir, "results.jsonl")
        with open(path, "w") as f:
            f.write("".join(jobs))
        plain = run(script, "table", path)
        self.assertIn("CLUSTER_RESULT setup=A machines=4 rate=1gbit fanout_epoch_s=8.00 dgl_epoch_s=24.00", plain)
        self.assertIn("CLUSTER_RESULT setup=H machines=4 rate=1gbit fanout_epoch_s=8.00 dgl_epoch_s=20.00", plain)
        out = os.path.join(self.tmp, "cluster-h.json")
        run(script, "table", path, "--results-json", out, "--setup", "H", "--command", "bench/cluster/run.sh",
            "--machine", "m", "--section", "On an emulated cluster")
        r = self.load(out)
        self.assertEqual((r["fanout"]["value"], r["peer"]["value"], r["peer"]["name"]),
                         (8.0, 20.0, "DistDGL 2.1.0 + GraphBolt"))
        self.assertIn("setup H", r["job"])
        self.assertEqual(len(r["table"]["rows"]), 1)
        self.check_accepted(out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
