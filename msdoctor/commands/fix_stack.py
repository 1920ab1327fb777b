"""``msdoctor fix-stack``: repair the installed stack with one pip command checked by the target's own pip."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import click

from msdoctor import options
from msdoctor.commands.common import resolve_target, target_options
from msdoctor.errors import UserError
from msdoctor.model import ExitCode, Status


@click.command("fix-stack")
@target_options
@options.device_target("The device the live probe must compute on (default: MindSpore's default).")
@click.option("--dry-run", is_flag=True, help="Show the plan and change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Apply without asking (needed when not on a terminal).")
def fix_stack(
    python: Optional[str], conda_env: Optional[str], device_target: Optional[str], dry_run: bool, yes: bool
) -> int:
    """Repair MindSpore / MindNLP / MindFormers / transformers versions with one checked pip command.

    \b
    Shows the plan first: the problems version-matrix finds, the versions the target's
    own pip would install (`pip install --dry-run --report`, nothing installed) and what
    changes. After confirmation (a terminal, or --yes) it runs that one command with the
    target's pip, then runs version-matrix and the import smoke again and reports before
    and after. Running it again when nothing is broken changes nothing.

    \b
    Examples:
      msdoctor fix-stack --python ~/envs/ms/bin/python --dry-run
      msdoctor fix-stack --conda-env mindspore_env --yes
    """
    from msdoctor.checks.version_matrix.fix import FIXER

    target = resolve_target(python, conda_env)
    before, ctx = _matrix(target, device_target)
    plan = FIXER.plan(ctx)
    click.echo(render_plan(plan, before))
    if plan.state == "ok":
        click.echo("nothing to change: no version-matrix rule that pip can fix is broken")
        return int(ExitCode.OK if _status(before) is not Status.FAIL else ExitCode.PROBLEMS)
    if plan.state != "found" or not plan.command:
        click.echo("nothing was changed", err=True)
        return int(ExitCode.PROBLEMS)
    still = FIXER.verify(plan, ctx)
    if still:
        click.echo(
            "the plan does not verify: with its versions version-matrix would still find:\n"
            + "\n".join(_line(f) for f in still)
            + "\nnothing was changed",
            err=True,
        )
        return int(ExitCode.PROBLEMS)
    click.echo(
        "verified: version-matrix's rules, run on the target as it would be after the command, find none of "
        "the problems above"
    )
    if dry_run:
        click.echo(f"dry run: {len(plan.changes)} package(s) would change, nothing was changed")
        return int(ExitCode.OK)
    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise UserError(
                f"not installing {len(plan.changes)} package(s): not on a terminal and --yes was not given",
                "rerun with --yes to run the command above, or with --dry-run to only show it",
            )
        if not click.confirm(f"Install {len(plan.changes)} package(s) with {target} -m pip?", default=False):
            click.echo("aborted: nothing was changed")
            return int(ExitCode.PROBLEMS)
    click.echo(f"running: {plan.command_text}")
    applied = FIXER.apply(plan, ctx, lambda line: click.echo(line, err=True))
    if not applied.ok:
        click.echo(f"error: {applied.detail}", err=True)
        click.echo("  fix: read pip's output above; `msdoctor fix-stack --dry-run` shows the state now", err=True)
        return int(ExitCode.PROBLEMS)
    after, _ = _matrix(target, device_target)
    click.echo(render_before_after(before, after))
    return int(ExitCode.OK if _status(after) is not Status.FAIL else ExitCode.PROBLEMS)


def _scratch() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="msdoctor-fix-stack-")


def _matrix(target: str, device_target: Optional[str]) -> tuple[list[Any], Any]:
    """version-matrix (with the import smoke and the live probe) against the target, and its context."""
    from pathlib import Path

    from msdoctor.checks.version_matrix import VersionMatrixCheck
    from msdoctor.context import Context, FactUnavailable, Options

    ctx = Context(Options(python=target, project_dir=Path(_scratch()), device_target=device_target))
    try:
        return VersionMatrixCheck().run(ctx), ctx
    except FactUnavailable as exc:
        raise UserError(exc.message, exc.fix, exit_code=ExitCode.NO_VERDICT) from None


def _status(findings: list[Any]) -> Status:
    from msdoctor.model import worst

    return worst((f.status for f in findings), default=Status.PASS)


def _line(f: Any) -> str:
    return f"  [{f.status.value}] {f.title}"


def redact_text(text: str) -> str:
    from msdoctor.redact import Redactor

    return Redactor.for_environment(os.environ).text(text)


def render_plan(plan: Any, before: list[Any]) -> str:
    out = [f"msdoctor fix-stack: {plan.python}", "version-matrix now:"]
    out += [_line(f) for f in before if f.status is not Status.PASS] or ["  no problems"]
    if plan.state == "found":
        out.append("plan (checked by the target's pip, nothing installed yet):")
        out += [f"  {c}" for c in plan.changes]
        out.append("pip's report (pip install --dry-run --report, one package at a time, --no-deps):")
        for dr in plan.dry_runs:
            if dr.ok and dr.install:
                got = ", ".join(f"{p.name} {p.version}" + (f" ({p.url})" if p.url else "") for p in dr.install)
                out.append(f"  pip {' '.join(dr.argv[3:])}: would install {got}")
        if plan.remaining:
            out.append("left as they are (warnings that were there before): " + "; ".join(plan.remaining))
        out.append(f"command: {plan.command_text}")
        out.append(plan.summary())
    elif plan.state == "unverified":
        out.append(plan.summary())
        if plan.command_text:
            out.append(f"unchecked guess (not run): {plan.command_text}")
    elif plan.state == "none":
        out.append(plan.summary())
        out += [f"  tried: {t}" for t in plan.tried[-8:]]
    return redact_text("\n".join(out))


def render_before_after(before: list[Any], after: list[Any]) -> str:
    out = [f"version-matrix before: {_status(before).value}; after: {_status(after).value}"]
    out += ["before:"] + [_line(f) for f in before if f.status is not Status.PASS]
    out += ["after:"] + ([_line(f) for f in after if f.status is not Status.PASS] or ["  no problems"])
    smoke = [f for f in after if "training-script order" in f.title or f.code in ("import-fails", "import-crash")]
    out += [f"import smoke after: {smoke[0].title}" if smoke else "import smoke after: not run"]
    return redact_text("\n".join(out))
