"""GitHub Actions renderer: workflow-command annotations plus a Markdown job summary.

Each problem finding becomes ``::error file=F,line=L,col=C,title=T::MESSAGE``
(``::warning`` for warnings, ``::notice`` for suppressed findings), escaped as
GitHub's runner unescapes them (actions/toolkit packages/core/src/command.ts,
escapeData / escapeProperty): in the message ``%`` -> %25, CR -> %0D,
LF -> %0A; in property values additionally ``:`` -> %3A and ``,`` -> %2C.
An annotation does not fail the step; the exit code does.

GitHub shows at most 10 annotations of each level per step
(actions/toolkit docs/problem-matchers.md), so the most severe come first and
the rest are counted; the full report goes to the job summary (:func:`step_summary`
returns its text; ``msdoctor check`` appends it to ``$GITHUB_STEP_SUMMARY``). File
paths are made relative to ``RenderOptions.workspace`` (the command passes
``$GITHUB_WORKSPACE``) when they lie inside it, so annotations attach to the
repository's files. Like every renderer this one reads no environment and writes
no file: it returns text.
"""

from __future__ import annotations

import io
import os
from typing import IO, Optional

from msdoctor.model import Report, Status
from msdoctor.render import RenderOptions
from msdoctor.render.findings import Item, checks_phrase, one_line, problems, verdict_word

#: annotations GitHub displays per level and step
PER_LEVEL = 10


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def level_of(item: Item, fail_on: Status) -> str:
    f = item.finding
    if f.suppressed is not None:
        return "notice"
    if f.status >= Status.FAIL or (f.status is Status.WARN and fail_on <= Status.WARN):
        return "error"
    return "warning"


def _rel(path: str, workspace: Optional[str]) -> str:
    if workspace and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, workspace)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def command(item: Item, fail_on: Status, workspace: Optional[str] = None) -> str:
    """One workflow command line for a finding."""
    f = item.finding
    props = []
    if f.location is not None:
        props.append(("file", _rel(f.location.path, workspace)))
        if f.location.line is not None:
            props.append(("line", str(f.location.line)))
            if f.location.column is not None:
                props.append(("col", str(f.location.column)))
    props.append(("title", f"msdoctor {item.ref}: {one_line(f.title)}"))
    body = [f.title]
    if f.suppressed is not None:
        body.append(f"suppressed: {f.suppressed}")
    if f.detail:
        body.append(f.detail)
    if f.fix:
        body.append(f"fix: {f.fix}")
    head = "::" + level_of(item, fail_on) + " " + ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return head + "::" + escape_data("\n".join(body))


def workflow_commands(report: Report, fail_on: Status, workspace: Optional[str] = None) -> tuple[list[str], int]:
    """The workflow commands to print (at most PER_LEVEL per level, most severe first) and how many were left out."""
    order = {"error": 0, "warning": 1, "notice": 2}
    items = sorted(problems(report), key=lambda it: order[level_of(it, fail_on)])
    shown: dict[str, int] = {}
    lines, left = [], 0
    for it in items:
        level = level_of(it, fail_on)
        if shown.get(level, 0) >= PER_LEVEL:
            left += 1
            continue
        shown[level] = shown.get(level, 0) + 1
        lines.append(command(it, fail_on, workspace))
    return lines, left


def step_summary(report: Report, opts: RenderOptions) -> str:
    """The job summary: the Markdown report (the caller appends it to $GITHUB_STEP_SUMMARY)."""
    from msdoctor.render import markdown

    buf = io.StringIO()
    markdown.render(report, buf, opts)
    return buf.getvalue() + "\n"


def summary_failed(target: str, exc: OSError) -> str:
    """The annotation that says the job summary could not be appended."""
    return (
        "::warning title=msdoctor::"
        + escape_data(f"could not append the job summary to {target}: {exc.strerror or exc}")
        + "\n"
    )


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    fail_on = opts.fail_on
    t = report.target
    stream.write(f"msdoctor {report.msdoctor_version} · target {t.executable} (Python {t.python_version or '?'})\n")
    if t.probe_error:
        stream.write("::error title=msdoctor%3A the target could not be probed::" + escape_data(t.probe_error) + "\n")
    for r in report.results:
        stream.write(f"[{r.status.value}] {r.id}: {r.title} ({r.duration_s:.2f}s)\n")
    lines, left = workflow_commands(report, fail_on, opts.workspace)
    for line in lines:
        stream.write(line + "\n")
    if left:
        stream.write(
            f"msdoctor: {left} more finding(s) not annotated (GitHub shows {PER_LEVEL} per level); "
            "the job summary lists them all\n"
        )
    stream.write(f"msdoctor: {checks_phrase(report)}: {verdict_word(report, fail_on)}\n")
