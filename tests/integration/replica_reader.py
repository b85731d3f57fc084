"""Reads one partition's features from machine 0 for a while, through fanout.distributed (DistDGL's
names), and says how long the longest read took: the client side of the cluster test's replica
case (tests/integration/cluster_test.sh), where that partition's machine loses its link meanwhile.

Run under fanout-launch on every machine; the other machines only wait. Exits non-zero if a read
fails or returns other rows than the first did. Prints

    replica_reader: reads=N longest_s=S

    fanout-launch ... --replicas 1 -- python3 replica_reader.py --graph-name g --part 2 --seconds 40
"""
import argparse
import os
import sys
import time

import torch

import fanout.distributed as dist


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph-name", required=True)
    ap.add_argument("--part", type=int, required=True, help="the partition whose rows are read")
    ap.add_argument("--seconds", type=float, default=40, help="how long machine 0 reads")
    ap.add_argument("--rows", type=int, default=64)
    args = ap.parse_args()
    # The watch would end this process when the partition's machine stops answering: the point
    # here is that its replica answers instead.
    dist.initialize(unreachable_timeout_seconds=0)
    if int(os.environ.get("FANOUT_MACHINE_ID", "0")) != 0:
        time.sleep(args.seconds + 5)
        return 0
    g = dist.DistGraph(args.graph_name)
    ids = g.get_partition_book().partid2nids(args.part)[: args.rows]
    feat = g.ndata["feat"]
    first = feat[ids].clone()
    reads, longest = 0, 0.0
    print("replica_reader: reading", flush=True)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        rows = feat[ids]
        took = time.monotonic() - t0
        if not torch.equal(rows, first):
            print(f"replica_reader: error: read {reads} returned other rows than the first", file=sys.stderr)
            return 1
        reads += 1
        longest = max(longest, took)
        time.sleep(0.1)
    print(f"replica_reader: reads={reads} longest_s={longest:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
