"""Bandwidth figures as nccl-tests reports them, and a baseline to judge them against.

NVIDIA/nccl-tests doc/PERFORMANCE.md (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
``algbw = S / t`` with S the bytes of the operation and t its time; ``busbw = algbw * 2(n-1)/n`` for
AllReduce and ``algbw * (n-1)/n`` for AllGather and ReduceScatter (S there is the total buffer,
n times one rank's part), ``busbw = algbw`` for Broadcast. The time of one size is the slowest rank's
(nccl-tests reports the maximum over ranks), so a slow link or rank shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

BUS_FACTOR = {
    "AllReduce": lambda n: 2.0 * (n - 1) / n,
    "AllGather": lambda n: (n - 1) / n,
    "ReduceScatter": lambda n: (n - 1) / n,
    "Broadcast": lambda n: 1.0,
}


def algbw(size_bytes: int, seconds: float) -> float:
    """GB/s (1e9 bytes per second), as nccl-tests prints it."""
    return size_bytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw(op: str, size_bytes: int, seconds: float, ranks: int) -> float:
    return algbw(size_bytes, seconds) * BUS_FACTOR[op](ranks) if ranks > 0 else 0.0


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int = 4) -> list[int]:
    """min, min*factor, ... up to max (inclusive), each a multiple of 4 bytes (float32 elements)."""
    sizes, s = [], max(4, min_bytes - min_bytes % 4)
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return sizes


#: default sweeps: CPU (mccl over TCP: 0.016 GB/s busbw at 16 MiB observed on 2 cores) and devices
DEFAULT_SWEEP = {"CPU": (4 << 10, 4 << 20), "Ascend": (1 << 20, 1 << 30), "GPU": (1 << 20, 1 << 30)}


@dataclass(frozen=True)
class Row:
    group: str  # "world", "intra-node", "inter-node"
    op: str
    size_bytes: int
    ranks: int
    time_s: float  # the slowest rank's mean time per iteration
    algbw_gbs: float
    busbw_gbs: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "op": self.op,
            "size_bytes": self.size_bytes,
            "ranks": self.ranks,
            "time_s": self.time_s,
            "algbw_gbs": self.algbw_gbs,
            "busbw_gbs": self.busbw_gbs,
        }


def row(group: str, op: str, size_bytes: int, per_rank_seconds: Sequence[float]) -> Row:
    """One size of the sweep from every rank's own time: the slowest rank's time counts."""
    n = len(per_rank_seconds)
    t = max(per_rank_seconds) if per_rank_seconds else 0.0
    return Row(group, op, size_bytes, n, t, algbw(size_bytes, t), busbw(op, size_bytes, t, n))


# Baselines -------------------------------------------------------------------------------------


class BaselineError(Exception):
    pass


@dataclass(frozen=True)
class Verdict:
    status: str  # pass | warn | fail | none
    row: Row
    baseline_gbs: Optional[float]
    ratio: Optional[float]


def load_baseline(path: Path) -> dict[str, Any]:
    """A baseline file: ``{"warn_below": 0.8, "fail_below": 0.5, "busbw_gbs": {"world/AllReduce/1048576": 12.3}}``.

    A preflight-report.json from an earlier good run is accepted as well: its bandwidth rows become the baseline.
    """
    from msdoctor.docfile import load_json_file
    from msdoctor.errors import UserError

    from msdoctor.schema import BASELINE, EARLIER_REPORT, require

    fix = (
        'write {"busbw_gbs": {"GROUP/OP/BYTES": GB/s}} (optional "warn_below"/"fail_below", 0..1), '
        "or pass an earlier preflight-report.json"
    )
    try:  # the one bounded reader: a FIFO, /dev/zero, a flood or deep nesting is refused, never read
        doc = load_json_file(Path(path), "baseline")
        data = doc.data
        if isinstance(data, dict) and "bandwidth" in data:  # an earlier preflight report
            require(doc, EARLIER_REPORT, what="a preflight-report.json", fix=fix)
            return {"busbw_gbs": {key(r["group"], r["op"], r["size_bytes"]): r["busbw_gbs"] for r in data["bandwidth"]}}
        return dict(require(doc, BASELINE, what="a busbw baseline", fix=fix))
    except UserError as exc:
        raise BaselineError(exc.message) from None


def key(group: str, op: str, size_bytes: int) -> str:
    return f"{group}/{op}/{size_bytes}"


def judge(rows: Sequence[Row], baseline: Optional[dict[str, Any]]) -> list[Verdict]:
    if not baseline:
        return [Verdict("none", r, None, None) for r in rows]
    warn_below = float(baseline.get("warn_below", 0.8))
    fail_below = float(baseline.get("fail_below", 0.5))
    out = []
    for r in rows:
        ref = baseline["busbw_gbs"].get(key(r.group, r.op, r.size_bytes))
        if not ref:
            out.append(Verdict("none", r, None, None))
            continue
        ratio = r.busbw_gbs / float(ref)
        status = "fail" if ratio < fail_below else "warn" if ratio < warn_below else "pass"
        out.append(Verdict(status, r, float(ref), ratio))
    return out
