"""python3 -m fanout.export: write a reference model as TorchScript for fanout-train --model.

    python3 -m fanout.export sage --in-dim 100 --hidden 256 --classes 47 --layers 3 -o sage.pt

For a model of your own, script it yourself: ``torch.jit.script(MyModel(...)).save("my.pt")``;
it must take ``(blocks: List[Dict[str, Tensor]], x: Tensor)`` and return logits (docs/models.md).
"""

import argparse
import sys

import torch

from fanout import ops
from fanout.models import build, default_dropout


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m fanout.export", description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=["sage", "gcn", "gat", "gin", "rgcn", "rgat", "hgt"])
    p.add_argument("--in-dim", type=int, required=True, help="input feature width")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--classes", type=int, required=True, help="output width (number of classes)")
    p.add_argument("--layers", type=int, default=2, help="one per --fanouts entry of fanout-train")
    p.add_argument("--dropout", type=float, default=None,
                   help=f"default: fanout-train's, {default_dropout('sage')} (rgat: {default_dropout('rgat')})")
    p.add_argument("--heads", default="4", help="gat, rgat, hgt: heads per layer, e.g. 8,1")
    p.add_argument("--relations", type=int, default=1,
                   help="rgcn, rgat, hgt: the typed graph's number of relations (its partition config's edge types, "
                        "reverse relations included)")
    p.add_argument("--node-types", type=int, default=1,
                   help="hgt: the typed graph's number of node types (its partition config's node types)")
    p.add_argument("--seed", type=int, default=0, help="parameter initialisation")
    p.add_argument("--fused", action=argparse.BooleanOptionalAction, default=None,
                   help="aggregate with fanout's kernels (torch.ops.fanout; default: when their library "
                        "is found) or with plain tensor ops (--no-fused: slower, runs anywhere)")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    heads = [int(h) for h in a.heads.split(",")]
    fused = ops.load() if a.fused is None else a.fused
    m = build(a.kind, a.in_dim, a.hidden, a.classes, a.layers, a.dropout, heads, a.seed, fused, a.relations,
              a.node_types)
    m.save(a.output)
    kernels = "fanout's fused kernels" if fused else "plain tensor ops"
    print(f"wrote {a.output}: {a.kind}, {a.layers} layers, {a.in_dim} -> {a.classes}, {kernels} "
          f"(torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
