"""Errors meant for the user: printed as a message with the fix, never as a traceback."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from msdoctor.model import ExitCode


def with_hint(name: str, known: Sequence[str]) -> str:
    """``'nmae'`` followed by `` (did you mean 'name'?)`` when one of ``known`` is close."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def with_hints(names: Iterable[str], known: Sequence[str]) -> str:
    """:func:`with_hint` of each name, comma-separated."""
    return ", ".join(with_hint(n, known) for n in names)


class UserError(Exception):
    """Bad usage or unreadable input. Printed as ``error: message`` plus the fix; exit 2.

    Args:
        message: what is wrong (name the file and line when there is one).
        fix: what to do about it.
        exit_code: the process exit code (USAGE unless stated otherwise).
    """

    def __init__(self, message: str, fix: Optional[str] = None, exit_code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"
