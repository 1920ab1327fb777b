"""The import smoke test: import the installed training stack in a fresh target process (slow fact).

``IMPORT_SMOKE`` is read from the live probe (msdoctor.facts.live.LIVE_DEVICE, probe/live.py), which
imports the stack under the target interpreter, from the project directory, with the live timeout,
before it tests the device: one MindSpore import serves both checks. It imports the stack packages that are installed, in the order a
training script imports them: mindspore first (its import sets up the Ascend environment and avoids
the libgomp static-TLS failure, https://github.com/hiyouga/LlamaFactory/issues/8768), mindnlp before transformers (the reverse
order fails even with transformers 4.57.1; observed with mindnlp 0.5.1, see docs/sources.md), then transformers with one attribute touched so
that its lazy module really loads. With ``--quick`` it does not run and says so.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from msdoctor.context import Context, FactSpec


#: (module, attributes touched after import, version attribute); the training-script order
ORDER: tuple[tuple[str, tuple[str, ...], Optional[str]], ...] = (
    ("mindspore", ("Tensor",), "__version__"),
    (
        "mindnlp",
        (),
        None,
    ),  # __version__ lies for 0.5.x (https://github.com/candle-org/MindAct/issues/2245); the dist version is used instead
    ("mindformers", (), None),
    ("transformers", ("PretrainedConfig",), "__version__"),
    (
        "te",
        (),
        "version.version",
    ),  # CANN's te: MindSpore compares te.version.version (mindspore/run_check/_check_version.py)
    ("hccl", (), None),
)


@dataclass
class SmokeResult:
    """What the import smoke did.

    state: "skipped" (quick mode / nothing to import), "ran" (the probe reported; steps say which
    import failed, if any), "crashed" (the process died in ``crashed_in``), "timeout".
    """

    state: str
    python: str
    planned: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    crashed_in: Optional[str] = None
    returncode: Optional[int] = None
    seconds: float = 0.0
    log_lines: list[str] = field(default_factory=list)
    output_tail: list[str] = field(default_factory=list)

    @property
    def failed_step(self) -> Optional[dict[str, Any]]:
        return next((s for s in self.steps if not s.get("ok")), None)


def all_steps() -> list[dict[str, Any]]:
    """Every step of ORDER, each planned by the probe itself when the module is there (no target probe needed)."""
    return [{"module": m, "touch": list(touch), "version_attr": v, "only_if_found": True} for m, touch, v in ORDER]


def from_live(live: Any, planned: list[str]) -> SmokeResult:
    """The smoke's verdict from a live probe run (msdoctor.facts.live.LiveDevice)."""
    log = [str(line) for line in live.logs if line.level in ("WARNING", "ERROR", "CRITICAL")][:30]
    current = live.smoke_marks[-1] if live.smoke_marks else None
    base = dict(
        python=live.python,
        planned=planned,
        returncode=live.returncode,
        seconds=live.duration_s,
        log_lines=log,
        output_tail=list(live.stderr_tail),
    )
    if live.smoke is not None:  # printed as soon as the imports finished: a later hang cannot lose it
        seconds = (live.data.get("timings") or {}).get("smoke_s") or sum(
            s.get("seconds") or 0 for s in live.smoke.get("steps", [])
        )
        base["seconds"] = seconds
        return SmokeResult("ran", steps=list(live.smoke.get("steps", [])), **base)
    if live.start_error:
        return SmokeResult("crashed", reason=f"cannot run {live.python}: {live.start_error}", **base)
    if live.timed_out:
        return SmokeResult(
            "timeout", crashed_in=current, reason=f"the imports did not finish within {live.timeout_s:.0f} s", **base
        )
    return SmokeResult(
        "crashed",
        crashed_in=current,
        reason=f"the process exited with status {live.returncode} during `import {current}`",
        **base,
    )


def run_smoke(python: str, steps: list[dict[str, Any]], *, timeout: float, environ: Any) -> SmokeResult:
    """Run only the import smoke (no device part) and return its verdict."""
    from msdoctor.facts.live import run_live

    live = run_live(python, None, timeout=timeout, environ=environ, steps=steps, device=False)
    planned = (live.smoke or {}).get("planned")
    return from_live(live, list(planned) if planned is not None else [s["module"] for s in steps])


def _compute(ctx: Context) -> SmokeResult:
    from msdoctor.facts.live import LIVE_DEVICE

    python = ctx.options.python or sys.executable
    if ctx.quick:
        return SmokeResult("skipped", python, reason="--quick skips live imports")
    live = ctx.get(LIVE_DEVICE)
    assert live is not None  # None only with --quick, answered above
    planned = list((live.smoke or {}).get("planned") or [])
    if live.smoke is not None and not planned:
        return SmokeResult(
            "skipped", python, reason="none of mindspore, mindnlp, mindformers, transformers is installed"
        )
    return from_live(live, planned or [m for m, _, _ in ORDER])


#: Slow: imports MindSpore and friends in a fresh target process (shared with the device probe).
IMPORT_SMOKE: FactSpec[SmokeResult] = FactSpec(
    "import-smoke", _compute, slow=True, description="import the stack in a fresh target process"
)
