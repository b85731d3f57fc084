#!/usr/bin/env python3
"""Checks the project's rooms (top-level folders) and their includes against docs/architecture.md.

The table between the `rooms:begin` and `rooms:end` markers of docs/architecture.md says which
room may include which; this script reads it and fails (exit 1, one line per fault) when:
  - a source file includes a header of a room its room may not include (an upward include);
  - a room is not in the table (a new folder must say where it sits);
  - the table itself has a circle (a room that may include itself through others);
  - two units include each other, or any longer circle of units exists, where a unit is a
    header and its source (foo.h + foo.cc + foo_impl.inc): one of them must be the lower;
  - a unit is over MAX_UNIT_LINES lines, or a function in it over MAX_FUNCTION_LINES (its
    header's first line to its closing brace; found by the house style's layout: a definition's
    closing brace at its first line's indentation), so that a file or function that grew past
    what a reader holds at once is cut on purpose, not found by accident (benchmarks too).
Tests (tests/) and benchmarks (bench/) may include anything and are not units.

  scripts/check_rooms.py [--root DIR]   # DIR: a checkout (default: this script's)
"""
import argparse
import collections
import os
import re
import subprocess
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".inc")
OUTSIDE = ("tests/", "bench/")  # may include anything; not rooms
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
# Generated headers live in the build tree: they belong to the room that generates them.
GENERATED = {"fanout/v1/": "proto"}
BEGIN, END = "<!-- rooms:begin -->", "<!-- rooms:end -->"
MAX_UNIT_LINES, MAX_FUNCTION_LINES = 1000, 120
# A line that opens no function definition: declarations of types and namespaces, statements,
# access labels, preprocessor lines, comments, macros (upper-case calls).
NOT_A_FUNCTION = re.compile(r"(namespace|class|struct|enum|union|extern|template|using|typedef|static_assert|if|for|"
                            r"while|switch|else|do|return|case)\b|[#}]|//|(public|private|protected|default):|"
                            r"[A-Z_0-9]+\(")


def source_files(root):
    """Every tracked or new (not ignored) source file, as paths relative to root."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                             check=True, capture_output=True, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(f for f in out if f.endswith(SOURCE_SUFFIXES) and os.path.isfile(os.path.join(root, f)))


def read_table(root):
    """{room: set of rooms it may include} from docs/architecture.md's marked table."""
    path = os.path.join(root, "docs", "architecture.md")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        sys.exit(f"check_rooms: cannot read {path}: {e.strerror}")
    if BEGIN not in text or END not in text:
        sys.exit(f"check_rooms: {path} has no table between {BEGIN} and {END}")
    start = text.index(BEGIN)
    first_line = text.count("\n", 0, start) + 1
    allowed = {}
    for n, line in enumerate(text[start:text.index(END)].split("\n")):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or set(cells[0]) <= set("-: ") or cells[0] == "room":
            continue
        room = cells[0].strip("`").rstrip("/")
        may = {r.strip().strip("`") for r in cells[-1].split(",")} - {"", "—", "-", "nothing"}
        if room in allowed:
            sys.exit(f"check_rooms: {path}:{first_line + n}: room {room} is listed twice")
        allowed[room] = may
    return allowed, path


def room_of(path):
    return path.split("/", 1)[0] if "/" in path else ""


def unit_of(path):
    stem = path.rsplit(".", 1)[0]
    return stem[:-len("_impl")] if stem.endswith("_impl") else stem


def long_functions(lines):
    """(first line, length) of each function definition in `lines` longer than MAX_FUNCTION_LINES.

    A definition starts at a line indented at most 4 (namespace level, or a class's member) that
    opens its parameter list, does not end a statement and NOT_A_FUNCTION does not match; its body
    opens on that line or one of the next 10 ('{' at the end, not an initializer's or a
    lambda's); it ends at the first line that is its indentation and '}'."""
    out, i = [], 0
    while i < len(lines):
        text = lines[i].lstrip()
        depth = len(lines[i]) - len(text)
        if text and depth <= 4 and "(" in text and not NOT_A_FUNCTION.match(text) and not text.rstrip().endswith(";"):
            j = i
            while j < len(lines) - 1 and j - i < 10 and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            opens = lines[j].rstrip()
            if opens.endswith("{") and not re.search(r"(=|return)\s*\{$|\[[^]]*\]\s*\(.*\{$", opens):
                k, close = j + 1, " " * depth + "}"
                while k < len(lines) and lines[k] != close and not lines[k].startswith(close + " "):
                    k += 1
                if k - i + 1 > MAX_FUNCTION_LINES:
                    out.append((i + 1, k - i + 1))
                i = k + 1
                continue
        i += 1
    return out


def circles(graph):
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check(root):
    allowed, table_path = read_table(root)
    faults = []
    for cycle in circles(allowed):
        faults.append(f"{table_path}: the rooms table has a circle: {', '.join(cycle)}")
    files = source_files(root)
    known = set(files)
    units = collections.defaultdict(dict)  # unit -> {unit it includes: "file:line"}
    unit_lines = collections.Counter()
    for f in files:
        if f.startswith("tests/"):
            continue
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        unit_lines[unit_of(f)] += text.count("\n")
        for first, length in long_functions(text.split("\n")):
            faults.append(f"{f}:{first}: a function of {length} lines (at most {MAX_FUNCTION_LINES}): cut it into steps")
        if f.startswith(OUTSIDE):
            continue
        room = room_of(f)
        if room not in allowed:
            faults.append(f"{f}: room '{room or '(top level)'}' is not in {table_path}'s rooms table")
            continue
        for m in INCLUDE.finditer(text):
            target, line = m.group(1), text.count("\n", 0, m.start()) + 1
            to_room = next((r for p, r in GENERATED.items() if target.startswith(p)), None)
            if to_room is None and target in known:
                to_room = room_of(target)
                if unit_of(target) != unit_of(f) and not target.startswith(OUTSIDE):
                    units[unit_of(f)].setdefault(unit_of(target), f"{f}:{line}")
            if to_room is None or to_room == room:
                continue
            if to_room not in allowed.get(room, ()):
                faults.append(f"{f}:{line}: includes {target}: room {room} may not include room {to_room} "
                              f"(may: {', '.join(sorted(allowed[room])) or 'nothing'}; {table_path})")
    for unit, n in sorted(unit_lines.items()):
        if n > MAX_UNIT_LINES:
            faults.append(f"{unit}: its files (.h + .cc) hold {n} lines (at most {MAX_UNIT_LINES}): cut the unit in two")
    for cycle in circles({u: set(t) for u, t in units.items()}):
        members = set(cycle)
        where = [f"{units[u][t]} -> {t}" for u in cycle for t in sorted(units[u]) if t in members]
        faults.append(f"units include each other in a circle ({', '.join(cycle)}): " + "; ".join(where))
    return faults


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    faults = check(args.root)
    for f in faults:
        print(f"check_rooms: {f}", file=sys.stderr)
    if faults:
        print(f"check_rooms: {len(faults)} fault(s); docs/architecture.md's rooms table says which room may "
              "include which", file=sys.stderr)
        return 1
    print("check_rooms: every include goes down the rooms table; no two units include each other; no unit over "
          f"{MAX_UNIT_LINES} lines, no function over {MAX_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
