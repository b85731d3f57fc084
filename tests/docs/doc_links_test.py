"""Every relative link in the repository's Markdown files names a file or folder that exists in
the repository (a user's clone has nothing else), and no document cites the team's private notes.

Usage: doc_links_test.py REPO_ROOT
"""
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
PRIVATE = re.compile(r"\bDESIGN\.md\b|\bSTYLE\.md\b|shared notes|\.\./shared/reference")


def main(root):
    problems = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d not in ("out", "demo", "fanout-logs")]
        for name in files:
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if PRIVATE.search(line):
                        problems.append(f"{rel}:{n}: cites notes that are not in the repository: {line.strip()}")
                    for target in LINK.findall(line):
                        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                            continue
                        file_part = target.split("#", 1)[0]
                        if not os.path.exists(os.path.normpath(os.path.join(folder, file_part))):
                            problems.append(f"{rel}:{n}: link to {target}, which does not exist")
    for p in problems:
        print(p)
    print(f"doc_links_test: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
