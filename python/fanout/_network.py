"""Which network interface ``torch.distributed``'s Gloo uses in a job that fanout-launch started.

Gloo binds to the address the machine's hostname resolves to unless ``GLOO_SOCKET_IFNAME`` names
an interface. Where the hostname resolves to a loopback address (Debian's default ``/etc/hosts``
maps it to 127.0.1.1; containers and network namespaces often do the same), every rank then
advertises a loopback address and the others cannot connect ("connect [127.0.0.1]:PORT:
Connection refused"), which DistDGL's users mend by setting the variable on every machine.
fanout-train picks the address that routes to the job's coordinator; this does the same for a
script's own ``init_process_group("gloo")``: under fanout-launch (``MASTER_ADDR`` and
``FANOUT_WORLD_SIZE`` set), with the variable unset, it names the interface whose address
routes to ``MASTER_ADDR``, unless that is a loopback address (machines on one host, where the
default works). Linux only; anything it cannot find leaves the variable alone.
"""

import fcntl
import os
import socket
import struct
from typing import Optional

_SIOCGIFADDR = 0x8915


def _address_of(ifname: str) -> Optional[str]:
    """The IPv4 address of interface `ifname`, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            r = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", ifname[:15].encode()))
        except OSError:
            return None
    return socket.inet_ntoa(r[20:24])


def address_towards(host: str, port: int) -> Optional[str]:
    """The local IPv4 address this host would send from to (host, port), or None. Sends nothing."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return s.getsockname()[0]
    except OSError:
        return None


def interface_with(address: str) -> Optional[str]:
    """The name of the interface holding IPv4 `address`, or None."""
    for _, name in socket.if_nameindex():
        if _address_of(name) == address:
            return name
    return None


def choose_gloo_interface(env=os.environ) -> Optional[str]:
    """Sets env["GLOO_SOCKET_IFNAME"] as the module says; returns the interface set, or None."""
    if env.get("GLOO_SOCKET_IFNAME") or not env.get("FANOUT_WORLD_SIZE") or not env.get("MASTER_ADDR"):
        return None
    try:
        port = int(env.get("MASTER_PORT", "29500"))
    except ValueError:
        return None
    local = address_towards(env["MASTER_ADDR"], port)
    if local is None or local.startswith("127."):
        return None
    name = interface_with(local)
    if name is not None:
        env["GLOO_SOCKET_IFNAME"] = name
    return name
