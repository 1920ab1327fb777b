"""Helpers shared by the line-oriented renderers (github, vscode, junit, markdown): which findings to show, how."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Optional

from msdoctor.model import Finding, Report, Status

#: the pseudo check id of report-level notices (e.g. a bad suppression)
NOTICE_ID = "msdoctor"


@dataclass(frozen=True)
class Item:
    """One finding with the id of the check (or NOTICE_ID) it belongs to."""

    check_id: str
    finding: Finding

    @property
    def ref(self) -> str:
        """``check-id/code`` when the finding has a code (what a suppression names), else ``check-id``."""
        return f"{self.check_id}/{self.finding.code}" if self.finding.code else self.check_id

    @property
    def severity(self) -> str:
        """Editor/CI severity word: error, warning or info (suppressed problems are info)."""
        return severity_of(self.finding)


def severity_of(f: Finding) -> str:
    if f.suppressed is not None and f.status > Status.SKIP:
        return "info"
    if f.status >= Status.FAIL:
        return "error"
    if f.status is Status.WARN:
        return "warning"
    return "info"


def problems(report: Report) -> Iterator[Item]:
    """Every warn/fail/error finding (suppressed ones too), notices first, most severe first per check."""
    for n in report.notices:
        if n.status > Status.SKIP:
            yield Item(NOTICE_ID, n)
    for r in report.results:
        for f in sorted(r.findings, key=lambda f: f.status, reverse=True):
            if f.status > Status.SKIP:
                yield Item(r.id, f)


_WS = re.compile(r"\s*[\r\n]+\s*")


def one_line(text: Optional[str]) -> str:
    """Collapse line breaks (and the indentation around them) into single spaces."""
    return _WS.sub(" ", text or "").strip()


def message(f: Finding, *, with_detail: bool = False) -> str:
    """The one-line message of a finding: title, optional detail, the fix and a suppression mark."""
    parts = [one_line(f.title)]
    if with_detail and f.detail:
        parts.append(one_line(f.detail))
    if f.fix:
        parts.append("fix: " + one_line(f.fix))
    text = " — ".join(parts)
    if f.suppressed is not None:
        text += f" (suppressed: {one_line(f.suppressed)})"
    return text


def verdict_word(report: Report, fail_on: Status) -> str:
    code = int(report.exit_code(fail_on))
    return {0: "healthy", 1: "problems found", 3: "no verdict"}.get(code, "")


def checks_phrase(report: Report) -> str:
    """'3 checks (2 pass, 1 warn)' for summary lines."""
    n = len(report.results)
    counts = ", ".join(f"{k} {s}" for s, k in report.counts().items() if k) or "none ran"
    return f"{n} check{'' if n == 1 else 's'} ({counts})"
