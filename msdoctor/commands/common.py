"""Options and helpers shared by several commands (target selection, output files)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable, Optional

import click

from msdoctor.errors import UserError


class WholeSummaryGroup(click.Group):
    """A command group whose --help lists each subcommand's summary whole (click cuts it at the line's width)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, cmd.get_short_help_str(limit=1000))
            for name in self.list_commands(ctx)
            if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def report_stack() -> tuple[str, ...]:
    """The packages a report lists first: the training stack, Jupyter's and msdoctor (compat_matrix/stack.toml)."""
    from msdoctor.domain.stack import listed

    return listed("notebook", "doctor")


def target_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--python / --conda-env: which interpreter to examine."""

    @click.option(
        "--python",
        "python",
        metavar="PATH",
        envvar="MSDOCTOR_PYTHON",
        help="Interpreter to examine, or a venv / conda env directory (default: the one running msdoctor). "
        "Env: MSDOCTOR_PYTHON.",
    )
    @click.option("--conda-env", "conda_env", metavar="NAME", help="Examine the conda environment NAME.")
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def project_option(help: str = "The project directory (default: the current directory).") -> Callable[..., Any]:
    """--project DIR: an existing directory (click refuses anything else with exit 2)."""
    return click.option(
        "--project", type=click.Path(path_type=Path, file_okay=False, exists=True), metavar="DIR", help=help
    )


class Seconds(click.ParamType):
    """A positive, finite number of seconds (refuses -1, 0, nan, inf with exit 2)."""

    name = "seconds"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> float:
        import math

        try:
            out = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(out) or out <= 0:
            self.fail(f"{value!r} is not a positive, finite number of seconds", param, ctx)
        return out


def timeout_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--probe-timeout / --live-timeout: how long the target's probes may take (check, train)."""

    @click.option(
        "--probe-timeout",
        type=Seconds(),
        default=30.0,
        show_default=True,
        metavar="SECONDS",
        help="The most the interpreter probe may take.",
    )
    @click.option(
        "--live-timeout",
        type=Seconds(),
        default=120.0,
        show_default=True,
        metavar="SECONDS",
        help="The most the live probe (imports, device init, matmul) may take; device init can hang on a busy NPU.",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def resolve_target(python: Optional[str], conda_env: Optional[str]) -> str:
    """The absolute path of the interpreter selected by --python / --conda-env."""
    from msdoctor.facts.target import TargetError, conda_env_python, resolve_python

    if python and conda_env:
        raise UserError("--python and --conda-env name two targets; give one of them")
    try:
        if conda_env:
            return conda_env_python(conda_env, os.environ)
        return resolve_python(python)
    except TargetError as exc:
        raise UserError(exc.message, exc.fix) from None


def split_ids(values: tuple[str, ...]) -> list[str]:
    """--only a,b --only c -> [a, b, c]."""
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def ensure_writable(path: Path, flag: str = "--output") -> Path:
    """Fail early (exit 2) when an output file cannot be written, before any work is done."""
    path = path.expanduser()
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory", "name a file inside it, e.g. " + str(path / "report.json"))
    if not parent.is_dir():
        raise UserError(f"{flag} {path}: the directory {parent} does not exist", f"create it first: mkdir -p {parent}")
    from msdoctor.fsutil import why_unwritable

    problem = why_unwritable(parent)
    if problem is not None:
        raise UserError(f"{flag} {path}: {parent} is not writable: {problem[0]}", problem[1])
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{flag} {path}: not writable", "choose a path you can write to")
    return path


def write_output(path: Path, text: str) -> None:
    """Write a report file atomically: readers see the old report or the new one, never half (no backup:
    a report is regenerated, not edited)."""
    from msdoctor.fsutil import atomic_write

    atomic_write(path, text, backup=False)  # a failure is WriteError: exit 2 with the path, the reason and the fix
