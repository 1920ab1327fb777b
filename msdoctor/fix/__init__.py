"""Fixers: the repair that belongs to a check, in three typed steps.

A fixer lives next to its check (``checks/<id>/fix.py``; the check names it in its ``fixer`` member) and
``msdoctor fix CHECK-ID`` runs it (``fix-stack`` and ``fix-kernel`` are the names of two of them):

1. ``plan(ctx)``: a typed plan, computed from the same facts the check read; nothing is changed;
2. ``verify(plan, ctx)``: the check's own rules run again on the facts as they would be after the plan
   (an overlay, nothing installed or written): the problems the plan would leave, ``[]`` when it repairs
   all it claims to; a plan that does not verify is not applied;
3. ``apply(plan, ctx, on_line)``: the change itself, after the user confirmed; then the command runs the
   check again on the real facts and reports before and after.

This package holds what fixers share (the target's pip as an oracle, msdoctor/fix/resolver.py). The two
fixers: version-matrix's (checks/version_matrix/fix.py, ``fix-stack``) and kernel-mismatch's
(checks/kernel_mismatch/fixer.py over the steps of fix.py, ``fix-kernel``); each is typed as a ``Fixer`` of
its plan where it is defined, so mypy checks that it follows this protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context
    from msdoctor.model import Finding

PlanT = TypeVar("PlanT")


@dataclass(frozen=True)
class Applied:
    """What ``apply`` did: ``ok`` when the change completed; ``detail`` says what happened, or why not."""

    ok: bool
    detail: str


class Fixer(Protocol[PlanT]):
    """The repair of one check's findings (see the module docstring)."""

    check_id: str

    def plan(self, ctx: "Context") -> PlanT:  # pragma: no cover - protocol
        ...

    def verify(self, plan: PlanT, ctx: "Context") -> "list[Finding]":  # pragma: no cover - protocol
        ...

    def apply(self, plan: PlanT, ctx: "Context", on_line: Callable[[str], None]) -> Applied:  # pragma: no cover
        ...
