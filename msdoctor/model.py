"""The result model: plain data, no I/O.

A check returns findings; the runner wraps them in a CheckResult; a Report holds
the results of one run plus the identity of the target interpreter. Renderers
consume a finished Report and nothing else.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

#: Version of the JSON report schema (docs/report.schema.json). Bump on any
#: incompatible change; tools reading the JSON must check it.
SCHEMA_VERSION = 1


@functools.total_ordering
class Status(enum.Enum):
    """Outcome of a finding or a check, ordered by declaration: pass < skip < warn < fail < error."""

    PASS = "pass"
    SKIP = "skip"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.rank < other.rank

    @property
    def is_problem(self) -> bool:
        """fail and error always count as problems; warn only with --strict."""
        return self in (Status.FAIL, Status.ERROR)


_RANK = {s: i for i, s in enumerate(Status)}


class ExitCode(enum.IntEnum):
    """Process exit codes of msdoctor, stable for CI."""

    #: healthy: every check passed or was skipped (warnings allowed unless --strict)
    OK = 0
    #: at least one check failed or errored (or warned, with --strict / --fail-on warn)
    PROBLEMS = 1
    #: bad usage or unreadable input (missing file, malformed config, unknown check id)
    USAGE = 2
    #: msdoctor itself could not reach a verdict (target not probeable, internal error)
    NO_VERDICT = 3


@dataclass(frozen=True)
class Location:
    """Where a finding points: a file, optionally a line and column (1-based)."""

    path: str
    line: Optional[int] = None
    column: Optional[int] = None

    def __str__(self) -> str:
        out = self.path
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        return out


@dataclass(frozen=True)
class Finding:
    """One observation of a check.

    Attributes:
        status: severity of this finding (pass, skip, warn, fail, error).
        title: one line a person can act on ("mindspore is installed twice").
        detail: why it matters, and the facts behind it, in prose.
        fix: the exact command or edit that resolves it, written for the target
            interpreter (``/env/bin/python -m pip ...``), or None.
        location: file (and line) the finding is about, if any.
        docs: a link with background, if any.
        evidence: the typed facts the finding concluded from (no "N/A" strings:
            an unknown value is None).
        proved: for a pass, what exactly was shown to work.
        code: a stable sub-identifier ("same-project-twice") used by suppressions.
        suppressed: set by the suppression layer: the reason it was accepted.
    """

    status: Status
    title: str
    detail: str = ""
    fix: Optional[str] = None
    location: Optional[Location] = None
    docs: Optional[str] = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    proved: Optional[str] = None
    code: Optional[str] = None
    suppressed: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):
            raise TypeError(f"Finding.status must be a Status, got {self.status!r}")
        if not self.title or not self.title.strip():
            raise ValueError("a finding needs a title a person can act on")
        if self.status is Status.PASS and not self.proved:
            raise ValueError(f"a pass must say what it proved: {self.title!r}")
        if self.status is Status.SKIP and not (self.detail or self.title):
            raise ValueError("a skip must give its reason")

    # Constructors that read well inside checks -------------------------------
    @classmethod
    def passed(cls, title: str, *, proved: str, **kw: Any) -> "Finding":
        return cls(Status.PASS, title, proved=proved, **kw)

    @classmethod
    def skipped(cls, title: str, *, reason: str = "", **kw: Any) -> "Finding":
        return cls(Status.SKIP, title, detail=reason or kw.pop("detail", ""), **kw)

    @classmethod
    def warn(cls, title: str, **kw: Any) -> "Finding":
        return cls(Status.WARN, title, **kw)

    @classmethod
    def fail(cls, title: str, **kw: Any) -> "Finding":
        return cls(Status.FAIL, title, **kw)

    @classmethod
    def error(cls, title: str, **kw: Any) -> "Finding":
        return cls(Status.ERROR, title, **kw)

    @property
    def effective_status(self) -> Status:
        """The status that counts for the verdict: a suppressed problem counts as a pass."""
        if self.suppressed is not None and self.status > Status.SKIP:
            return Status.PASS
        return self.status


def worst(statuses: Iterable[Status], default: Status = Status.PASS) -> Status:
    """The most severe status of an iterable (default when empty)."""
    out = None
    for s in statuses:
        if out is None or s > out:
            out = s
    return default if out is None else out


@dataclass
class CheckResult:
    """The outcome of one check in one run."""

    id: str
    title: str
    description: str
    findings: Sequence[Finding]
    duration_s: float = 0.0
    #: provider of the check: "msdoctor" for built-ins, else the plugin's distribution
    provider: str = "msdoctor"
    #: the traceback of a crashed check, shown only in verbose output
    traceback: Optional[str] = None

    @property
    def status(self) -> Status:
        if not self.findings:
            # a check that returns nothing proved nothing: the runner never lets
            # this through, but a hand-built result must not read as a pass
            return Status.ERROR
        return worst(f.effective_status for f in self.findings)

    @property
    def proved(self) -> list[str]:
        return [f.proved for f in self.findings if f.status is Status.PASS and f.proved]


@dataclass
class Target:
    """Identity of the interpreter that was examined (from the probe)."""

    executable: str
    python_version: Optional[str] = None
    implementation: Optional[str] = None
    prefix: Optional[str] = None
    env_kind: Optional[str] = None  # "venv" | "conda" | "system" | None when unknown
    env_name: Optional[str] = None
    platform: Optional[str] = None
    probe_error: Optional[str] = None


@dataclass
class Report:
    """Everything one `msdoctor check` run found."""

    msdoctor_version: str
    target: Target
    results: list[CheckResult]
    started_at: str  # ISO 8601, UTC
    duration_s: float
    #: environment facts worth sharing in a bug report or diffing between nodes
    facts: dict[str, Any] = field(default_factory=dict)
    #: project-level notes that are not the result of one check (e.g. a bad suppression file)
    notices: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> Status:
        return worst([r.status for r in self.results] + [n.effective_status for n in self.notices])

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for r in self.results:
            out[r.status.value] += 1
        return out

    def exit_code(self, fail_on: Status = Status.FAIL) -> ExitCode:
        """Map the verdict to a process exit code.

        Args:
            fail_on: the lowest status that makes the run unhealthy (FAIL by
                default, WARN for --strict / --fail-on warn).
        """
        if self.target.probe_error is not None:
            return ExitCode.NO_VERDICT
        status = self.status
        threshold = min(fail_on, Status.FAIL)
        if status >= threshold and status > Status.SKIP:
            return ExitCode.PROBLEMS
        return ExitCode.OK
