"""Check: the notebook, the editor and the shell run a Python that imports the target's mindspore."""

from __future__ import annotations

from typing import Optional

from msdoctor.context import Context
from msdoctor.facts.interpreters import InterpInfo
from msdoctor.facts.kernel_view import KERNEL_VIEW, KernelView, Row, describe
from msdoctor.model import Finding, Status

CODE = {
    "stale": "kernel-stale",
    "invalid": "file-invalid",
    "unknown": "interpreter-unknown",
    "missing-kernel": "notebook-kernel-missing",
}


def _ms(info: Optional[InterpInfo]) -> str:
    if info is None or not info.ok or not info.mindspore.importable:
        return "no mindspore"
    return f"mindspore {info.versions.get('mindspore') or '?'} from {info.mindspore.home}"


class Verdicts:
    """Turns rows into findings, given what the target itself can import."""

    def __init__(self, view: KernelView) -> None:
        self.view = view
        self.t = view.target
        self.tpath = view.target_path
        self.t_ms = self.t.mindspore.home if self.t.mindspore.importable else None
        self.fixk = f"msdoctor fix-kernel --python {self.tpath}"

    def matches(self, info: Optional[InterpInfo]) -> bool:
        """Imports the very same mindspore as the target (or is the target's environment)."""
        if info is None or not info.ok:
            return False
        if info.same_env(self.t):
            return True
        return self.t_ms is not None and info.mindspore.importable and info.mindspore.home == self.t_ms

    def fix_for(self, row: Row) -> str:
        if row.role == "vscode":
            return (
                f'{self.fixk} --vscode   (or set "python.defaultInterpreterPath": "{self.tpath}")'
                if (row.ref is None or row.ref.kind in ("default", "legacy"))
                else (f"in {row.location}: name {self.tpath} (or ${{command:python.interpreterPath}}) instead")
            )
        if row.role in ("path", "activated"):
            return (
                f"activate the target's environment (prefix {self.t.prefix}) in this shell, or run "
                f"{self.tpath} explicitly; check with: msdoctor check --python {row.interpreter or '...'}"
            )
        if row.role == "running-kernel":
            return (
                f"switch this notebook's kernel to one that runs {self.tpath}, or register one: {self.fixk} "
                f"(to examine the kernel's own interpreter instead: msdoctor check --python {row.interpreter})"
            )
        return f"select a kernel that runs {self.tpath} for MindSpore notebooks, or register one: {self.fixk}"

    def finding(self, row: Row) -> Finding:
        ev = {"role": row.role, "interpreter": row.interpreter, **row.evidence, **describe(row.info)}
        if row.notebooks:
            ev["notebooks"] = row.notebooks
        what = f"{row.label}: {row.interpreter}" if row.interpreter else row.label
        if row.role == "target":
            if self.t_ms is None:
                return Finding.skipped(
                    f"the target {self.tpath} cannot import mindspore: nothing to match",
                    reason="install MindSpore into the target first (see the other checks)",
                    evidence=ev,
                )
            return Finding.passed(
                f"{what} imports {_ms(self.t)}",
                evidence=ev,
                proved=f"find_spec('mindspore') in {self.tpath} resolves to {self.t_ms}",
            )
        if row.problem_kind in CODE:
            return self._problem(row, what, ev)
        info = row.info
        if info is not None and not info.ok:
            status = Status.FAIL if row.used else Status.WARN
            return Finding(
                status,
                f"{what} could not be run",
                detail=str(info.error),
                fix=self.fix_for(row),
                location=row.location,
                evidence=ev,
                code="interpreter-broken",
            )
        if row.role == "msdoctor":
            same = info is not None and info.same_env(self.t)
            return Finding.passed(
                f"{what} ({'the target itself' if same else _ms(info)})",
                evidence=ev,
                proved="msdoctor examines the target through subprocess probes; "
                "its own interpreter need not import mindspore",
            )
        if row.problem_kind == "legacy":
            return Finding.warn(
                f"{what}: the legacy python.pythonPath setting is ignored",
                location=row.location,
                detail="The Python extension no longer reads python.pythonPath (2021 onwards); "
                "python.defaultInterpreterPath replaced it (source: microsoft/vscode-python wiki, "
                "'Setting descriptions'). Remove it so nobody trusts it.",
                fix=self.fix_for(row),
                evidence=ev,
                code="vscode-legacy-pythonpath",
            )
        if row.problem_kind == "hidden":
            if not self.matches(info):
                return Finding.passed(
                    f"{what} (not the target)",
                    evidence=ev,
                    proved="the interpreter hidden from the kernel picker is not the target",
                )
            return Finding.warn(
                f"VS Code hides the target {self.tpath} from the notebook kernel picker",
                detail=f"{row.ref.key if row.ref else 'a setting'} lists it",
                location=row.location,
                fix=f"remove that entry from {row.location}",
                evidence=ev,
                code="vscode-hides-target",
            )
        return self._mindspore(row, what, ev)

    def _problem(self, row: Row, what: str, ev: dict) -> Finding:
        kind = row.problem_kind or "unknown"
        if kind == "unknown":
            return Finding.skipped(
                f"{what}: interpreter not known", reason=row.problem or "", evidence=ev, location=row.location
            )
        status = Status.FAIL if row.used else Status.WARN
        if kind == "stale":
            fix = f"{self.fixk} --remove-stale" if row.role == "kernel" else self.fix_for(row)
            why = "Starting it fails (FileNotFoundError); Jupyter and VS Code still list it."
        elif kind == "invalid":
            fix = (
                f"repair the file at {row.location} (it must be valid JSON; JSONC comments are fine in "
                ".vscode files), then rerun msdoctor"
                if row.role == "vscode"
                else f"repair {row.location} or delete its kernel directory, then register again: {self.fixk}"
            )
            why = (
                "Jupyter skips a kernel whose kernel.json does not parse."
                if row.role == "kernel"
                else "VS Code cannot apply these settings reliably, and msdoctor cannot check or edit them."
            )
        else:  # missing-kernel
            fix = f"{self.fixk} --name {row.evidence.get('kernel')}"
            why = "Jupyter will ask for another kernel when the notebook opens."
        return Finding(
            status, f"{what}: {row.problem}", detail=why, fix=fix, location=row.location, evidence=ev, code=CODE[kind]
        )

    def _mindspore(self, row: Row, what: str, ev: dict) -> Finding:
        info = row.info
        if row.role == "activated" and info is not None and not info.same_env(self.t):
            # activated one env, examining another: `pip install` and `python` go to the activated one
            return Finding.warn(
                f"{what} is not the target's environment ({_ms(info)})",
                detail=f"The shell activated {info.prefix}, but msdoctor examined {self.t.prefix}: "
                "`python` and `pip` in this shell use the activated one.",
                fix=self.fix_for(row),
                evidence=ev,
                code="activated-mismatch",
            )
        if self.matches(info):
            if row.role == "kernel" and info is not None and not info.has_ipykernel:
                return Finding.warn(
                    f"{what} imports the target's mindspore but has no ipykernel",
                    detail="The kernel cannot start without ipykernel in its interpreter.",
                    fix=f"{row.interpreter} -m pip install ipykernel",
                    location=row.location,
                    evidence=ev,
                    code="kernel-no-ipykernel",
                )
            same = info is not None and info.same_env(self.t)
            return Finding.passed(
                f"{what} ({'the target' if same else 'same mindspore as the target'})",
                evidence=ev,
                proved=f"{row.interpreter} resolves mindspore to {self.t_ms}"
                if self.t_ms
                else f"{row.interpreter} is the target's environment",
            )
        ms = _ms(info)
        if self.t_ms is None:
            if ms == "no mindspore":
                return Finding.passed(
                    f"{what} (no mindspore, like the target)",
                    evidence=ev,
                    proved=f"{row.interpreter} runs; neither it nor the target imports mindspore",
                )
            return Finding.warn(
                f"{what} imports {ms}, but the target cannot import mindspore",
                detail="msdoctor examined an interpreter without MindSpore while this one has it.",
                fix=f"msdoctor check --python {row.interpreter}",
                location=row.location,
                evidence=ev,
                code="target-lacks-mindspore",
            )
        if ms == "no mindspore":
            title = f"{what} cannot import mindspore, the target can"
            why = "Code run there fails with ModuleNotFoundError: No module named 'mindspore'."
        else:
            title = f"{what} imports another copy: {ms}"
            why = f"The target imports mindspore from {self.t_ms}; two copies mean two versions and two sets of bugs."
        if row.role == "kernel" and info is not None and info.ok and not info.has_ipykernel:
            why += " Its interpreter has no ipykernel either, so the kernel cannot even start."
        if row.notebooks:
            why += " Used by: " + ", ".join(row.notebooks) + "."
        status = Status.FAIL if row.used else Status.WARN
        return Finding(
            status,
            title,
            detail=why,
            fix=self.fix_for(row),
            location=row.location,
            evidence=ev,
            code="kernel-mismatch" if row.role in ("kernel", "running-kernel") else f"{row.role}-mismatch",
        )

    def aggregate(self) -> list:
        """No registered Python kernel imports the target's mindspore: notebooks cannot use it."""
        jf = self.view.jupyter
        kernels = [
            r
            for r in self.view.rows
            if r.role == "kernel" and r.kernel and r.kernel.is_python and r.problem_kind is None
        ]
        if jf is None or self.t_ms is None or not kernels:
            return []
        if any(self.matches(r.info) and r.info is not None and r.info.has_ipykernel for r in kernels):
            return []
        names = ", ".join(r.kernel.name for r in kernels if r.kernel)
        return [
            Finding.fail(
                f"no Jupyter kernel runs the target {self.tpath}",
                detail=f"The registered Python kernels ({names}) cannot import the target's "
                f"mindspore ({self.t_ms}) or cannot start; a notebook has no kernel to run it with.",
                fix=self.fixk,
                evidence={"kernels": names, "search_path": jf.kernel_dirs},
                code="no-kernel-for-target",
            )
        ]


def evaluate(view: KernelView) -> list:
    v = Verdicts(view)
    out = [v.finding(r) for r in view.rows] + v.aggregate()
    if view.jupyter_error:
        out.append(Finding.skipped("Jupyter kernelspecs not examined", reason=view.jupyter_error))
    elif view.jupyter is not None and not any(r.role == "kernel" for r in view.rows):
        out.append(
            Finding.skipped(
                "no Jupyter kernels are registered",
                reason=f"searched {', '.join(view.jupyter.kernel_dirs)}; to use notebooks: {v.fixk}",
            )
        )
    return out


class KernelMismatchCheck:
    id = "kernel-mismatch"
    title = "Kernel and editor interpreters"
    description = "Jupyter kernels, VS Code settings and the shell run a Python that imports the target's mindspore"
    order = 50  # place in reports: environment first, then stack, devices, editors, project
    prefetch = (KERNEL_VIEW,)
    timeout_s = 90

    def run(self, ctx: Context) -> list:
        return evaluate(ctx.get(KERNEL_VIEW))
