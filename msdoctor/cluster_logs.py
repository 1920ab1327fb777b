"""Read msrun's logs: which node ranks registered with the scheduler, which never did, which timed out (pure).

msrun (MindSpore's launcher) writes ``scheduler.log`` and ``worker_N.log`` under ``--log_dir``. The scheduler
logs one line per node that registers (MindSpore 2.7.0, meta_server_node.cc ProcessRegister)::

    ... The new node: 1(role: MS_WORKER), rank id: 1, device id: 1, hostname: vm, ip: 127.0.0.1 is registered
    successfully. Currently registered node number: 1, expected node number: 4

and, when a registered node stops sending heartbeats, ``The node: 3 is timed out``. When a node never starts,
msrun prints ``Time out nodes are []`` and names nobody; the registration lines are the only record of who
came (observed: tests/data/cluster/README.md). Used by ``msdoctor explain`` and by the multi-node preflight.

Usage::

    from msdoctor.cluster_logs import read_scheduler_log
    summary = read_scheduler_log(Path("msrun_log/scheduler.log"))
    summary.missing_ranks      # [2, 3]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

#: literals a line must contain to be worth the regexes below (cheap prefilter for long logs)
LITERALS = ("registered successfully", "is timed out")

_REGISTERED = re.compile(
    r"The new node: (?P<node>[^\s(,]+)(?:\(role: (?P<role>\w+)\))?"
    r"(?:, rank id: (?P<rank>-?\d+))?(?:, device id: (?P<device>-?\d+))?"
    r"(?:, hostname: (?P<host>[^,]*))?(?:, ip: (?P<ip>[^\s,]+))?"
    r".*?is registered successfully\.?"
    r"(?:\s*Currently registered node number: (?P<count>\d+), expected node number: (?P<expected>\d+))?"
)
_TIMED_OUT = re.compile(r"The node: (?P<node>[^\s,]+) is timed out")


@dataclass(frozen=True)
class NodeRecord:
    """One node (rank process) that registered with the scheduler."""

    node_id: str
    rank: Optional[int]
    role: Optional[str] = None
    device_id: Optional[int] = None
    hostname: Optional[str] = None
    ip: Optional[str] = None
    line_no: int = 0


def workers_per_node(records: Iterable[NodeRecord], expected: Optional[int] = None) -> Optional[int]:
    """Workers per node, when every registered host shows the same count (device ids 0..k-1), else None.

    msrun gives a node's workers device ids 0..local_worker_num-1 and rank ids
    node_rank * local_worker_num + local index (mindspore/parallel/cluster/process_entity/_api.py)."""
    per_host: dict[str, set[int]] = {}
    for r in records:
        if r.device_id is not None:
            per_host.setdefault(f"{r.hostname}/{r.ip}", set()).add(r.device_id)
    sizes = {max(d) + 1 for d in per_host.values() if d}
    if len(sizes) == 1:
        k = sizes.pop()
        if k > 0 and (expected is None or expected % k == 0):
            return k
    return None


def node_ranks(ranks: Iterable[int], per_node: int) -> dict[int, list[int]]:
    """node_rank -> its rank ids, for msrun's numbering (rank = node_rank * per_node + local index)."""
    out: dict[int, list[int]] = {}
    for r in sorted(ranks):
        out.setdefault(r // per_node, []).append(r)
    return out


@dataclass
class SchedulerSummary:
    """What a scheduler.log says about the cluster."""

    expected: Optional[int] = None
    registered: dict[str, NodeRecord] = field(default_factory=dict)
    timed_out: list[str] = field(default_factory=list)
    last_count: Optional[int] = None

    @property
    def registered_ranks(self) -> list[int]:
        return sorted(n.rank for n in self.registered.values() if n.rank is not None)

    @property
    def missing_ranks(self) -> Optional[list[int]]:
        """Ranks 0..expected-1 that never registered; None when the log does not say how many to expect
        or the nodes carry no rank (then only the count is known)."""
        if self.expected is None or any(n.rank is None for n in self.registered.values()):
            return None
        return sorted(set(range(self.expected)) - set(self.registered_ranks))

    @property
    def complete(self) -> bool:
        return self.expected is not None and len(self.registered) >= self.expected

    @property
    def hosts(self) -> dict[str, list[int]]:
        """Registered ranks per host (hostname or ip)."""
        out: dict[str, list[int]] = {}
        for n in self.registered.values():
            out.setdefault(n.hostname or n.ip or "?", []).append(n.rank if n.rank is not None else -1)
        return {h: sorted(r) for h, r in out.items()}

    def missing_nodes(self, per_node: Optional[int] = None) -> dict[int, list[int]]:
        """node_rank -> its rank ids that never registered; {} when the node ranks cannot be derived."""
        missing = self.missing_ranks
        k = per_node or workers_per_node(self.registered.values(), self.expected)
        return node_ranks(missing, k) if missing and k else {}

    def describe(self) -> str:
        """One sentence for a person: who registered, who never did."""
        if self.expected is None:
            return f"{len(self.registered)} node(s) registered with the scheduler; the log does not say how many were expected"
        missing = self.missing_ranks
        nodes = self.missing_nodes()
        k = workers_per_node(self.registered.values(), self.expected)
        where = (
            (
                " ("
                + ", ".join(f"node_rank {n}: ranks {', '.join(map(str, rs))}" for n, rs in sorted(nodes.items()))
                + f"; {k} workers per node, as on the nodes that registered)"
            )
            if nodes
            else ""
        )
        who = (
            f"ranks {', '.join(map(str, missing))} never registered{where}"
            if missing
            else f"{self.expected - len(self.registered)} node(s) never registered"
            if not self.complete
            else "every expected node registered"
        )
        hosts = "; ".join(f"{h}: ranks {', '.join(map(str, r))}" for h, r in sorted(self.hosts.items()))
        text = (
            f"{len(self.registered)} of {self.expected} nodes registered with the scheduler ({hosts or 'none'}); {who}"
        )
        if self.timed_out:
            text += f"; timed out later: node(s) {', '.join(self.timed_out)}"
        return text


class SchedulerLogParser:
    """Feed lines one at a time (a log can be large); ``summary`` holds the state so far."""

    def __init__(self) -> None:
        self.summary = SchedulerSummary()

    def feed(self, line: str, line_no: int = 0) -> bool:
        """Read one line; True when it said something about the cluster."""
        if "registered successfully" in line:
            m = _REGISTERED.search(line)
            if m is None:
                return False
            rank = m.group("rank")
            if rank is None and m.group("node").isdigit():
                rank = m.group("node")  # older logs: the node id is the rank when msrun sets --node_rank
            node = NodeRecord(
                node_id=m.group("node"),
                rank=int(rank) if rank is not None else None,
                role=m.group("role"),
                device_id=int(m.group("device")) if m.group("device") else None,
                hostname=(m.group("host") or "").strip() or None,
                ip=m.group("ip"),
                line_no=line_no,
            )
            if node.role not in (None, "MS_WORKER"):
                return False
            self.summary.registered[node.node_id] = node
            if m.group("expected"):
                self.summary.expected = int(m.group("expected"))
                self.summary.last_count = int(m.group("count"))
            return True
        if "is timed out" in line:
            t = _TIMED_OUT.search(line)
            if t and t.group("node") not in self.summary.timed_out:
                self.summary.timed_out.append(t.group("node"))
                return True
        return False


def parse_scheduler_log(lines: Iterable[str]) -> SchedulerSummary:
    parser = SchedulerLogParser()
    for no, line in enumerate(lines, 1):
        if "registered successfully" in line or "is timed out" in line:
            parser.feed(line, no)
    return parser.summary


def read_scheduler_log(path: Path) -> SchedulerSummary:
    """Parse a scheduler.log from disk (undecodable bytes replaced)."""
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        return parse_scheduler_log(fh)
