"""The consoles every human-facing output goes through: msdoctor's own text console for reports, rich's for tables
and the spinner.

Text prints literally, so that ``mindspore[ascend]`` and paths are never read as markup; NO_COLOR is honoured;
status glyphs have an ASCII fallback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Any, Iterator, Optional

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


#: SGR parameters of the style words msdoctor's renderers use (ECMA-48, the codes every terminal knows)
SGR = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "black": "30",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "white": "37",
}


def wants_color(stream: IO[str], color: Optional[bool]) -> bool:
    """--color / --no-color decide; else NO_COLOR (https://no-color.org) turns colour off, FORCE_COLOR on, and a
    terminal that is not TERM=dumb gets it."""
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(hasattr(stream, "isatty") and stream.isatty()) and os.environ.get("TERM") != "dumb"


def _cells(text: str) -> int:
    """Terminal cells of a text: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    from unicodedata import east_asian_width

    return sum(2 if east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap(line: str, width: int) -> list[str]:
    """A line cut at spaces to ``width`` cells; continuation lines keep the line's indent; a word longer than the
    width is cut inside."""
    if _cells(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    room = max(width - len(indent), 8)
    out: list[str] = []
    cur = ""
    for word in line[len(indent) :].split(" "):
        cand = f"{cur} {word}" if cur else word
        if _cells(cand) <= room:
            cur = cand
            continue
        if cur:
            out.append(cur)
        while _cells(word) > room:  # a path or a URL longer than the line
            cut = room
            while _cells(word[:cut]) > room:
                cut -= 1
            out.append(word[:cut])
            word = word[cut:]
        cur = word
    out.append(cur)
    return [indent + part for part in out]


class TextConsole:
    """The console of msdoctor's text reports: print(text, style=...) with ANSI colour when wanted and word
    wrapping on a terminal, nothing else. Text prints literally (no markup, no emoji codes); a pipe or a log gets
    one line per line, for grep. rich (tables, the spinner) is imported only where those are drawn: its import
    and its per-line rendering were a third of ``check --quick``'s own time."""

    def __init__(self, stream: IO[str], color: Optional[bool] = None, width: Optional[int] = None) -> None:
        self.file = stream
        self.color = wants_color(stream, color)
        tty = bool(hasattr(stream, "isatty") and stream.isatty())
        if width is None and tty:
            import shutil

            width = shutil.get_terminal_size().columns
        self.width = width
        self.wraps = tty  # as before: a terminal wraps for reading, a log or a pipe keeps one line per line

    def print(self, text: str = "", style: Optional[str] = None, end: str = "\n") -> None:
        lines = str(text).expandtabs(8).split("\n")
        if self.wraps and self.width:
            lines = [part for line in lines for part in wrap(line, self.width)]
        codes = ";".join(SGR[w] for w in (style or "").split() if w in SGR) if self.color else ""
        if codes:
            lines = [f"\x1b[{codes}m{line}\x1b[0m" if line else line for line in lines]
        self.file.write("\n".join(lines) + end)


def make_console(stream: IO[str], color: Optional[bool] = None, width: Optional[int] = None) -> TextConsole:
    return TextConsole(stream, color, width)


def make_rich_console(stream: IO[str], color: Optional[bool] = None, width: Optional[int] = None) -> Any:
    """A rich Console for what only rich draws (the matrix's tables, the spinner), with the same colour rules."""
    from rich.console import Console

    on = wants_color(stream, color)
    return Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        color_system="auto" if on else None,
        force_terminal=True if on and color else None,
        no_color=not on,
        width=width,
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
    console = make_rich_console(stream)
    with console.status(message) as status:
        yield lambda text: status.update(text)
