"""Renderers: each turns a finished Report into one output format, one module per format.

A renderer module exposes ``render(report, stream, opts: RenderOptions) -> None``
and imports nothing from checks. Add a format by adding a module and a line
to FORMATS.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import IO, Optional, Sequence

from msdoctor.model import Report, Status

#: format name -> module implementing render()
FORMATS: dict[str, str] = {
    "terminal": "msdoctor.render.terminal",
    "json": "msdoctor.render.json_report",
    "junit": "msdoctor.render.junit",
    "github": "msdoctor.render.github",
    "markdown": "msdoctor.render.markdown",
    "vscode": "msdoctor.render.vscode",
}


@dataclass(frozen=True)
class RenderOptions:
    verbose: bool = False
    color: Optional[bool] = None  # None: auto (TTY and no NO_COLOR)
    width: Optional[int] = None
    #: the threshold for "problem" (Status.WARN with --strict)
    fail_on: Status = Status.FAIL
    #: the checkout GitHub Actions runs in ($GITHUB_WORKSPACE): annotations name files relative to it
    workspace: Optional[str] = None
    #: distributions listed first among the facts (the training stack and what is listed beside it, from
    #: compat_matrix/stack.toml: msdoctor.domain.stack.listed); a renderer reads no data files, the command passes it
    stack: tuple[str, ...] = ()


def preload(formats: Sequence[str]) -> None:
    """Import the renderers of ``formats`` and the redactor in a background thread, while the checks mostly wait
    on their child processes; render() then finds them loaded."""
    modules = [FORMATS[f] for f in dict.fromkeys(formats) if f in FORMATS] + ["msdoctor.redact"]

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - render() imports it again and reports what fails
                return

    threading.Thread(target=load, name="preload-renderers", daemon=True).start()


def render(fmt: str, report: Report, stream: IO[str], opts: Optional[RenderOptions] = None) -> None:
    if fmt not in FORMATS:
        raise KeyError(fmt)
    from msdoctor.redact import sanitize

    module = importlib.import_module(FORMATS[fmt])
    # terminal control from outside text removed whoever calls (prepare() does it too; redaction stays the caller's)
    module.render(sanitize(report), stream, opts or RenderOptions())


def prepare(report: Report, fmt: str, *, redact: bool) -> Report:
    """The report as a format shows it: terminal control characters from outside text removed (always), and
    redacted unless --no-redact (the vscode format keeps paths to open)."""
    from msdoctor.redact import redact_report, sanitize

    report = sanitize(report)
    if not redact:
        return report
    return redact_report(report, keep_paths=(fmt == "vscode"))
