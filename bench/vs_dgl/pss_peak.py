"""Per-machine peak memory of a job on loopback "machines": the PSS of all of one machine's
processes, read together, every --interval seconds; the largest sum is the machine's peak.

    python3 pss_peak.py --out FILE --root 0=PID --root 1=PID      # one process tree per machine
    python3 pss_peak.py --out FILE --env-root PID --env-var VAR   # one tree, split by VAR's value

--root M=PID: machine M is PID and all its descendants (run.sh's DistDGL machines: each is its
own process group, `dgl_machine.sh` under `unshare` under `timeout`). --env-root PID --env-var
VAR: the descendants of PID, each counted for the machine its environment's VAR names, or its
nearest ancestor's below PID (fanout-launch starts every machine's servers and trainers itself
and gives them FANOUT_MACHINE_ID; sampler processes inherit it). Processes whose command name is
in --skip-comm (the harness's wrappers: timeout, bash, unshare, setsid, env) are not counted, nor
is a process that belongs to no machine (fanout-launch itself); the same rule for both sides.

PSS is read from /proc/PID/smaps_rollup (Pss, and its Pss_Anon / Pss_File / Pss_Shmem split), so
a page shared by several processes counts once in all, split between them: a partition in
shared memory or in a mapped file counts once per machine, whoever maps it. Pages shared
between the two loopback machines (the Python interpreter, libtorch) are split between them as
they would not be on two hosts; that is a few hundred MB at most and the same for both sides.

Writes FILE (JSON) every few seconds and when it ends (SIGTERM/SIGINT, or every root gone):
{"interval_s", "samples", "machines": {M: {"peak_pss", "peak_at_s", "processes", "anon", "file",
"shmem", "rss", "by_process": [{"pid", "comm", "role", "pss"}...], "max_processes"}}, "start_unix",
"series": {"t": [seconds], M: [PSS]}, "marks": [[seconds, lines]]} (every sample, to place the peak
in the job's phases; with --marks FILE, when FILE gained lines: a job's metrics.jsonl gets one
line per epoch, the last one after validation); bytes. Each machine also gets "peak_before_mark":
its peak up to the first mark (start-up and the first epoch, no validation).
Prints one line per machine at the end. Standard library only.

--cpu: also the CPU time (user + system, /proc/PID/stat) each machine's processes used, by role,
as last read (a process that exits loses up to one interval), and that of the --env-root tree's
processes of no machine (fanout-launch, which serves both loopback machines) as "launcher":
"cpu": {M: {role: seconds}} and one more line per machine. --no-pss: CPU only, without reading
smaps_rollup, which walks every page of every process (a tenth of a second or more per reading
for a 2-machine job): a run that times epochs should not pay for it.
"""
import argparse
import json
import os
import signal
import sys
import time

STOP = False


def _stop(*_):
    global STOP
    STOP = True


def proc_table():
    """{pid: ppid} and {pid: comm} of every process now."""
    parent, comm = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        close = text.rfind(")")
        if close < 0:
            continue
        pid = int(name)
        comm[pid] = text[text.find("(") + 1:close]
        rest = text[close + 2:].split()
        if len(rest) >= 2:
            parent[pid] = int(rest[1])
    return parent, comm


def descendants(root, parent):
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p not in parent:
            continue
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def env_value(pid, var, cache):
    """VAR in /proc/PID/environ (cached per pid and start), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    key = (pid, start)
    if key in cache:
        return cache[key]
    value = None
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(var.encode() + b"="):
                    value = item.split(b"=", 1)[1].decode()
                    break
    except OSError:
        return None
    cache[key] = value
    return value


def rollup(pid):
    """{'pss', 'anon', 'file', 'shmem', 'rss'} in bytes, or None when the process is gone."""
    out = {"pss": 0, "anon": 0, "file": 0, "shmem": 0, "rss": 0}
    names = {"Pss:": "pss", "Pss_Anon:": "anon", "Pss_File:": "file", "Pss_Shmem:": "shmem", "Rss:": "rss"}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0] in names:
                    out[names[parts[0]]] = int(parts[1]) * 1024
    except (OSError, ValueError):
        return None
    return out


def cpu_seconds(pid):
    """(start time in ticks, user + system seconds) of PID, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return rest[19], (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def role_of(pid, comm):
    """A short name for the process: its executable, or its Python script with DGL's role."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        argv = []
    text = " ".join(argv)
    if "resource_tracker" in text:
        return "python resource tracker"
    if argv and not os.path.basename(argv[0]).startswith("python"):
        return os.path.basename(argv[0])  # a program, whatever script its arguments name
    script = next((os.path.basename(a) for a in argv[1:] if a.endswith(".py")), None)
    if script is None and "multiprocessing" not in text:
        return os.path.basename(argv[0]) if argv else comm
    role = None
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"DGL_ROLE="):
                    role = item.split(b"=", 1)[1].decode()
    except OSError:
        pass
    if script is None:  # a multiprocessing child: DGL's sampler process of a trainer
        return "sampler process (python)"
    return f"{script} {'trainer' if role == 'client' else role}" if role else script


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--root", action="append", default=[], help="MACHINE=PID: PID and its descendants")
    p.add_argument("--env-root", type=int, help="PID whose descendants are split by --env-var")
    p.add_argument("--env-var", default="FANOUT_MACHINE_ID")
    p.add_argument("--skip-comm", default="timeout,bash,sh,unshare,setsid,env")
    p.add_argument("--marks", default="", help="a file whose new lines mark phases (the job's metrics.jsonl)")
    p.add_argument("--cpu", action="store_true", help="also CPU seconds by machine and role")
    p.add_argument("--no-pss", action="store_true", help="CPU only (with --cpu): no smaps_rollup reads")
    a = p.parse_args()
    if a.no_pss and not a.cpu:
        p.error("--no-pss needs --cpu")
    roots = {}
    for r in a.root:
        m, _, pid = r.partition("=")
        roots[m] = int(pid)
    if not roots and a.env_root is None:
        p.error("give --root M=PID (one per machine) or --env-root PID")
    skip = set(filter(None, a.skip_comm.split(",")))
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    machines = {}
    env_cache = {}
    t0 = time.monotonic()
    samples = 0
    last_write = 0.0
    start_unix = time.time()
    series = {"t": []}
    marks = []
    mark_size = -1
    cpu_last = {}  # (machine, pid, start) -> (role, seconds)
    roles = {}     # (pid, start) -> role

    def read_cpu(m, pid):
        c = cpu_seconds(pid)
        if c is None:
            return
        start, secs = c
        if roles.get((pid, start), "python").startswith("python"):  # a process seen mid-exec: ask again
            roles[(pid, start)] = role_of(pid, comm.get(pid, "?"))
        cpu_last[(m, pid, start)] = (roles[(pid, start)], secs)

    def cpu_by_role():
        out = {}
        for (m, _, _), (role, secs) in cpu_last.items():
            out.setdefault(m, {})
            out[m][role] = round(out[m].get(role, 0.0) + secs, 2)
        return out

    def write():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"interval_s": a.interval, "samples": samples, "start_unix": round(start_unix, 3),
                       "seconds": round(time.monotonic() - t0, 1), "machines": machines, "series": series,
                       "marks": marks, "cpu": cpu_by_role()}, f)
        os.replace(tmp, a.out)

    while not STOP:
        tick = time.monotonic()
        parent, comm = proc_table()
        groups = {}
        if roots:
            for m, root in roots.items():
                groups[m] = descendants(root, parent)
        else:
            tree = descendants(a.env_root, parent)
            label = {}
            inside = set(tree)

            def machine_of(pid, depth=0):
                if pid in label:
                    return label[pid]
                v = env_value(pid, a.env_var, env_cache)
                if v is None and pid != a.env_root and parent.get(pid) in inside and depth < 64:
                    v = machine_of(parent[pid], depth + 1)
                label[pid] = v
                return v

            for pid in tree:
                m = machine_of(pid)
                if m is not None:
                    groups.setdefault(m, []).append(pid)
                elif a.cpu and comm.get(pid) not in skip:
                    read_cpu("launcher", pid)  # fanout-launch, which belongs to no one machine
        alive = any(r in parent for r in roots.values()) if roots else a.env_root in parent
        if not alive:
            break
        series["t"].append(round(tick - t0, 1))
        if a.marks:
            try:
                size = os.path.getsize(a.marks)
            except OSError:
                size = -1
            if size != mark_size:
                mark_size = size
                try:
                    with open(a.marks, "rb") as f:
                        lines = f.read().count(b"\n")
                except OSError:
                    lines = 0
                if lines > (marks[-1][1] if marks else 0):
                    marks.append([round(tick - t0, 1), lines])
        if a.cpu:
            for m, pids in groups.items():
                for pid in pids:
                    if comm.get(pid) not in skip:
                        read_cpu(m, pid)
        for m, pids in ({} if a.no_pss else groups).items():
            total = {"pss": 0, "anon": 0, "file": 0, "shmem": 0, "rss": 0}
            procs = []
            for pid in pids:
                if comm.get(pid) in skip:
                    continue
                r = rollup(pid)
                if r is None:
                    continue
                for k in total:
                    total[k] += r[k]
                procs.append((pid, r["pss"]))
            col = series.setdefault(m, [])
            col.extend([0] * (len(series["t"]) - 1 - len(col)))
            col.append(total["pss"])
            rec = machines.setdefault(m, {"peak_pss": 0, "max_processes": 0})
            rec["max_processes"] = max(rec["max_processes"], len(procs))
            if not marks:
                rec["peak_before_mark"] = max(rec.get("peak_before_mark", 0), total["pss"])
            if total["pss"] > rec["peak_pss"]:
                rec.update({"peak_pss": total["pss"], "peak_at_s": round(tick - t0, 1), "processes": len(procs),
                            "anon": total["anon"], "file": total["file"], "shmem": total["shmem"],
                            "rss": total["rss"],
                            "by_process": [{"pid": pid, "comm": comm.get(pid, "?"), "role": role_of(pid, comm.get(pid, "?")),
                                            "pss": pss} for pid, pss in sorted(procs, key=lambda x: -x[1])]})
        samples += 1
        if tick - last_write > 5:
            write()
            last_write = tick
        time.sleep(max(0.0, a.interval - (time.monotonic() - tick)))
    write()
    for m, by_role in sorted(cpu_by_role().items()):
        print(f"cpu: {'the launcher (every machine)' if m == 'launcher' else 'machine ' + m}: "
              f"{sum(by_role.values()):.1f} s (" + ", ".join(f"{r} {v:.1f}" for r, v in
                                                   sorted(by_role.items(), key=lambda x: -x[1])) + ")", flush=True)
    gb = 1e9
    for m in sorted(machines):
        r = machines[m]
        if not r.get("processes"):
            print(f"pss_peak: machine {m}: no sample")
            continue
        who = ", ".join(f"{x['role']} {x['pss'] / gb:.2f}" for x in r["by_process"])
        print(f"pss_peak: machine {m}: peak PSS {r['peak_pss'] / gb:.2f} GB of {r['processes']} processes sampled "
              f"together at {r['peak_at_s']} s (anon {r['anon'] / gb:.2f}, file {r['file'] / gb:.2f}, shmem "
              f"{r['shmem'] / gb:.2f}; {who}); {samples} samples every {a.interval:g} s"
              + (f"; before the first epoch record (start-up, epoch 1): {r['peak_before_mark'] / gb:.2f} GB"
                 if marks and "peak_before_mark" in r else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
