"""Timing helpers shared by the benchmark scripts (wall clock, median and best of N)."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def samples(fn: Callable[[], object], runs: int, *, warmup: bool = False) -> list[float]:
    """Wall seconds of ``runs`` calls of fn (after one untimed call when warmup)."""
    if warmup:
        fn()
    out = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def median_of(fn: Callable[[], object], runs: int) -> float:
    """Median wall seconds of runs calls."""
    return statistics.median(samples(fn, runs))


def median_min_ms(fn: Callable[[], object], runs: int, *, warmup: bool = False) -> tuple[float, float]:
    """(median, min) wall milliseconds; the min is the better estimate on a busy machine."""
    times = samples(fn, runs, warmup=warmup)
    return statistics.median(times) * 1000, min(times) * 1000
