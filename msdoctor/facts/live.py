"""The live probe: the stack imported in the target interpreter, the device selected, a matmul checked.

One target process does both the import smoke (version-matrix) and the device test
(device-target), so MindSpore is imported once per `msdoctor check` (probe/live.py).

Public API:

* ``LIVE_DEVICE`` (slow; prefetch it) -> :class:`LiveDevice`, or None under ``--quick``.
  It runs ``msdoctor/probe/live.py`` with ``ctx.options.live_timeout_s``, for
  the requested target (``requested_device_target(ctx)``; None: MindSpore's default),
  after importing the installed stack in training-script order (``import_smoke.ORDER``).
  It never raises for the probe's own failures: a timeout, a crash, or an import
  error are fields of the result (``timed_out``, ``failure``, ``import_error``);
  ``smoke`` holds the import smoke's own result, which survives a later hang.
* :func:`parse_log` (pure): MindSpore's stderr -> :class:`LogLine` list, phase-tagged.
* :func:`run_live` runs the probe for explicit arguments (tests, benchmarks).

MindSpore logs at GLOG_v=2 (WARNING) by default and writes nothing at import on
CPU (observed with MindSpore 2.7.0: `python -c 'import mindspore'` prints nothing); the probe runs with GLOG_v=2 and
GLOG_logtostderr=1 so every warning is captured as evidence, never shown raw.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from msdoctor.context import Context, FactSpec
from msdoctor.probe import ProbeError, default_env, extract_json, probe_source, safe_env
from msdoctor import proc

LIVE_SCHEMA = 1
PHASE_RE = re.compile(r"^@@MSDOCTOR-PHASE (\w+)@@$")
STEP_MARK = "@@MSDOCTOR-SMOKE-IMPORT@@"
SMOKE_BEGIN, SMOKE_END = "@@MSDOCTOR-SMOKE-BEGIN@@", "@@MSDOCTOR-SMOKE-END@@"
#: MindSpore's Python logger and glog both start a record with "[LEVEL] MODULE(pid...)...".
#: Python: "[WARNING] ME(11237:1403...,MainProcess):2026-11-29-19:21:58.190.00 [mindspore/run_check/_check_version.py:315] msg"
#: C++:    "[WARNING] DEVICE(123,7f..,python):2025-... [mindspore/ccsrc/...cc:12] Func] msg"   (observed: GLOG_v=1 run)
LOG_RE = re.compile(
    r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL|EXCEPTION)\]\s+(\w+)\(([^)]*)\):(\S+)\s+\[([^\]]+)\]\s?(.*)$"
)


@dataclass
class LogLine:
    """One MindSpore log record (continuation lines joined to its message)."""

    level: str
    module: str  # "ME" (Python side), "DEVICE", "PYNATIVE", ...
    location: str  # "mindspore/run_check/_check_version.py:315"
    message: str
    phase: str  # probe phase it was logged in: import, set_device, device_count, compute, done

    def __str__(self) -> str:
        return f"[{self.level}] {self.module} {self.location} {self.message}"


@dataclass
class LiveDevice:
    """What happened when MindSpore was imported and used in the target interpreter.

    Attributes:
        python: the interpreter the probe ran.
        requested: the device target asked for (None: MindSpore's default).
        data: the probe's JSON (see msdoctor/probe/live.py), {} when none came back.
        smoke: the import smoke's JSON ({"steps": [...]}), None when no smoke ran or it never finished.
        smoke_marks: the modules whose import started, in order (the last one is where a crash or hang was).
        logs: MindSpore's log records, phase-tagged.
        stderr_tail: the last lines of stderr that were not log records (tracebacks, crashes).
        timed_out: the probe was stopped after ``timeout_s``.
        failure: why no JSON came back (crash, timeout, not a Python), else None.
        last_phase: the last phase the probe reached (where it hung or crashed).
        duration_s: wall time of the probe subprocess.
    """

    python: str
    requested: Optional[str]
    timeout_s: float
    data: dict[str, Any] = field(default_factory=dict)
    logs: list[LogLine] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)
    timed_out: bool = False
    failure: Optional[str] = None
    last_phase: Optional[str] = None
    duration_s: float = 0.0
    returncode: Optional[int] = None
    smoke: Optional[dict[str, Any]] = None
    smoke_marks: list[str] = field(default_factory=list)
    start_error: Optional[str] = None

    # conveniences over data ------------------------------------------------------
    @property
    def mindspore_version(self) -> Optional[str]:
        return self.data.get("mindspore_version")

    @property
    def import_error(self) -> Optional[Mapping[str, Any]]:
        return self.data.get("import_error")

    @property
    def set_device_error(self) -> Optional[Mapping[str, Any]]:
        return self.data.get("set_device_error")

    @property
    def compute(self) -> Optional[Mapping[str, Any]]:
        return self.data.get("compute")

    @property
    def compute_error(self) -> Optional[Mapping[str, Any]]:
        return self.data.get("compute_error")

    @property
    def device_target(self) -> Optional[str]:
        """The device MindSpore ended up on (get_context('device_target') after the matmul)."""
        dev = self.data.get("device") or {}
        return dev.get("device_target")

    @property
    def device_id(self) -> Optional[int]:
        dev = self.data.get("device") or {}
        return dev.get("device_id")

    @property
    def device_count(self) -> Optional[int]:
        return self.data.get("device_count")

    @property
    def timings(self) -> Mapping[str, float]:
        return self.data.get("timings") or {}

    def warnings(self) -> list[LogLine]:
        return [l for l in self.logs if l.level in ("WARNING", "ERROR", "CRITICAL", "EXCEPTION")]


def parse_log(stderr: str) -> tuple[list[LogLine], list[str], Optional[str]]:
    """Split the probe's stderr into MindSpore log records, other lines, and the last phase reached."""
    records: list[LogLine] = []
    other: list[str] = []
    current_phase: Optional[str] = None
    current: Optional[LogLine] = None
    for raw in stderr.splitlines():
        line = raw.rstrip()
        m = PHASE_RE.match(line.strip())
        if m:
            current_phase = m.group(1)
            current = None
            continue
        if line.startswith(STEP_MARK):
            current = None
            continue
        rec = LOG_RE.match(line)
        if rec:
            current = LogLine(rec.group(1), rec.group(2), rec.group(5), rec.group(6).strip(), current_phase or "start")
            records.append(current)
            continue
        if not line.strip():
            current = None
            continue
        if current is not None:
            # multi-line messages ("Device load error message:" blocks) continue the record
            current.message += "\n" + line
        else:
            other.append(line)
    return records, other, current_phase


def probe_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the live probe: the user's, with MindSpore's logs at WARNING, on stderr."""
    env = default_env(environ)
    env["GLOG_v"] = "2"
    env["GLOG_logtostderr"] = "1"
    return env


def smoke_marks(stderr: str) -> list[str]:
    return [ln.split(None, 1)[1].strip() for ln in stderr.splitlines() if ln.startswith(STEP_MARK + " ")]


def smoke_block(stdout: str) -> Optional[dict[str, Any]]:
    """The import smoke's JSON, printed by the probe as soon as the imports finished."""
    import json

    start, end = stdout.rfind(SMOKE_BEGIN), stdout.rfind(SMOKE_END)
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(stdout[start + len(SMOKE_BEGIN) : end])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def run_live(
    python: str,
    target: Optional[str],
    *,
    timeout: float,
    environ: Mapping[str, str],
    size: int = 64,
    steps: Optional[list] = None,
    device: bool = True,
) -> LiveDevice:
    """Run the live probe and return what happened (never raises for probe failures).

    Args:
        steps: import-smoke steps to run first (see msdoctor.facts.import_smoke.plan).
        device: also select the device and run the matmul.

    It runs in an empty scratch directory with the cwd kept off sys.path (msdoctor.probe): the imports
    are those of the installed environment; a project file that would shadow one is found statically
    (msdoctor.shadow, the duplicate-installs check), never imported.
    """
    import json

    if os.sep in python:  # the device part runs in a scratch cwd: a relative path would not resolve there
        python = os.path.abspath(python)
    result = LiveDevice(python=python, requested=target, timeout_s=timeout)
    scratch = tempfile.mkdtemp(prefix="msdoctor-live-")
    args = {"target": target, "size": size, "seed": 0, "steps": steps or [], "device": device, "scratch": scratch}
    try:
        argv = [python, "-W", "ignore", "-", json.dumps(args)]
        res = proc.run(
            argv, timeout=timeout, input=probe_source("live.py"), cwd=scratch, env=safe_env(probe_env(environ))
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result.duration_s = res.duration_s
    result.returncode = res.returncode
    result.logs, other, result.last_phase = parse_log(res.stderr)
    result.stderr_tail = other[-15:]
    result.smoke = smoke_block(res.stdout)
    result.smoke_marks = smoke_marks(res.stderr)
    if res.start_error:
        result.start_error = res.start_error
        result.failure = f"cannot run {python}: {res.start_error}"
        return result
    if res.timed_out:
        result.timed_out = True
        where = f" (it was in phase '{result.last_phase}')" if result.last_phase else " (before the probe started)"
        result.failure = f"{python} did not finish the live device probe within {timeout:.0f} s{where}"
        return result
    try:
        data = extract_json(res.stdout)
    except ProbeError:
        tail = " | ".join(other[-3:]) or "no output"
        result.failure = (
            f"{python} exited with status {res.returncode} during the live device probe"
            f" (phase '{result.last_phase or 'start'}'): {tail}"
        )
        return result
    if not isinstance(data, dict) or data.get("live_schema") != LIVE_SCHEMA:
        result.failure = "the live probe returned data msdoctor does not understand"
        return result
    result.data = data
    return result


def _compute(ctx: Context) -> Optional[LiveDevice]:
    if ctx.options.quick:
        return None
    from msdoctor.facts.config import requested_device_target
    from msdoctor.facts.import_smoke import all_steps

    python = ctx.options.python or sys.executable
    # the probe decides itself which stack packages are installed: it starts before the target probe ends
    return run_live(
        python, requested_device_target(ctx), timeout=ctx.options.live_timeout_s, environ=ctx.environ, steps=all_steps()
    )


#: The stack imported and MindSpore used on the requested device, in one target process (None with --quick).
LIVE_DEVICE: FactSpec[Optional[LiveDevice]] = FactSpec(
    "live-device", _compute, slow=True, description="live MindSpore probe (imports + device)"
)
