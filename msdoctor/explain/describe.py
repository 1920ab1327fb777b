"""The answer: a :class:`Match` (one explained error) and its plain-text description."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from msdoctor.explain.catalogue import _fill


@dataclass(frozen=True)
class Match:
    """A catalogue entry found in a text.

    Attributes:
        entry_id: the catalogue entry's id.
        title: what happened, in one line.
        cause: why it happens (placeholders filled from the matched text).
        fix: what to do; ``{python}``/``{config}`` are filled by :meth:`fix_for`, other placeholders from the match.
        check_id: the msdoctor check that detects the cause, or None.
        source: where the signature and the fix come from.
        line: the matched line (stripped; a window of it when the line is long; joined when wrapped).
        line_no: its 1-based line number in the text.
        count: how many lines matched this entry.
        groups: named groups of the match (and values the entry's lookup added).
        device_target: the device the error is about (Ascend, GPU), when the entry or the text says so.
        category: the entry's cause category.
        log_cause / log_solution: the log's own "Possible Cause:" / "Solution:" lines that follow the match.
    """

    entry_id: str
    title: str
    cause: str
    fix: str
    check_id: Optional[str]
    source: str
    line: str
    line_no: int
    count: int = 1
    groups: Mapping[str, str] = field(default_factory=dict)
    device_target: Optional[str] = None
    category: str = ""
    log_cause: Optional[str] = None
    log_solution: Optional[str] = None

    def fix_for(
        self, python: Optional[str], config: Optional[str] = None, values: Optional[Mapping[str, str]] = None
    ) -> str:
        """The fix with ``{python}`` (the target interpreter), ``{config}`` (the training config, when known)
        and any further ``values`` filled in."""
        filled = {"python": python or "python", "config": config or "<your training config>"}
        filled.update(values or {})
        return _fill(self.fix, filled)


def describe(match: Match, python: Optional[str] = None, config: Optional[str] = None) -> str:
    """A plain-text explanation of one match (for logs and the trainer's failure message)."""
    lines = [
        f"{match.title}  [{match.entry_id}]",
        f"  line {match.line_no}: {match.line[:300]}" + (f"  (x{match.count})" if match.count > 1 else ""),
        f"  cause: {match.cause}",
    ]
    if match.log_cause:
        lines.append(f"  the log's own cause: {match.log_cause}")
    lines.append(f"  fix:   {match.fix_for(python, config)}")
    if match.log_solution:
        lines.append(f"  the log's own solution: {match.log_solution}")
    if match.check_id:
        lines.append(f"  check: msdoctor check --only {match.check_id}")
    lines.append(f"  source: {match.source}")
    return "\n".join(lines)
