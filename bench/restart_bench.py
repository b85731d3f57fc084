#!/usr/bin/env python3
"""What a failure costs a job that restarts itself (issue 31, docs/benchmarks.md), on bench/vs_dgl's
setup A: 2 loopback machines x (1 server + 1 trainer with 1 sampler process), 3-layer GraphSAGE,
hidden 256, fanouts 15,10,5, batch 1024, 1 intra-op thread.

1. Checkpoint overhead: jobs with no checkpoints and with --checkpoint-dir --checkpoint-every-steps
   K, alternating, ROUNDS each; epoch time = mean of the epochs after the first (no evaluation).
2. A failure: a job with --max-restarts 1 --restart-backoff 0 --checkpoint-every-steps K; once
   rank 0 has logged step KILL_AT of epoch 1, m1's trainer gets SIGKILL. Measured: the time from
   the SIGKILL to the first training step after the restart (the launcher's own timestamps in the
   per-process logs), and the steps lost (the last step logged before the kill minus the step the
   restart resumed at).

    bench/restart_bench.py PART_CONFIG [--every K] [--rounds R] [--epochs E] [--kill-at S]

PART_CONFIG: setup A's partitions (bench/vs_dgl/run.sh leaves them in
$TMPDIR/fanout-vs-dgl/parts-n500000-e25000000/fanout-2/vsdgl.json). Standard library only.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(os.environ.get("FANOUT_BUILD_DIR", os.path.join(HERE, "..", "build")) + "/bin")


def trainer(extra, epochs, metrics):
    return [f"{BIN}/fanout-train", "--model", "sage", "--fanouts", "15,10,5", "--hidden", "256", "--batch-size",
            "1024", "--lr", "0.003", "--dropout", "0.5", "--epochs", str(epochs), "--eval-every", "0", "--no-test",
            "--threads", "1", "--num-samplers", "1", "--metrics-file", metrics] + extra


def launch(work, name, config, launcher_extra, trainer_cmd, port):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "ip_config.txt"), "w") as f:
        f.write(f"127.0.0.1 {port}\n127.0.0.2 {port}\n")
    cmd = [f"{BIN}/fanout-launch", "--workspace", d, "--ip-config", "ip_config.txt", "--part-config", config,
           "--num-servers", "1", "--num-trainers", "1", "--num-samplers", "1", "--num-omp-threads", "1",
           "--log-dir", os.path.join(d, "logs")] + launcher_extra + ["--"] + trainer_cmd
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    return d, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def epoch_time(metrics):
    rows = [json.loads(line) for line in open(metrics) if '"epoch"' in line]
    rows = [r for r in rows if r.get("event") == "epoch"]
    later = rows[1:] or rows
    return sum(r["epoch_seconds"] for r in later) / len(later)


def stamp(line):  # "2026-11-26T06:06:47.964Z I ..." -> seconds since the epoch
    t = line.split(" ", 1)[0]
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--kill-at", type=int, default=12)
    ap.add_argument("--port", type=int, default=36150)
    a = ap.parse_args()
    config = os.path.abspath(a.config)
    work = tempfile.mkdtemp(prefix="fanout-restart-bench-")
    print(f"restart_bench: {config}; checkpoints every {a.every} steps; work in {work}", flush=True)

    # 1. Overhead, alternating.
    times = {"none": [], "every": []}
    for r in range(a.rounds):
        for kind in ("none", "every"):
            metrics = os.path.join(work, f"{kind}-{r}.jsonl")
            extra = [] if kind == "none" else ["--checkpoint-dir", os.path.join(work, f"ckpt-{kind}-{r}"),
                                               "--checkpoint-every-steps", str(a.every)]
            d, p = launch(work, f"{kind}-{r}", config, [], trainer(extra, a.epochs, metrics), a.port)
            out, _ = p.communicate()
            if p.returncode != 0:
                sys.exit(f"restart_bench: job {kind}-{r} failed ({p.returncode}):\n{out[-3000:]}")
            t = epoch_time(metrics)
            times[kind].append(t)
            print(f"round {r + 1}: {'no checkpoints' if kind == 'none' else f'every {a.every} steps':16s} "
                  f"epoch {t:.2f} s", flush=True)
    none, every = (sum(times[k]) / len(times[k]) for k in ("none", "every"))
    print(f"checkpoint overhead (means): epoch {every:.2f} s against {none:.2f} s: {100 * (every / none - 1):+.1f} %")

    # 2. A SIGKILL mid-epoch, and the restart.
    metrics = os.path.join(work, "killed.jsonl")
    d, p = launch(work, "killed", config, ["--max-restarts", "1", "--restart-backoff", "0"],
                  trainer(["--checkpoint-dir", os.path.join(work, "ckpt-killed"), "--checkpoint-every-steps",
                           str(a.every), "--log-every", "1"], 2, metrics), a.port)
    victim, killed_at, lines = None, None, []
    want = f"[m0 trainer 0] epoch 1 step {a.kill_at}/"
    for line in p.stdout:
        lines.append(line)
        m = re.search(r"started m1 trainer 0 pid (\d+)", line)
        if m and victim is None:
            victim = int(m.group(1))
        if want in line and killed_at is None:
            os.kill(victim, signal.SIGKILL)
            killed_at = time.time()
    p.wait()
    if p.returncode != 0 or killed_at is None:
        sys.exit(f"restart_bench: the restarted job failed ({p.returncode}):\n{''.join(lines)[-3000:]}")
    first_log = open(os.path.join(d, "logs", "m0-trainer-0.log")).read().splitlines()
    last_step = max(int(m.group(1)) for m in (re.search(r"epoch 1 step (\d+)/", x) for x in first_log) if m)
    after = open(os.path.join(d, "logs", "restart-1", "m0-trainer-0.log")).read().splitlines()
    resumed = next(x for x in after if "resumed from" in x)
    at = re.search(r"at epoch (\d+) step (\d+)", resumed)
    first_step = next(x for x in after if re.search(r"\] epoch \d+ step \d+/|^\S+ I epoch \d+ step \d+/", x))
    latency = stamp(first_step) - killed_at
    lost = (last_step - int(at.group(2))) if at and at.group(1) == "1" else None
    print(f"SIGKILL at epoch 1 step {last_step} (rank 0's last logged step); restart resumed at "
          f"{'epoch ' + at.group(1) + ' step ' + at.group(2) if at else resumed.split('resumed from', 1)[1].strip()}")
    print(f"time from the SIGKILL to the first step after the restart: {latency:.1f} s; steps lost: {lost} "
          f"(at most {a.every})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
