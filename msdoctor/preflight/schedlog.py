"""Which nodes never joined, from msrun's scheduler.log.

When the cluster does not form, msrun prints ``Time out nodes are []`` and names nobody (its
_analyze_log greps for "node: .* is timed out", which MindSpore 2.7.0 does not write while the topology
is still being built). The scheduler does log every registration (meta_server_node.cc ProcessRegister,
observed on MindSpore 2.7.0)::

    The new node: 0(role: MS_WORKER), rank id: 0, device id: 0, hostname: vm, ip: 127.0.0.1 is registered
    successfully. Currently registered node number: 1, expected node number: 4

(parsed by :mod:`msdoctor.cluster_logs`, which ``msdoctor explain`` uses too), so the rank ids that never registered are range(expected) minus the registered ones, and with
``local_worker_num`` (given, or read from the registered nodes' device ids) their node ranks follow:
msrun numbers ranks node_rank * local_worker_num + local index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from msdoctor.cluster_logs import NodeRecord, node_ranks, workers_per_node

TOPO_TIMEOUT = re.compile(r"Topology build timed out\., retry\((\d+)/(\d+)\)")
SCHED_FAILED = "Building networking for MS_SCHED failed"
TCP_SERVER = "Failed to init the tcp server"


@dataclass
class SchedulerLog:
    path: Optional[str]
    registered: list[NodeRecord] = field(default_factory=list)
    expected: Optional[int] = None
    topology_timeouts: int = 0
    failed: bool = False
    timed_out_nodes: list[str] = field(default_factory=list)
    tcp_server_failed: bool = False

    def missing_ranks(self, expected: Optional[int] = None) -> list[int]:
        """Rank ids that never registered (``expected``: the world size, when the log names none)."""
        total = self.expected if self.expected is not None else expected
        if total is None:
            return []
        seen = {r.rank for r in self.registered if r.rank is not None}
        return [r for r in range(total) if r not in seen]

    def infer_local_worker_num(self) -> Optional[int]:
        """Workers per node, when every registered host shows the same count (device ids 0..k-1)."""
        return workers_per_node(self.registered, self.expected)

    def missing_nodes(
        self, local_worker_num: Optional[int] = None, expected: Optional[int] = None
    ) -> dict[int, list[int]]:
        """node_rank -> the rank ids of it that never registered ({} when the node ranks cannot be derived)."""
        k = local_worker_num or self.infer_local_worker_num()
        return node_ranks(self.missing_ranks(expected), k) if k else {}

    def summary(self, local_worker_num: Optional[int] = None, expected: Optional[int] = None) -> str:
        """One line a person can act on."""
        from .cluster import ranks_text

        if self.tcp_server_failed and not self.registered:
            return (
                'the scheduler could not listen on its port ("Failed to init the tcp server"): another process '
                "holds it; `msdoctor preflight plan` names the holder"
            )
        total = self.expected if self.expected is not None else expected
        if total is None or (not self.registered and not local_worker_num):
            if self.failed:
                return "the cluster did not form and no worker ever registered with the scheduler"
            return "no registration seen in the scheduler log"
        missing = self.missing_ranks(total)
        if not missing:
            return f"all {total} workers registered with the scheduler"
        nodes = self.missing_nodes(local_worker_num, total)
        head = f"{len(self.registered)} of {total} workers registered"
        if nodes:
            parts = [f"node_rank {n} (ranks {ranks_text(rs)})" for n, rs in sorted(nodes.items())]
            return f"{head}; never registered: " + ", ".join(parts)
        return f"{head}; rank ids never registered: {ranks_text(missing)}"


def parse(text: str, path: Optional[str] = None) -> SchedulerLog:
    """Registrations through msdoctor.cluster_logs (shared with ``msdoctor explain``), plus how the build ended."""
    from msdoctor.cluster_logs import parse_scheduler_log

    lines = text.splitlines()
    summary = parse_scheduler_log(lines)
    out = SchedulerLog(
        path,
        registered=sorted(summary.registered.values(), key=lambda n: (n.rank is None, n.rank or 0)),
        expected=summary.expected,
        timed_out_nodes=list(summary.timed_out),
    )
    for line in lines:
        if TOPO_TIMEOUT.search(line):
            out.topology_timeouts += 1
        elif SCHED_FAILED in line:
            out.failed = True
        elif TCP_SERVER in line:
            out.tcp_server_failed = True
    return out


def read(path: Path) -> SchedulerLog:
    return parse(Path(path).read_text(encoding="utf-8", errors="replace"), str(path))
