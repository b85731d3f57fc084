"""Writes one headline result as a bench/results/*.json file (schema: bench/results/README.md).

Used by bench/vs_dgl/summarize.py and bench/cluster/summarize.py (their --results-json PATH);
scripts/results.py turns the files into README.md's and docs/benchmarks.md's tables and plots.
Standard library only.
"""
import datetime
import json
import os
import re


def median_round(rounds, better="lower"):
    """The index of the median round of `rounds` (a list of ratios): with an even count, the middle
    round less favourable to fanout (the larger ratio when lower is better)."""
    order = sorted(range(len(rounds)), key=lambda i: rounds[i], reverse=(better == "higher"))
    return order[len(order) // 2]


def machine_description():
    """This machine in a few words: vCPUs, CPU model, memory (what a result was measured on)."""
    model, mem = "", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = " ".join(line.split(":", 1)[1].split())
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f", {round(int(line.split()[1]) / 2**20)} GiB"
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} vCPUs" + (f" ({model})" if model else "") + mem


def date_of(path):
    """YYYY-MM-DD from a run folder named YYYYMMDD-HHMMSS in `path` (the benchmarks' own naming),
    else today."""
    m = re.search(r"(20\d\d)(\d\d)(\d\d)-\d{6}", os.path.abspath(path))
    if m:
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return datetime.date.today().isoformat()


def write(path, computed, given, defaults=None):
    """Writes `computed` (what the benchmark measured) into the result file at `path`, keeping the
    fields a benchmark cannot know (description, command, section, ...) from the file already
    there; `given` (command-line values, None when not given) overrides both, and `defaults` fill
    what neither the file nor `given` has."""
    record = dict(defaults or {})
    try:
        with open(path) as f:
            record.update(json.load(f))
    except (OSError, ValueError):
        pass
    for key in ("series", "table", "rounds", "accuracy"):
        record.pop(key, None)  # measured fields: a new run's replace the old ones whole
    record.update(computed)
    record.update({k: v for k, v in given.items() if v is not None})
    record.setdefault("machine", machine_description())
    record.setdefault("group", "peer")
    order = ["job", "description", "group", "kind", "better", "fanout", "peer", "ratio", "accuracy", "date",
             "machine", "command", "rounds", "series", "table", "section", "readme"]
    out = {k: record[k] for k in order if k in record}
    out.update({k: v for k, v in record.items() if k not in out})
    missing = [k for k in ("job", "description", "command") if not out.get(k)]
    if missing:
        raise SystemExit(f"{path}: no {', '.join(missing)}: give --{' --'.join(missing)} (the file had none)")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
