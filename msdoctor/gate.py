"""The gate of ``msdoctor train``: every check that applies, run in the environment the trainer gets, and the
files the run directory keeps of it (the report, the resolved config)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.redact import Redactor
    from msdoctor.training.config import RunConfig
    from msdoctor.context import Context, Options
    from msdoctor.doctor import Diagnosis
    from msdoctor.facts.config import ConfigFacts
    from msdoctor.model import Report


def gate(options: "Options", facts: "ConfigFacts", *, plugins: bool = True, skip: tuple[str, ...] = ()) -> "Diagnosis":
    """Every registered check that applies (less --skip), with the config as context, in the environment the
    trainer gets. ``options`` are check's (doctor.build_options: --python, --project, the config, --device-target,
    --quick, -v, the timeouts); a device target None: the checks read it from the config and say so."""
    from msdoctor.context import Context
    from msdoctor.doctor import Selection, diagnose
    from msdoctor.facts.config import CONFIG
    from msdoctor.plugins import autoload_disabled
    from msdoctor.render.console import progress
    from msdoctor.training.launch import environment

    if options.python is None:
        raise ValueError("the gate examines the trainer's interpreter: options.python is required")
    ctx = Context(options, facts={CONFIG.name: facts}, environ=environment(options.python, os.environ))
    with progress("msdoctor: checking the environment before training"):
        return diagnose(ctx, Selection(skip=list(skip), plugins=plugins and not autoload_disabled()))


def chip_name(ctx: "Context") -> str:
    """The Ascend chip npu-smi reported during the checks ("910B3"), for the trainer's MFU peak; "" if none."""
    from msdoctor.facts.npu_smi import NPU_SMI

    try:
        info = ctx.get(NPU_SMI) if ctx.has(NPU_SMI) else None
    except Exception:  # noqa: BLE001 - the device checks report npu-smi problems; the MFU estimate goes without
        return ""
    return info.chips[0].name if info is not None and info.chips else ""


def write_report(report: "Report", run_dir: Path) -> Path:
    from msdoctor.fsutil import atomic_write
    from msdoctor.render import RenderOptions, render

    buf = io.StringIO()
    render("json", report, buf, RenderOptions())
    path = run_dir / "check-report.json"
    atomic_write(path, buf.getvalue(), backup=False)
    return path


def write_config(cfg: "RunConfig", run_dir: Path, red: "Optional[Redactor]") -> Optional[str]:
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


def gate_notes(quick: bool, skip: tuple[str, ...]) -> list[str]:
    """What the gate leaves out on request: said before the checks and again when training starts."""
    notes = []
    if skip:
        notes.append(
            f"--skip: the gate does not run {', '.join(skip)}; training starts without "
            + ("its" if len(skip) == 1 else "their")
            + " verdict"
        )
    if quick:
        notes.append(
            "--quick: the gate skips the live probes (MindSpore imported, the device initialised, a matmul); "
            "the trainer is the first to try the device"
        )
    return notes
