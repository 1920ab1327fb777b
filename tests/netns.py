"""Two faithful "hosts" on one machine: a network namespace (with its own UTS name) joined by a veth pair.

msrun on node 1 runs inside the namespace, so the master address is not one of its addresses and it
starts no scheduler, exactly as on a second host (msrun's _is_local_ip reads `ip -j addr`).
Needs root (CI runs as root); :func:`available` says why not otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional


def _ip(*args: str, ns: Optional[str] = None) -> subprocess.CompletedProcess:
    argv = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20)


@dataclass
class TwoHosts:
    ns: str
    host_if: str
    ns_if: str
    master_ip: str
    node1_ip: str

    def prefix(self, hostname: str = "node1") -> list[str]:
        """argv prefix that runs a command "on node 1": in the namespace, with its own host name."""
        return [
            "ip",
            "netns",
            "exec",
            self.ns,
            "unshare",
            "--uts",
            "sh",
            "-c",
            f'hostname {hostname} && exec "$@"',
            "node1",
        ]

    def teardown(self) -> None:
        subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True)
        _ip("netns", "del", self.ns)
        _ip("link", "del", self.host_if)  # gone with the namespace already, normally


def available() -> Optional[str]:
    """None when namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return None


def setup(tag: str, subnet: int) -> TwoHosts:
    """A namespace msd<tag> and the veth pair; addresses 10.<subnet>.<x>.1 (host) and .2 (namespace)."""
    ns = f"msd{tag}"[:15]
    host_if, ns_if = f"vh{tag}"[:15], f"vn{tag}"[:15]
    a, b = divmod(subnet, 250)
    master, node1 = f"10.{200 + a % 50}.{b}.1", f"10.{200 + a % 50}.{b}.2"
    hosts = TwoHosts(ns, host_if, ns_if, master, node1)
    steps = [
        (("netns", "add", ns), None),
        (("link", "add", host_if, "type", "veth", "peer", "name", ns_if), None),
        (("link", "set", ns_if, "netns", ns), None),
        (("addr", "add", f"{master}/24", "dev", host_if), None),
        (("link", "set", host_if, "up"), None),
        (("addr", "add", f"{node1}/24", "dev", ns_if), ns),
        (("link", "set", ns_if, "up"), ns),
        (("link", "set", "lo", "up"), ns),
    ]
    for args, where in steps:
        r = _ip(*args, ns=where)
        if r.returncode != 0:
            hosts.teardown()
            raise OSError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return hosts
