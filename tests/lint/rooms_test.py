"""scripts/check_rooms.py: the repository passes it, and it catches each fault it is for.

Each fault is planted in a small tree of its own (a docs/architecture.md with a rooms table and
a few sources), so that the check is seen to fail for the right reason, not only to pass.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "scripts", "check_rooms.py")

TABLE = """\
# arch

<!-- rooms:begin -->
| room | contents | may include |
|---|---|---|
| `base/` | utilities | nothing |
| `core/` | graph data | `base` |
| `top/` | the job | `base`, `core` |
<!-- rooms:end -->
"""


def run(root):
    p = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class Tree:
    def __init__(self, files, table=TABLE):
        self.dir = tempfile.TemporaryDirectory()
        files = dict(files)
        files["docs/architecture.md"] = table
        for path, text in files.items():
            full = os.path.join(self.dir.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(textwrap.dedent(text))

    def __enter__(self):
        return self.dir.name

    def __exit__(self, *exc):
        self.dir.cleanup()


GOOD = {
    "base/a.h": "#pragma once\n",
    "base/a.cc": '#include "base/a.h"\n',
    "core/g.h": '#pragma once\n#include "base/a.h"\n',
    "core/g.cc": '#include "core/g.h"\n#include <vector>\n#include "absl/status/status.h"\n',
    "top/job.cc": '#include "core/g.h"\n#include "base/a.h"\n',
    "tests/core/g_test.cc": '#include "top/job.h"\n',  # tests may include anything
}


class RoomsTest(unittest.TestCase):
    def test_the_repository_passes(self):
        code, out = run(ROOT)
        self.assertEqual(code, 0, out)

    def test_a_clean_tree_passes(self):
        with Tree(GOOD) as root:
            code, out = run(root)
            self.assertEqual(code, 0, out)

    def test_an_upward_include_is_named_with_its_line(self):
        files = dict(GOOD)
        files["core/g.cc"] = '#include "core/g.h"\n\n#include "top/job.h"\n'
        files["top/job.h"] = "#pragma once\n"
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("core/g.cc:3: includes top/job.h: room core may not include room top", out)

    def test_two_units_that_include_each_other_are_refused(self):
        # Neither file includes the other's own header file twice: the loop is through the
        # sources (x.cc -> y.h, y.cc -> x.h), which a file-level check would miss.
        files = dict(GOOD)
        files.update({
            "core/x.h": "#pragma once\n",
            "core/x.cc": '#include "core/x.h"\n#include "core/y.h"\n',
            "core/y.h": "#pragma once\n",
            "core/y.cc": '#include "core/y.h"\n#include "core/x.h"\n',
        })
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("units include each other in a circle (core/x, core/y)", out)
            self.assertIn("core/x.cc:2 -> core/y", out)
            self.assertIn("core/y.cc:2 -> core/x", out)

    def test_a_longer_circle_is_refused(self):
        files = dict(GOOD)
        files.update({
            "core/p.h": '#pragma once\n#include "core/q.h"\n',
            "core/q.h": '#pragma once\n#include "core/r.h"\n',
            "core/r.h": "#pragma once\n",
            "core/r.cc": '#include "core/r.h"\n#include "core/p.h"\n',
        })
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("circle (core/p, core/q, core/r)", out)

    def test_a_long_function_is_named_with_its_line(self):
        body = "".join(f"  int v{i} = {i};\n" for i in range(125))
        member = "".join(f"    x += {i};\n" for i in range(125))
        files = dict(GOOD)
        files["core/g.cc"] = ('#include "core/g.h"\n\nnamespace n {\n\nint Long(int a,\n         int b) {\n' + body +
                              "  return 0;\n}\n\nint Short() {\n  return 1;\n}\n\n"
                              "class C {\n public:\n  int Member() const {\n    int x = 0;\n" + member +
                              "    return x;\n  }\n};\n\n}  // namespace n\n")
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("core/g.cc:5: a function of 129 lines (at most 120)", out)
            self.assertIn("core/g.cc:141: a function of 129 lines", out)  # a class's member
            self.assertNotIn("core/g.cc:135", out)

    def test_a_unit_over_a_thousand_lines_is_refused(self):
        files = dict(GOOD)
        files["core/big.h"] = "#pragma once\n" + "// a line\n" * 600
        files["core/big.cc"] = '#include "core/big.h"\n' + "// a line\n" * 450
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("core/big: its files (.h + .cc) hold 1052 lines (at most 1000)", out)

    def test_a_folder_missing_from_the_table_is_refused(self):
        files = dict(GOOD)
        files["extra/e.cc"] = '#include "base/a.h"\n'
        with Tree(files) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("extra/e.cc: room 'extra' is not in", out)

    def test_a_circle_in_the_table_is_refused(self):
        table = TABLE.replace("| `base/` | utilities | nothing |", "| `base/` | utilities | `top` |")
        with Tree(GOOD, table) as root:
            code, out = run(root)
            self.assertEqual(code, 1, out)
            self.assertIn("the rooms table has a circle: base, core, top", out)

    def test_a_tree_without_the_table_is_an_error_naming_the_file(self):
        with Tree(GOOD, "# no table\n") as root:
            code, out = run(root)
            self.assertNotEqual(code, 0)
            self.assertIn("architecture.md has no table between", out)


if __name__ == "__main__":
    unittest.main()
