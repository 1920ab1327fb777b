"""kernel-mismatch's fixer in the three steps of msdoctor/fix/__init__.py, over fix.py's plan and its steps.

``verify`` lays the plan over the facts the check reads and runs the check's own verdicts
(``Verdicts`` in this package's __init__.py) on what the plan touches:

* the target's Jupyter kernels as they would be: the kernel the plan registers or replaces, whose argv[0] is
  the interpreter that runs ``-m ipykernel install`` (ipykernel's kernelspec writes that interpreter's
  ``sys.executable``), and the stale kernels it removes gone; shadowing on the search path decided again;
* ipykernel importable in the interpreter the plan installs it into;
* ``python.defaultInterpreterPath`` as the settings.json text the plan writes sets it.

The findings the check would still give there (its row for the planned kernel, its row for the setting,
"no Jupyter kernel runs the target") are what the plan would not repair; ``[]`` when it repairs all of it.
Rows the plan does not touch (``python`` on PATH, other kernels, launch.json) are not its claim.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Optional

from msdoctor import jsonc
from msdoctor.facts.interpreters import INTERPRETERS, InterpInfo, ModuleAt, same_bin_dir
from msdoctor.facts.jupyter import KERNELSPECS, JupyterFacts, KernelSpec
from msdoctor.facts.kernel_view import KernelView, Row, kernel_rows, vscode_rows
from msdoctor.facts.vscode import DEFAULT_KEY, InterpreterRef, VSCodeFacts, resolve
from msdoctor.fix import Applied, Fixer
from msdoctor.model import Finding, Status

from . import Verdicts
from .fix import FixFailed, KernelPlan, KernelRequest, TargetSummary, apply_plan, build_plan

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context

#: interpreter paths -> what the probe found (``Interpreters.many`` of the INTERPRETERS fact)
Probe = Callable[[Iterable[str]], Mapping[str, InterpInfo]]


@dataclass(frozen=True)
class KernelApplied(Applied):
    """``Applied``, with what fix-kernel prints: each change done (also those before a failed step) and the fix
    of a failed step."""

    done: tuple = ()
    fix: Optional[str] = None


def _norm(path: str) -> str:
    return os.path.normpath(path)


def jupyter_after(plan: KernelPlan, jf: JupyterFacts) -> tuple[JupyterFacts, set]:
    """The target's kernels as they would be after ``plan``; and the resource dirs of the kernels it names."""
    kernels = list(jf.kernels)
    named = set()
    for step in plan.steps:
        if step.kind != "kernel" or step.blocked:
            continue
        dest = _norm(step.data["resource_dir"])
        named.add(dest)
        if step.change:
            search_dir = os.path.dirname(dest)
            order = next(
                (i for i, d in enumerate(jf.kernel_dirs) if _norm(d) == _norm(search_dir)), len(jf.kernel_dirs)
            )
            argv0 = (step.command or [plan.target])[0]
            kernels = [k for k in kernels if _norm(k.resource_dir) != dest]
            kernels.append(
                KernelSpec(
                    step.data["name"],
                    dest,
                    search_dir,
                    order,
                    argv=[argv0, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name=plan.display_name,
                    language="python",
                )
            )
    removed = {_norm(s.data["resource_dir"]) for s in plan.changes if s.kind == "stale" and not s.blocked}
    first: dict[str, str] = {}
    after = []
    for k in sorted((k for k in kernels if _norm(k.resource_dir) not in removed), key=lambda k: k.order):
        after.append(replace(k, shadowed_by=first.get(k.name)))
        first.setdefault(k.name, k.resource_dir)
    return replace(jf, kernels=after), named


def vscode_after(plan: KernelPlan, project: Path, environ: Mapping[str, str]) -> Optional[Row]:
    """The python.defaultInterpreterPath row as the planned settings.json would give it (None: no such step)."""
    step = next((s for s in plan.steps if s.kind == "vscode" and not s.blocked), None)
    if step is None:
        return None
    path = step.data["path"]
    if step.change:
        text = step.data["new"]
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = "{}"
    doc = jsonc.loads(text)
    raw = doc.get(DEFAULT_KEY) if isinstance(doc, dict) else None
    if not isinstance(raw, str):
        raw = ""
    resolved, problem = resolve(raw, project, environ)
    ref = InterpreterRef("default", path, None, DEFAULT_KEY, raw, resolved, problem)
    (row,) = vscode_rows(VSCodeFacts(str(project), True, {}, [ref]))
    return row


def _with_ipykernel(info: InterpInfo, into: list[str]) -> InterpInfo:
    paths = [p for p in (info.path, info.executable) if p]
    if info.ok and any(same_bin_dir(p, q) for p in paths for q in into):
        return replace(info, modules={**info.modules, "ipykernel": ModuleAt(True, origin="(installed by the plan)")})
    return info


def verify_plan(
    plan: KernelPlan, jf: JupyterFacts, target: InterpInfo, probe: Probe, environ: Mapping[str, str], project: Path
) -> list[Finding]:
    """The check's warns and fails on what ``plan`` touches, on the facts as they would be after it."""
    into = [s.command[0] for s in plan.changes if s.kind == "ipykernel" and s.command and not s.blocked]
    after_jf, named = jupyter_after(plan, jf)
    rows = kernel_rows(after_jf, environ)
    vs_row = vscode_after(plan, project, environ)
    every = rows + ([vs_row] if vs_row is not None else [])
    wanted = [r.interpreter for r in every if r.interpreter and r.problem_kind != "stale"]
    infos = {p: _with_ipykernel(i, into) for p, i in probe(wanted).items()}
    for r in every:
        if r.interpreter in infos:
            r.info = infos[r.interpreter]
    target_after = _with_ipykernel(target, into)
    view = KernelView(
        plan.target,
        target_after,
        [Row("target", "the target interpreter", plan.target, info=target_after)] + every,
        jupyter=after_jf,
    )
    verdicts = Verdicts(view)
    touched = [r for r in rows if r.kernel is not None and _norm(r.kernel.resource_dir) in named]
    touched += [vs_row] if vs_row is not None else []
    found = [verdicts.finding(r) for r in touched] + verdicts.aggregate()
    return [f for f in found if f.status in (Status.WARN, Status.FAIL)]


class KernelFixer:
    """kernel-mismatch's fixer: ipykernel in the target, a kernel that runs it, VS Code's interpreter setting,
    stale kernels out of the way (fix.py's steps); ``request`` is what the user asked for (fix-kernel's options)."""

    check_id = "kernel-mismatch"

    def __init__(self, request: Optional[KernelRequest] = None) -> None:
        self.request = request or KernelRequest()

    def plan(self, ctx: "Context") -> KernelPlan:
        """What fix.py's steps would do for the target, from the facts the check reads; nothing is changed.

        Raises:
            FactUnavailable: the target cannot be run.
        """
        from msdoctor.context import FactUnavailable

        python = ctx.options.python or ctx.target.executable
        info = ctx.get(INTERPRETERS).get(python, jupyter=True)
        if not info.ok:
            raise FactUnavailable(f"cannot run {python}: {info.error}", "pass --python a working interpreter")
        jf = ctx.get(KERNELSPECS)
        t = ctx.target
        summary = TargetSummary(python=python, info=info, env_name=t.env_name, env_kind=t.env_kind)
        return build_plan(summary, jf, self.request, self._project(ctx), ctx.environ)

    def verify(self, plan: KernelPlan, ctx: "Context") -> list[Finding]:
        """The check's verdicts on the kernels and the setting as the plan would leave them (module docstring)."""
        probes = ctx.get(INTERPRETERS)
        target = probes.get(plan.target, jupyter=True)
        return verify_plan(plan, ctx.get(KERNELSPECS), target, probes.many, ctx.environ, self._project(ctx))

    def apply(self, plan: KernelPlan, ctx: "Context", on_line: Callable[[str], None]) -> KernelApplied:
        """Every step that changes something, in order (fix.py's apply_plan); a failed step stops there."""
        try:
            done = apply_plan(plan, ctx.environ, on_line)
        except FixFailed as exc:
            return KernelApplied(False, exc.message, tuple(exc.done), exc.fix)
        return KernelApplied(True, f"{len(done)} change(s) applied", tuple(done))

    @staticmethod
    def _project(ctx: "Context") -> Path:
        return Path(ctx.options.project_dir or Path.cwd()).resolve()


FIXER: Fixer[KernelPlan] = KernelFixer()
