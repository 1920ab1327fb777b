"""``msdoctor explain``: look error text up in the offline catalogue, then confirm with the related checks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import click

from msdoctor import options
from msdoctor.commands.common import project_option, resolve_target, target_options
from msdoctor.errors import UserError
from msdoctor.model import ExitCode


def _read_log(path: Path) -> Path:
    """The log's path once it is known to be a readable regular file (UserError, exit 2, otherwise)."""
    from msdoctor.inputs import open_regular

    path = path.expanduser()
    open_regular(path, label="--log ").close()
    return path


def _confirm(
    matches: list[Any],
    python_path: str,
    config: Optional[Path],
    project: Optional[Path],
    device_target: Optional[str],
    quick: bool,
    color: Optional[bool],
) -> None:
    """Run the checks named by the matches against the target and show their results."""
    from msdoctor.doctor import build_options, make_context
    from msdoctor.render import prepare
    from msdoctor.doctor import Selection, diagnose, load_checks
    from msdoctor.render import RenderOptions, render

    wanted = []
    for m in matches:
        if m.check_id and m.check_id not in wanted:
            wanted.append(m.check_id)
    if not wanted:
        click.echo("No msdoctor check detects these causes ahead of time; the fix above is a code or setup change.")
        return
    registry = load_checks(True)
    known = set(registry.ids())
    missing = [c for c in wanted if c not in known]
    for c in missing:
        click.echo(
            f"(the check {c} is not available in this msdoctor installation; `msdoctor list-checks` shows what is)"
        )
    available = [c for c in wanted if c in known]
    if not available:
        return
    # an Ascend error is confirmed by asking the checks about Ascend, whatever the machine's default is
    target = device_target or next((m.device_target for m in matches if m.device_target), None)
    about = f" (device target {target})" if target else ""
    click.echo(f"\nConfirming with {', '.join(available)} against {python_path}{about} ...\n")
    origin = "--device-target" if device_target else "the explained error"
    options = build_options(
        python_path,
        project,
        config,
        target,
        quick,
        False,
        30.0,
        extra={"device_target_from": origin} if target else None,
    )
    ctx = make_context(options)
    diagnosis = diagnose(ctx, Selection(only=available), registry=registry)
    # the confirming check's proof is the answer (explain has no -v to ask for it)
    render(
        "terminal",
        prepare(diagnosis.report, "terminal", redact=True),
        sys.stdout,
        RenderOptions(color=color, verbose=True),
    )


def _postmortem(log_dirs: tuple[Path, ...], python_path: str, fmt: str) -> int:
    """``--log-dir``: msdoctor.preflight.postmortem reads the job's logs; exit 0 when it names a first failure."""
    from msdoctor.preflight.postmortem import analyse
    from msdoctor.redact import Redactor, clean_text, sanitize

    pm = analyse(list(log_dirs), python_path)
    redactor = Redactor.for_environment(os.environ)
    if fmt == "json":
        click.echo(json.dumps(redactor.value(sanitize(pm.to_json())), indent=2, ensure_ascii=False))
    else:
        click.echo(redactor.text(clean_text("\n".join(pm.lines()))))
    return int(ExitCode.OK if pm.first_failure is not None else ExitCode.PROBLEMS)


def _pasted_interpreter(matches: list[Any], python_path: str, chosen: bool) -> tuple[str, Optional[str]]:
    """With no --python / --conda-env, fixes name the interpreter the pasted paths point to, never msdoctor's own;
    the note says so."""
    from msdoctor.explain.owners import interpreter_of_paths

    if chosen:
        return python_path, None
    # the matched lines, and the frame a structural rule read (msdoctor/explain/rules/: groups["frame"])
    pasted = interpreter_of_paths([m.line for m in matches] + [m.groups.get("frame", "") for m in matches])
    if pasted is None:
        if _runs_in_active_env():
            return python_path, None  # msdoctor is installed in the environment the user works in
        return "python", (
            "(fixes name `python`: the paste names no interpreter, and msdoctor's own is not the "
            "active environment's; run them with the Python that failed, or pass --python)"
        )
    return pasted, (
        f"(fixes name {pasted}, the interpreter of the environment the pasted paths are in; "
        "pass --python to name another)"
    )


def _runs_in_active_env() -> bool:
    """Whether msdoctor runs in the activated venv / conda env (then its interpreter is the user's)."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env = os.environ.get(var)
        if env and os.path.realpath(env) == os.path.realpath(sys.prefix):
            return True
    return False


def _live_stdin(
    python_path: str,
    config: Optional[Path],
    config_text: Optional[str],
    project: Optional[Path],
    device_target: Optional[str],
    no_confirm: bool,
    quick: bool,
    color: Optional[bool],
    chosen: bool,
) -> int:
    """``explain -`` in the terminal format: each match is printed (and flushed) as soon as it is known, as grep
    does, so ``tail -f train.log | msdoctor explain -`` shows errors while the run goes on; the confirming checks
    run once stdin ends."""
    from msdoctor.explain import describe, iter_explain_stream
    from msdoctor.redact import Redactor, clean_text

    redactor = Redactor.for_environment(os.environ)
    matches = []
    for m in iter_explain_stream(sys.stdin.buffer):
        matches.append(m)
        shown, _ = _pasted_interpreter([m], python_path, chosen)
        click.echo(redactor.text(clean_text(describe(m, shown, config_text))) + "\n")
        sys.stdout.flush()
    if not matches:
        click.echo("No known error signature in stdin.")
        click.echo(
            "  `msdoctor check` examines the environment; `msdoctor report` writes a redacted report to "
            "attach to a bug report."
        )
        return int(ExitCode.PROBLEMS)
    click.echo(f"{len(matches)} known error{'s' if len(matches) != 1 else ''} in stdin (each printed as it arrived).")
    if not no_confirm:
        _confirm(matches, python_path, config, project, device_target, quick, color)
    return int(ExitCode.OK)


@click.command("explain")
@click.argument("text", required=False)
@click.option("--log", "log", type=click.Path(path_type=Path), metavar="FILE", help="Scan a whole log file.")
@click.option(
    "--log-dir",
    "log_dirs",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Post-mortem of a failed msrun job: msrun's --log_dir (scheduler.log, worker_N.log, msrun.log), "
    "or a directory of node directories; repeat it for each node's directory.",
)
@target_options
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Training config the confirming checks should use.",
)
@project_option("The project directory for the confirming checks (default: the current directory).")
@options.device_target("Device the confirming checks ask about (default: the one the error is about, if any).")
@click.option("--no-confirm", is_flag=True, help="Only explain; do not run the related checks against the target.")
@options.quick("Confirming checks skip live probes that import MindSpore.")
@options.output_format(
    ["terminal", "json"],
    "json: every match with its cause, fix, source and the line it matched; the confirming checks do not run.",
)
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: auto, honours NO_COLOR).")
def explain(
    text: Optional[str],
    log: Optional[Path],
    log_dirs: tuple[Path, ...],
    python: Optional[str],
    conda_env: Optional[str],
    config: Optional[Path],
    project: Optional[Path],
    device_target: Optional[str],
    no_confirm: bool,
    quick: bool,
    fmt: str,
    color: Optional[bool],
) -> int:
    """Explain an error message or a log: cause, fix, and the check that confirms it.

    \b
    Examples:
      msdoctor explain "RuntimeError: Unsupported device target Ascend"
      msdoctor explain --log runs/tiny-cpu/train.log
      some_command 2>&1 | msdoctor explain -        (read the text from stdin)
      msdoctor explain --log-dir msrun_log           (which rank of a failed msrun job failed first, and why)

    Exit codes: 0 at least one known error was found (--log-dir: the first failure was named), 1 none was,
    2 unreadable input.
    """
    from msdoctor.explain import describe, explain_file, explain_stream, explain_text

    if log_dirs:
        if text is not None or log is not None:
            raise UserError(
                "--log-dir is used alone (not with error text or --log)", "msdoctor explain --log-dir msrun_log"
            )
        return _postmortem(log_dirs, resolve_target(python, conda_env), fmt)
    if (text is None) == (log is None):
        raise UserError(
            "give the error text or --log FILE (one of them)",
            'msdoctor explain "ERROR TEXT"   or   msdoctor explain --log train.log',
        )
    python_path = resolve_target(python, conda_env)
    config_text = str(config) if config is not None else None
    chosen = python is not None or conda_env is not None
    if log is not None:
        source = str(log)
        matches = explain_file(_read_log(log))
    elif text == "-" and fmt == "terminal":
        return _live_stdin(python_path, config, config_text, project, device_target, no_confirm, quick, color, chosen)
    elif text == "-":
        source = "stdin"
        matches = explain_stream(sys.stdin.buffer)
    else:
        source = "the text"
        matches = explain_text(text or "")

    from msdoctor.redact import Redactor, clean_text, sanitize

    target = python_path
    python_path, note = _pasted_interpreter(matches, python_path, chosen)
    # the text explained is outside text: secrets in it are masked, terminal escapes removed
    redactor = Redactor.for_environment(os.environ)
    if fmt == "json":
        click.echo(
            json.dumps(
                redactor.value(
                    sanitize(
                        {
                            "source": source,
                            "matches": [
                                {
                                    "id": m.entry_id,
                                    "title": m.title,
                                    "category": m.category,
                                    "cause": m.cause,
                                    "fix": m.fix_for(python_path, config_text),
                                    "check": m.check_id,
                                    "source": m.source,
                                    "line": m.line,
                                    "line_no": m.line_no,
                                    "count": m.count,
                                    "log_cause": m.log_cause,
                                    "log_solution": m.log_solution,
                                }
                                for m in matches
                            ],
                        }
                    )
                ),
                indent=2,
                ensure_ascii=False,
            )
        )
        return int(ExitCode.OK if matches else ExitCode.PROBLEMS)

    if not matches:
        click.echo(f"No known error signature in {source}.")
        click.echo(
            "  `msdoctor check` examines the environment; `msdoctor report` writes a redacted report to "
            "attach to a bug report."
        )
        return int(ExitCode.PROBLEMS)
    click.echo(f"{len(matches)} known error{'s' if len(matches) != 1 else ''} in {source}:\n")
    if note:
        click.echo(redactor.text(note) + "\n")
    for m in matches:
        click.echo(redactor.text(clean_text(describe(m, python_path, config_text))))
        click.echo()
    if not no_confirm:  # the checks run against a real interpreter: the pasted one where it is on this machine
        _confirm(
            matches,
            python_path if os.access(python_path, os.X_OK) else target,
            config,
            project,
            device_target,
            quick,
            color,
        )
    return int(ExitCode.OK)
