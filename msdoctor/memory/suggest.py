"""Suggestions: the smallest changes to a training setup that make it fit, each with its cost.

The search looks at the neighbourhood of the config: a higher recompute level, a
higher optimizer-sharding level, sequence parallel, flash attention, a smaller
micro-batch with more accumulation (same global batch), and other data / tensor /
pipeline splits of the same devices (same global batch). It tries single changes
first, then pairs and triples built from the most promising non-fitting ones (a
beam), until enough cheap ones fit, and ranks what fits by cost (a small charge per
extra knob), then by total.

Costs (Korthikanti et al. 2022, arXiv 2205.05198, Tables 4-5): full recompute re-runs the forward in backward,
~30-40% more compute (Korthikanti et al. 2022; Table 4: +39% per layer); selective
recompute +2.7% FLOPs for GPT-3 (+4-7% time in Table 4); sequence parallel moves the
same bytes as TP's all-reduce (Table 4: -3% time); a pipeline of p stages and m
micro-batches idles (p-1)/(m+p-1) of the step (1F1B bubble).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Optional

from msdoctor.memory.estimator import SHARD_LEVEL, estimate, shard_degree
from msdoctor.memory.spec import Device, ModelShape, Setup, verdict_of

#: the most TP devices suggested: TP collectives run on every layer and belong inside one node
MAX_TP = 8


@dataclass(frozen=True)
class Change:
    """One knob turned: which fields change to what, and what it costs."""

    kind: str  # recompute | optimizer_sharding | sequence_parallel | flash_attention | micro_batch | layout
    text: str
    cost: str
    score: float
    edits: tuple = ()  # ((field, new value), ...) of msdoctor.memory.Setup


@dataclass(frozen=True)
class Suggestion:
    changes: tuple
    setup: Setup
    total: int
    verdict: str

    @property
    def score(self) -> float:
        return sum(c.score for c in self.changes)

    @property
    def text(self) -> str:
        return " + ".join(c.text for c in self.changes)

    @property
    def cost(self) -> str:
        return "; ".join(c.cost for c in self.changes)


def _divisors(n: int) -> list[int]:
    """The divisors of n in increasing order, in O(sqrt n) steps (validate bounds n, see validate.LIMITS)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def _recompute_moves(s: Setup) -> Iterator[tuple[Change, Setup]]:
    order = ("none", "selective", "full")
    here = order.index(s.recompute)
    if s.recompute == "full" and s.recompute_layers is not None:
        here = 1  # partial full recompute: recomputing every layer is still a step up
    for level in order[here + 1 :]:
        if level == "selective":
            what = (
                "the attention core and the FFN activation"
                if s.ffn_selective
                else "the attention core (QK^T, softmax, dropout)"
            )
            cost = f"~+3-7% step time: recomputes {what} (Korthikanti et al. 2022, Table 4)"
            score = 0.05
        else:
            cost = "~+33% compute: every layer's forward runs again in backward (Korthikanti et al. 2022: 30-40%)"
            score = 0.33
        yield (
            Change(
                "recompute",
                f"recompute {s.recompute} -> {level}",
                cost,
                score,
                (("recompute", level), ("recompute_layers", None)),
            ),
            s.with_(recompute=level, recompute_layers=None, selective_layers=None),
        )


_SHARD_COST = {
    "optimizer": ("one all-gather of the updated weights per step; no extra compute", 0.01),
    "grads": ("gradients reduce-scattered instead of all-reduced: about the same traffic", 0.02),
    "params": ("weights all-gathered again in forward and in backward: ~1.5x the data-parallel traffic", 0.12),
}


def _sharding_moves(s: Setup) -> Iterator[tuple[Change, Setup]]:
    if s.optimizer_shard_size is None and s.data_parallel * s.context_parallel == 1:
        return  # nothing to shard over
    here = SHARD_LEVEL[s.optimizer_sharding]
    for level in ("optimizer", "grads", "params"):
        if SHARD_LEVEL[level] <= here:
            continue
        cost, score = _SHARD_COST[level]
        probe = s.with_(optimizer_sharding=level)
        d = shard_degree(probe)
        yield (
            Change(
                "optimizer_sharding",
                f"optimizer sharding {s.optimizer_sharding} -> {level} (over {d} devices)",
                cost,
                score,
                (("optimizer_sharding", level),),
            ),
            probe,
        )


def _sp_moves(s: Setup) -> Iterator[tuple[Change, Setup]]:
    if s.tensor_parallel > 1 and not s.sequence_parallel:
        yield (
            Change(
                "sequence_parallel",
                "sequence parallel on",
                "none: all-gather/reduce-scatter replace TP's all-reduce, same bytes (Table 4: -3% time)",
                0.0,
                (("sequence_parallel", True),),
            ),
            s.with_(sequence_parallel=True),
        )


def _flash_moves(s: Setup, target: str) -> Iterator[tuple[Change, Setup]]:
    if not s.flash_attention and target != "CPU":
        yield (
            Change(
                "flash_attention",
                "flash attention on",
                "none: the fused kernel keeps no s x s score matrix and is faster (Ascend / GPU only)",
                0.0,
                (("flash_attention", True),),
            ),
            s.with_(flash_attention=True),
        )


def _micro_batch_moves(s: Setup) -> Iterator[tuple[Change, Setup]]:
    for mbs in reversed(_divisors(s.micro_batch_size)[:-1]):
        k = s.micro_batch_size // mbs
        if s.pipeline_stages > 1:
            new = s.with_(micro_batch_size=mbs, micro_batch_num=s.micro_batch_num * k)
            more = f"pipeline micro-batches {s.micro_batch_num} -> {new.micro_batch_num}"
            edits = (("micro_batch_size", mbs), ("micro_batch_num", new.micro_batch_num))
        else:
            new = s.with_(micro_batch_size=mbs, grad_accumulation=s.grad_accumulation * k)
            more = f"accumulation {s.grad_accumulation} -> {new.grad_accumulation}"
            edits = (("micro_batch_size", mbs), ("grad_accumulation", new.grad_accumulation))
        yield (
            Change(
                "micro_batch",
                f"micro-batch {s.micro_batch_size} -> {mbs}, {more}",
                f"smaller matmuls, lower device utilisation; global batch stays {s.global_batch}",
                0.04 * math.log2(k),
                edits,
            ),
            new,
        )


def _layout_moves(m: ModelShape, s: Setup, devices: int) -> Iterator[tuple[Change, Setup]]:
    cp = s.context_parallel
    if devices % cp:
        return
    n = devices // cp
    gb = s.global_batch
    for tp in _divisors(n):
        if tp > MAX_TP or m.num_heads % tp or m.kv_heads % tp or m.ffn % tp:
            continue
        for pp in _divisors(n // tp):
            if (m.num_layers + m.mtp_layers) % (pp * s.virtual_pipeline_chunks):
                continue
            dp = n // (tp * pp)
            if (dp, tp, pp) == (s.data_parallel, s.tensor_parallel, s.pipeline_stages):
                continue
            if (dp * cp) % max(1, s.expert_parallel):
                continue  # the experts are split over expert_parallel of the data-parallel devices
            per = s.micro_batch_size * dp
            if gb % per:
                continue
            micro = gb // per  # micro-batches per replica per step, to keep the global batch
            if pp > 1 and micro < pp:
                continue
            if pp > 1:
                new = s.with_(
                    data_parallel=dp,
                    tensor_parallel=tp,
                    pipeline_stages=pp,
                    micro_batch_num=micro,
                    grad_accumulation=1,
                    stage_offsets=None,
                    recompute_layers=None,
                    sequence_parallel=s.sequence_parallel and tp > 1,
                )
            else:
                new = s.with_(
                    data_parallel=dp,
                    tensor_parallel=tp,
                    pipeline_stages=1,
                    micro_batch_num=1,
                    grad_accumulation=micro,
                    stage_offsets=None,
                    recompute_layers=None,
                    sequence_parallel=s.sequence_parallel and tp > 1,
                )
            yield _layout_change(s, new, gb), new


def _layout_change(s: Setup, new: Setup, gb: int) -> Change:
    parts, costs, score = [], [], 0.01
    if new.tensor_parallel != s.tensor_parallel:
        parts.append(f"tensor parallel {s.tensor_parallel} -> {new.tensor_parallel}")
        if new.tensor_parallel > s.tensor_parallel:
            costs.append("TP collectives on every layer (keep TP within one node)")
            score += 0.06 * math.log2(new.tensor_parallel / s.tensor_parallel)
    if new.pipeline_stages != s.pipeline_stages:
        parts.append(f"pipeline stages {s.pipeline_stages} -> {new.pipeline_stages}")
        if new.pipeline_stages > 1:
            p, mb = new.pipeline_stages, new.micro_batch_num
            bubble = (p - 1) / (mb + p - 1)
            costs.append(f"pipeline bubble (p-1)/(m+p-1) = {p - 1}/{mb + p - 1} = {bubble:.0%} of the step idle")
            score += bubble
    if new.data_parallel != s.data_parallel:
        parts.append(f"data parallel {s.data_parallel} -> {new.data_parallel}")
    acc = (
        f"accumulation {s.grad_accumulation} -> {new.grad_accumulation}"
        if new.pipeline_stages == 1
        else f"{new.micro_batch_num} pipeline micro-batches"
    )
    costs.append(f"{acc} keeps the global batch {gb}")
    edits = tuple(
        (k, getattr(new, k))
        for k in (
            "data_parallel",
            "tensor_parallel",
            "pipeline_stages",
            "micro_batch_num",
            "grad_accumulation",
            "sequence_parallel",
        )
        if getattr(new, k) != getattr(s, k)
    )
    return Change("layout", ", ".join(parts), "; ".join(costs), score, edits)


def neighbours(m: ModelShape, s: Setup, target: str, devices: Optional[int]) -> Iterator[tuple[Change, Setup]]:
    """Every single change the search considers from setup s."""
    yield from _recompute_moves(s)
    yield from _sharding_moves(s)
    yield from _sp_moves(s)
    yield from _flash_moves(s, target)
    yield from _micro_batch_moves(s)
    yield from _layout_moves(m, s, devices or s.devices)


def search(
    model: ModelShape,
    setup: Setup,
    device: Device,
    *,
    devices: Optional[int] = None,
    limit: int = 3,
    max_changes: int = 3,
    beam: int = 6,
) -> list[Suggestion]:
    """The few smallest changes after which the estimate fits the device's capacity.

    Args:
        devices: devices to split over (default: the setup's own count).
        limit: how many suggestions to return.
        max_changes: the most knobs one suggestion turns.
        beam: non-fitting candidates carried from one depth to the next.

    Returns: suggestions that fit, not tight first, then cheapest (each extra change counts
    PER_CHANGE); empty when the capacity is unknown or no change within reach fits.
    """
    if device.capacity is None:
        return []
    base_total = estimate(model, setup, device).total
    frontier: list[Suggestion] = [Suggestion((), setup, base_total, verdict_of(base_total, device.capacity))]
    seen = {setup}
    found: list[Suggestion] = []
    for _ in range(max_changes):
        grown: list[Suggestion] = []
        for cand in frontier:
            used = {c.kind for c in cand.changes}
            for change, new in neighbours(model, cand.setup, device.target, devices):
                if change.kind in used or new in seen:
                    continue
                seen.add(new)
                changes = cand.changes + (change,)
                if any(_covers(f.changes, changes) for f in found):
                    continue  # a subset of these changes already fits
                total = estimate(model, new, device).total
                if total >= cand.total:
                    continue  # this change does not help here
                sug = Suggestion(changes, new, total, verdict_of(total, device.capacity))
                if sug.verdict in ("fits", "tight"):
                    found.append(sug)
                else:
                    grown.append(sug)
        cheap = [f for f in found if f.verdict == "fits" and f.score <= CHEAP]
        if len(cheap) >= limit or not grown:
            break  # enough cheap ones; else one more knob may give a cheaper fit than an expensive single
        grown.sort(key=lambda x: (x.total, x.score))
        frontier = grown[:beam]
    found.sort(key=_rank)
    return found[:limit]


#: a suggestion this cheap (score ~ fraction of step time) ends the search early
CHEAP = 0.1
#: what one more knob to turn counts for in the ranking (a change is work and risk too)
PER_CHANGE = 0.05


def _rank(s: Suggestion) -> tuple:
    """Not tight first, then by cost with a small charge per extra change, then smaller total."""
    return (s.verdict == "tight", round(s.score + PER_CHANGE * (len(s.changes) - 1), 6), s.total)


def _covers(small: tuple, big: tuple) -> bool:
    texts = {c.text for c in big}
    return all(c.text in texts for c in small)
