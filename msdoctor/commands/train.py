"""``msdoctor train``: run every check against the config, and start the reference pretraining only if all pass."""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import click

from msdoctor.commands.common import project_option, resolve_target, split_ids, target_options, timeout_options
from msdoctor.errors import UserError

LOG_TAIL_LINES = 40


def resolve_config(path: Path, max_steps: Optional[int], data: tuple[str, ...], output_dir: Optional[Path],
                   runtime: Optional[dict[str, Any]] = None) -> Any:
    """The config file with the command-line overrides applied, validated as a whole (exit 2 lists every problem)."""
    from msdoctor.facts.config import ConfigFacts, load_config
    from msdoctor.shipped import path as shipped
    from msdoctor.training.config import ConfigError, from_dict

    facts = load_config(path)
    if facts.kind != "msdoctor":
        raise UserError(f"{facts.path} looks like a {facts.kind} config; msdoctor train runs msdoctor training YAML",
                        f"start from {shipped('training/configs/tiny-cpu.yaml')} ({shipped('docs/training-config.md')} lists every "
                        f"key); `msdoctor check --config {facts.path}` still checks this file")
    raw = copy.deepcopy(facts.doc.data) or {}
    for section, key, value in (("train", "max_steps", max_steps), ("data", "paths", list(data) or None),
                                ("runtime", "output_dir", str(output_dir) if output_dir else None),
                                *(("runtime", k, v) for k, v in (runtime or {}).items())):
        if value is not None:
            if not isinstance(raw.get(section), dict):
                raw[section] = {}
            raw[section][key] = value
    try:
        run = from_dict(raw, dict(facts.doc.lines), facts.path)
    except ConfigError as exc:
        listing = "\n  ".join(p.render(facts.path) for p in exc.problems)
        raise UserError(f"{facts.path}: {len(exc.problems)} problem(s) with the command-line overrides:\n  {listing}",
                        f"change the option or the config; {shipped('docs/training-config.md')} lists every key") from None
    return ConfigFacts(facts.path, facts.doc, "msdoctor", run)


def run_directory(cfg: Any, base: Optional[Path] = None) -> Path:
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
        raise UserError(f"--output-dir {run_dir}: {probe} is a file, not a directory",
                        "choose an output directory whose parents are directories")
    if probe.is_dir() and not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"--output-dir {run_dir}: {probe} is not writable", "choose a directory you can write to")


def refuse_stale(run_dir: Path, resume: bool) -> None:
    """A run directory with checkpoints belongs to an earlier run: continue it or pick another."""
    ckpts = run_dir / "checkpoints"
    if not resume and ckpts.is_dir() and any(p.name.startswith("step_") for p in ckpts.iterdir()):
        raise UserError(f"{run_dir} holds checkpoints of an earlier run",
                        "continue it with --resume, or start a new run with --output-dir DIR")


def lock_run_directory(run_dir: Path) -> Any:
    """One msdoctor train per run directory (training/runlock.py); exit 2 naming the PID that holds it."""
    from msdoctor.training import runlock

    try:
        lock = runlock.acquire(run_dir, "msdoctor train")
    except runlock.RunDirLocked as exc:
        pids = " ".join(map(str, exc.pids))
        raise UserError(f"{exc}: a second trainer would write the same checkpoints and metrics.csv",
                        "wait for that run to end" + (f" or stop it (kill {pids}: it saves a checkpoint first)"
                                                      if pids else "") + "; or start a new run with --output-dir DIR"
                        ) from None
    if lock.took_over:
        click.echo(f"  note: {lock.took_over}")
    return lock


def redactor(no_redact: bool, cfg: Any = None, report: Any = None) -> Any:
    """What msdoctor check masks (home, user, host, secrets), or None with --no-redact.

    Credentials written into the config's values (``https://user:password@host/...`` in data.paths)
    are secrets too, masked wherever they show up again (a check may print the path resolved).
    """
    if no_redact:
        return None
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
            for x in (v.values() if isinstance(v, dict) else v):
                yield from strings(x)

    found: set[str] = set()
    for text in strings(to_dict(cfg)):
        for userinfo in re.findall(r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s@'\"<>]+)@", text):
            found.update(x for x in (userinfo, userinfo.partition(":")[2]) if len(x) >= MIN_SECRET)
    secrets = tuple(sorted(set(red.secrets) | found, key=len, reverse=True))
    return dataclasses.replace(red, secrets=secrets)


def gate(python: str, facts: Any, verbose: bool, probe_timeout: float = 30.0, live_timeout: float = 120.0,
         plugins: bool = True, *, project: Optional[Path] = None, device_target: Optional[str] = None,
         quick: bool = False, skip: tuple[str, ...] = ()) -> Any:
    """Every registered check that applies (less --skip), with the config as context, in the environment the
    trainer gets. project, device_target and quick are check's --project, --device-target and --quick."""
    from msdoctor.commands.check import build_options
    from msdoctor.context import Context
    from msdoctor.doctor import Selection, diagnose
    from msdoctor.facts.config import CONFIG
    from msdoctor.plugins import autoload_disabled
    from msdoctor.render.console import progress
    from msdoctor.training.launch import environment

    # device target None: the checks read it from the config and say so; --device-target also overrode the config
    options = build_options(python, project, facts.path, device_target, quick, verbose, probe_timeout,
                            live_timeout=live_timeout)
    ctx = Context(options, facts={CONFIG.name: facts}, environ=environment(python, os.environ))
    with progress("msdoctor: checking the environment before training"):
        return diagnose(ctx, Selection(skip=list(skip), plugins=plugins and not autoload_disabled()))


def chip_name(ctx: Any) -> str:
    """The Ascend chip npu-smi reported during the checks ("910B3"), for the trainer's MFU peak; "" if none."""
    from msdoctor.facts.npu_smi import NPU_SMI

    try:
        info = ctx.get(NPU_SMI) if ctx.has(NPU_SMI) else None
    except Exception:  # noqa: BLE001 - the device checks report npu-smi problems; the MFU estimate goes without
        return ""
    return info.chips[0].name if info is not None and info.chips else ""


def write_report(report: Any, run_dir: Path) -> Path:
    from msdoctor.fsutil import atomic_write
    from msdoctor.render import RenderOptions, render

    buf = io.StringIO()
    render("json", report, buf, RenderOptions())
    path = run_dir / "check-report.json"
    atomic_write(path, buf.getvalue(), backup=False)
    return path


def write_config(cfg: Any, run_dir: Path, red: Any) -> Optional[str]:
    """The resolved config: JSON for the trainer (no PyYAML needed in the target), YAML for people.

    Both are redacted like every file of the run directory; when that changed a value (a credential
    in data.paths), the real config goes to the trainer in its environment instead: returned as JSON.
    """
    import yaml

    from msdoctor.fsutil import atomic_write
    from msdoctor.training.config import to_dict

    data = to_dict(cfg)
    shown = red.value(data) if red is not None else data
    atomic_write(run_dir / "config.json", json.dumps(shown, indent=1), backup=False)
    atomic_write(run_dir / "config.yaml", yaml.safe_dump(shown, sort_keys=False), backup=False)
    return json.dumps(data) if shown != data else None


@dataclass
class Outcome:
    rc: int
    #: the signal msdoctor passed on to the trainer (SIGINT, SIGTERM), if any
    forwarded: Optional[int] = None
    #: the trainer's one-message errors (training/errors.py MARK lines on its stderr)
    messages: list = field(default_factory=list)


def start(launch: Any, run_dir: Path, lock: Any, red: Any, cwd: Optional[Path] = None) -> Outcome:
    """Run the trainer; stdout stays the terminal's (progress bar), stderr is also kept in stderr.log.

    Not proc.run: training has no natural timeout and its output must stream. The trainer runs in
    its own session under proc's parent-death supervisor (it dies with msdoctor, even by SIGKILL),
    holding the run directory's lock with msdoctor (the descriptor is passed on). SIGTERM and
    SIGINT are passed on to its group so the trainer can save a checkpoint. It runs in cwd (--project),
    where the gate read the config's relative paths.
    """
    import io

    from msdoctor import proc
    from msdoctor.training.errors import MARK

    try:
        child = proc.spawn(launch.argv, env=launch.env, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           pass_fds=(lock.fd,), cwd=cwd)
    except proc.StartError as exc:
        raise UserError(f"could not start the trainer ({launch.argv[0]}): {exc.reason}",
                        "check the interpreter given with --python / --conda-env") from None
    outcome = Outcome(rc=1)

    def forward(signum: int, _frame: Any) -> None:
        outcome.forwarded = outcome.forwarded or signum
        child.signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}

    def tee() -> None:
        assert child.stderr is not None  # started with stderr=PIPE
        stream = io.BufferedReader(child.stderr)  # type: ignore[arg-type,type-var]
        with open(run_dir / "stderr.log", "ab") as keep:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace")
                if red is not None:
                    line = red.text(line)
                keep.write(line.encode())
                keep.flush()
                if line.startswith(MARK):
                    outcome.messages.append(line[len(MARK):].rstrip("\n"))
                elif outcome.messages and line.startswith("  "):  # its continuation lines
                    outcome.messages[-1] += "\n" + line.rstrip("\n")
                else:
                    sys.stderr.write(line)
                    sys.stderr.flush()

    copier = threading.Thread(target=tee, daemon=True)
    copier.start()
    try:
        rc = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child.returncode is None:  # an exception on the way (SIGHUP, a second Ctrl-C): the group goes too
            child.kill()
    copier.join(timeout=5)
    child.close()
    outcome.rc = rc if rc is not None else 1
    return outcome


def log_files(run_dir: Path, worker_logs: Optional[Path]) -> list[Path]:
    """What the trainer wrote: train.log, stderr.log, msrun's worker and scheduler logs."""
    files = [run_dir / "train.log", run_dir / "stderr.log"]
    if worker_logs is not None and worker_logs.is_dir():
        files += sorted(worker_logs.glob("*.log"))
    return [f for f in files if f.is_file()]


def log_tail(files: list[Path]) -> str:
    parts = []
    for f in files:
        lines = f.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        if lines:
            parts.append(f"==> {f} <==\n" + "\n".join(lines))
    return "\n".join(parts)


def explain_failure(files: list[Path], python: str, config: Optional[Path] = None) -> list[str]:
    """Known causes anywhere in the logs (a MindSpore error often sits above a long traceback),
    through msdoctor.explain when it is installed."""
    try:
        from msdoctor.explain import describe, explain_file
    except ImportError:
        return []
    seen, out = set(), []
    for f in files:
        for m in explain_file(f):
            if m.entry_id not in seen:
                seen.add(m.entry_id)
                out.append(describe(m, python, str(config) if config else None))
    return out


def _with_paths(fn: Any) -> Any:
    """The help names the example configs and the key reference where this msdoctor has them (a wheel has no
    training/configs/ or docs/ in the current directory)."""
    from msdoctor.shipped import path

    fn.__doc__ = (fn.__doc__ or "").replace("CONFIGS", path("training/configs")).replace(
        "KEYS", path("docs/training-config.md"))
    return fn


@click.command("train")
@target_options
@click.option("--config", "config", required=True, type=click.Path(path_type=Path), metavar="FILE",
              help="msdoctor training YAML (the examples and the key reference are named above).")
@click.option("--resume", is_flag=True, help="Continue from the newest complete checkpoint in the run directory.")
@click.option("--max-steps", type=click.IntRange(min=1), metavar="N", help="Override train.max_steps.")
@click.option("--output-dir", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Run directory (default: runtime.output_dir, else runs/<config name>).")
@click.option("--data", multiple=True, metavar="GLOB", help="Train on these text files instead of data.paths.")
@click.option("--node-rank", type=click.IntRange(min=0), help="Multi-node: this node's rank (runtime.node_rank).")
@click.option("--master-addr", metavar="ADDR", help="Multi-node: node_rank 0's address (runtime.master_addr).")
@click.option("--master-port", type=click.IntRange(1, 65535), help="Multi-node: msrun's port (runtime.master_port).")
@click.option("--device-target", type=click.Choice(["Ascend", "GPU", "CPU"], case_sensitive=False),
              help="Train on this device: overrides runtime.device_target, and the checks check it (as check "
                   "--device-target).")
@project_option(help="The project (default: the current directory): the checks read its msdoctor.toml and files, "
                     "the config's relative paths (data, output_dir) are read from it and the trainer runs in it; "
                     "--config, --data and --output-dir stay relative to the current directory.")
@timeout_options
@click.option("--strict", is_flag=True, help="A warning stops the training too (as check --strict / --fail-on warn).")
@click.option("--quick", is_flag=True, help="The gate skips the live probes (importing MindSpore and the stack, device "
                                            "init, a matmul), as check --quick; the trainer is then the first to try "
                                            "the device. Said in the output and in check-report.json.")
@click.option("--skip", multiple=True, metavar="ID[,ID...]",
              help="Leave these checks out of the gate (said in the output and in check-report.json). To accept "
                   "one finding and keep the check, use an ignore rule in msdoctor.toml.")
@click.option("--no-plugins", is_flag=True, help="Run only msdoctor's own checks before training (as check --no-plugins).")
@click.option("-v", "--verbose", is_flag=True, help="Show check details and evidence.")
@click.option("--no-redact", is_flag=True, envvar="MSDOCTOR_NO_REDACT",
              help="Keep home paths, user/host names and secrets in the run directory's files and the output.")
@_with_paths
def train(python: Optional[str], conda_env: Optional[str], config: Path, resume: bool, max_steps: Optional[int],
          output_dir: Optional[Path], data: tuple[str, ...], node_rank: Optional[int], master_addr: Optional[str],
          master_port: Optional[int], device_target: Optional[str], project: Optional[Path], probe_timeout: float,
          live_timeout: float, strict: bool, quick: bool, skip: tuple[str, ...], no_plugins: bool, verbose: bool,
          no_redact: bool) -> int:
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
        facts = resolve_config(config, max_steps, data, output_dir, {k: v for k, v in (
            ("node_rank", node_rank), ("master_addr", master_addr), ("master_port", master_port),
            ("device_target", device_target)) if v is not None})
    except UserError as exc:  # a credential in the config must not reach the terminal either
        raise (UserError(red.text(exc.message), red.text(exc.fix or "") or None) if red is not None else exc) from None
    cfg = facts.run
    red = redactor(no_redact, cfg)
    run_dir = run_directory(cfg, project)
    refuse_unwritable(run_dir)
    lock = lock_run_directory(run_dir)
    try:
        return _train(cfg, facts, config, target, run_dir, lock, red, resume, output_dir, verbose, probe_timeout,
                      live_timeout, strict=strict, plugins=not no_plugins, project=project,
                      device_target=device_target, quick=quick, skip=tuple(split_ids(skip)))
    finally:
        runlock.release(lock)


def gate_notes(quick: bool, skip: tuple[str, ...]) -> list[str]:
    """What the gate leaves out on request: said before the checks and again when training starts."""
    notes = []
    if skip:
        notes.append(f"--skip: the gate does not run {', '.join(skip)}; training starts without "
                     + ("its" if len(skip) == 1 else "their") + " verdict")
    if quick:
        notes.append("--quick: the gate skips the live probes (MindSpore imported, the device initialised, a matmul); "
                     "the trainer is the first to try the device")
    return notes


def _train(cfg: Any, facts: Any, config: Path, target: str, run_dir: Path, lock: Any, red: Any, resume: bool,
           output_dir: Optional[Path], verbose: bool, probe_timeout: float, live_timeout: float, *,
           strict: bool = False, plugins: bool = True, project: Optional[Path] = None,
           device_target: Optional[str] = None, quick: bool = False, skip: tuple[str, ...] = ()) -> int:
    from msdoctor.commands.check import invocation_facts
    from msdoctor.model import ExitCode, Status
    from msdoctor.render import RenderOptions, render

    refuse_stale(run_dir, resume)
    _announce(cfg, facts, run_dir, red)
    notes = gate_notes(quick, skip)
    for note in notes:
        click.echo(f"  warning: {note}")
    diagnosis = gate(target, facts, verbose, probe_timeout, live_timeout, plugins=plugins, project=project,
                     device_target=device_target, quick=quick, skip=skip)
    report = diagnosis.report
    report.facts["invocation"] = {**invocation_facts(diagnosis.context.options), "skipped": list(skip)}
    shown = redactor(False, cfg, report).report(report) if red is not None else report
    render("terminal", shown, sys.stdout, RenderOptions(verbose=verbose))
    saved = write_report(shown, run_dir)
    if report.exit_code(Status.WARN if strict else Status.FAIL) != ExitCode.OK:
        click.echo(f"training not started: the checks above found problems (report: {saved})", err=True)
        return int(ExitCode.PROBLEMS)

    from msdoctor.preflight import gate as preflight_gate

    if preflight_gate.needed(cfg):  # every node and rank checked through msrun before the training's msrun
        if preflight_gate.run(cfg, target, run_dir, facts.path) != 0:
            click.echo(f"training not started: the multi-node preflight failed (report: "
                       f"{run_dir / 'preflight' / 'preflight-report.json'})", err=True)
            return int(ExitCode.PROBLEMS)
    how = _launch(cfg, target, run_dir, resume, lock, red, diagnosis)
    click.echo(f"checks passed (report: {saved}); starting "
               + ("1 training process" if cfg.runtime.device_num == 1 else f"{cfg.runtime.device_num} workers via msrun")
               + "".join(f"\n  warning: {note}" for note in notes))
    out = start(how, run_dir, lock, red, cwd=project)
    again = (f"msdoctor train --config {facts.path} --resume" + (f" --output-dir {run_dir}" if output_dir else "")
             + (f" --project {project}" if project else "") + (f" --device-target {device_target}" if device_target else "")
             + (" --quick" if quick else "") + "".join(f" --skip {i}" for i in skip))
    return _finished(out, how, run_dir, again, target, config)


def _announce(cfg: Any, facts: Any, run_dir: Path, red: Any) -> None:
    """The run's name, where it writes, its batch arithmetic, and the config's warnings."""
    from msdoctor.training.config import warnings

    show = red.text if red is not None else str
    click.echo(f"msdoctor train: {cfg.name} ({facts.path}) -> {run_dir}")
    click.echo(f"  global batch {cfg.global_batch} sequences = micro {cfg.train.micro_batch_size} x data parallel "
               f"{cfg.parallel.data_parallel} x accumulation {cfg.train.grad_accumulation}; "
               f"{cfg.train.max_steps} optimizer steps, warmup {cfg.train.warmup_steps}")
    for w in warnings(cfg):
        click.echo(f"  warning: {show(w)}")


def _launch(cfg: Any, target: str, run_dir: Path, resume: bool, lock: Any, red: Any, diagnosis: Any) -> Any:
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
        click.echo(f"training stopped by signal {stop} ({signal.Signals(stop).name}); the trainer saves a checkpoint "
                   f"when it stops after a step; continue with: {again}", err=True)
        return 128 + stop
    if out.messages:  # the trainer's own message says what to change: no log tail, no traceback
        click.echo("training stopped: " + "\n".join(out.messages) + f"\n  (also in {run_dir / 'train.log'})",
                   err=True)
        return int(ExitCode.PROBLEMS)
    files = log_files(run_dir, how.worker_logs)
    click.echo(f"training failed (exit status {rc}); the end of its logs:\n{log_tail(files)}", err=True)
    causes = explain_failure(files, target, config)
    if causes:
        click.echo("\nlikely cause:\n" + "\n\n".join(causes), err=True)
    return int(ExitCode.PROBLEMS)
