"""VS Code renderer: one line per problem finding, for a task's problem matcher (``msdoctor vscode init``).

Two line forms (a stable contract, like the JSON schema; VS Code problem matchers: https://code.visualstudio.com/docs/editor/tasks#_defining-a-problem-matcher)::

    FILE:LINE:COLUMN: SEVERITY: MESSAGE [CHECK-ID/CODE]     a finding with a line
    FILE: SEVERITY: MESSAGE [CHECK-ID/CODE]                 a finding about a whole file

SEVERITY is error, warning or info (VS Code's words; a suppressed problem is
info). A finding without any location is attached to the training config when
one was given (``--config``), else to the target interpreter, the thing it is
about. ``LOCATED_REGEXP`` and ``FILE_REGEXP`` are the problem-matcher patterns
written into tasks.json; they are plain regexes valid in both JavaScript and
Python (no named groups, no flags), and the file form cannot match a located
line (its file part may not contain ``:N:N: ``). The last line is a summary that
neither pattern matches.
"""

from __future__ import annotations

from typing import IO, Optional

from msdoctor.model import Report
from msdoctor.render import RenderOptions
from msdoctor.render.findings import Item, checks_phrase, message, problems, verdict_word

LOCATED_REGEXP = r"^(.+?):(\d+):(\d+): (error|warning|info): (.*) \[([\w./-]+)\]$"
FILE_REGEXP = r"^((?:(?!:\d+:\d+: ).)+?): (error|warning|info): (.*) \[([\w./-]+)\]$"
#: capture group numbers, as tasks.json names them
LOCATED_GROUPS = {"file": 1, "line": 2, "column": 3, "severity": 4, "message": 5, "code": 6}
FILE_GROUPS = {"file": 1, "severity": 2, "message": 3, "code": 4}


def anchor_file(report: Report) -> str:
    """Where findings without a location are shown: the --config file, else the target interpreter."""
    invocation = report.facts.get("invocation") if isinstance(report.facts, dict) else None
    config = invocation.get("config") if isinstance(invocation, dict) else None
    return str(config or report.target.executable)


def line_of(item: Item, anchor: str) -> str:
    """One problem line; a newline or a control character inside a path or a message cannot break it."""
    from msdoctor.redact import one_line

    f = item.finding
    text = one_line(message(f))
    if f.location is not None and f.location.line is not None:
        col = f.location.column or 1
        return f"{one_line(f.location.path)}:{f.location.line}:{col}: {item.severity}: {text} [{item.ref}]"
    path = one_line(f.location.path) if f.location is not None else one_line(anchor)
    return f"{path}: {item.severity}: {text} [{item.ref}]"


def lines(report: Report) -> list[str]:
    from msdoctor.redact import one_line

    anchor = anchor_file(report)
    out = []
    if report.target.probe_error:
        out.append(
            f"{one_line(report.target.executable)}: error: the target could not be probed: "
            f"{' '.join(report.target.probe_error.split())} [msdoctor/probe]"
        )
    out.extend(line_of(item, anchor) for item in problems(report))
    return out


def summary(report: Report, opts: Optional[RenderOptions] = None) -> str:
    fail_on = (opts or RenderOptions()).fail_on
    return (
        f"msdoctor {report.msdoctor_version}: {checks_phrase(report)} "
        f"= {verdict_word(report, fail_on)}, exit {int(report.exit_code(fail_on))}"
    )


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    for line in lines(report):
        stream.write(line + "\n")
    stream.write(summary(report, opts) + "\n")
