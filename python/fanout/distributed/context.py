"""The job a script runs in: fanout-launch's variables, read once by ``initialize``."""

import atexit
import os
import shutil
import weakref
from dataclasses import dataclass
from typing import Optional

from fanout import _native


@dataclass
class Context:
    part_config: str = ""     # FANOUT_PART_CONFIG
    ip_config: str = ""       # FANOUT_IP_CONFIG, or initialize's argument
    servers: str = ""         # FANOUT_SERVERS: every server of the job, resolved by the launcher
    num_servers: int = 1      # per machine
    machine_id: int = 0       # this machine = the partition read from its files
    num_trainers: int = 1     # trainers per machine
    num_samplers: int = 0     # sampler processes per trainer (0: sampler threads in this process)
    sampler_nice: int = 10    # their priority below this process's (fanout-launch --sampler-nice)
    rank: int = 0
    world_size: int = 1
    deadline_seconds: float = 60.0
    unreachable_timeout_seconds: float = 10.0
    from_launcher: bool = False  # FANOUT_WORLD_SIZE was set (fanout-launch)
    # FANOUT_RESTART_COUNT: 0 in the first run of the job, k in its k-th restart (fanout-launch
    # --max-restarts): a script with checkpoints of its own resumes when it is above 0.
    restart_count: int = 0


_context: Optional[Context] = None
# Loaders still open, closed at exit so that no sampler process outlives a script that ends
# with loaders referenced from a traceback or a global.
_open_loaders: "weakref.WeakSet" = weakref.WeakSet()
# Graphs watching the other machines (initialize's unreachable_timeout_seconds), which stop at
# exit_client: the job's servers may then go before this process does.
_watching: "weakref.WeakSet" = weakref.WeakSet()


def initialize(ip_config: Optional[str] = None, num_servers: int = 1, num_workers: int = 0, *,
               part_config: Optional[str] = None, machine_id: Optional[int] = None,
               deadline_seconds: float = 60.0, unreachable_timeout_seconds: float = 10.0,
               keep_large_allocations: bool = True, max_queue_size=None,
               net_type=None, num_worker_threads: int = 1, use_graphbolt: bool = False) -> Context:
    """DGL's ``dgl.distributed.initialize``: reads the job's layout and starts the liveness signal.

    Under ``fanout-launch`` everything comes from the launcher's variables (``FANOUT_*``, see
    docs/launcher.md) and the arguments may be left out. Alone (one machine, no launcher),
    ``part_config`` names the partition config, and ``ip_config``/``num_servers`` find the other
    partitions' servers (machine k serves partition k on PORT..PORT+num_servers-1).

    ``num_workers`` is DGL's sampler-process count; the launcher's ``--num-samplers`` wins when
    set. DGL's other arguments (``max_queue_size``, ``net_type``, ``num_worker_threads``,
    ``use_graphbolt``: how DGL's own RPC and storage work) are accepted and have no counterpart;
    any other keyword is a ``TypeError``.

    ``unreachable_timeout_seconds``: a machine of the job that has answered none of this
    process's once-a-second calls for this long (a cut link, a frozen host) ends the process
    with an error naming it, exit status 1 (fanout-launch then ends the job), instead of a
    collective or a batch waiting out its own timeout silently; fanout-train's
    ``--unreachable-timeout``. 0 turns the watch off.

    ``keep_large_allocations`` (default on) has glibc's malloc keep freed buffers of up to 1 GiB
    for reuse instead of returning each to the kernel: PyTorch's CPU tensors come from malloc,
    and a GNN step allocates activations and gradients of hundreds of MB anew each step, which
    otherwise page-fault fresh zeroed memory every time (about 40 % of a ``dgl.nn.SAGEConv``
    step on CPU, docs/benchmarks.md). The price: the process keeps its peak heap. Process-wide.
    """
    global _context
    if keep_large_allocations:
        _native.keep_large_allocations()
    env = _native.job_env()
    _native.start_heartbeat()  # only under fanout-launch: it watches for silence
    c = Context()
    c.part_config = env["part_config"] or (os.path.abspath(part_config) if part_config else "")
    c.ip_config = env["ip_config"] or (os.path.abspath(ip_config) if ip_config else "")
    c.servers = env["servers"]
    c.num_servers = env["num_servers"] if env["num_servers"] >= 0 else num_servers
    c.num_trainers = env["num_trainers"] if env["num_trainers"] >= 0 else 1
    c.num_samplers = env["num_samplers"] if env["num_samplers"] >= 0 else num_workers
    c.sampler_nice = (env["sampler_nice"] if env["sampler_nice"] >= 0
                      else int(_native.default_settings()["loader"]["sampler_nice"]))
    c.from_launcher = env["world_size"] >= 0
    c.rank = env["rank"] if env["rank"] >= 0 else (machine_id or 0) * c.num_trainers
    c.world_size = env["world_size"] if env["world_size"] >= 0 else 1
    c.restart_count = max(env["restart_count"], 0)
    if machine_id is not None:
        c.machine_id = machine_id
    elif env["machine_id"] >= 0:
        c.machine_id = env["machine_id"]
    else:
        c.machine_id = c.rank // c.num_trainers
    c.deadline_seconds = deadline_seconds
    if not (0 <= unreachable_timeout_seconds <= 1e9):
        raise ValueError(f"initialize: unreachable_timeout_seconds must be in [0, 1e9] (0: off), got "
                         f"{unreachable_timeout_seconds}")
    c.unreachable_timeout_seconds = float(unreachable_timeout_seconds)
    _context = c
    return c


def is_initialized() -> bool:
    return _context is not None


def current() -> Context:
    if _context is None:
        raise RuntimeError("fanout.distributed.initialize() must be called first (as dgl.distributed.initialize)")
    return _context


def exit_client() -> None:
    """Stops every loader's sampler processes now (DGL's ``exit_client``), and the watch on the other
    machines (the job's end may take their servers first); also done at exit."""
    for loader in list(_open_loaders):
        loader.close()
    for graph in list(_watching):
        graph._native.stop_watching()


atexit.register(exit_client)


def sampler_binary() -> str:
    """The fanout-sampler program: $FANOUT_SAMPLER_BIN; the one installed with this package
    (pip); a clone's build/bin beside the built extension; else the one on PATH. "" if none."""
    explicit = os.environ.get("FANOUT_SAMPLER_BIN")
    if explicit:
        return explicit
    import fanout
    candidates = [os.path.join(d, "bin", "fanout-sampler") for d in fanout.__path__]
    native_dir = os.path.dirname(os.path.abspath(_native.__file__))
    candidates.append(os.path.join(native_dir, "..", "..", "bin", "fanout-sampler"))  # build/python/fanout
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which("fanout-sampler") or ""
