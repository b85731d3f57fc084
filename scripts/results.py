#!/usr/bin/env python3
"""Turns bench/results/*.json (one headline result a file; schema: bench/results/README.md) into the
generated parts of README.md and docs/benchmarks.md, and draws the plots of docs/images/.

    scripts/results.py            rewrite the generated regions and draw the plots
    scripts/results.py --check    exit 1, naming the file, when a generated region differs from
                                  what the JSON files give (draws nothing)
    scripts/results.py --root DIR a checkout other than this script's
    scripts/results.py --no-plots rewrite the regions only

A generated region is the text between a begin marker and the next `<!-- results:end -->`:
  `<!-- results:begin -->`        README.md: one compact table of the results marked "readme";
                                  docs/benchmarks.md: every result, by group, and the plots;
  `<!-- results:jobs ID ID ... -->` docs/benchmarks.md: those results in full (every round, the
                                  machine, the command, their detail tables), ID being a file's
                                  name without .json.
The plots need matplotlib (Agg); --check does not.
"""
import argparse
import decimal
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
END = "<!-- results:end -->"
BEGIN = re.compile(r"<!-- results:(begin|jobs((?: [A-Za-z0-9_.-]+)+)) -->")
REQUIRED = ("job", "description", "fanout", "peer", "ratio", "date", "machine", "command", "section")
IMAGES = [("results-epoch.png", "Epoch time, fanout against the peer, each job of the first table"),
          ("results-memory.png", "Peak memory per machine, fanout against the peer"),
          ("results-scaling.png", "The emulated cluster: epoch time and bytes per machine against the number of machines"),
          ("results-partition-ranks.png", "The distributed partitioner: peak memory per rank against ranks")]


class Invalid(Exception):
    pass


def slug(heading):
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def load(root):
    """{id: record} of bench/results/*.json, checked against the schema."""
    records = {}
    for path in sorted(glob.glob(os.path.join(root, "bench", "results", "*.json"))):
        rid = os.path.basename(path)[:-len(".json")]
        try:
            with open(path, encoding="utf-8") as f:
                r = json.load(f)
        except ValueError as e:
            raise Invalid(f"{path}: not JSON: {e}")
        where = f"bench/results/{rid}.json"
        missing = [k for k in REQUIRED if k not in r]
        if missing:
            raise Invalid(f"{where}: missing {', '.join(missing)}")
        for side in ("fanout", "peer"):
            if not isinstance(r[side], dict) or not isinstance(r[side].get("value"), (int, float)):
                raise Invalid(f"{where}: {side}.value must be a number")
        if not r["fanout"].get("unit") or not r["peer"].get("name"):
            raise Invalid(f"{where}: fanout.unit and peer.name are required")
        if not isinstance(r["ratio"], (int, float)) or not r["peer"]["value"]:
            raise Invalid(f"{where}: ratio must be a number and peer.value not 0")
        if abs(r["ratio"] - r["fanout"]["value"] / r["peer"]["value"]) > 0.005 + 0.01 * r["ratio"]:
            raise Invalid(f"{where}: ratio {r['ratio']} is not fanout.value / peer.value "
                          f"({r['fanout']['value']} / {r['peer']['value']})")
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", str(r["date"])):
            raise Invalid(f"{where}: date must be YYYY-MM-DD")
        if r.get("group", "peer") not in ("peer", "self"):
            raise Invalid(f"{where}: group must be peer or self")
        if r.get("better", "lower") not in ("lower", "higher"):
            raise Invalid(f"{where}: better must be lower or higher")
        acc = r.get("accuracy")
        if acc is not None and not ({"fanout", "peer"} <= set(acc)):
            raise Invalid(f"{where}: accuracy needs fanout and peer (or is null)")
        rounds = r.get("rounds")
        if rounds is not None and (not isinstance(rounds, list) or not all(isinstance(x, (int, float)) for x in rounds)):
            raise Invalid(f"{where}: rounds must be a list of ratios")
        records[rid] = r
    if not records:
        raise Invalid(f"{root}/bench/results has no *.json")
    return records


# ---- text -------------------------------------------------------------------------------------

def half_up(v, places=2):
    """v to `places` decimals, halves rounded up (as the JSON's decimal digits say, not the float's)."""
    return str(decimal.Decimal(repr(v)).quantize(decimal.Decimal(1).scaleb(-places), decimal.ROUND_HALF_UP))


def number(v, unit=""):
    """A figure as the tables print it: 4 decimals for accuracies, 2 otherwise."""
    if isinstance(v, list):
        return "-".join(number(x, unit) for x in v)
    if v is None:
        return "-"
    return half_up(v, 4 if re.search(r"accuracy|ROC-AUC|MRR", unit) else 2)


def accuracy(r, with_metric=True):
    a = r.get("accuracy")
    if not a:
        return "-"
    metric = a.get("metric", "validation accuracy")
    text = f"{number(a['fanout'], metric)} / {number(a['peer'], metric)}"
    return f"{text} ({metric})" if with_metric and metric != "validation accuracy" else text


def ratio(r, rounds=True):
    text = f"**{half_up(r['ratio'])}×**"
    rs = r.get("rounds") or []
    if rounds and len(rs) > 1:
        text += f" ({half_up(min(rs))}-{half_up(max(rs))}×, {len(rs)} rounds)"
    return text


def fanout_cell(r):
    f = r["fanout"]
    text = f"{number(f['value'], f['unit'])} {f['unit']}"
    return f"{text} ({f['name']})" if f.get("name") else text


def peer_cell(r):
    return f"{number(r['peer']['value'], r['fanout']['unit'])} {r['fanout']['unit']} ({r['peer']['name']})"


def cell(x):
    return str(x).replace("|", "\\|").replace("\n", " ")


def table(columns, rows):
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


SECTIONS = []  # docs/benchmarks.md's headings, in order (main() reads them)


def ordered(records, ids=None):
    """Records in the order of their sections in docs/benchmarks.md, then by file name."""
    ids = ids if ids is not None else list(records)
    where = {slug(h): n for n, h in enumerate(SECTIONS)}
    return sorted(ids, key=lambda i: (where.get(slug(records[i]["section"]), len(where)), i))


def readme_region(records):
    rows = []
    for i in ordered(records, [i for i in records if records[i].get("readme")]):
        r = records[i]
        rows.append([r["job"], f"{number(r['fanout']['value'], r['fanout']['unit'])} {r['fanout']['unit']}",
                     f"{number(r['peer']['value'], r['fanout']['unit'])} ({r['peer']['name']})", ratio(r),
                     accuracy(r), r["date"], f"[command](docs/benchmarks.md#{slug(r['section'])})"])
    lines = table(["job", "fanout", "peer", "fanout / peer", "accuracy, fanout / peer", "date", "reproduce"], rows)
    return lines + ["", "Ratios under 1 are fanout's time or memory as a share of the peer's; for accuracy, "
                    "over 1 is better. Every row's method and caveats: [docs/benchmarks.md](docs/benchmarks.md)."]


def overview_region(records):
    out = []
    for group, title in (("peer", "Against other systems"), ("self", "Against fanout's own references")):
        ids = ordered(records, [i for i in records if records[i].get("group", "peer") == group])
        rows = [[f"[{records[i]['job']}](#{slug(records[i]['section'])})", records[i]["description"],
                 fanout_cell(records[i]), peer_cell(records[i]), ratio(records[i]), accuracy(records[i]),
                 records[i]["date"]] for i in ids]
        out += [f"### {title}", ""]
        out += table(["job", "what", "fanout", "against", "ratio", "accuracy, fanout / peer", "date"], rows)
        out.append("")
    out += ["The ratio is fanout's figure over the other's: under 1 is better for times and memory, over 1 for",
            "throughput, hit rates and accuracy. With several rounds the figures are the median round's (with an",
            "even count, the one less favourable to fanout) and the range is every round's.", ""]
    for name, alt in IMAGES:
        out.append(f"![{alt}](images/{name})")
    return out


def jobs_region(records, ids):
    """Each result as one line (every round, its accuracy and date), how to reproduce it, and its
    detail tables."""
    out, groups, details, shown = [], {}, [], set()
    for i in ids:
        r = records[i]
        rs = r.get("rounds") or []
        line = f"- **{r['job']}** ({r['date']}): {fanout_cell(r)} against {peer_cell(r)}: {ratio(r, rounds=False)}"
        if len(rs) > 1:
            line += f"; every round {', '.join(half_up(x) for x in rs)}"
        if r.get("accuracy"):
            line += f"; {r['accuracy'].get('metric', 'validation accuracy')} {accuracy(r, with_metric=False)}"
        out.append(line + ".")
        groups.setdefault((r["command"], r["machine"]), []).append(r["job"])
        if r.get("table") and json.dumps(r["table"], sort_keys=True) not in shown:
            t = r["table"]
            shown.add(json.dumps(t, sort_keys=True))
            details += ["", f"{r['job']}, {t.get('title', 'details')}:", ""] + table(t["columns"], t["rows"])
        for name, s in (r.get("series") or {}).items():
            if r.get("table"):
                break
            cols = [s["x_label"], f"fanout, {s['unit']}", r["peer"]["name"]] + list(s.get("others", {}))
            srows = [[x, s["fanout"][k], s["peer"][k]] + [v[k] for v in s.get("others", {}).values()]
                     for k, x in enumerate(s["x"])]
            details += ["", f"{r['job']}, {name}:", ""] + table(cols, srows)
    for (command, machine), jobs in groups.items():
        who = "" if len(groups) == 1 else f" {' and '.join(jobs)}"
        out.append(f"- Reproduce{who} (on {machine}): `{command}`")
    return out + details


def regenerate(text, records, kind, where):
    """`text` with every generated region rewritten; kind is "readme" or "benchmarks"."""
    out, pos = [], 0
    for m in BEGIN.finditer(text):
        if m.start() < pos:
            continue
        end = text.find(END, m.end())
        if end < 0:
            raise Invalid(f"{where}: {m.group(0)} has no {END} after it")
        if m.group(1) == "begin":
            body = readme_region(records) if kind == "readme" else overview_region(records)
        else:
            ids = m.group(2).split()
            unknown = [i for i in ids if i not in records]
            if unknown:
                raise Invalid(f"{where}: {m.group(0)} names {', '.join(unknown)}: no bench/results/<ID>.json")
            body = jobs_region(records, ids)
        out += [text[pos:m.end()], "\n" + "\n".join(body) + "\n"]
        pos = end
    if not out:
        raise Invalid(f"{where}: no generated region (<!-- results:begin --> ... {END})")
    return "".join(out) + text[pos:]


def check_sections(records, benchmarks_text):
    SECTIONS[:] = re.findall(r"^#+ (.+)$", benchmarks_text, re.M)
    headings = {slug(h) for h in SECTIONS}
    for i, r in records.items():
        if slug(r["section"]) not in headings:
            raise Invalid(f"bench/results/{i}.json: section {r['section']!r} is no heading of docs/benchmarks.md")


# ---- plots ------------------------------------------------------------------------------------

def plots(records, images):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "savefig.dpi": 90, "figure.dpi": 90})
    os.makedirs(images, exist_ok=True)
    blue, grey, colors = "#1f77b4", "#9a9a9a", ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]

    # (a) epoch, fanout against the peer, per job
    ids = [i for i in ordered(records) if records[i].get("group", "peer") == "peer" and records[i].get("kind") == "epoch"]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(ids) + 1.2))
    ys = range(len(ids))
    ax.barh([y + 0.2 for y in ys], [records[i]["peer"]["value"] for i in ids], 0.4, color=grey, label="peer")
    ax.barh([y - 0.2 for y in ys], [records[i]["fanout"]["value"] for i in ids], 0.4, color=blue, label="fanout")
    for y, i in zip(ys, ids):
        ax.text(records[i]["peer"]["value"] * 1.08, y, f"{half_up(records[i]['ratio'])}×", va="center")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([records[i]["job"] for i in ids])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=max(records[i]["peer"]["value"] for i in ids) * 2.5)
    ax.set_xlabel("seconds per epoch (log scale); the label is fanout / peer")
    ax.legend(loc="upper right")
    ax.set_title("Epoch time: fanout against the peer of each job (bench/results)")
    fig.tight_layout()
    fig.savefig(os.path.join(images, IMAGES[0][0]))
    plt.close(fig)

    # (b) memory per machine
    ids = [i for i in ordered(records) if records[i].get("kind") == "memory" and records[i].get("group", "peer") == "peer"
           and "peak PSS per machine" in (records[i].get("series") or {})]
    fig, axes = plt.subplots(1, len(ids), figsize=(2.6 * len(ids) + 0.6, 3.2), squeeze=False)
    for ax, i in zip(axes[0], ids):
        r, s = records[i], records[i]["series"]["peak PSS per machine"]
        lines = [("fanout", s["fanout"]), (r["peer"]["name"], s["peer"])] + list(s.get("others", {}).items())
        w = 0.8 / len(lines)
        for k, (label, vals) in enumerate(lines):
            ax.bar([x + (k - (len(lines) - 1) / 2) * w for x in range(len(s["x"]))], vals, w,
                   color=colors[k % len(colors)] if k != 1 else grey, label=label)
        ax.set_xticks(range(len(s["x"])))
        ax.set_xticklabels(s["x"])
        ax.set_title(f"{r['job']} ({half_up(r['ratio'])}×)", fontsize=8)
        ax.set_ylabel(f"peak PSS, {s['unit']}")
        ax.set_ylim(top=max(max(v) for _, v in lines) * (1.2 + 0.12 * len(lines)))
        ax.legend(fontsize=6, loc="upper center")
    fig.suptitle("Peak memory per machine, each machine's processes read together")
    fig.tight_layout()
    fig.savefig(os.path.join(images, IMAGES[1][0]))
    plt.close(fig)

    # (c) scaling with machines: the emulated cluster's epoch and bytes
    panels = [(i, name, s) for i in ordered(records) for name, s in (records[i].get("series") or {}).items()
              if s.get("x_label") == "machines" and len(s["x"]) > 1]
    units = sorted({s["unit"] for _, _, s in panels}, key=lambda u: u != "s/epoch")
    fig, axes = plt.subplots(1, len(units), figsize=(4.2 * len(units), 3.3), squeeze=False)
    for ax, unit in zip(axes[0], units):
        for k, (i, name, s) in enumerate([p for p in panels if p[2]["unit"] == unit]):
            label = name.split(", ", 1)[-1]
            ax.plot(s["x"], s["fanout"], "o-", color=colors[k % len(colors)], label=f"fanout, {label}")
            ax.plot(s["x"], s["peer"], "s--", color=colors[k % len(colors)], label=f"DistDGL, {label}")
        ax.set_xticks(panels[0][2]["x"])
        ax.set_xlabel("machines")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6)
    fig.suptitle("Setup A on emulated machines (solid: fanout, dashed: DistDGL)")
    fig.tight_layout()
    fig.savefig(os.path.join(images, IMAGES[2][0]))
    plt.close(fig)

    # (d) the distributed partitioner: memory per rank
    ids = [i for i in ordered(records) if "peak memory by ranks" in (records[i].get("series") or {})]
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    for i in ids:
        s = records[i]["series"]["peak memory by ranks"]
        ax.plot(s["x"], s["fanout"], "o-", color=blue, label="fanout-partition --distributed, per rank")
        ax.plot(s["x"], s["peer"], "s--", color=grey, label=records[i]["peer"]["name"])
        ax.set_xticks(s["x"])
        ax.set_xlabel(s["x_label"])
        ax.set_ylabel(f"peak memory, {s['unit']}")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=6)
    ax.set_title("Partitioning the products-scale graph")
    fig.tight_layout()
    fig.savefig(os.path.join(images, IMAGES[3][0]))
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when a generated region is stale")
    ap.add_argument("--root", default=os.path.dirname(HERE), help="the checkout (default: this script's)")
    ap.add_argument("--no-plots", action="store_true", help="rewrite the tables only (no matplotlib needed)")
    args = ap.parse_args()
    targets = [("README.md", "readme"), (os.path.join("docs", "benchmarks.md"), "benchmarks")]
    try:
        records = load(args.root)
        texts = {}
        for rel, kind in targets:
            with open(os.path.join(args.root, rel), encoding="utf-8") as f:
                texts[rel] = f.read()
        check_sections(records, texts[targets[1][0]])
        new = {rel: regenerate(texts[rel], records, kind, rel) for rel, kind in targets}
    except (Invalid, OSError) as e:
        print(f"results.py: {e}", file=sys.stderr)
        return 2
    stale = [rel for rel in new if new[rel] != texts[rel]]
    if args.check:
        missing = [n for n, _ in IMAGES if not os.path.exists(os.path.join(args.root, "docs", "images", n))]
        for rel in stale:
            print(f"results.py: {rel}'s generated tables differ from bench/results/*.json: run scripts/results.py")
        for n in missing:
            print(f"results.py: docs/images/{n} is missing: run scripts/results.py")
        return 1 if stale or missing else 0
    for rel in stale:
        with open(os.path.join(args.root, rel), "w", encoding="utf-8") as f:
            f.write(new[rel])
        print(f"results.py: rewrote {rel}")
    if not args.no_plots:
        plots(records, os.path.join(args.root, "docs", "images"))
        print(f"results.py: drew {len(IMAGES)} plots in docs/images/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
