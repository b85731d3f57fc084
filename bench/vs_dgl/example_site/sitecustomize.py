"""Setup X's DistDGL processes start with this folder on PYTHONPATH (bench/vs_dgl/run.sh), so
that DGL's R-GCN example runs unchanged on two loopback machines of one host: in a trainer
(BENCH_DGL_MACHINE_ID set, as dgl_machine.sh sets it for trainers only) it applies, before the
example runs, the machine-ID fix that dgl_dist_train.py applies at import (see there: DGL would
take both machines' clients for machine 0). DGL's sampler processes are new interpreters with
the same environment, so they get it too. Servers and other processes are left alone.
"""
import os
import sys

if os.environ.get("BENCH_DGL_MACHINE_ID") is not None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import dgl_dist_train  # noqa: E402,F401  (the fix, applied at import)
