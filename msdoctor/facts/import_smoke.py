"""The import smoke test: import the installed training stack in a fresh target process (slow fact).

``IMPORT_SMOKE`` runs probe/import_smoke.py under the target interpreter, from the project
directory, with the live timeout. It imports the stack packages that are installed, in the order a
training script imports them: mindspore first (its import sets up the Ascend environment and avoids
the libgomp static-TLS failure, research/compat.md C5), mindnlp before transformers (the reverse
order fails even with transformers 4.57.1, C14), then transformers with one attribute touched so
that its lazy module really loads. With ``--quick`` it does not run and says so.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from msdoctor import proc
from msdoctor.context import Context, FactSpec
from msdoctor.probe import ProbeError, default_env, extract_json, script_source

STEP_MARK = "@@MSDOCTOR-SMOKE-IMPORT@@"

#: (module, attributes touched after import, version attribute); the training-script order
ORDER: tuple[tuple[str, tuple[str, ...], Optional[str]], ...] = (
    ("mindspore", ("Tensor",), "__version__"),
    ("mindnlp", (), None),  # __version__ lies for 0.5.x (research A9); the dist version is used instead
    ("mindformers", (), None),
    ("transformers", ("PretrainedConfig",), "__version__"),
    ("te", (), "version.version"),  # CANN's te: MindSpore compares te.version.version (B10.4)
    ("hccl", (), None),
)

#: MindSpore's log lines worth keeping as evidence ("[WARNING] ME(pid:tid,MainProcess):...")
_LOG_RE = re.compile(r"^\[(WARNING|ERROR|CRITICAL)\] ME\(")


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


def plan(target: Any) -> list[dict[str, Any]]:
    """The import steps for the packages installed in the target, in training-script order."""
    steps = []
    for module, touch, version_attr in ORDER:
        spec = target.find_spec.get(module) or {}
        installed = target.dist(module) is not None or bool(spec.get("found"))
        if module in ("te", "hccl") and not spec.get("found"):
            continue  # CANN's wheels only exist on Ascend machines
        if installed:
            steps.append({"module": module, "touch": list(touch), "version_attr": version_attr})
    return steps


def run_smoke(python: str, steps: list[dict[str, Any]], *, timeout: float, cwd: Any, environ: Any) -> SmokeResult:
    planned = [s["module"] for s in steps]
    argv = [python, "-W", "ignore", "-", json.dumps({"steps": steps})]
    run_cwd = cwd if cwd is not None and os.path.isdir(cwd) else None
    res = proc.run(argv, timeout=timeout, input=script_source("import_smoke.py"), cwd=run_cwd,
                   env=default_env(environ))
    log = [ln for ln in res.stderr.splitlines() if _LOG_RE.match(ln)][:30]
    tail = (res.stderr or res.stdout).strip().splitlines()[-15:]
    marks = [ln.split(None, 1)[1] for ln in res.stderr.splitlines() if ln.startswith(STEP_MARK + " ")]
    current = marks[-1] if marks else None
    base = dict(python=python, planned=planned, returncode=res.returncode, seconds=res.duration_s,
                log_lines=log, output_tail=tail)
    if res.start_error:
        return SmokeResult("crashed", reason=f"cannot run {python}: {res.start_error}", **base)
    if res.timed_out:
        return SmokeResult("timeout", crashed_in=current,
                           reason=f"the imports did not finish within {timeout:.0f} s", **base)
    try:
        data = extract_json(res.stdout)
    except ProbeError:
        return SmokeResult("crashed", crashed_in=current,
                           reason=f"the process exited with status {res.returncode} during `import {current}`", **base)
    return SmokeResult("ran", steps=list(data.get("steps", [])), **base)


def _compute(ctx: Context) -> SmokeResult:
    python = ctx.options.python or sys.executable
    if ctx.quick:
        return SmokeResult("skipped", python, reason="--quick skips live imports")
    steps = plan(ctx.target)
    if not steps:
        return SmokeResult("skipped", python, reason="none of mindspore, mindnlp, mindformers, transformers is installed")
    return run_smoke(python, steps, timeout=ctx.options.live_timeout_s, cwd=ctx.project_dir, environ=ctx.environ)


#: Slow: imports MindSpore and friends in a fresh target process; prefetched so it overlaps other probes.
IMPORT_SMOKE: FactSpec[SmokeResult] = FactSpec("import-smoke", _compute, slow=True,
                                               description="import the stack in a fresh target process")
