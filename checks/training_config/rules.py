"""The training-config rules: pure functions of a resolved config and the facts around it.

Each ``rule_*`` takes a :class:`msdoctor.domain.run_plan.Resolved` and an :class:`Env` (what the check found
out: devices, free disk, the datasets, a throughput) and returns findings; :func:`evaluate`
runs them all. Nothing here reads a file or the environment, so tests call them directly.
Every finding points at the key's file:line and gives the exact edit. Sources of each rule
are in docs/training-config-check.md and next to the rule.

The rules live by family: schedule.py (batch, learning rate, warmup), precision.py, layout.py (the parallel
layout and pipeline), storage.py (checkpoints and datasets); common.py holds what they share. This module
keeps the directives rule, the list of rules and the names other modules import from here.
"""

from __future__ import annotations

from typing import Callable

from msdoctor.domain.pipeline import stage_layers
from msdoctor.domain.run_plan import Resolved
from msdoctor.model import Finding, Location

from .common import DEFAULT_MAX_LOST_HOURS, CheckpointSize, DataFacts, Env, Fact
from .layout import rule_layout
from .precision import rule_precision
from .schedule import rule_batch, rule_batch_range, rule_lr, rule_warmup, total_steps, warmup_steps
from .storage import rule_checkpoint_disk, rule_checkpoint_interval, rule_data

__all__ = [
    "DEFAULT_MAX_LOST_HOURS",
    "RULES",
    "CheckpointSize",
    "DataFacts",
    "Env",
    "Fact",
    "evaluate",
    "rule_batch",
    "rule_batch_range",
    "rule_checkpoint_disk",
    "rule_checkpoint_interval",
    "rule_data",
    "rule_directives",
    "rule_layout",
    "rule_lr",
    "rule_precision",
    "rule_warmup",
    "stage_layers",
    "total_steps",
    "warmup_steps",
]


def rule_directives(res: Resolved, env: Env) -> list[Finding]:
    from msdoctor.shipped import path as shipped

    return [
        Finding.warn(
            msg,
            detail=f"msdoctor reads `# msdoctor: key=value` comments ({shipped('docs/training-config-check.md')})",
            fix=f"{res.path}:{line}: correct or remove the comment",
            location=Location(str(res.path), line),
            code="directive",
        )
        for line, msg in res.directive_problems
    ]


RULES: tuple[Callable[[Resolved, Env], list[Finding]], ...] = (
    rule_batch,
    rule_lr,
    rule_warmup,
    rule_batch_range,
    rule_precision,
    rule_layout,
    rule_checkpoint_disk,
    rule_checkpoint_interval,
    rule_data,
    rule_directives,
)


def evaluate(res: Resolved, env: Env) -> list[Finding]:
    """Every rule's findings for one config (pure)."""
    out: list[Finding] = []
    for rule in RULES:
        out += rule(res, env)
    return out
