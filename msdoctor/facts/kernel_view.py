"""Every interpreter a person may really run for this project, one row each, probed concurrently.

Rows: the target; msdoctor's own interpreter; `python`/`python3` on PATH; the
activated VIRTUAL_ENV / CONDA_PREFIX; each Jupyter kernelspec on the target's
search path (marked "used" when a project notebook names it); the interpreters
the project's .vscode files name; and the Jupyter kernel msdoctor itself runs
under, if any. The kernel-mismatch check turns each row into a verdict.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from msdoctor.context import Context, FactSpec, FactUnavailable
from msdoctor.facts.interpreters import INTERPRETERS, InterpInfo, python_in, target_python, which
from msdoctor.facts.jupyter import KERNELSPECS, JupyterFacts, KernelSpec, kernel_interpreter
from msdoctor.facts.vscode import VSCODE, InterpreterRef, VSCodeFacts
from msdoctor.facts.target import TARGET
from msdoctor.model import Location

ROLES = ("target", "msdoctor", "path", "activated", "running-kernel", "kernel", "notebook", "vscode")


@dataclass
class Row:
    """One interpreter somebody may run, and where that choice is written down.

    used: the editor or a notebook WILL run it (a VS Code setting, a kernel a project
    notebook names, the kernel msdoctor runs in), as opposed to one that is merely
    available (any kernel, `python` on PATH).
    problem: why there is no interpreter to probe (stale kernel, broken file, ...).
    """

    role: str
    label: str
    interpreter: Optional[str] = None
    used: bool = False
    location: Optional[Location] = None
    problem: Optional[str] = None
    problem_kind: Optional[str] = None  # stale | invalid | unknown | missing-kernel | hidden | legacy
    info: Optional[InterpInfo] = None
    kernel: Optional[KernelSpec] = None
    ref: Optional[InterpreterRef] = None
    notebooks: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)


@dataclass
class KernelView:
    target_path: str
    target: InterpInfo
    rows: list
    jupyter: Optional[JupyterFacts] = None
    jupyter_error: Optional[str] = None
    vscode: Optional[VSCodeFacts] = None


def _loc(path: str, line: Optional[int] = None) -> Location:
    return Location(path, line)


def shell_rows(environ: Mapping[str, str]) -> list:
    rows = []
    for name in ("python", "python3"):
        found = which(name, environ)
        if found:
            rows.append(Row("path", f"`{name}` on PATH", found, evidence={"name": name}))
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env_dir = environ.get(var)
        if not env_dir:
            continue
        py = python_in(env_dir)
        row = Row("activated", f"activated {var}={env_dir}", py, evidence={var: env_dir})
        if py is None:
            row.problem, row.problem_kind = f"{env_dir} holds no bin/python (deleted environment?)", "stale"
        rows.append(row)
    return rows


def running_kernel_row(environ: Mapping[str, str]) -> Optional[Row]:
    """The Jupyter kernel msdoctor runs under: imported into one, or started from a notebook cell."""
    if "ipykernel" in sys.modules:
        return Row(
            "running-kernel",
            "the Jupyter kernel msdoctor runs in",
            sys.executable,
            used=True,
            evidence={"how": "ipykernel is imported in msdoctor's own process"},
        )
    if not environ.get("JPY_PARENT_PID"):
        return None
    import psutil

    try:
        for proc in psutil.Process().parents():
            cmd = proc.cmdline()
            if any("ipykernel" in part for part in cmd[1:]):
                exe = cmd[0] if cmd and os.path.isabs(cmd[0]) else proc.exe()
                return Row(
                    "running-kernel",
                    "the Jupyter kernel this msdoctor was started from",
                    exe,
                    used=True,
                    evidence={
                        "how": f"JPY_PARENT_PID is set; parent process {proc.pid} runs ipykernel",
                        "cmdline": cmd,
                    },
                )
    except (psutil.Error, OSError) as exc:  # no access to a parent: say so, don't guess
        reason = f"{type(exc).__name__}: {exc}"
    else:
        reason = "no parent process runs ipykernel"
    return Row(
        "running-kernel",
        "the Jupyter kernel this msdoctor was started from",
        None,
        used=True,
        problem=f"JPY_PARENT_PID is set (a Jupyter kernel started msdoctor), but {reason}",
        problem_kind="unknown",
        evidence={"JPY_PARENT_PID": environ.get("JPY_PARENT_PID")},
    )


def kernel_rows(jf: JupyterFacts, environ: Mapping[str, str]) -> list:
    rows = []
    by_name: dict = {}
    for nb in jf.notebooks:
        if nb.kernel_name:
            by_name.setdefault(nb.kernel_name.lower(), []).append(nb)
    for spec in jf.visible():
        row = Row(
            "kernel",
            spec.label,
            kernel=spec,
            location=_loc(spec.kernel_json, spec.argv_line),
            evidence={
                "kernel": spec.name,
                "kernel_json": spec.kernel_json,
                "argv": spec.argv,
                "display_name": spec.display_name,
            },
        )
        row.notebooks = [nb.path for nb in by_name.get(spec.name, [])]
        row.used = any(nb.imports_mindspore for nb in by_name.get(spec.name, []))
        if spec.error:
            row.problem, row.problem_kind = spec.error, "invalid"
            row.location = _loc(spec.kernel_json, spec.error_line)
        elif not spec.is_python:
            continue  # an R or Julia kernel: not this check's business
        else:
            path, how = kernel_interpreter(spec, jf, environ)
            row.interpreter = path
            row.evidence["interpreter_from"] = how
            if how == "absolute" and not os.path.exists(path):
                row.problem, row.problem_kind = f"its interpreter {path} no longer exists", "stale"
            elif how == "missing":
                row.problem, row.problem_kind = f"argv[0] '{spec.argv[0]}' is not on PATH", "stale"
            elif path is None:
                row.problem = f"it starts through `{' '.join(spec.argv[:3])} ...`, msdoctor cannot tell which Python"
                row.problem_kind = "unknown"
        rows.append(row)
    for name, nbs in sorted(by_name.items()):
        if jf.find(name) is None:
            first = nbs[0]
            rows.append(
                Row(
                    "notebook",
                    f"notebook {os.path.basename(first.path)} asks for kernel '{name}'",
                    used=any(nb.imports_mindspore for nb in nbs),
                    location=_loc(first.path),
                    problem=f"no kernel named '{name}' is installed",
                    problem_kind="missing-kernel",
                    notebooks=[nb.path for nb in nbs],
                    evidence={"kernel": name},
                )
            )
    return rows


def vscode_rows(vs: VSCodeFacts) -> list:
    rows = []
    for name, f in sorted(vs.files.items()):
        if not f.ok:
            rows.append(
                Row(
                    "vscode",
                    f".vscode/{name}",
                    used=True,
                    location=Location(f.path, f.line, f.column),
                    problem=f.error,
                    problem_kind="invalid",
                )
            )
    labels = {
        "default": "python.defaultInterpreterPath",
        "legacy": "legacy python.pythonPath",
        "launch": "launch.json",
        "task": "tasks.json",
        "hidden": "hidden from the kernel picker",
    }
    for ref in vs.refs:
        row = Row(
            "vscode",
            f"{labels[ref.kind]} ({ref.key})" if ref.kind in ("launch", "task") else labels[ref.kind],
            ref.resolved,
            used=ref.kind in ("default", "launch", "task"),
            location=_loc(ref.file, ref.line),
            ref=ref,
            evidence={"file": ref.file, "key": ref.key, "value": ref.raw, "resolved": ref.resolved},
        )
        if ref.kind in ("legacy", "hidden"):
            row.problem_kind = ref.kind
        if ref.resolved is None:
            row.problem, row.problem_kind = f"'{ref.raw}' {ref.problem}", row.problem_kind or "unknown"
        elif not os.path.exists(ref.resolved):
            row.problem, row.problem_kind = f"{ref.resolved} does not exist", "stale"
        rows.append(row)
    return rows


def _compute(ctx: Context) -> KernelView:
    probes = ctx.get(INTERPRETERS)
    tpath = target_python(ctx)
    rows = [Row("msdoctor", "msdoctor's own interpreter", sys.executable)]
    rows += shell_rows(ctx.environ)
    running = running_kernel_row(ctx.environ)
    if running is not None:
        rows.append(running)
    vscode = ctx.get(VSCODE)
    rows += vscode_rows(vscode)
    # the target's probe answers its own row and its Jupyter paths (one start: facts/target.py); the interpreters
    # that are not the target (`python` on PATH outside the venv, the editor's) are probed beside it, not after it:
    # run one after the other they were the last thing check --quick waited for
    others = [r for r in rows if not probes.same(r.interpreter, tpath)]
    early = threading.Thread(target=_fill, args=(others, probes), name="interp-others", daemon=True)
    early.start()
    try:
        ctx.get(TARGET)
    except FactUnavailable:
        pass  # its row says why
    early.join()

    # the target's Jupyter search path (one probe) overlaps the probes that do not depend on it; the target is
    # asked for first with its Jupyter paths, so that one probe answers every row naming it (a plain thread:
    # concurrent.futures would import logging on every check --quick)
    def load_specs() -> None:
        try:
            ctx.get(KERNELSPECS)
        except BaseException:  # noqa: BLE001 - kept in the fact's slot: ctx.get below raises it again
            pass

    specs = threading.Thread(target=load_specs, name="kernelspecs", daemon=True)
    specs.start()
    probes.reserve(tpath, jupyter=True)
    _fill(rows, probes)
    specs.join()
    try:
        jupyter, jupyter_error = ctx.get(KERNELSPECS), None
    except FactUnavailable as exc:
        jupyter, jupyter_error = None, exc.message
    target = probes.get(tpath, jupyter=True)
    if not target.ok:
        raise FactUnavailable(
            f"could not run the target {tpath}: {target.error}", "pass --python the path of a working interpreter"
        )
    view = KernelView(
        tpath,
        target,
        [Row("target", "the target interpreter", tpath, info=target)] + rows,
        jupyter=jupyter,
        jupyter_error=jupyter_error,
        vscode=vscode,
    )
    if jupyter is not None:
        krows = kernel_rows(jupyter, ctx.environ)
        _fill(krows, probes)
        # kernels before the editor's settings, as a person reads them
        at = next((i for i, r in enumerate(view.rows) if r.role == "vscode"), len(view.rows))
        view.rows[at:at] = krows
    return view


def _fill(rows: list, probes: Any) -> None:
    wanted = [r.interpreter for r in rows if r.info is None and r.interpreter and r.problem_kind != "stale"]
    infos = probes.many(wanted)
    for r in rows:
        if r.info is None and r.interpreter in infos:
            r.info = infos[r.interpreter]


#: The rows of the kernel-mismatch check.
KERNEL_VIEW: FactSpec[KernelView] = FactSpec(
    "kernel-view", _compute, slow=True, description="interpreters the editor, notebooks and shell run"
)


def describe(info: Optional[InterpInfo]) -> dict[str, Any]:
    """Evidence about a probed interpreter."""
    if info is None:
        return {}
    via = {"via": info.via} if info.via else {}
    if not info.ok:
        return {"probe_error": info.error, **via}
    ms = info.mindspore
    return {
        "executable": info.executable,
        "prefix": info.prefix,
        "python": info.python_version,
        "mindspore": info.versions.get("mindspore") if ms.importable else None,
        "mindspore_at": ms.home,
        "ipykernel": info.has_ipykernel,
        **via,
    }
