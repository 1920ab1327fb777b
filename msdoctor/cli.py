"""The ``msdoctor`` command: a thin click group whose subcommands load lazily.

Each subcommand lives in ``msdoctor/commands/<name>.py`` and is imported only
when it runs, so ``msdoctor --help`` stays fast. Errors meant for the user
(:class:`msdoctor.errors.UserError`) print a message and the fix and exit 2;
anything unexpected prints one line (the traceback only with MSDOCTOR_DEBUG=1)
and exits 3.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Optional

import click

from msdoctor import __version__

#: command name -> (module:attribute, one-line help shown by `msdoctor --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("msdoctor.commands.check:check", "Run the checks against the target interpreter."),
    "list-checks": ("msdoctor.commands.check:list_checks", "List the available checks."),
    "matrix": (
        "msdoctor.commands.matrix:matrix_cmd",
        "Show what MindSpore, CANN, Python and MindNLP versions go together.",
    ),
    "memory": (
        "msdoctor.commands.memory:memory",
        "Will a training config fit in device memory; smallest changes that do.",
    ),
    "explain": (
        "msdoctor.commands.explain:explain",
        "Explain an error message or a log: cause, fix, confirming check.",
    ),
    "report": ("msdoctor.commands.report:report", "Write a redacted Markdown report for a bug report."),
    "diff": ("msdoctor.commands.diff:diff", "Compare two JSON reports (node A vs node B)."),
    "vscode": ("msdoctor.commands.vscode:vscode", "VS Code tasks with a problem matcher (vscode init)."),
    "fix": (
        "msdoctor.cli:fix",
        "Repair what one check found: msdoctor fix CHECK-ID (without one: the checks that can).",
    ),
    "fix-kernel": ("msdoctor.commands.fix_kernel:fix_kernel", "Make Jupyter and VS Code run the target interpreter."),
    "fix-stack": (
        "msdoctor.commands.fix_stack:fix_stack",
        "Repair the stack's versions with one pip command checked by pip.",
    ),
    "train": ("msdoctor.commands.train:train", "Run the checks, then the reference pretraining only if all pass."),
    "preflight": (
        "msdoctor.commands.preflight:preflight",
        "Check every rank of a multi-node job through msrun (preflight plan: before it).",
    ),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        target, _ = COMMANDS[name]
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


#: check id -> the command of its fixer (``msdoctor fix CHECK-ID`` is that command; its own name stays too)
FIXERS: dict[str, str] = {
    "version-matrix": "fix-stack",
    "kernel-mismatch": "fix-kernel",
}


class FixGroup(click.Group):
    """``msdoctor fix CHECK-ID [OPTIONS]``: the fixer of that check, i.e. the command FIXERS names."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(FIXERS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in FIXERS:
            return None
        return LazyGroup().get_command(ctx, FIXERS[name])

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in FIXERS:
            from msdoctor.errors import UserError, with_hints

            raise UserError(
                f"no fixer for check {with_hints([name], sorted(FIXERS))}",
                "checks with a fixer: " + ", ".join(sorted(FIXERS)) + " (msdoctor fix lists them)",
            )
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for check in self.list_commands(ctx):
            cmd = self.get_command(ctx, check)
            if cmd is not None:
                rows.append((check, cmd.get_short_help_str(limit=1000) + f" (msdoctor {FIXERS[check]})"))
        with formatter.section("Checks with a fixer"):
            formatter.write_dl(rows)


@click.group("fix", cls=FixGroup, invoke_without_command=True)
@click.pass_context
def fix(ctx: click.Context) -> int:
    """Repair what a check found: plan (nothing changed), verify the plan against the check's own rules,
    apply after confirmation, then run the check again.

    \b
    Examples:
      msdoctor fix                                     the checks that have a fixer
      msdoctor fix version-matrix --dry-run            = msdoctor fix-stack --dry-run
      msdoctor fix kernel-mismatch --kernel my-env     = msdoctor fix-kernel --kernel my-env
    """
    if ctx.invoked_subcommand is None:
        for check in sorted(FIXERS):
            click.echo(
                f"{check:<16}  msdoctor fix {check} (also: msdoctor {FIXERS[check]}): {COMMANDS[FIXERS[check]][1]}"
            )
    return 0


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="msdoctor", message="%(prog)s %(version)s")
def cli() -> None:
    """msdoctor: environment doctor and preflight gate for MindSpore LLM pretraining.

    \b
    Exit codes: 0 healthy (warnings allowed), 1 a check failed or errored
    (or warned, with --strict), 2 bad usage or unreadable input,
    3 no verdict (the target could not be examined, or msdoctor failed).
    """


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached msdoctor: stop like Ctrl-C does (children killed, exit 128 + signal)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


def main(argv: Optional[list[str]] = None) -> Any:
    """Run msdoctor; on every way out (return, error, Ctrl-C, SIGTERM) the children's groups are killed."""
    import signal

    _safe_streams()
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, _on_signal)
        except ValueError:  # not the main thread (an embedding caller): its own handlers stay
            pass
    try:
        _main(argv)
    finally:
        proc = sys.modules.get("msdoctor.proc")  # no child was ever started when it is not loaded
        if proc is not None:
            proc.kill_all(final=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _safe_streams() -> None:
    """stdout and stderr never raise on text they cannot encode: an environment value that is not UTF-8 (GBK
    bytes in MS_* / ASCEND_*, a HOME path) reaches Python as surrogates (PEP 383) and is shown escaped."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "") == "strict":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a detached or closed stream
                pass


def _main(argv: Optional[list[str]]) -> Any:
    from msdoctor.errors import UserError
    from msdoctor.model import ExitCode

    from msdoctor.redact import shown_value  # a message echoes the user's input: no escapes, no secrets

    try:
        rv = cli.main(args=argv, prog_name="msdoctor", standalone_mode=False)
    except UserError as exc:
        _err(f"error: {shown_value(exc.message)}")
        if exc.fix:
            _err(f"  fix: {shown_value(exc.fix)}")
        sys.exit(int(exc.exit_code))
    except click.exceptions.Abort:
        _err("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.message = shown_value(exc.message)  # type: ignore[misc]  # click declares it Final; it is a plain attribute
        exc.show()
        sys.exit(int(ExitCode.USAGE))
    except (KeyboardInterrupt, EOFError):
        _err("interrupted")
        sys.exit(130)
    except Terminated as exc:
        _err("terminated")
        sys.exit(128 + exc.signum)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # the last line of defence: no traceback for users
        if os.environ.get("MSDOCTOR_DEBUG"):
            raise
        _err(f"msdoctor internal error: {type(exc).__name__}: {shown_value(str(exc))}")
        _err("  this is a bug in msdoctor; rerun with MSDOCTOR_DEBUG=1 for the traceback and report it")
        sys.exit(int(ExitCode.NO_VERDICT))
    if isinstance(rv, int):
        sys.exit(rv)
    sys.exit(0)


def _err(text: str) -> None:
    click.echo(text, err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
