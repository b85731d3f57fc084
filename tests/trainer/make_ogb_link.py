"""Writes a small dataset in OGB's link-property layout for train_cli_test:
raw/edge.csv.gz (a ring plus chords over N nodes), raw/num-node-list.csv.gz, raw/node-feat.csv.gz,
and split/time/{train,valid,test}.pt as torch pickles the way ogbl-collab ships them ('edge',
and 'edge_neg' for valid and test: 2 per positive here). The valid and test edges are not in
edge.csv.gz, as in OGB.
    python3 make_ogb_link.py OUT_DIR
"""
import gzip
import os
import sys

import torch

out = sys.argv[1]
n = 120
gen = torch.Generator().manual_seed(0)
edges = [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 7) % n) for i in range(0, n, 2)]
held = [(i, (i + 13) % n) for i in range(0, n, 4)]  # 30 pairs, none in `edges`
valid, test = held[:10], held[10:]
os.makedirs(os.path.join(out, "raw"), exist_ok=True)
os.makedirs(os.path.join(out, "split", "time"), exist_ok=True)
with gzip.open(os.path.join(out, "raw", "edge.csv.gz"), "wt") as f:
    f.writelines(f"{u},{v}\n" for u, v in edges)
with gzip.open(os.path.join(out, "raw", "num-node-list.csv.gz"), "wt") as f:
    f.write(f"{n}\n")
feat = torch.randn(n, 6, generator=gen)
with gzip.open(os.path.join(out, "raw", "node-feat.csv.gz"), "wt") as f:
    f.writelines(",".join(f"{x:.5f}" for x in row.tolist()) + "\n" for row in feat)
torch.save({"edge": torch.tensor(edges)}, os.path.join(out, "split", "time", "train.pt"))
for name, pairs in (("valid", valid), ("test", test)):
    pos = torch.tensor(pairs)
    neg = torch.stack([pos[:, 0].repeat_interleave(2), (pos[:, 0].repeat_interleave(2) + 40 +
                                                        torch.arange(2 * len(pairs)) % 2) % n], 1)
    torch.save({"edge": pos, "edge_neg": neg}, os.path.join(out, "split", "time", f"{name}.pt"))
