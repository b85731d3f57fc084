"""A copy of DGL partitions with node fields renamed (the names a script reads).

    python dgl_rename_fields.py SRC_DIR DST_DIR OLD=NEW [OLD=NEW ...]

DGL's distributed R-GCN example reads paper/labels where dgl_partition_mag.py stores
paper/label: setup X's DistDGL job runs the example unchanged on such a copy. The partition
config and the graph structure are linked (hard links, else copied); each part's
node_feat.dgl is rewritten with the keys renamed ("paper/label" -> "paper/labels" for
label=labels). DST_DIR is written whole into DST_DIR.tmp first, then renamed.
"""
import os
import shutil
import sys

from dgl.data.utils import load_tensors, save_tensors


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    renames = dict(a.split("=", 1) for a in sys.argv[3:])
    tmp = dst.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    renamed = set()
    for root, _, files in os.walk(src):
        out = os.path.join(tmp, os.path.relpath(root, src))
        os.makedirs(out, exist_ok=True)
        for name in files:
            a, b = os.path.join(root, name), os.path.join(out, name)
            if name == "node_feat.dgl":
                tensors = load_tensors(a)
                new = {}
                for key, t in tensors.items():
                    ntype, _, field = key.rpartition("/")
                    if field in renames:
                        renamed.add(field)
                        field = renames[field]
                    new[f"{ntype}/{field}" if ntype else field] = t
                save_tensors(b, new)
            else:
                try:
                    os.link(a, b)
                except OSError:
                    shutil.copy2(a, b)
    missing = set(renames) - renamed
    if missing:
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(f"dgl_rename_fields.py: no node field {sorted(missing)} in {src}")
    shutil.rmtree(dst, ignore_errors=True)
    os.rename(tmp, dst)


if __name__ == "__main__":
    main()
