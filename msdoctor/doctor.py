"""One diagnosis: select checks, run them against a Context, and build the Report.

Used by ``msdoctor check``, by the gate of ``msdoctor train``, and by
``msdoctor report``; the CLI only parses and renders.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from msdoctor.context import Context, FactUnavailable, Options
from msdoctor.errors import UserError, with_hints
from msdoctor.model import CheckResult, Finding, Report, Target
from msdoctor.plugins import DuplicateCheckId, LoadedCheck, Registry, load_registry
from msdoctor.runner import RunSettings, build_report, failure_result, run_checks


@dataclass
class Selection:
    """Which checks to run. ``only`` / ``skip`` hold check ids."""

    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    plugins: bool = True


def start_target_probe(ctx: Context) -> None:
    """Start the target probe in the background: every check reads it, and its child interpreter runs on
    another core while this process imports the checks (together about half of ``check --quick``)."""
    from msdoctor.facts.target import TARGET

    ctx.prefetch([TARGET])


def load_checks(plugins: bool = True) -> Registry:
    try:
        return load_registry(plugins=plugins)
    except DuplicateCheckId as exc:
        raise UserError(str(exc)) from None


def _unknown(ids: Sequence[str], known: Sequence[str], flag: str) -> None:
    bad = [i for i in ids if i not in known]
    if not bad:
        return
    raise UserError(
        f"{flag}: unknown check id {with_hints(bad, known)}",
        "known check ids: " + ", ".join(sorted(known)) + " (see `msdoctor list-checks`)",
    )


def select(registry: Registry, selection: Selection) -> list[LoadedCheck]:
    known = registry.ids() + [f.id for f in registry.failures]
    _unknown(selection.only, known, "--only")
    _unknown(selection.skip, known, "--skip")
    chosen = [c for c in registry.checks if (not selection.only or c.id in selection.only)]
    return [c for c in chosen if c.id not in selection.skip]


def target_identity(ctx: Context) -> Target:
    """The target's identity for the report; probe_error set when it could not be probed."""
    try:
        return ctx.target.to_target()
    except FactUnavailable as exc:
        return Target(executable=ctx.options.python or "?", probe_error=exc.message)


def environment_facts(ctx: Context) -> dict[str, Any]:
    """Facts worth sharing in a bug report and diffing between nodes."""
    try:
        t = ctx.target
    except FactUnavailable:
        return {}
    packages = {d.name: d.version for d in t.winners()}
    return {
        **_device_facts(ctx),
        "python": {
            "version": t.python_version,
            "executable": t.executable,
            "prefix": t.prefix,
            "env_kind": t.env_kind,
            "env_name": t.env_name,
        },
        "platform": t.raw.get("platform"),
        "packages": dict(sorted(packages.items(), key=lambda kv: kv[0].lower())),
        "env": dict(sorted(t.env.items())),
    }


def _device_facts(ctx: Context) -> dict[str, Any]:
    """CANN/driver versions and device counts, from the facts the checks gathered (nothing is probed here)."""
    out: dict[str, Any] = {}
    cann = _peek(ctx, "msdoctor.facts.cann", "CANN")
    if cann is not None and getattr(cann, "present", False):
        active = cann.active
        out["ascend"] = {
            "cann": active.commercial if active else None,
            "cann_internal": active.internal if active else None,
            "cann_root": active.root if active else None,
            "cann_installs": len(cann.installs),
            "driver": cann.driver.version if cann.driver else None,
            "firmware": cann.firmware.version if cann.firmware else None,
        }
    npu = _peek(ctx, "msdoctor.facts.npu_smi", "NPU_SMI")
    if npu is not None:
        ascend = out.setdefault("ascend", {})
        ascend["npu_smi_driver"] = npu.driver_version
        ascend["chips"] = len(npu.chips)
        ascend["chip_names"] = sorted({c.name for c in npu.chips if c.name})
    gpu = _peek(ctx, "msdoctor.facts.nvidia", "NVIDIA")
    if gpu is not None:
        out["nvidia"] = {
            "driver": _nvidia_driver(gpu, ctx),
            "cuda_driver": gpu.cuda_driver_version,
            "gpus": len(gpu.gpus),
            "cudart": gpu.cudart_version,
            "cudnn": gpu.cudnn_version,
        }
    live = _peek(ctx, "msdoctor.facts.live", "LIVE_DEVICE")
    if live is not None and live.mindspore_version:
        out["mindspore_runtime"] = {
            "version": live.mindspore_version,
            "device_target": live.device_target,
            "device_count": live.device_count,
        }
    return out


def _peek(ctx: Context, module: str, spec: str) -> Any:
    """The value of the FactSpec ``module.spec`` if a check computed it; a fact whose module no check imported
    was never computed (and importing it here would only cost start-up time)."""
    loaded = sys.modules.get(module)
    return ctx.peek(getattr(loaded, spec)) if loaded is not None else None


def _nvidia_driver(gpu: Any, ctx: Context) -> Any:
    from msdoctor.facts.nvidia import driver_version

    return driver_version(gpu, ctx.environ)


def _refuse_unsupported_target(ctx: Context, chosen: list[LoadedCheck]) -> None:
    """A Python 2.7 (or < 3.7) target is one usage error (exit 2), not the same error in every check."""
    from msdoctor.facts.target import TARGET, UnsupportedTarget
    from msdoctor.plugins import check_prefetch

    if not chosen:
        return
    ctx.prefetch([spec for c in chosen for spec in check_prefetch(c)])  # slow facts start now, as in run_checks
    try:
        ctx.get(TARGET)
    except UnsupportedTarget as exc:
        raise UserError(exc.message, exc.fix) from None
    except FactUnavailable:
        pass  # the checks report it


@dataclass
class Diagnosis:
    report: Report
    context: Context
    selected: list[str] = field(default_factory=list)


def diagnose(
    ctx: Context,
    selection: Selection = Selection(),
    settings: Optional[RunSettings] = None,
    on_done: Optional[Callable[[CheckResult], None]] = None,
    registry: Optional[Registry] = None,
    notices: Optional[list[Finding]] = None,
    suppressions: bool = True,
) -> Diagnosis:
    """Run the selected checks against ctx and return the finished report.

    With ``suppressions`` the project's msdoctor.toml / [tool.msdoctor] is read
    first (a malformed one is a UserError before any check runs) and applied to
    the report (msdoctor/suppress.py).
    """
    from msdoctor import suppress

    started, started_wall = time.monotonic(), _dt.datetime.now(_dt.timezone.utc)
    rules = suppress.load(ctx.options.project_dir) if suppressions else []
    if registry is None:
        start_target_probe(ctx)
        registry = load_checks(selection.plugins)
    chosen = select(registry, selection)
    _refuse_unsupported_target(ctx, chosen)
    results = run_checks(chosen, ctx, settings, on_done)
    for failure in registry.failures:
        if not selection.only or failure.id in selection.only:
            if failure.id not in selection.skip:
                results.append(failure_result(failure))
    report = build_report(results, target_identity(ctx), started, started_wall, environment_facts(ctx), notices)
    if rules:
        report = suppress.apply(report, rules, known_ids=registry.ids() + [f.id for f in registry.failures])
    return Diagnosis(report, ctx, [c.id for c in chosen])


def build_options(
    python_path: str,
    project: Optional[Path],
    config: Optional[Path],
    device_target: Optional[str],
    quick: bool,
    verbose: bool,
    probe_timeout: float,
    extra: Optional[dict[str, Any]] = None,
    live_timeout: float = 120.0,
) -> Options:
    """The Options of one diagnosis from the command line's values (paths made absolute)."""
    return Options(
        python=python_path,
        project_dir=(project or Path.cwd()).resolve(),
        config_path=_absolute(config) if config else None,
        device_target=device_target,
        quick=quick,
        verbose=verbose,
        probe_timeout_s=probe_timeout,
        live_timeout_s=live_timeout,
        extra=extra or {},
    )


def _absolute(path: Path) -> Path:
    """path.resolve(), or just absolute when it cannot be resolved (a symlink loop: the config reader says so)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def make_context(options: Options) -> Context:
    """A Context with the config (if any) loaded up front: a bad config is exit 2, before any check."""
    from msdoctor.facts.config import CONFIG, load_config

    facts = {}
    if options.config_path is not None:
        facts[CONFIG.name] = load_config(options.config_path)
    return Context(options, facts=facts)


def invocation_facts(options: Options, ctx: Optional[Context] = None) -> dict[str, Any]:
    """What the run was asked to check (the vscode format anchors location-less findings at the config).

    ``collected`` lists the parts of the run the report holds, so that ``msdoctor diff`` compares only what
    both reports collected: "static" (files, metadata, the interpreter probe) always, "live" when the live
    device probe ran (its facts are ``facts.mindspore_runtime``; ``--quick`` never runs it, nor does a
    selection of checks that do not need it). Without ``ctx``, "live" follows ``--quick`` alone.
    """
    live = not options.quick and (ctx is None or ctx.attempted("live-device"))
    return {
        "config": str(options.config_path) if options.config_path else None,
        "project": str(options.project_dir),
        "device_target": options.device_target,
        "quick": options.quick,
        # the parts of the run this report holds (msdoctor diff compares only what both reports collected):
        # "static" (files, metadata, the interpreter probe), "live" (the live device probe: facts.mindspore_runtime)
        "collected": ["static", "live"] if live else ["static"],
    }
