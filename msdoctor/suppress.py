"""Suppressions for gates: accepted findings, each with a reason and an expiry date.

Read from ``msdoctor.toml`` in the project directory and from ``[tool.msdoctor]``
in its ``pyproject.toml`` (both are applied)::

    ignore = [
      { id = "python-env/pythonpath-missing", reason = "CI image sets a stale path; harmless", until = "2026-06-30" },
      { id = "kernel-mismatch", reason = "no notebooks on the training nodes" },
    ]

``id`` is a check id (every problem of that check) or ``check-id/code`` (one kind
of finding; the code is shown by ``--format vscode``/``github`` and in the JSON).
A suppressed finding stays in every output format, marked with its reason, and
counts as a pass for the verdict (``Finding.effective_status``). A suppression
without a reason still applies but is itself a warning; an expired one no longer
applies and is a warning; one naming an unknown check is a warning. Brew's users
asked for exactly this and never got it (https://github.com/Homebrew/brew/issues/6017).
A malformed file is bad input: exit 2 with file and line.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from msdoctor.errors import UserError, with_hint, with_hints
from msdoctor.model import Finding, Location, Report, Status

FILE_NAME = "msdoctor.toml"
#: the most ignore entries one file may have (real ones: a handful)
MAX_ENTRIES = 10_000
ENTRY_KEYS = ("id", "reason", "until")
NO_REASON = "no reason given"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class Suppression:
    """One accepted finding (or every problem of one check)."""

    check_id: str
    code: Optional[str]
    reason: Optional[str]
    until: Optional[_dt.date]
    path: Path
    line: Optional[int]

    @property
    def id(self) -> str:
        return f"{self.check_id}/{self.code}" if self.code else self.check_id

    @property
    def location(self) -> Location:
        return Location(str(self.path), self.line)

    def expired(self, today: _dt.date) -> bool:
        return self.until is not None and today > self.until

    def matches(self, check_id: str, f: Finding) -> bool:
        return check_id == self.check_id and (self.code is None or f.code == self.code)


def _toml() -> Any:
    from msdoctor.tomlcompat import tomllib

    return tomllib


_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _parse_toml(text: str, path: Path) -> dict:
    from msdoctor.inputs import MAX_DEPTH, depth_of, too_deep

    toml = _toml()
    try:
        data = toml.loads(text)
    except RecursionError:  # 5,000-deep [[[...]]] or {a = {a = ...}}
        raise too_deep(path) from None
    except toml.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT.search(msg)
        if m:
            where = f"{path}:{m.group(1)}:{m.group(2)}"
        elif msg.endswith("(at end of document)"):
            # e.g. an unclosed [ or {: point at the last line, where the closing bracket is missing
            where = f"{path}:{max(1, len(text.rstrip().splitlines()))}"
            msg = msg[: -len("(at end of document)")].rstrip() + " (at the end of the file)"
        else:
            where = str(path)
        raise UserError(
            f"{where}: malformed TOML: {_AT.sub('', msg)}",
            "fix the syntax at that line; an entry looks like "
            '{ id = "check-id", reason = "why it is acceptable", until = "2026-12-31" }',
        ) from None
    if depth_of(data) > MAX_DEPTH:
        raise too_deep(path)
    return data


def _line_of_id(text: str, value: str, after: int = 0) -> Optional[int]:
    m = re.compile(r"\bid\s*=\s*([\"'])" + re.escape(value) + r"\1").search(text, after)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _line_of_key(text: str, key: str, after: int = 0) -> Optional[int]:
    m = re.compile(r"(?m)^\s*" + re.escape(key) + r"\s*=").search(text, after)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _date(value: Any, where: str) -> Optional[_dt.date]:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise UserError(
        f"{where}: until = {value!r} is not a date",
        'write the date as YYYY-MM-DD, e.g. until = "2026-12-31"',
    )


def parse(text: str, path: Path, table: Sequence[str] = ()) -> list[Suppression]:
    """The suppressions in a TOML document (under ``table``, e.g. ("tool", "msdoctor") for pyproject.toml)."""
    data: Any = _parse_toml(text, path)
    for key in table:
        data = data.get(key) if isinstance(data, dict) else None
        if data is None:
            return []
    if not isinstance(data, dict):
        raise UserError(f"{path}: [{'.'.join(table)}] is not a table", "write it as a TOML table")
    start = 0
    if table:
        m = re.search(r"(?m)^\s*\[" + r"\s*\.\s*".join(map(re.escape, table)) + r"\b", text)
        start = m.start() if m else 0
    raw = data.get("ignore")
    if raw is None:
        return []
    ignore_line = _line_of_key(text, "ignore", start) or _line_of_key(text, "[ignore", start)
    where_ignore = f"{path}:{ignore_line}" if ignore_line else str(path)
    if not isinstance(raw, list):
        raise UserError(
            f"{where_ignore}: ignore must be a list of tables, not {type(raw).__name__}",
            'write ignore = [{ id = "check-id", reason = "...", until = "YYYY-MM-DD" }]',
        )
    if len(raw) > MAX_ENTRIES:  # every entry is matched against every finding
        raise UserError(
            f"{where_ignore}: {len(raw):,} ignore entries; msdoctor reads at most {MAX_ENTRIES:,}",
            "ignore by check id (one entry per check) instead of one entry per finding",
        )
    out: list[Suppression] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise UserError(
                f"{where_ignore}: ignore[{i}] is {entry!r}, not a table",
                'each entry is a table: { id = "check-id", reason = "...", until = "YYYY-MM-DD" }',
            )
        ident = entry.get("id")
        line = (_line_of_id(text, ident, start) if isinstance(ident, str) else None) or ignore_line
        out.append(_entry(entry, i, path, line))
    return out


def _entry(entry: dict, i: int, path: Path, line: Optional[int]) -> Suppression:
    """One ``ignore`` entry (the i-th, at ``line``), or a UserError naming what is wrong with it."""
    where = f"{path}:{line or '?'}"
    ident = entry.get("id")
    unknown = [k for k in entry if k not in ENTRY_KEYS]
    if unknown:
        raise UserError(
            f"{where}: ignore[{i}] has unknown key {with_hints(unknown, ENTRY_KEYS)}",
            "an entry takes only: id, reason, until",
        )
    if not isinstance(ident, str) or not _ID.match(ident.strip()):
        raise UserError(
            f'{where}: ignore[{i}] needs id = "check-id" or "check-id/finding-code" (got {ident!r})',
            "`msdoctor list-checks` shows the check ids; finding codes appear in --format vscode/json output",
        )
    check_id, _, code = ident.strip().partition("/")
    reason = entry.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise UserError(f"{where}: reason must be text, got {reason!r}", 'write reason = "why it is acceptable"')
    return Suppression(
        check_id=check_id,
        code=code or None,
        reason=reason.strip() if isinstance(reason, str) and reason.strip() else None,
        until=_date(entry.get("until"), where),
        path=path,
        line=line,
    )


def _read(path: Path) -> str:
    from msdoctor.inputs import CONFIG_CAP, read_text

    try:  # the one bounded reader: a FIFO or a /dev/zero link in a cloned project is refused, never read
        return read_text(path, cap=CONFIG_CAP, what="msdoctor.toml")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})", "save the file as UTF-8") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}", "make the file readable") from None


def load(project_dir: Path) -> list[Suppression]:
    """Suppressions of a project: msdoctor.toml, then [tool.msdoctor] of pyproject.toml (UserError when malformed)."""
    out: list[Suppression] = []
    own = Path(project_dir) / FILE_NAME
    if own.is_file():
        out.extend(parse(_read(own), own))
    pyproject = Path(project_dir) / "pyproject.toml"
    if pyproject.is_file():
        text = _read(pyproject)
        if re.search(r"(?m)^\s*\[\s*tool\s*\.\s*msdoctor\b", text) or "tool.msdoctor" in text:
            out.extend(parse(text, pyproject, ("tool", "msdoctor")))
    return out


def _notice(title: str, s: Suppression, detail: str, fix: str, code: str) -> Finding:
    return Finding.warn(
        title,
        detail=detail,
        fix=fix,
        location=s.location,
        code=code,
        evidence={"id": s.id, "reason": s.reason, "until": s.until.isoformat() if s.until else None},
    )


def apply(
    report: Report,
    rules: Iterable[Suppression],
    *,
    known_ids: Optional[Iterable[str]] = None,
    today: Optional[_dt.date] = None,
) -> Report:
    """Mark the findings the rules accept (Finding.suppressed = reason) and add notices for bad rules."""
    rules = list(rules)
    if not rules:
        return report
    today = today or _dt.date.today()
    known = set(known_ids) if known_ids is not None else None
    notices: list[Finding] = []
    active: list[Suppression] = []
    for s in rules:
        if s.expired(today):
            notices.append(
                _notice(
                    f"suppression of {s.id} expired on {s.until.isoformat()}",  # type: ignore[union-attr]
                    s,
                    "An expired suppression no longer applies: the findings it accepted count again. "
                    "Either the problem was fixed (then delete the entry) or it still needs a decision.",
                    f"delete the entry in {s.path.name}, or extend `until` with a reason that is still true",
                    "suppression-expired",
                )
            )
            continue
        if s.reason is None:
            notices.append(
                _notice(
                    f"suppression of {s.id} gives no reason",
                    s,
                    "It still applies, but a gate that is switched off without a written reason cannot be "
                    "reviewed later.",
                    f'add reason = "why this is acceptable" (and until = "YYYY-MM-DD") to the entry in {s.path.name}',
                    "suppression-no-reason",
                )
            )
        if known is not None and s.check_id not in known:
            notices.append(
                _notice(
                    f"suppression names an unknown check id {with_hint(s.check_id, sorted(known))}",
                    s,
                    "It suppresses nothing.",
                    "`msdoctor list-checks` lists the check ids",
                    "suppression-unknown-check",
                )
            )
        active.append(s)

    results = []
    for r in report.results:
        findings = []
        changed = False
        for f in r.findings:
            rule = next(
                (s for s in active if f.status > Status.SKIP and f.suppressed is None and s.matches(r.id, f)), None
            )
            if rule is not None:
                f = dataclasses.replace(f, suppressed=rule.reason or NO_REASON)
                changed = True
            findings.append(f)
        results.append(dataclasses.replace(r, findings=findings) if changed else r)
    return dataclasses.replace(report, results=results, notices=list(report.notices) + notices)


def apply_to(report: Report, project_dir: Path, known_ids: Optional[Iterable[str]] = None) -> Report:
    """Load the project's suppressions and apply them (the one call commands need)."""
    return apply(report, load(project_dir), known_ids=known_ids)


__all__ = ["Suppression", "load", "parse", "apply", "apply_to"]
