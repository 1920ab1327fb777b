"""``msdoctor fix-kernel``: register the target as a Jupyter kernel and select it in VS Code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional, TypeVar

import click

from msdoctor.commands.common import project_option, resolve_target, target_options
from msdoctor.errors import UserError
from msdoctor.model import ExitCode


@click.command("fix-kernel")
@target_options
@click.option("--name", metavar="NAME", help="Kernel name (default: from the env name; lowercase, no spaces).")
@click.option("--display-name", metavar="TEXT", help="Name shown in Jupyter's and VS Code's kernel pickers.")
@click.option(
    "--user",
    "scope",
    flag_value="user",
    default=True,
    help="Register the kernel for this user (JUPYTER_DATA_DIR/kernels); the default.",
)
@click.option(
    "--sys-prefix",
    "scope",
    flag_value="sys-prefix",
    help="Register the kernel inside the target environment (<prefix>/share/jupyter/kernels).",
)
@click.option(
    "--vscode/--no-vscode",
    default=None,
    help="Set python.defaultInterpreterPath in .vscode/settings.json "
    "(default: when the project has a .vscode/ folder or a notebook).",
)
@click.option("--remove-stale", is_flag=True, help="Also remove kernels whose interpreter no longer exists.")
@project_option()
@click.option("--dry-run", is_flag=True, help="Show the plan and change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Apply without asking (needed when not on a terminal).")
def fix_kernel(
    python: Optional[str],
    conda_env: Optional[str],
    name: Optional[str],
    display_name: Optional[str],
    scope: str,
    vscode: Optional[bool],
    remove_stale: bool,
    project: Optional[Path],
    dry_run: bool,
    yes: bool,
) -> int:
    """Make Jupyter and VS Code run the target interpreter (the one with MindSpore).

    \b
    Shows a plan first: install ipykernel into the target if missing, register a
    kernel whose argv[0] is the target, set python.defaultInterpreterPath in
    .vscode/settings.json (comments and other keys kept, backup written), and with
    --remove-stale remove kernels whose interpreter was deleted. Running it twice
    changes nothing the second time.

    \b
    Examples:
      msdoctor fix-kernel --conda-env mindspore_env --dry-run
      msdoctor fix-kernel --python ~/envs/ms/bin/python --yes
      msdoctor fix-kernel --remove-stale --no-vscode
    """
    from msdoctor.checks.kernel_mismatch.fix import KernelRequest, check_kernel_name, render_plan, summary_of
    from msdoctor.checks.kernel_mismatch.fixer import KernelFixer
    from msdoctor.context import Context, Options

    if name is not None and check_kernel_name(name):
        raise click.BadParameter(check_kernel_name(name) or "", param_hint="--name")
    python_path = resolve_target(python, conda_env)
    project_dir = (project or Path.cwd()).resolve()
    req = KernelRequest(name=name, display_name=display_name, scope=scope, vscode=vscode, remove_stale=remove_stale)
    fixer = KernelFixer(req)
    ctx = Context(Options(python=python_path, project_dir=project_dir))
    plan = _facts(lambda: fixer.plan(ctx))
    click.echo(render_plan(plan))
    if plan.blocked:
        first = plan.blocked[0]
        raise UserError(f"cannot apply the plan: {first.blocked}; nothing was changed", first.blocked_fix)
    if not plan.changes:
        click.echo(summary_of(plan))
        return int(ExitCode.OK)
    n = len(plan.changes)
    still = _facts(lambda: fixer.verify(plan, ctx))
    if still:
        from msdoctor.redact import clean_text

        click.echo(
            clean_text(
                "the plan does not verify: after it, kernel-mismatch would still find:\n"
                + "\n".join(f"  [{f.status.value}] {f.title}" for f in still)
                + "\nnothing was changed"
            ),
            err=True,
        )
        return int(ExitCode.PROBLEMS)
    click.echo(
        "verified: kernel-mismatch's verdicts, run on the kernels and settings as the plan would leave them, "
        "find no problem with what it changes"
    )
    if dry_run:
        click.echo(f"dry run: {n} change(s) planned, nothing was changed")
        return int(ExitCode.OK)
    if not yes and not _confirmed(n):
        click.echo("aborted: nothing was changed")
        return int(ExitCode.PROBLEMS)
    applied = fixer.apply(plan, ctx, lambda line: click.echo(line, err=True))
    for line in applied.done:
        click.echo(f"done: {line}")
    if not applied.ok:
        click.echo(f"error: {applied.detail}", err=True)
        if applied.fix:
            click.echo(f"  fix: {applied.fix}", err=True)
        return int(ExitCode.PROBLEMS)
    click.echo(f"verify with: msdoctor check --only kernel-mismatch --python {plan.target}")
    return int(ExitCode.OK)


def _confirmed(n: int) -> bool:
    """Whether the user at the terminal agrees to apply n changes; a UserError when nobody can be asked."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(
            f"not applying {n} change(s): not on a terminal and --yes was not given",
            "rerun with --yes to apply the plan above, or with --dry-run to only show it",
        )
    return bool(click.confirm(f"Apply {n} change(s)?", default=False))


T = TypeVar("T")


def _facts(step: Callable[[], T]) -> T:
    """A fixer step that reads facts of the target: one it cannot examine is exit 3, no verdict."""
    from msdoctor.context import FactUnavailable

    try:
        return step()
    except FactUnavailable as exc:
        raise UserError(exc.message, exc.fix, exit_code=ExitCode.NO_VERDICT) from None
