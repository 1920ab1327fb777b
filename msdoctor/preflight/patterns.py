"""Collective inputs in which every rank's contribution sits at a known position, and what must come back.

Plain Python lists, small integers only, so the expected result is exact in every dtype the check uses
(bfloat16 holds integers exactly up to 256, float16 up to 2048). A missing rank, a rank counted twice,
or ranks gathered in the wrong order each give a different, recognisable result, and :func:`explain`
says which one it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

#: elements each rank contributes per slot; small so that a 1024-rank job still has exact values
SLOT = 4


@dataclass(frozen=True)
class Case:
    op: str  # AllReduce | AllGather | Broadcast | ReduceScatter
    inputs: list[float]  # this rank's input
    expected: list[float]  # what this rank must receive


def exact_limit(dtype: str) -> int:
    """The largest integer every smaller non-negative integer is exact below, for a dtype."""
    return {"bfloat16": 256, "float16": 2048, "int8": 127}.get(dtype, 1 << 24)


def allreduce_sum(rank: int, world: int) -> Case:
    """Rank r puts (r+1) at the positions i with i % world == r, zero elsewhere.

    The SUM is (i % world) + 1 at position i: every position shows which rank filled it, so a missing
    rank leaves zeros at its positions and a double count doubles them. Values stay <= world.
    """
    n = max(world, 2) * 2
    inputs = [float(rank + 1) if i % world == rank else 0.0 for i in range(n)]
    expected = [float(i % world + 1) for i in range(n)]
    return Case("AllReduce", inputs, expected)


def allgather(rank: int, world: int, dtype: str = "float32") -> Case:
    """Rank r contributes [v(r,0) .. v(r,SLOT-1)]; the result is every rank's slot in rank order."""

    def v(r: int, j: int) -> float:
        return float((r * SLOT + j) % exact_limit(dtype))

    return Case("AllGather", [v(rank, j) for j in range(SLOT)], [v(r, j) for r in range(world) for j in range(SLOT)])


def broadcast(rank: int, world: int, root: int = 0) -> Case:
    """The root sends 1..n, the others send zeros; everyone must receive 1..n."""
    n = SLOT * 2
    pattern = [float(j + 1) for j in range(n)]
    return Case("Broadcast", pattern if rank == root else [0.0] * n, pattern)


def reducescatter_sum(rank: int, world: int) -> Case:
    """Input of world x SLOT elements; rank r puts (chunk index + 1) at the positions j with j % world == r.

    Each position of the SUM has exactly one contributor, so chunk c of the sum is c+1 everywhere and
    rank r receives SLOT copies of r+1; a missing rank leaves zeros in the chunks it should have filled.
    """
    n = world * SLOT
    inputs = [float(j // SLOT + 1) if j % world == rank else 0.0 for j in range(n)]
    expected = [float(rank + 1)] * SLOT
    return Case("ReduceScatter", inputs, expected)


def explain(case: Case, got: Sequence[float], world: int) -> Optional[str]:
    """None when ``got`` is what was expected, else what the difference means, in one line."""
    got = [float(x) for x in got]
    if len(got) != len(case.expected):
        return f"{case.op} returned {len(got)} elements, expected {len(case.expected)}"
    bad = [i for i, (a, b) in enumerate(zip(got, case.expected)) if a != b]
    if not bad:
        return None
    i = bad[0]
    head = f"{len(bad)} of {len(got)} elements wrong (first at [{i}]: got {got[i]:g}, expected {case.expected[i]:g})"
    if case.op == "AllReduce":
        ranks = sorted({j % world for j in bad})
        zero = all(got[j] == 0 for j in bad)
        twice = all(got[j] == 2 * case.expected[j] for j in bad)
        what = "missing" if zero else "counted twice" if twice else "wrong"
        return f"{head}: the contribution of rank(s) {_ranks(ranks)} is {what}"
    if case.op == "AllGather":
        slots = sorted({j // SLOT for j in bad})
        found = []
        for s in slots:
            chunk = got[s * SLOT : (s + 1) * SLOT]
            for r in range(world):
                if chunk == case.expected[r * SLOT : (r + 1) * SLOT]:
                    found.append(f"slot {s} holds rank {r}'s data")
                    break
            else:
                found.append(f"slot {s} holds no rank's data")
        return f"{head}: " + "; ".join(found[:4])
    return head


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks[:8]) + (" ..." if len(ranks) > 8 else "")
