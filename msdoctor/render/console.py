"""The one wrapper around rich's Console that every human-facing output goes through.

``markup=False`` so that ``mindspore[ascend]`` and paths print literally;
NO_COLOR is honoured; status glyphs have an ASCII fallback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Any, Iterator, Literal, Optional

from msdoctor.model import Status

GLYPHS = {
    Status.PASS: ("✓", "ok"),
    Status.SKIP: ("-", "skip"),
    Status.WARN: ("!", "warn"),
    Status.FAIL: ("✗", "FAIL"),
    Status.ERROR: ("☠", "ERR"),
}
STYLES = {
    Status.PASS: "green",
    Status.SKIP: "dim",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.ERROR: "bold magenta",
}


def make_console(stream: IO[str], color: Optional[bool] = None, width: Optional[int] = None) -> Any:
    from rich.console import Console

    no_color = bool(os.environ.get("NO_COLOR"))
    color_system: Optional[Literal["auto"]]
    if color is None:
        color_system = None if no_color else "auto"
    else:
        color_system = "auto" if color else None
    return Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        color_system=color_system,
        no_color=no_color if color is None else not color,
        width=width,
        # a terminal wraps for reading; a log or a pipe keeps one finding per line for grep
        soft_wrap=not (hasattr(stream, "isatty") and stream.isatty()),
    )


def glyph(status: Status, console: Any) -> str:
    fancy, plain = GLYPHS[status]
    enc = (getattr(console.file, "encoding", None) or "").lower()
    return f"[{fancy}]" if "utf" in enc else f"[{plain}]"


@contextlib.contextmanager
def progress(message: str, stream: IO[str] = sys.stderr) -> Iterator[Any]:
    """A spinner on stderr while slow work runs, only on a TTY; yields an update(text) callable."""
    if not (hasattr(stream, "isatty") and stream.isatty()) or os.environ.get("MSDOCTOR_NO_SPINNER"):
        yield lambda text: None
        return
    console = make_console(stream)
    with console.status(message) as status:
        yield lambda text: status.update(text)
