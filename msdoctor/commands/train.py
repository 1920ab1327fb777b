"""``msdoctor train``: run every check against the config, and start the reference pretraining only if all pass."""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import click

from msdoctor import options
from msdoctor.commands.common import project_option, resolve_target, split_ids, target_options, timeout_options
from msdoctor.errors import UserError
from msdoctor.fsutil import why_unwritable
from msdoctor.gate import chip_name, gate, gate_notes, write_config, write_report
from msdoctor.supervisor import LOG_TAIL_LINES, Outcome, explain_failure, log_files, log_tail, start

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Options
    from msdoctor.doctor import Diagnosis
    from msdoctor.facts.config import ConfigFacts
    from msdoctor.model import Report
    from msdoctor.redact import Redactor
    from msdoctor.training.config import RunConfig


def resolve_config(
    path: Path,
    max_steps: Optional[int],
    data: tuple[str, ...],
    output_dir: Optional[Path],
    runtime: Optional[dict[str, Any]] = None,
) -> Any:
    """The config file with the command-line overrides applied, validated as a whole (exit 2 lists every problem)."""
    from msdoctor.facts.config import ConfigFacts, load_config
    from msdoctor.shipped import path as shipped
    from msdoctor.training.config import ConfigError, from_dict

    facts = load_config(path)
    if facts.kind != "msdoctor":
        raise UserError(
            f"{facts.path} looks like a {facts.kind} config; msdoctor train runs msdoctor training YAML",
            f"start from {shipped('training/configs/tiny-cpu.yaml')} ({shipped('docs/training-config.md')} lists every "
            f"key); `msdoctor check --config {facts.path}` still checks this file",
        )
    raw = copy.deepcopy(facts.doc.data) or {}
    for section, key, value in (
        ("train", "max_steps", max_steps),
        ("data", "paths", list(data) or None),
        ("runtime", "output_dir", str(output_dir) if output_dir else None),
        *(("runtime", k, v) for k, v in (runtime or {}).items()),
    ):
        if value is not None:
            if not isinstance(raw.get(section), dict):
                raw[section] = {}
            raw[section][key] = value
    try:
        run = from_dict(raw, dict(facts.doc.lines), facts.path)
    except ConfigError as exc:
        listing = "\n  ".join(p.render(facts.path) for p in exc.problems)
        raise UserError(
            f"{facts.path}: {len(exc.problems)} problem(s) with the command-line overrides:\n  {listing}",
            f"change the option or the config; {shipped('docs/training-config.md')} lists every key",
        ) from None
    return ConfigFacts(facts.path, facts.doc, "msdoctor", run)


def run_directory(cfg: "RunConfig", base: Optional[Path] = None) -> Path:
    """runtime.output_dir, else runs/<name>; a relative one is read from base (--project; default: the cwd)."""
    path = Path(cfg.runtime.output_dir or Path("runs") / cfg.name).expanduser()
    return ((base or Path.cwd()) / path).resolve()


def from_here(path: str) -> str:
    """A command-line path or glob as the current directory reads it (``~`` kept for the glob's own expansion)."""
    return path if path.startswith("~") or os.path.isabs(path) else os.path.join(os.getcwd(), path)


def refuse_unwritable(run_dir: Path) -> None:
    """The run directory must be creatable and writable: say so before the checks run, not after (exit 2)."""
    probe = run_dir
    while not probe.exists():
        if probe.is_symlink() or probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise UserError(
            f"--output-dir {run_dir}: {probe} is a file, not a directory",
            "choose an output directory whose parents are directories",
        )
    problem = why_unwritable(probe) if probe.is_dir() else None
    if problem is not None:
        raise UserError(f"--output-dir {run_dir}: {probe} is not writable: {problem[0]}", problem[1])


def refuse_foreign(run_dir: Path) -> None:
    """msdoctor train writes config.yaml, config.json, metrics.csv and check-report.json into the run directory:
    a directory with other content and no run manifest (the project itself: ``--output-dir .``) is refused."""
    from msdoctor.training.runlock import LOCK_NAME, RUN_MANIFEST, is_run_directory

    if not is_run_directory(run_dir):
        raise UserError(
            f"--output-dir {run_dir}: the directory has files and is not a run directory (no "
            f"{RUN_MANIFEST} or {LOCK_NAME}); msdoctor train would replace files there (config.yaml, "
            "config.json, metrics.csv, check-report.json)",
            "choose a new or empty directory (the default is runs/<name>), or one an earlier msdoctor train created",
        )


def refuse_stale(run_dir: Path, resume: bool) -> None:
    """A run directory with checkpoints belongs to an earlier run: continue it or pick another."""
    ckpts = run_dir / "checkpoints"
    if not resume and ckpts.is_dir() and any(p.name.startswith("step_") for p in ckpts.iterdir()):
        raise UserError(
            f"{run_dir} holds checkpoints of an earlier run",
            "continue it with --resume, or start a new run with --output-dir DIR",
        )


def finished_run(run_dir: Path, max_steps: int, config: Path) -> Optional[str]:
    """With --resume: what to say when the newest intact checkpoint already reached train.max_steps, else None.

    Resuming continues an interrupted run from its newest checkpoint; a finished run has no step left, so the
    checks and the trainer would start for nothing. Only the newest step directory is verified (as the trainer
    would, SHA-256 included), and only when it is at or past max_steps.
    """
    from msdoctor.training import checkpoint as ckpt

    root = run_dir / "checkpoints"
    if not root.is_dir():
        return None
    for step, path in ckpt._step_dirs(root):
        if step < max_steps:
            return None
        if ckpt.verify(path) is not None:
            continue  # the trainer skips it (and moves it aside); an older one decides
        more = max(2 * step, step + 1)
        return (
            f"{run_dir} is finished: its newest checkpoint is step {step}, and train.max_steps is {max_steps}.\n"
            "  --resume continues an interrupted run from its newest checkpoint; this run has no steps left, so "
            "nothing was started.\n"
            f"  To train further, raise the total: msdoctor train --config {config} --resume --max-steps {more}\n"
            f"  (it continues from step {step}; warmup + cosine then run over {more} steps, so the lr rises "
            "again from its final value). To start over: --output-dir DIR."
        )
    return None


def lock_run_directory(run_dir: Path) -> Any:
    """One msdoctor train per run directory (training/runlock.py); exit 2 naming the PID that holds it."""
    from msdoctor.training import runlock
    from msdoctor.training.errors import TrainerError

    try:
        lock = runlock.acquire(run_dir, "msdoctor train")
    except TrainerError as exc:  # the lock file is a symbolic link or not a file (training/safeopen.py)
        raise UserError(
            str(exc), f"remove {run_dir / runlock.LOCK_NAME}, or start a new run with --output-dir DIR"
        ) from None
    except OSError as exc:
        from msdoctor.fsutil import WriteError

        raise WriteError(run_dir, exc, "create the run directory") from None
    except runlock.RunDirLocked as exc:
        pids = " ".join(map(str, exc.pids))
        raise UserError(
            f"{exc}: a second trainer would write the same checkpoints and metrics.csv",
            "wait for that run to end"
            + (f" or stop it (kill {pids}: it saves a checkpoint first)" if pids else "")
            + "; or start a new run with --output-dir DIR",
        ) from None
    if lock.took_over:
        click.echo(f"  note: {lock.took_over}")
    return lock


def redactor(
    no_redact: bool, cfg: "Optional[RunConfig]" = None, report: "Optional[Report]" = None
) -> "Optional[Redactor]":
    """What msdoctor check masks (home, user, host, secrets), or None with --no-redact.

    Credentials written into the config's values (``https://user:password@host/...`` in data.paths)
    are secrets too, masked wherever they show up again (a check may print the path resolved).
    """
    return None if no_redact else full_redactor(cfg, report)


def full_redactor(cfg: "Optional[RunConfig]" = None, report: "Optional[Report]" = None) -> "Redactor":
    """The redactor of :func:`redactor` without --no-redact."""
    import dataclasses
    import re

    from msdoctor.redact import MIN_SECRET, Redactor

    env = report.facts.get("env") if report is not None and isinstance(report.facts, dict) else None
    red = Redactor.for_environment(os.environ, more_environs=[env] if isinstance(env, dict) else [])
    if cfg is None:
        return red
    from msdoctor.training.config import to_dict

    def strings(v: Any) -> Any:
        if isinstance(v, str):
            yield v
        elif isinstance(v, (dict, list)):
            for x in v.values() if isinstance(v, dict) else v:
                yield from strings(x)

    found: set[str] = set()
    for text in strings(to_dict(cfg)):
        for userinfo in re.findall(r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s@'\"<>]+)@", text):
            found.update(x for x in (userinfo, userinfo.partition(":")[2]) if len(x) >= MIN_SECRET)
    secrets = tuple(sorted(set(red.secrets) | found, key=len, reverse=True))
    return dataclasses.replace(red, secrets=secrets)


def _with_paths(fn: Any) -> Any:
    """The help names the example configs and the key reference where this msdoctor has them (a wheel has no
    training/configs/ or docs/ in the current directory)."""
    from msdoctor.shipped import path

    fn.__doc__ = (
        (fn.__doc__ or "").replace("CONFIGS", path("training/configs")).replace("KEYS", path("docs/training-config.md"))
    )
    return fn


@click.command("train")
@target_options
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="msdoctor training YAML (the examples and the key reference are named above).",
)
@click.option("--resume", is_flag=True, help="Continue from the newest complete checkpoint in the run directory.")
@click.option("--max-steps", type=click.IntRange(min=1), metavar="N", help="Override train.max_steps.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Run directory (default: runtime.output_dir, else runs/<config name>).",
)
@click.option("--data", multiple=True, metavar="GLOB", help="Train on these text files instead of data.paths.")
@click.option("--node-rank", type=click.IntRange(min=0), help="Multi-node: this node's rank (runtime.node_rank).")
@click.option("--master-addr", metavar="ADDR", help="Multi-node: node_rank 0's address (runtime.master_addr).")
@click.option("--master-port", type=click.IntRange(1, 65535), help="Multi-node: msrun's port (runtime.master_port).")
@options.device_target(
    "Train on this device: overrides runtime.device_target, and the checks check it (as check --device-target)."
)
@project_option(
    help="The project (default: the current directory): the checks read its msdoctor.toml and files, "
    "the config's relative paths (data, output_dir) are read from it and the trainer runs in it; "
    "--config, --data and --output-dir stay relative to the current directory."
)
@timeout_options
@click.option("--strict", is_flag=True, help="A warning stops the training too (as check --strict / --fail-on warn).")
@options.quick(
    "The gate skips the live probes (importing MindSpore and the stack, device "
    "init, a matmul), as check --quick; the trainer is then the first to try the device. Said in the "
    "output and in check-report.json."
)
@options.skip(
    "Leave these checks out of the gate (said in the output and in check-report.json). To accept "
    "one finding and keep the check, use an ignore rule in msdoctor.toml."
)
@options.no_plugins("Run only msdoctor's own checks before training (as check --no-plugins).")
@click.option("-v", "--verbose", is_flag=True, help="Show check details and evidence.")
@options.no_redact("Keep home paths, user/host names and secrets in the run directory's files and the output.")
@_with_paths
def train(
    python: Optional[str],
    conda_env: Optional[str],
    config: Path,
    resume: bool,
    max_steps: Optional[int],
    output_dir: Optional[Path],
    data: tuple[str, ...],
    node_rank: Optional[int],
    master_addr: Optional[str],
    master_port: Optional[int],
    device_target: Optional[str],
    project: Optional[Path],
    probe_timeout: float,
    live_timeout: float,
    strict: bool,
    quick: bool,
    skip: tuple[str, ...],
    no_plugins: bool,
    verbose: bool,
    no_redact: bool,
) -> int:
    """Check the environment against the config, then run the reference pretraining.

    Any check that fails or errors (with --strict: also warns) stops here: the report is printed
    and written to the run directory, and nothing starts (exit 1). Otherwise the trainer runs with the target
    interpreter: one process for one device, msrun for more.

    \b
    Example configs: CONFIGS
    Every config key: KEYS
    Examples:
      msdoctor train --config CONFIGS/tiny-cpu.yaml
      msdoctor train --config CONFIGS/tiny-cpu.yaml --resume
      msdoctor train --config my.yaml --python ~/envs/ms/bin/python --data 'corpus/**/*.txt'
      msdoctor train --config my.yaml --device-target Ascend --project ~/work/llm
      msdoctor train --config CONFIGS/tiny-cpu-2nodes.yaml --master-addr 10.0.0.1 --node-rank 1
    """
    from msdoctor.training import runlock

    red = redactor(no_redact)
    target = resolve_target(python, conda_env)
    if project is not None:  # the command line's paths are the current directory's; the config's are the project's
        project = project.resolve()
        data = tuple(from_here(g) for g in data)
        output_dir = Path(from_here(str(output_dir.expanduser()))) if output_dir is not None else None
    try:
        facts = resolve_config(
            config,
            max_steps,
            data,
            output_dir,
            {
                k: v
                for k, v in (
                    ("node_rank", node_rank),
                    ("master_addr", master_addr),
                    ("master_port", master_port),
                    ("device_target", device_target),
                )
                if v is not None
            },
        )
    except UserError as exc:  # a credential in the config must not reach the terminal either
        raise (UserError(red.text(exc.message), red.text(exc.fix or "") or None) if red is not None else exc) from None
    cfg = facts.run
    red = redactor(no_redact, cfg)
    run_dir = run_directory(cfg, project)
    refuse_unwritable(run_dir)
    refuse_foreign(run_dir)
    lock = lock_run_directory(run_dir)
    try:
        try:
            runlock.write_manifest(run_dir, cfg.name)
        except OSError as exc:  # a full disk after the lock was taken
            from msdoctor.fsutil import WriteError

            raise WriteError(run_dir / runlock.RUN_MANIFEST, exc) from None
        from msdoctor.doctor import build_options

        checks = build_options(
            target, project, facts.path, device_target, quick, verbose, probe_timeout, live_timeout=live_timeout
        )
        return _train(
            cfg,
            facts,
            config,
            target,
            run_dir,
            lock,
            red,
            checks,
            resume=resume,
            output_dir=output_dir,
            strict=strict,
            plugins=not no_plugins,
            project=project,
            skip=tuple(split_ids(skip)),
        )
    finally:
        runlock.release(lock)


def _train(
    cfg: "RunConfig",
    facts: "ConfigFacts",
    config: Path,
    target: str,
    run_dir: Path,
    lock: Any,
    red: "Optional[Redactor]",
    checks: "Options",
    *,
    resume: bool,
    output_dir: Optional[Path],
    strict: bool = False,
    plugins: bool = True,
    project: Optional[Path] = None,
    skip: tuple[str, ...] = (),
) -> int:
    """The gate, the preflight of a multi-node run, then the trainer on ``target``. ``checks`` are the gate's
    options (doctor.build_options: --device-target, --quick, -v, the timeouts); ``project`` is --project as given."""
    from msdoctor.doctor import invocation_facts
    from msdoctor.model import ExitCode, Status
    from msdoctor.render import RenderOptions, render

    refuse_stale(run_dir, resume)
    done = finished_run(run_dir, cfg.train.max_steps, config) if resume else None
    if done is not None:
        click.echo(red.text(done) if red is not None else done)
        return int(ExitCode.OK)
    verbose, device_target, quick = checks.verbose, checks.device_target, checks.quick
    _announce(cfg, facts, run_dir, red)
    notes = gate_notes(quick, skip)
    for note in notes:
        click.echo(f"  warning: {note}")
    diagnosis = gate(checks, facts, plugins=plugins, skip=skip)
    report = diagnosis.report
    report.facts["invocation"] = {
        **invocation_facts(diagnosis.context.options, diagnosis.context),
        "skipped": list(skip),
    }
    shown = full_redactor(cfg, report).report(report) if red is not None else report
    render("terminal", shown, sys.stdout, RenderOptions(verbose=verbose))
    saved = write_report(shown, run_dir)
    if report.exit_code(Status.WARN if strict else Status.FAIL) != ExitCode.OK:
        click.echo(f"training not started: the checks above found problems (report: {saved})", err=True)
        return int(ExitCode.PROBLEMS)

    from msdoctor.preflight import gate as preflight_gate

    if preflight_gate.needed(cfg):  # every node and rank checked through msrun before the training's msrun
        if preflight_gate.run(cfg, target, run_dir, facts.path) != 0:
            click.echo(
                f"training not started: the multi-node preflight failed (report: "
                f"{run_dir / 'preflight' / 'preflight-report.json'})",
                err=True,
            )
            return int(ExitCode.PROBLEMS)
    how = _launch(cfg, target, run_dir, resume, lock, red, diagnosis)
    click.echo(
        f"checks passed (report: {saved}); starting "
        + ("1 training process" if cfg.runtime.device_num == 1 else f"{cfg.runtime.device_num} workers via msrun")
        + "".join(f"\n  warning: {note}" for note in notes)
    )
    out = start(how, run_dir, lock, red, cwd=project)
    again = (
        f"msdoctor train --config {facts.path} --resume"
        + (f" --output-dir {run_dir}" if output_dir else "")
        + (f" --project {project}" if project else "")
        + (f" --device-target {device_target}" if device_target else "")
        + (" --quick" if quick else "")
        + "".join(f" --skip {i}" for i in skip)
    )
    return _finished(out, how, run_dir, again, target, config)


def _announce(cfg: "RunConfig", facts: "ConfigFacts", run_dir: Path, red: "Optional[Redactor]") -> None:
    """The run's name, where it writes, its batch arithmetic, and the config's warnings."""
    from msdoctor.domain.training_setup import read
    from msdoctor.training.config import warnings

    show = red.text if red is not None else str
    click.echo(f"msdoctor train: {cfg.name} ({facts.path}) -> {run_dir}")
    run = read(facts).run  # the batch as the training-config check resolved it (one reading of the config)
    batch = (
        f"{run.global_batch} sequences = {run.batch_formula().rsplit(' = ', 1)[0]}"
        if run is not None
        else f"{cfg.global_batch} sequences"
    )
    click.echo(f"  global batch {batch}; {cfg.train.max_steps} optimizer steps, warmup {cfg.train.warmup_steps}")
    for w in warnings(cfg):
        click.echo(f"  warning: {show(w)}")


def _launch(
    cfg: "RunConfig",
    target: str,
    run_dir: Path,
    resume: bool,
    lock: Any,
    red: "Optional[Redactor]",
    diagnosis: "Diagnosis",
) -> Any:
    """How to start the trainer: the command, and an environment that makes it die with msdoctor, share the
    run lock, mask its logs, and read the real config when the written one is redacted."""
    from msdoctor.training import launch as launching
    from msdoctor.training import lifecycle, runlock
    from msdoctor.training.logs import REDACT_ENV
    from msdoctor.training.train import CONFIG_ENV

    real_config = write_config(cfg, run_dir, red)
    how = launching.build(cfg, target, run_dir, resume, dict(os.environ))
    for key in (REDACT_ENV, CONFIG_ENV):
        how.env.pop(key, None)
    how.env.update({lifecycle.DIE_ENV: "1", runlock.FD_ENV: str(lock.fd)})
    if red is not None:
        how.env[REDACT_ENV] = json.dumps(red.rules())
    if real_config is not None:
        how.env[CONFIG_ENV] = real_config
    if cfg.runtime.device_target == "Ascend":
        how.env.setdefault("MSDOCTOR_CHIP", chip_name(diagnosis.context))
    return how


def _finished(out: Outcome, how: Any, run_dir: Path, again: str, target: str, config: Path) -> int:
    """Say how the training ended (finished, stopped by a signal, stopped with the trainer's own message, or
    failed with the end of its logs and a likely cause); the exit status for msdoctor."""
    from msdoctor.model import ExitCode

    rc = out.rc
    if rc == 0 and out.forwarded is None:
        click.echo(f"training finished: {run_dir / 'metrics.csv'}, checkpoints in {run_dir / 'checkpoints'}")
        return 0
    stop = rc - 128 if rc in (128 + signal.SIGTERM, 128 + signal.SIGINT) else out.forwarded
    if stop is not None and not out.messages:
        click.echo(
            f"training stopped by signal {stop} ({signal.Signals(stop).name}); the trainer saves a checkpoint "
            f"when it stops after a step; continue with: {again}",
            err=True,
        )
        return 128 + stop
    if out.messages:  # the trainer's own message says what to change: no log tail, no traceback
        click.echo("training stopped: " + "\n".join(out.messages) + f"\n  (also in {run_dir / 'train.log'})", err=True)
        return int(ExitCode.PROBLEMS)
    files = log_files(run_dir, how.worker_logs)
    click.echo(f"training failed (exit status {rc}); the end of its logs:\n{log_tail(files)}", err=True)
    causes = explain_failure(files, target, config)
    if causes:
        click.echo("\nlikely cause:\n" + "\n\n".join(causes), err=True)
    if how.worker_logs is not None:  # msrun ran several workers: which one failed first, and what followed
        postmortem(how.worker_logs, run_dir, target)
    return int(ExitCode.PROBLEMS)


def postmortem(worker_logs: Path, run_dir: Path, python: str) -> None:
    """The post-mortem of the run directory: msrun's log directory, msrun's own messages (in stderr.log) and the
    trainer's logs; nothing when they cannot be read or name no failure."""
    from msdoctor.errors import UserError
    from msdoctor.preflight.postmortem import analyse

    # run_dir: the trainer's own logs (which pid is which rank), stderr.log (msrun's messages), msrun_log/
    paths = [p for p in (run_dir, worker_logs) if p.exists()]
    paths = paths[:1] if worker_logs.parent == run_dir else paths
    try:
        pm = analyse(paths, python) if paths else None
    except UserError:
        return
    if pm is not None and pm.first_failure is not None:
        click.echo(
            "\n"
            + "\n".join(pm.lines())
            + "\n  (again: msdoctor explain "
            + " ".join(f"--log-dir {p}" for p in paths)
            + ")",
            err=True,
        )


# The gate (msdoctor.gate) and the trainer's supervision (msdoctor.supervisor) are re-exported for callers of
# their old place; new code imports them from there.
__all__ = [
    "LOG_TAIL_LINES",
    "Outcome",
    "chip_name",
    "explain_failure",
    "gate",
    "gate_notes",
    "log_files",
    "log_tail",
    "resolve_config",
    "start",
    "train",
    "write_config",
    "write_report",
]
