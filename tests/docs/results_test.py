"""The results tables of README.md and docs/benchmarks.md are what bench/results/*.json give
(scripts/results.py --check), and the check notices when they are not.

Usage: results_test.py [REPO_ROOT] [unittest options]   (default: this file's checkout)
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def results(root, *flags):
    return subprocess.run([sys.executable, os.path.join(root, "scripts", "results.py"), "--root", root, *flags],
                          capture_output=True, text=True)


class ResultsTablesTest(unittest.TestCase):
    def setUp(self):
        # A copy of what the check reads: the two documents, the result files, the plots, the script.
        self.tmp = tempfile.mkdtemp(prefix="results_test.")
        for rel in ["README.md", "docs/benchmarks.md", "scripts/results.py"] + [
                os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "bench", "results", "*"))
                + glob.glob(os.path.join(ROOT, "docs", "images", "*.png"))]:
            os.makedirs(os.path.dirname(os.path.join(self.tmp, rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(self.tmp, rel))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, name, change):
        path = os.path.join(self.tmp, "bench", "results", name)
        with open(path) as f:
            record = json.load(f)
        change(record)
        with open(path, "w") as f:
            json.dump(record, f, indent=2)
        return record

    def readme_result(self):
        for path in sorted(glob.glob(os.path.join(self.tmp, "bench", "results", "*.json"))):
            with open(path) as f:
                if json.load(f).get("readme"):
                    return os.path.basename(path)
        self.fail("no bench/results/*.json is marked readme")

    def test_the_repository_tables_match_the_json(self):
        out = results(ROOT, "--check")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_a_changed_value_fails_the_check_naming_both_documents(self):
        def scale(r):
            r["fanout"]["value"] = round(r["fanout"]["value"] * 1.5, 2)
            r["ratio"] = round(r["fanout"]["value"] / r["peer"]["value"], 3)
        self.edit(self.readme_result(), scale)
        out = results(self.tmp, "--check")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("README.md", out.stdout)
        self.assertIn("docs/benchmarks.md", out.stdout)
        # Rewriting the tables from the changed file makes the check pass again.
        self.assertEqual(results(self.tmp, "--no-plots").returncode, 0)
        out = results(self.tmp, "--check")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_a_changed_accuracy_fails_the_check(self):
        def has_accuracy(path):
            with open(path) as f:
                acc = json.load(f).get("accuracy")
            return bool(acc) and isinstance(acc["fanout"], float)
        name = next(os.path.basename(p) for p in sorted(glob.glob(os.path.join(self.tmp, "bench", "results", "*.json")))
                    if has_accuracy(p))
        self.edit(name, lambda r: r["accuracy"].update(fanout=round(r["accuracy"]["fanout"] / 2, 4)))
        out = results(self.tmp, "--check")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("docs/benchmarks.md", out.stdout)

    def test_a_ratio_that_is_not_fanout_over_peer_is_refused(self):
        self.edit(self.readme_result(), lambda r: r.update(ratio=r["ratio"] * 2 + 1))
        out = results(self.tmp, "--check")
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("is not fanout.value / peer.value", out.stderr)

    def test_a_section_that_is_no_heading_is_refused(self):
        self.edit(self.readme_result(), lambda r: r.update(section="No such section"))
        out = results(self.tmp, "--check")
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("no heading of docs/benchmarks.md", out.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
