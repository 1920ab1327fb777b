"""The interpreters a project's VS Code settings name (.vscode/settings.json, launch.json, tasks.json).

The files are JSONC (comments, trailing commas) and are read with
msdoctor.jsonc; an unparseable file is recorded with its line, never raised.
Setting semantics (source: microsoft/vscode-python wiki "Setting descriptions",
python.defaultInterpreterPath section):

* ``python.defaultInterpreterPath``: read when a workspace is opened and no
  interpreter has been chosen for it yet; the Python extension never writes it.
* ``python.pythonPath``: no longer read by the Python extension (2021 onwards).
* ``jupyter.kernels.excludePythonEnvironments``: interpreter paths hidden from the
  notebook kernel picker (microsoft/vscode-jupyter#13414); the older
  ``jupyter.kernels.filter`` held ``{"path", "type"}`` objects.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from msdoctor import jsonc
from msdoctor.context import Context, FactSpec
from msdoctor.facts.interpreters import is_python_like, python_in, which

FILES = ("settings.json", "launch.json", "tasks.json")
DEFAULT_KEY = "python.defaultInterpreterPath"
LEGACY_KEY = "python.pythonPath"
EXCLUDE_KEY = "jupyter.kernels.excludePythonEnvironments"
FILTER_KEY = "jupyter.kernels.filter"
_VAR = re.compile(r"\$\{([^}]+)\}")


@dataclass
class VSFile:
    """One .vscode/*.json file: its parsed value, or why it could not be parsed."""

    path: str
    text: Optional[str] = None
    value: Any = None
    error: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    lines: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass
class InterpreterRef:
    """A setting that names an interpreter.

    kind: "default" (python.defaultInterpreterPath), "legacy" (python.pythonPath),
    "launch" (a debug configuration's python), "task" (a task's command),
    "hidden" (hidden from the kernel picker).
    """

    kind: str
    file: str
    line: Optional[int]
    key: str
    raw: str
    resolved: Optional[str] = None
    problem: Optional[str] = None


@dataclass
class VSCodeFacts:
    root: str
    exists: bool
    files: dict = field(default_factory=dict)
    refs: list = field(default_factory=list)

    def file(self, name: str) -> Optional[VSFile]:
        return self.files.get(name)


def read_file(path: Path) -> VSFile:
    from msdoctor.errors import UserError
    from msdoctor.inputs import MiB, read_bytes

    f = VSFile(str(path))
    try:
        raw = read_bytes(path, cap=4 * MiB, what="VS Code settings file")  # regular files only: never blocks
    except UserError as exc:
        f.error = exc.message.split(": ", 1)[-1] if exc.message.startswith(str(path)) else exc.message
        return f
    try:
        f.text = raw.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        f.error = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        return f
    try:
        f.value = jsonc.loads(f.text)
        f.lines = jsonc.key_lines(f.text)
    except jsonc.JSONCError as exc:
        f.error, f.line, f.column = exc.message, exc.line, exc.column
    return f


def expand(raw: str, workspace: Path, environ: Mapping[str, str]) -> tuple:
    """Expand VS Code variables in a path; (path or None, problem or None).

    ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome}, ${env:NAME} and a
    leading ~ are expanded; ${command:python.interpreterPath} means "the selected
    interpreter" and names none by itself.
    """
    if "${command:" in raw:
        return None, "names the interpreter selected in VS Code, not a fixed one"
    home = environ.get("HOME") or str(Path.home())
    unknown = []

    def sub(m: "re.Match[str]") -> str:
        var = m.group(1)
        if var in ("workspaceFolder", "workspaceRoot"):
            return str(workspace)
        if var == "workspaceFolderBasename":
            return workspace.name
        if var == "userHome":
            return home
        if var.startswith("env:"):
            return environ.get(var[4:], "")
        unknown.append(var)
        return m.group(0)

    out = _VAR.sub(sub, raw)
    if unknown:
        return None, f"uses ${{{unknown[0]}}}, which msdoctor cannot expand"
    if out.startswith("~"):
        out = home + out[1:]
    return out, None


def resolve(raw: str, workspace: Path, environ: Mapping[str, str]) -> tuple:
    """An interpreter setting's value as an absolute interpreter path; (path or None, problem)."""
    path, problem = expand(raw, workspace, environ)
    if path is None:
        return None, problem
    if not path:
        return None, "is empty"
    if not os.path.isabs(path):
        if os.sep not in path:
            found = which(path, environ)
            return (found, None) if found else (None, f"'{path}' is not on PATH")
        # relative paths are relative to the workspace folder
        path = str(workspace / path)
    if os.path.isdir(path):
        inner = python_in(path)
        return (inner, None) if inner else (None, f"{path} is a directory without bin/python")
    return os.path.normpath(path), None


def _settings_refs(f: VSFile, workspace: Path, environ: Mapping[str, str]) -> list:
    refs: list = []
    doc = f.value if isinstance(f.value, dict) else {}
    for key, kind in ((DEFAULT_KEY, "default"), (LEGACY_KEY, "legacy")):
        raw = doc.get(key)
        if isinstance(raw, str):
            resolved, problem = resolve(raw, workspace, environ)
            refs.append(InterpreterRef(kind, f.path, f.lines.get((key,)), key, raw, resolved, problem))
    hidden = doc.get(EXCLUDE_KEY)
    for i, raw in enumerate(hidden if isinstance(hidden, list) else []):
        if isinstance(raw, str):
            resolved, problem = resolve(raw, workspace, environ)
            refs.append(
                InterpreterRef(
                    "hidden", f.path, f.lines.get((EXCLUDE_KEY, i)), f"{EXCLUDE_KEY}[{i}]", raw, resolved, problem
                )
            )
    legacy_filter = doc.get(FILTER_KEY)
    for i, item in enumerate(legacy_filter if isinstance(legacy_filter, list) else []):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            resolved, problem = resolve(item["path"], workspace, environ)
            refs.append(
                InterpreterRef(
                    "hidden",
                    f.path,
                    f.lines.get((FILTER_KEY, i)),
                    f"{FILTER_KEY}[{i}]",
                    item["path"],
                    resolved,
                    problem,
                )
            )
    return refs


def _launch_refs(f: VSFile, workspace: Path, environ: Mapping[str, str]) -> list:
    refs: list = []
    configs = f.value.get("configurations") if isinstance(f.value, dict) else None
    for i, cfg in enumerate(configs if isinstance(configs, list) else []):
        if not isinstance(cfg, dict):
            continue
        for key in ("python", "pythonPath"):
            raw = cfg.get(key)
            if isinstance(raw, str):
                resolved, problem = resolve(raw, workspace, environ)
                name = cfg.get("name") or f"configurations[{i}]"
                refs.append(
                    InterpreterRef(
                        "launch",
                        f.path,
                        f.lines.get(("configurations", i, key)),
                        f"{name}: {key}",
                        raw,
                        resolved,
                        problem,
                    )
                )
    return refs


def task_interpreter(command: str, task_type: Optional[str]) -> Optional[str]:
    """The interpreter a task command names explicitly, or None.

    Bare ``python``/``python3`` are left out: in a VS Code terminal they follow the
    environment the Python extension activates, which is not fixed by the file.
    """
    first = command
    if task_type != "process":
        try:
            parts = shlex.split(command)
        except ValueError:
            parts = command.split()
        first = parts[0] if parts else ""
    if not first or not is_python_like(first.replace("\\", "/")):
        return None
    if "/" not in first and "\\" not in first and "${" not in first:
        return None
    return first


def _task_refs(f: VSFile, workspace: Path, environ: Mapping[str, str]) -> list:
    refs: list = []
    tasks = f.value.get("tasks") if isinstance(f.value, dict) else None
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        if not isinstance(task, dict) or not isinstance(task.get("command"), str):
            continue
        named = task_interpreter(task["command"], task.get("type"))
        if named is None:
            continue
        resolved, problem = resolve(named, workspace, environ)
        label = task.get("label") or f"tasks[{i}]"
        refs.append(
            InterpreterRef(
                "task", f.path, f.lines.get(("tasks", i, "command")), f"{label}: command", named, resolved, problem
            )
        )
    return refs


def gather(project: Path, environ: Mapping[str, str]) -> VSCodeFacts:
    root = project / ".vscode"
    facts = VSCodeFacts(str(root), root.is_dir())
    if not facts.exists:
        return facts
    readers = {"settings.json": _settings_refs, "launch.json": _launch_refs, "tasks.json": _task_refs}
    for name in FILES:
        path = root / name
        if not path.is_file():
            continue
        f = read_file(path)
        facts.files[name] = f
        if f.ok:
            facts.refs.extend(readers[name](f, project, environ))
    return facts


def _compute(ctx: Context) -> VSCodeFacts:
    return gather(ctx.project_dir, ctx.environ)


#: What the project's .vscode/ files say about interpreters.
VSCODE: FactSpec[VSCodeFacts] = FactSpec("vscode", _compute, description="VS Code workspace settings")
