"""``msdoctor check`` and ``msdoctor list-checks``."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import click

from msdoctor import options
from msdoctor.commands.common import (
    ensure_writable,
    project_option,
    report_stack,
    resolve_target,
    split_ids,
    target_options,
    timeout_options,
    write_output,
)
from msdoctor.doctor import build_options, invocation_facts, make_context
from msdoctor.model import ExitCode, Status
from msdoctor.render import prepare

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context
    from msdoctor.doctor import Selection
    from msdoctor.model import CheckResult, Report
    from msdoctor.plugins import Registry
    from msdoctor.render import RenderOptions


def output_formats() -> list[str]:
    from msdoctor.render import FORMATS

    return sorted(FORMATS)


REPORT_FORMATS = output_formats()


def training_config_options(fn: Any) -> Any:
    """The training-config check's options (docs/training-config-check.md); also `# msdoctor: key=value` comments."""
    for flag, kind, what in reversed(
        (
            ("--devices", click.IntRange(min=1), "Devices in the whole job (checks data x model x pipeline parallel)."),
            ("--devices-per-node", click.IntRange(min=1), "Devices of one node (default: npu-smi / nvidia-smi here)."),
            ("--base-global-batch", click.IntRange(min=1), "Global batch the config's learning rate was tuned for."),
            (
                "--tokens-per-second",
                click.FloatRange(min=0, min_open=True),
                "Throughput of the whole job, for the "
                "time between checkpoints (default: measured from an earlier run in the output directory).",
            ),
            (
                "--max-lost-hours",
                click.FloatRange(min=0, min_open=True),
                "Most training time a crash may lose (default 2).",
            ),
        )
    ):
        name = flag.lstrip("-").replace("-", "_")
        fn = click.option(flag, name, type=kind, default=None, metavar="N", help=what)(fn)
    return fn


@click.command("check")
@target_options
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Training config (msdoctor YAML, MindFormers YAML, or HF config.json) to check against.",
)
@project_option()
@options.device_target()
@options.selection
@options.output_format(REPORT_FORMATS, "Output format.")
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write the report in --format to FILE; the terminal still shows the human view.",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["warn", "fail"], case_sensitive=False),
    default=None,
    help="The lowest status that makes the exit code 1 (default: fail; warn also fails on warnings).",
)
@click.option("--strict", is_flag=True, help="Warnings count as problems (exit 1); the same as --fail-on warn.")
@options.no_redact()
@options.quick()
@options.no_plugins()
@timeout_options
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: auto, honours NO_COLOR).")
@click.option("-v", "--verbose", is_flag=True, help="Show details, evidence and tracebacks.")
@training_config_options
def check(
    python: Optional[str],
    conda_env: Optional[str],
    config: Optional[Path],
    project: Optional[Path],
    device_target: Optional[str],
    only: tuple[str, ...],
    skip: tuple[str, ...],
    fmt: str,
    output: Optional[Path],
    fail_on: Optional[str],
    strict: bool,
    no_redact: bool,
    quick: bool,
    no_plugins: bool,
    probe_timeout: float,
    live_timeout: float,
    color: Optional[bool],
    verbose: bool,
    **training: Any,
) -> int:
    """Run the checks against the target interpreter and report.

    \b
    Examples:
      msdoctor check
      msdoctor check --python ~/miniconda3/envs/ms/bin/python --config train.yaml
      msdoctor check --quick --only python-env,duplicate-installs --format json
      msdoctor check --config train.yaml --format junit --output msdoctor-junit.xml --fail-on warn
    """
    from msdoctor.doctor import Selection, load_checks, start_target_probe
    from msdoctor.plugins import autoload_disabled
    from msdoctor.render import RenderOptions

    if output is not None:
        output = ensure_writable(output)
    python_path = resolve_target(python, conda_env)
    options = build_options(
        python_path,
        project,
        config,
        device_target,
        quick,
        verbose,
        probe_timeout,
        live_timeout=live_timeout,
        extra={"training_config": {k: v for k, v in training.items() if v is not None}},
    )
    ctx = make_context(options)
    plugins = not (no_plugins or autoload_disabled())
    selection = Selection(only=split_ids(only), skip=split_ids(skip), plugins=plugins)
    start_target_probe(ctx)
    registry = load_checks(plugins)
    threshold = resolve_fail_on(fail_on, strict)
    report = _diagnose(ctx, selection, registry, fmt)
    report.facts["invocation"] = invocation_facts(options, ctx)
    opts = RenderOptions(
        verbose=verbose,
        color=color,
        fail_on=threshold,
        workspace=os.environ.get("GITHUB_WORKSPACE") if fmt == "github" else None,
        stack=report_stack(),
    )
    _emit(report, fmt, output, opts, redact=not no_redact)
    return int(report.exit_code(threshold))


def _diagnose(ctx: "Context", selection: "Selection", registry: "Registry", fmt: str) -> "Report":
    """Run the checks under a progress line (the renderers of ``fmt`` and the terminal load meanwhile); the report."""
    from msdoctor.doctor import diagnose
    from msdoctor.render import preload
    from msdoctor.render.console import progress

    with progress("msdoctor: examining the environment") as update:
        done = []

        def on_done(result: "CheckResult") -> None:
            done.append(result.id)
            update(f"msdoctor: {len(done)} checks done (last: {result.id})")

        preload(["terminal", fmt])  # imported while the checks wait on their probes
        diagnosis = diagnose(ctx, selection, registry=registry, on_done=on_done)
    return diagnosis.report


def _emit(report: "Report", fmt: str, output: Optional[Path], opts: "RenderOptions", *, redact: bool) -> None:
    """The report in ``fmt`` on stdout, or in FILE with the terminal view on stdout (--output); with the github
    format in GitHub Actions, the job summary too."""
    from msdoctor.render import render

    shown = prepare(report, fmt, redact=redact)
    if output is not None:
        buf = io.StringIO()
        render(fmt, shown, buf, opts)
        write_output(output, buf.getvalue())
        render("terminal", prepare(report, "terminal", redact=redact), sys.stdout, opts)
        click.echo(f"report written to {output}", err=True)
    else:
        render(fmt, shown, sys.stdout, opts)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        _append_step_summary(os.environ["GITHUB_STEP_SUMMARY"], shown, opts)


def _append_step_summary(target: str, report: "Report", opts: "RenderOptions") -> None:
    """The GitHub job summary: the renderer gives the text, the command appends it to the file."""
    from msdoctor.render import github

    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(github.step_summary(report, opts))
    except OSError as exc:
        sys.stdout.write(github.summary_failed(target, exc))


def resolve_fail_on(fail_on: Optional[str], strict: bool) -> Status:
    """--fail-on warn|fail, with --strict as an alias of --fail-on warn."""
    if strict and fail_on is not None and fail_on.lower() != "warn":
        raise click.BadParameter(
            f"--strict means --fail-on warn, but --fail-on {fail_on} was given too", param_hint="--strict / --fail-on"
        )
    if strict or (fail_on or "").lower() == "warn":
        return Status.WARN
    return Status.FAIL


@click.command("list-checks")
@options.no_plugins("List only msdoctor's own checks.")
@options.output_format(
    ["terminal", "json"], "json: each check's id, title, description and provider, and the plugins that failed to load."
)
def list_checks(no_plugins: bool, fmt: str) -> int:
    """List the checks msdoctor can run (their ids are what --only and --skip take)."""
    import json

    from msdoctor.doctor import load_checks
    from msdoctor.plugins import autoload_disabled

    registry = load_checks(not (no_plugins or autoload_disabled()))
    rows = [
        {"id": c.id, "title": c.info.title, "description": c.info.description, "provider": c.provider}
        for c in registry.checks
    ]
    broken = [{"id": f.id, "provider": f.provider, "error": f.message} for f in registry.failures]
    if fmt == "json":
        click.echo(json.dumps({"checks": rows, "failed_plugins": broken}, indent=2))
        return int(ExitCode.OK)
    width = max([len(r["id"]) for r in rows] + [4])
    for r in rows:
        provider = "" if r["provider"] == "msdoctor" else f"  [{r['provider']}]"
        click.echo(f"{r['id']:<{width}}  {r['description']}{provider}")
    for b in broken:
        click.echo(f"{b['id']:<{width}}  (failed to load) {b['error']}")
    return int(ExitCode.OK)


# build_options, make_context, invocation_facts (msdoctor.doctor) and prepare (msdoctor.render) are re-exported
# for callers of their old place; new code imports them from there.
__all__ = ["build_options", "check", "invocation_facts", "list_checks", "make_context", "prepare"]
