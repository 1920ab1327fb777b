"""fix-kernel: make Jupyter and VS Code run the target interpreter. A plan first, then its steps.

The plan is pure data built from facts (the target's probe, its Jupyter search
path, the project's .vscode/settings.json); nothing changes until
:func:`apply_plan`. Each step knows whether it is already done, so a second run
plans nothing ("idempotent"). Steps, in order:

1. ipykernel importable by the target (``TARGET -m pip install ipykernel``);
2. a kernelspec whose argv[0] is the target (``TARGET -m ipykernel install``,
   the command Jupyter documents for registering an environment as a kernel);
3. ``python.defaultInterpreterPath`` in .vscode/settings.json, edited in place
   with msdoctor.jsonc (every other key and comment kept), written atomically
   with a backup;
4. with --remove-stale: kernelspecs whose interpreter was deleted are moved to a
   ``kernels.msdoctor-backup`` folder beside their kernels folder.

fixer.py makes these the check's fixer (plan, verify, apply: msdoctor/fix/__init__.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from msdoctor import jsonc, proc
from msdoctor.facts.interpreters import InterpInfo, same_bin_dir
from msdoctor.facts.jupyter import KERNEL_NAME_RE, JupyterFacts, KernelSpec, user_kernels_dir
from msdoctor.facts.vscode import DEFAULT_KEY, LEGACY_KEY, resolve
from msdoctor.fsutil import WriteError, atomic_write, make_backup, make_dirs, read_text_newlines, with_newlines
from msdoctor.probe import default_env, safe_env, scratch_dir

GENERIC_ENV_NAMES = ("venv", ".venv", "env", ".env", "virtualenv", ".virtualenv")
PIP_TIMEOUT_S = 900.0
INSTALL_TIMEOUT_S = 120.0


class FixFailed(Exception):
    """A step could not be applied; ``fix`` says what to do, ``done`` what was changed before."""

    def __init__(self, message: str, fix: Optional[str] = None, done: Optional[list] = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.done = done or []


@dataclass
class KernelRequest:
    """What the user asked fix-kernel for."""

    name: Optional[str] = None
    display_name: Optional[str] = None
    scope: str = "user"  # "user" | "sys-prefix"
    vscode: Optional[bool] = None  # None: when the project has .vscode/ or a notebook
    remove_stale: bool = False


@dataclass
class Step:
    """One thing the plan does. ``change`` False: already as wanted (shown as ok)."""

    kind: str  # ipykernel | kernel | vscode | stale
    title: str
    change: bool
    details: list = field(default_factory=list)
    command: Optional[list] = None
    blocked: Optional[str] = None
    blocked_fix: Optional[str] = None
    data: dict = field(default_factory=dict)


@dataclass
class KernelPlan:
    target: str
    about: str
    kernel_name: str
    display_name: str
    kernels_dir: str
    steps: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def changes(self) -> list:
        return [s for s in self.steps if s.change]

    @property
    def blocked(self) -> list:
        return [s for s in self.steps if s.blocked]


@dataclass
class TargetSummary:
    """What the plan needs to know about the target (from the probes)."""

    python: str
    info: InterpInfo
    env_name: Optional[str]
    env_kind: str


# -- naming -------------------------------------------------------------------------
def safe_kernel_name(text: str) -> str:
    """Lowercase, only a-z 0-9 . _ - (jupyter_client's rule), no spaces."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name or "python3"


def default_kernel_name(t: TargetSummary) -> str:
    """From the env name; a generic venv name ("venv", ".venv") gets its project's name in front."""
    env = t.env_name or ""
    prefix = (t.info.prefix or os.path.dirname(os.path.dirname(t.python))).rstrip(os.sep)
    if env.lower() in GENERIC_ENV_NAMES:
        parent = os.path.basename(os.path.dirname(prefix))
        env = f"{parent}-{env.lstrip('.')}" if parent else env
    elif env == "base" and t.env_kind == "conda":
        env = "conda-base"
    if not env:
        env = "python" + ".".join(str(x) for x in t.info.version[:2])
    return safe_kernel_name(env)


def default_display_name(t: TargetSummary, name: str) -> str:
    version = ".".join(str(x) for x in t.info.version[:2])
    return f"Python {version} ({t.env_name or name})"


def check_kernel_name(name: str) -> Optional[str]:
    """Why ``name`` cannot be a kernel name, or None."""
    if not KERNEL_NAME_RE.match(name):
        return (
            f"kernel name {name!r} may only hold letters, digits, '.', '_' and '-' "
            f"(jupyter_client's rule); for example --name {safe_kernel_name(name)}"
        )
    return None


# -- the steps ----------------------------------------------------------------------------
def _ipykernel_step(t: TargetSummary) -> Step:
    if t.info.has_ipykernel:
        version = t.info.versions.get("ipykernel") or ""
        return Step("ipykernel", f"ipykernel {version} is importable by {t.python}".replace("  ", " "), False)
    cmd = [t.python, "-m", "pip", "install", "ipykernel"]
    step = Step(
        "ipykernel",
        f"install ipykernel into {t.python}",
        True,
        command=cmd,
        details=["Jupyter starts a Python kernel with `-m ipykernel_launcher`: it must be importable there."],
    )
    if not t.info.module("pip").importable:
        step.blocked = f"{t.python} has no pip"
        step.blocked_fix = f"{t.python} -m ensurepip --upgrade, then rerun fix-kernel" + (
            f" (or: conda install -n {t.env_name} ipykernel)" if t.env_kind == "conda" else ""
        )
    return step


def _argv0_runs_target(spec: KernelSpec, target: str) -> bool:
    argv = spec.argv or []
    return bool(argv) and os.path.isabs(str(argv[0])) and same_bin_dir(str(argv[0]), target)


def _kernel_step(
    t: TargetSummary, jf: JupyterFacts, req: KernelRequest, name: str, display: str, kernels_dir: str
) -> Step:
    if req.name is None and req.display_name is None:
        for k in jf.visible():
            if k.error is None and k.is_python and _argv0_runs_target(k, t.python):
                return Step(
                    "kernel",
                    f"{k.label} already runs {t.python} ({k.resource_dir})",
                    False,
                    data={"name": k.name, "resource_dir": k.resource_dir},
                )
    dest = os.path.join(kernels_dir, name)
    cmd = [
        t.python,
        "-m",
        "ipykernel",
        "install",
        "--user" if req.scope == "user" else "--sys-prefix",
        "--name",
        name,
        "--display-name",
        display,
    ]
    existing = next((k for k in jf.kernels if os.path.normpath(k.resource_dir) == os.path.normpath(dest)), None)
    if existing is None and os.path.isfile(os.path.join(dest, "kernel.json")):
        from msdoctor.facts.jupyter import read_kernel_dir

        existing = read_kernel_dir(dest, name, kernels_dir, -1)
    step = Step(
        "kernel",
        f"register Jupyter kernel '{name}' (\"{display}\") in {dest}",
        True,
        command=cmd,
        details=[f"its argv[0] will be {t.python}"],
        data={"name": name, "resource_dir": dest},
    )
    if existing is not None:
        if (
            existing.error is None
            and _argv0_runs_target(existing, t.python)
            and (req.display_name is None or existing.display_name == display)
        ):
            return Step(
                "kernel",
                f"{existing.label} already runs {t.python} ({dest})",
                False,
                data={"name": name, "resource_dir": dest},
            )
        now = existing.error or f"it runs {existing.argv[0] if existing.argv else '?'}"
        step.title = f"replace Jupyter kernel '{name}' in {dest} ({now})"
        step.details.append(f"the old kernel.json is kept as {dest}/kernel.json.bak")
        step.data["backup"] = True
    first = jf.find(name)
    if first is not None and os.path.normpath(first.resource_dir) != os.path.normpath(dest):
        if _order_of(jf, os.path.dirname(first.resource_dir)) < _order_of(jf, kernels_dir):
            step.blocked = (
                f"a kernel named '{name}' in {first.resource_dir} comes earlier on Jupyter's search "
                f"path and would hide the new one"
            )
            step.blocked_fix = (
                f"choose another name (--name {name}-2), or register with "
                f"{'--sys-prefix' if req.scope == 'user' else '--user'}"
            )
    return step


def _order_of(jf: JupyterFacts, kernels_dir: str) -> int:
    for i, d in enumerate(jf.kernel_dirs):
        if os.path.normpath(d) == os.path.normpath(kernels_dir):
            return i
    return len(jf.kernel_dirs)


def vscode_wanted(req: KernelRequest, project: Path, jf: JupyterFacts) -> bool:
    if req.vscode is not None:
        return req.vscode
    return (project / ".vscode").is_dir() or bool(jf.notebooks)


def _vscode_step(t: TargetSummary, project: Path, environ: Mapping[str, str], notes: list) -> Step:
    path = project / ".vscode" / "settings.json"
    if not path.exists():
        text = "{\n    " + json.dumps(DEFAULT_KEY) + ": " + json.dumps(t.python) + "\n}\n"
        return Step(
            "vscode",
            f"create {path} with {DEFAULT_KEY} = {t.python}",
            True,
            data={"path": str(path), "old": None, "new": text},
        )
    try:
        old, nl = read_text_newlines(path)
        doc = jsonc.loads(old)
    except jsonc.JSONCError as exc:
        return Step(
            "vscode",
            f"set {DEFAULT_KEY} in {path}",
            True,
            blocked=f"{path}:{exc.line}:{exc.column}: {exc.message}: msdoctor edits only a file it can parse",
            blocked_fix=f"repair {path} line {exc.line}, or rerun with --no-vscode",
        )
    except (OSError, UnicodeDecodeError) as exc:
        return Step(
            "vscode",
            f"set {DEFAULT_KEY} in {path}",
            True,
            blocked=f"cannot read {path}: {exc}",
            blocked_fix="fix the file's permissions, or rerun with --no-vscode",
        )
    if not isinstance(doc, dict):
        return Step(
            "vscode",
            f"set {DEFAULT_KEY} in {path}",
            True,
            blocked=f"{path} does not hold a JSON object",
            blocked_fix=f"make {path} an object ({{ ... }}), or rerun with --no-vscode",
        )
    legacy = doc.get(LEGACY_KEY)
    if isinstance(legacy, str):
        notes.append(
            f"{path} still has the legacy {LEGACY_KEY} = {legacy!r}; the Python extension ignores it. "
            "msdoctor leaves it alone; remove it by hand."
        )
    current = doc.get(DEFAULT_KEY)
    if isinstance(current, str):
        resolved, _ = resolve(current, project, environ)
        if resolved and os.path.normpath(resolved) == os.path.normpath(t.python):
            return Step("vscode", f"{path} already sets {DEFAULT_KEY} to {t.python}", False, data={"path": str(path)})
    new = jsonc.set_key(old, [DEFAULT_KEY], t.python)
    expected = dict(doc)
    expected[DEFAULT_KEY] = t.python
    if jsonc.loads(new) != expected:  # never write an edit that changed anything else
        return Step(
            "vscode",
            f"set {DEFAULT_KEY} in {path}",
            True,
            blocked="the edit would change other settings",
            blocked_fix=f'set "{DEFAULT_KEY}": "{t.python}" by hand',
        )
    was = f"from {current!r} " if isinstance(current, str) else ""
    return Step(
        "vscode",
        f"set {DEFAULT_KEY} in {path} {was}to {t.python}",
        True,
        details=["every other key and every comment is kept; the original is kept as a .bak file"],
        data={"path": str(path), "old": with_newlines(old, nl), "new": with_newlines(new, nl)},
    )


def stale_kernels(jf: JupyterFacts) -> list:
    """Kernelspecs whose argv[0] is an absolute path that no longer exists."""
    return [
        k
        for k in jf.kernels
        if k.error is None and k.argv and os.path.isabs(str(k.argv[0])) and not os.path.exists(str(k.argv[0]))
    ]


def _stale_steps(jf: JupyterFacts, req: KernelRequest, notes: list) -> list:
    stale = stale_kernels(jf)
    if not stale:
        return []
    if not req.remove_stale:
        notes.append(
            f"{len(stale)} stale kernel(s) ({', '.join(k.name for k in stale)}) point at deleted "
            "interpreters; rerun with --remove-stale to remove them"
        )
        return []
    steps = []
    for k in stale:
        backup = os.path.join(os.path.dirname(k.search_dir), "kernels.msdoctor-backup")
        step = Step(
            "stale",
            f"remove stale kernel '{k.name}' ({k.resource_dir}): {k.argv[0]} no longer exists",
            True,
            details=[f"moved to {backup}/ (not deleted)"],
            data={"resource_dir": k.resource_dir, "backup_dir": backup},
        )
        if not os.access(k.search_dir, os.W_OK):
            step.blocked = f"no write access to {k.search_dir}"
            step.blocked_fix = f"remove it as its owner: sudo rm -r {k.resource_dir}; or rerun without --remove-stale"
        steps.append(step)
    return steps


def build_plan(
    t: TargetSummary, jf: JupyterFacts, req: KernelRequest, project: Path, environ: Mapping[str, str]
) -> KernelPlan:
    """Everything fix-kernel would do, and what is already done. Reads, never writes."""
    name = req.name.lower() if req.name else default_kernel_name(t)
    display = req.display_name or default_display_name(t, name)
    kernels_dir = user_kernels_dir(jf) if req.scope == "user" else jf.sys_prefix_kernels
    ms = t.info.mindspore
    about = (
        f"Python {t.info.python_version}, {t.env_kind}"
        + (f" '{t.env_name}'" if t.env_name else "")
        + (f", mindspore {t.info.versions.get('mindspore') or '?'}" if ms.importable else ", NO mindspore")
    )
    plan = KernelPlan(t.python, about, name, display, kernels_dir)
    if not ms.importable:
        plan.notes.append(
            f"{t.python} cannot import mindspore: a kernel for it will not either. Install MindSpore "
            "there first, or pass --python the interpreter that has it."
        )
    plan.steps.append(_ipykernel_step(t))
    plan.steps.append(_kernel_step(t, jf, req, name, display, kernels_dir))
    if vscode_wanted(req, project, jf):
        plan.steps.append(_vscode_step(t, project, environ, plan.notes))
    else:
        plan.notes.append(
            f"VS Code: no .vscode/ folder or notebook in {project}; pass --vscode to write .vscode/settings.json there"
        )
    plan.steps.extend(_stale_steps(jf, req, plan.notes))
    if any(s.kind == "vscode" and s.change for s in plan.steps):
        plan.notes.append(
            "VS Code reads python.defaultInterpreterPath only while no interpreter has been chosen for "
            "the workspace; if the status bar still shows another one, run 'Python: Select "
            "Interpreter' (source: microsoft/vscode-python wiki, 'Setting descriptions')."
        )
    return plan


def render_plan(plan: KernelPlan) -> str:
    marks: dict[str, str] = {}  # every change step's title starts with its verb (register, remove, set, ...)
    lines = [f"msdoctor fix-kernel: plan for {plan.target} ({plan.about})"]
    for i, s in enumerate(plan.steps, 1):
        mark = "BLOCKED" if s.blocked else (marks.get(s.kind, "change") if s.change else "ok")
        lines.append(f"  {i}. {mark:<7} {s.title}")
        if s.command and s.change:
            lines.append(f"             command: {' '.join(_quote(a) for a in s.command)}")
        if s.change:
            lines.extend(f"             {d}" for d in s.details)
        if s.blocked:
            lines.append(f"             why: {s.blocked}")
            lines.append(f"             fix: {s.blocked_fix}")
    if plan.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in plan.notes)
    from msdoctor.redact import clean_text

    return clean_text("\n".join(lines))  # kernel names and display names are outside text


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


# -- applying ---------------------------------------------------------------------------------
def apply_plan(plan: KernelPlan, environ: Mapping[str, str], echo: Callable[[str], None]) -> list:
    """Apply every step that changes something, in order; returns what was done.

    Raises:
        FixFailed: a step failed; the steps before it stay applied (listed in ``done``).
    """
    done: list = []
    env = safe_env(default_env(environ))  # with the scratch cwd: no project ipykernel.py / pip.py runs
    for step in plan.changes:
        try:
            done.append(_APPLY[step.kind](step, env, echo))
        except FixFailed as exc:
            exc.done = done
            raise
    return done


def _apply_ipykernel(step: Step, env: Mapping[str, str], echo: Callable[[str], None]) -> str:
    echo(f"$ {' '.join(step.command or [])}")
    with scratch_dir() as cwd:
        res = proc.run_live(
            step.command or [],
            timeout=PIP_TIMEOUT_S,
            on_line=lambda line: echo("  " + line),
            env=env,
            cwd=cwd,
            finish_s=120.0,
            finish_from="Installing collected packages",
        )
    if not res.ok:
        raise FixFailed(
            f"installing ipykernel failed: {res.describe_failure()}",
            "read pip's output above; fix the cause and rerun fix-kernel",
        )
    return "installed ipykernel"


def _apply_kernel(step: Step, env: Mapping[str, str], echo: Callable[[str], None]) -> str:
    dest = step.data["resource_dir"]
    kernel_json = os.path.join(dest, "kernel.json")
    old = Path(kernel_json).read_bytes() if step.data.get("backup") and os.path.isfile(kernel_json) else None
    echo(f"$ {' '.join(_quote(a) for a in step.command or [])}")
    with scratch_dir() as cwd:
        res = proc.run(step.command or [], timeout=INSTALL_TIMEOUT_S, env=env, cwd=cwd)
    if not res.ok:
        raise FixFailed(
            f"registering the kernel failed: {res.describe_failure()}",
            f"run the command yourself to see the whole error: {' '.join(step.command or [])}",
        )
    m = re.search(r"Installed kernelspec \S+ in (.+)$", res.stdout + res.stderr, re.MULTILINE)
    written = m.group(1).strip() if m else dest
    if os.path.normpath(os.path.realpath(written)) != os.path.normpath(os.path.realpath(dest)):
        raise FixFailed(
            f"ipykernel wrote the kernel to {written}, not to {dest} as planned",
            "check JUPYTER_DATA_DIR / JUPYTER_PREFER_ENV_PATH in this shell and rerun",
        )
    try:
        argv0 = json.loads(Path(kernel_json).read_text(encoding="utf-8"))["argv"][0]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise FixFailed(f"the new {kernel_json} cannot be read back ({exc})") from None
    target = (step.command or [""])[0]
    if not same_bin_dir(argv0, target):
        raise FixFailed(f"the new kernel runs {argv0}, not {target}")
    if old is not None:
        make_backup(Path(kernel_json), old)  # a new name (O_EXCL|O_NOFOLLOW): never through a planted link
    return f"registered kernel '{step.data['name']}' in {dest} (argv[0] {argv0})"


def _apply_vscode(step: Step, env: Mapping[str, str], echo: Callable[[str], None]) -> str:
    path = Path(step.data["path"])
    old = step.data.get("old")
    try:
        now = path.read_bytes().decode("utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise FixFailed(f"cannot read {path} again: {exc}", "rerun fix-kernel") from None
    if now != old:
        raise FixFailed(f"{path} changed while fix-kernel was running; nothing was written to it", "rerun fix-kernel")
    try:
        make_dirs(path.parent)
        backup = atomic_write(path, step.data["new"], backup=True)
    except WriteError as exc:  # the shared writer's reason and fix (read-only, full, under a file, a link)
        raise FixFailed(exc.message, f"{exc.fix}, or rerun with --no-vscode") from None
    return f"wrote {path}" + (f" (backup: {backup})" if backup else "")


def _apply_stale(step: Step, env: Mapping[str, str], echo: Callable[[str], None]) -> str:
    src = step.data["resource_dir"]
    backup_dir = step.data["backup_dir"]
    os.makedirs(backup_dir, exist_ok=True)
    base = os.path.join(backup_dir, f"{os.path.basename(src)}.{time.strftime('%Y%m%d-%H%M%S')}")
    dest, n = base, 1
    while os.path.exists(dest):
        dest, n = f"{base}-{n}", n + 1
    try:
        shutil.move(src, dest)
    except OSError as exc:
        raise FixFailed(
            f"could not move {src} to {dest}: {exc.strerror or exc}", f"remove it by hand: rm -r {src}"
        ) from None
    return f"removed stale kernel {src} (kept in {dest})"


_APPLY: dict[str, Callable[[Step, Mapping[str, str], Callable[[str], None]], str]] = {
    "ipykernel": _apply_ipykernel,
    "kernel": _apply_kernel,
    "vscode": _apply_vscode,
    "stale": _apply_stale,
}


def summary_of(plan: KernelPlan) -> str:
    """One line for a plan with nothing to change."""
    return f"nothing to change: all {len(plan.steps)} steps above are already in place"


def describe_request(req: KernelRequest) -> dict[str, Any]:
    return {
        "name": req.name,
        "display_name": req.display_name,
        "scope": req.scope,
        "vscode": req.vscode,
        "remove_stale": req.remove_stale,
    }
