"""README.md's "Source layout" section names exactly the repository's top-level folders: those
holding a file of `git ls-files -co --exclude-standard` (tracked, or new and not ignored). And the
two pages a newcomer reads first stay short: README.md under 200 lines, docs/benchmarks.md under
800 (results, and how to reproduce each; git keeps the history).

Usage: readme_layout_test.py [REPO_ROOT]   (exit 77, skipped, where git or the checkout is missing)
"""
import os
import re
import subprocess
import sys

HEADING = "## Source layout"
LIMITS = {"README.md": 200, "docs/benchmarks.md": 800}  # lines, exclusive


def layout_folders(readme):
    """The folders README's layout section lists: each bullet's leading `name/`."""
    text = open(readme, encoding="utf-8").read()
    if HEADING not in text:
        sys.exit(f"readme_layout_test: {readme} has no '{HEADING}' section")
    section = text.split(HEADING, 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.M)[0]
    return {m.rstrip("/") for m in re.findall(r"^- `([^`/]+/)`", section, re.M)}


def repository_folders(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout
    return {path.split("/", 1)[0] for path in out.splitlines() if "/" in path}


def main(root):
    try:
        actual = repository_folders(root)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"readme_layout_test: skipped: no git checkout at {root} ({e})")
        return 77
    listed = layout_folders(os.path.join(root, "README.md"))
    problems = [f"README.md lists {d}/, which holds no file of the repository" for d in sorted(listed - actual)]
    problems += [f"README.md's '{HEADING}' does not list {d}/" for d in sorted(actual - listed)]
    for page, limit in LIMITS.items():
        with open(os.path.join(root, page), encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines >= limit:
            problems.append(f"{page} has {lines} lines: keep it under {limit} (cut history, not results)")
    for p in problems:
        print(p)
    print(f"readme_layout_test: {len(listed)} folders listed, {len(actual)} in the repository, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))))
