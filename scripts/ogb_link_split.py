#!/usr/bin/env python3
"""Converts an OGB link-property split (split/<name>/{valid,test}.pt, which are torch pickles
and need Python to read) into the files `fanout-partition --edge-split-files DIR` reads:

    python3 scripts/ogb_link_split.py DATASET_DIR OUT_DIR [--split NAME]
    fanout-partition --input DATASET_DIR --edge-split-files OUT_DIR --num-parts 2 --out parts ...

Needs python3-torch (Debian) and numpy. Handles the two layouts of OGB's homogeneous link datasets:
  - 'edge' [n, 2] positives, 'edge_neg' [m, 2] negatives (ogbl-collab, -ppa, -ddi, -vessel):
    writes {valid,test}_pos.npy; the negatives are shared by all positives in OGB's evaluation,
    so they are written as {valid,test}_neg.npy only when m is a whole multiple of n (fanout
    ranks each positive against its own k negatives); otherwise fanout-partition draws
    --eval-negatives per positive and this script says so;
  - 'source_node' [n], 'target_node' [n], 'target_node_neg' [n, k] (ogbl-citation2): writes
    {valid,test}_pos.npy and {valid,test}_neg_dst.npy (k negative destinations per positive).
Knowledge graphs (head/relation/tail: ogbl-biokg, -wikikg2) are refused: fanout's graphs have one
node and one edge type. OGB's train.pt is not needed: its edges are the graph's (raw/edge.csv.gz).
Existing files in OUT_DIR are not replaced unless --overwrite.
"""

import argparse
import os
import sys


def fail(message):
    print(f"ogb_link_split: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="the OGB dataset folder (with raw/ and split/)")
    parser.add_argument("out", help="folder for {valid,test}_pos.npy and negatives")
    parser.add_argument("--split", default="", help="the folder under split/ (default: the only one)")
    parser.add_argument("--overwrite", action="store_true", help="replace files already in OUT")
    args = parser.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        fail(f"needs torch and numpy ({e}); on Debian: apt install python3-torch")

    split_root = os.path.join(args.dataset, "split")
    if not os.path.isdir(split_root):
        fail(f"{split_root}: no such folder (expected OGB's link-property layout)")
    names = sorted(n for n in os.listdir(split_root) if os.path.isdir(os.path.join(split_root, n)))
    name = args.split or (names[0] if len(names) == 1 else "")
    if not name:
        fail(f"{split_root} has {len(names)} splits ({', '.join(names)}): pick one with --split")
    folder = os.path.join(split_root, name)
    os.makedirs(args.out, exist_ok=True)
    written = []

    def save(file, array):
        path = os.path.join(args.out, file)
        if os.path.exists(path) and not args.overwrite:
            fail(f"{path} exists; pass --overwrite to replace it")
        np.save(path, np.ascontiguousarray(array, dtype=np.int64))
        written.append(f"{file} {list(array.shape)}")

    for which in ("valid", "test"):
        path = os.path.join(folder, f"{which}.pt")
        if not os.path.exists(path):
            fail(f"{path}: missing")
        d = torch.load(path)
        if not isinstance(d, dict):
            fail(f"{path}: expected a dict of tensors, got {type(d).__name__}")
        as_np = {k: (v.numpy() if torch.is_tensor(v) else np.asarray(v)) for k, v in d.items()}
        if "head" in as_np or "relation" in as_np:
            fail(f"{path}: a knowledge graph split (head/relation/tail); fanout trains on graphs with one edge type")
        if "edge" in as_np:
            pos = as_np["edge"].reshape(-1, 2)
            save(f"{which}_pos.npy", pos)
            neg = as_np.get("edge_neg")
            if neg is not None:
                neg = neg.reshape(-1, 2)
                if len(pos) and len(neg) % len(pos) == 0:
                    save(f"{which}_neg.npy", neg)
                else:
                    print(f"ogb_link_split: {path}: {len(neg)} negatives shared by {len(pos)} positives are not a "
                          f"whole number per positive; not written (fanout-partition draws --eval-negatives "
                          f"per positive instead)", file=sys.stderr)
        elif "source_node" in as_np and "target_node" in as_np:
            pos = np.stack([as_np["source_node"].reshape(-1), as_np["target_node"].reshape(-1)], axis=1)
            save(f"{which}_pos.npy", pos)
            if "target_node_neg" in as_np:
                neg = as_np["target_node_neg"]
                if neg.ndim != 2 or neg.shape[0] != len(pos):
                    fail(f"{path}: target_node_neg is {list(neg.shape)}, expected [{len(pos)}, k]")
                save(f"{which}_neg_dst.npy", neg)
        else:
            fail(f"{path}: neither 'edge' nor 'source_node'/'target_node' in its keys {sorted(as_np)}")
    for line in written:
        print(f"ogb_link_split: wrote {os.path.join(args.out, line)}")


if __name__ == "__main__":
    main()
