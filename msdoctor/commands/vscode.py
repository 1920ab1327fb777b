"""``msdoctor vscode init``: VS Code tasks that run msdoctor, with a problem matcher for the Problems panel.

Writes (or merges into) ``.vscode/tasks.json``: "msdoctor: check" (findings land
in the Problems panel through a problem matcher for ``--format vscode``),
"msdoctor: fix kernel" and "msdoctor: train (tiny CPU config)". The tasks call
the target interpreter by its absolute path: ``TARGET -m msdoctor.cli`` when
msdoctor is installed there, else msdoctor's own interpreter with
``--python TARGET``. An existing tasks.json (JSONC, with comments) keeps every
comment and every other task; msdoctor's own tasks are replaced by label. The
file is written atomically with a backup, and a second run changes nothing.
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any, Optional

import click

from msdoctor.commands.common import project_option, resolve_target, target_options
from msdoctor.errors import UserError
from msdoctor.model import ExitCode

LABEL_CHECK = "msdoctor: check"
LABEL_FIX = "msdoctor: fix kernel"
LABEL_TRAIN = "msdoctor: train (tiny CPU config)"
HEADER = "// VS Code tasks. The msdoctor tasks are written by `msdoctor vscode init`; rerun it after moving the environment.\n"


def problem_matchers() -> list[dict[str, Any]]:
    """The two matchers for ``--format vscode`` lines (see msdoctor/render/vscode.py for the line forms)."""
    from msdoctor.render.vscode import FILE_GROUPS, FILE_REGEXP, LOCATED_GROUPS, LOCATED_REGEXP

    common = {"owner": "msdoctor", "source": "msdoctor", "fileLocation": ["autoDetect", "${workspaceFolder}"]}
    return [
        {**common, "pattern": {"regexp": LOCATED_REGEXP, **LOCATED_GROUPS}},
        {**common, "pattern": {"regexp": FILE_REGEXP, "kind": "file", **FILE_GROUPS}},
    ]


def tiny_config_path() -> str:
    import msdoctor.training as training

    return str(Path(training.__file__).resolve().parent / "configs" / "tiny-cpu.yaml")


#: ``python -c`` puts the cwd (the workspace) first on sys.path: drop it before msdoctor is imported,
#: so a workspace file named msdoctor.py (or click.py, ...) never runs inside msdoctor.
SAFE_MAIN = "import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; from msdoctor.cli import main; main()"


def launcher(target: str, target_has_msdoctor: bool, version: Optional[tuple[int, ...]] = None) -> list[str]:
    """How the tasks start msdoctor: the target itself when it has msdoctor, else msdoctor's own interpreter.

    The tasks run with the workspace as cwd, so the interpreter must not put it on sys.path: ``-P``
    (Python 3.11+), else :data:`SAFE_MAIN`. Not ``-I``: msdoctor may live in the user site or PYTHONPATH.
    """
    exe = target if target_has_msdoctor else sys.executable
    ver = tuple(version or ()) if target_has_msdoctor else tuple(sys.version_info[:2])
    if ver[:2] >= (3, 11):
        return [exe, "-P", "-m", "msdoctor.cli"]
    return [exe, "-c", SAFE_MAIN]


def build_tasks(start: list[str], target: str, config: str) -> list[dict[str, Any]]:
    command, pre = start[0], start[1:]
    env = {"NO_COLOR": "1", "MSDOCTOR_NO_SPINNER": "1"}
    return [
        {
            "label": LABEL_CHECK,
            "detail": f"msdoctor check of {target}; findings go to the Problems panel",
            "type": "process",
            "command": command,
            "args": pre
            + ["check", "--python", target, "--project", "${workspaceFolder}", "--format", "vscode", "--no-color"],
            "options": {"cwd": "${workspaceFolder}", "env": env},
            "group": "test",
            "presentation": {"reveal": "always", "revealProblems": "onProblem", "panel": "dedicated", "clear": True},
            "problemMatcher": problem_matchers(),
        },
        {
            "label": LABEL_FIX,
            "detail": f"register a Jupyter kernel for {target} and select it in this workspace (asks first)",
            "type": "process",
            "command": command,
            "args": pre + ["fix-kernel", "--python", target],
            "options": {"cwd": "${workspaceFolder}"},
            "presentation": {"reveal": "always", "focus": True, "panel": "dedicated"},
            "problemMatcher": [],
        },
        {
            "label": LABEL_TRAIN,
            "detail": "msdoctor train: the bundled tiny pretraining on CPU, started only when every check passes",
            "type": "process",
            "command": command,
            "args": pre
            + ["train", "--config", config, "--python", target, "--output-dir", "${workspaceFolder}/runs/tiny-cpu"],
            "options": {"cwd": "${workspaceFolder}", "env": {"MSDOCTOR_NO_SPINNER": "1"}},
            "presentation": {"reveal": "always", "panel": "dedicated"},
            "problemMatcher": [],
        },
    ]


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip())]


def _dump(value: Any, indent: str) -> str:
    return json.dumps(value, indent=4, ensure_ascii=False).replace("\n", "\n" + indent)


def merge(text: Optional[str], tasks: list[dict[str, Any]], path: Path) -> str:
    """tasks.json text with our tasks added or replaced by label; everything else kept (comments too)."""
    from msdoctor import jsonc

    if text is None or not text.strip():
        return HEADER + json.dumps({"version": "2.0.0", "tasks": tasks}, indent=4, ensure_ascii=False) + "\n"
    try:
        root = jsonc.parse(text)
    except jsonc.JSONCError as exc:
        raise UserError(
            f"{path}:{exc.line}:{exc.column}: not valid JSON with comments: {exc.message}",
            "fix the file (VS Code shows the error too), then rerun `msdoctor vscode init`",
        ) from None
    if root.kind != "object":
        raise UserError(
            f"{path}: the top level is not an object", 'a tasks.json is {"version": "2.0.0", "tasks": [...]}'
        )
    if root.get("version") is None:
        text = jsonc.set_key(text, ["version"], "2.0.0")
    for task in tasks:
        root = jsonc.parse(text)
        arr = root.get("tasks")
        if arr is None:
            text = jsonc.append_items(text, ["tasks"], [task])
            continue
        if arr.kind != "array":
            line = text.count("\n", 0, arr.start) + 1
            raise UserError(f'{path}:{line}: "tasks" is not a list', "make it a list of task objects")
        same = [m[2] for m in arr.members if isinstance(m[2].value, dict) and m[2].value.get("label") == task["label"]]
        if not same:
            text = jsonc.append_items(text, ["tasks"], [task])
            continue
        node = same[-1]
        if node.value == task:
            continue
        text = text[: node.start] + _dump(task, _line_indent(text, node.start)) + text[node.end :]
    return text if text.endswith("\n") else text + "\n"


@click.group("vscode")
def vscode() -> None:
    """VS Code integration: tasks that run msdoctor, findings in the Problems panel."""


@vscode.command("init", short_help="Write .vscode/tasks.json: check, fix-kernel and train tasks.")
@target_options
@project_option("The workspace folder (default: the current directory).")
@click.option("--dry-run", is_flag=True, help="Show the change to .vscode/tasks.json; write nothing.")
def init(python: Optional[str], conda_env: Optional[str], project: Optional[Path], dry_run: bool) -> int:
    """Write .vscode/tasks.json tasks: msdoctor check (Problems panel), fix kernel, train (tiny CPU config).

    \b
    Examples:
      msdoctor vscode init --python ~/miniconda3/envs/ms/bin/python
      msdoctor vscode init --project ~/work/llm --dry-run

    Run the tasks from the Command Palette: "Tasks: Run Task" -> "msdoctor: check".
    """
    from msdoctor.context import Context, FactUnavailable, Options
    from msdoctor.fsutil import atomic_write, make_dirs, read_text_newlines, with_newlines

    project = (project or Path.cwd()).expanduser()
    if not project.is_dir():
        raise UserError(f"--project {project}: no such directory", "pass the workspace folder VS Code opens")
    project = project.resolve()
    target = resolve_target(python, conda_env)
    ctx = Context(Options(python=target, project_dir=project, quick=True))
    try:
        has_msdoctor = ctx.target.dist("msdoctor") is not None
        version = tuple(ctx.target.raw.get("version") or ())
    except FactUnavailable as exc:
        raise UserError(
            f"cannot examine {target}: {exc.message}", exc.fix or "check that it is a working Python"
        ) from None
    tasks = build_tasks(launcher(target, has_msdoctor, version), target, tiny_config_path())

    path = project / ".vscode" / "tasks.json"
    old: Optional[str] = None
    nl = "\n"
    if path.exists():
        try:
            old, nl = read_text_newlines(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read: {exc}", "make it a readable UTF-8 file") from None
    new = merge(old, tasks, path)
    if old is not None:  # the file's own line ends (a CRLF file stays CRLF)
        old, new = with_newlines(old, nl), with_newlines(new, nl)
    if new == old:
        click.echo(f"{path} is up to date: the msdoctor tasks are already there; nothing written.")
        return int(ExitCode.OK)
    how = "via " + ("the target's own msdoctor" if has_msdoctor else f"msdoctor's interpreter {sys.executable}")
    if dry_run:
        diff = difflib.unified_diff(
            (old or "").splitlines(True), new.splitlines(True), fromfile=str(path), tofile=str(path) + " (new)"
        )
        click.echo("".join(diff), nl=False)
        click.echo(f"\n--dry-run: would {'update' if old is not None else 'create'} {path} ({how}); nothing written.")
        return int(ExitCode.OK)
    make_dirs(path.parent)  # a failure here or in the write is WriteError: exit 2 with the path and the fix
    backup = atomic_write(path, new, backup=True)
    click.echo(
        f"{'updated' if old is not None else 'created'} {path}: tasks "
        f'"{LABEL_CHECK}", "{LABEL_FIX}", "{LABEL_TRAIN}" for {target} ({how})'
    )
    if backup is not None:
        click.echo(f"  the previous file is kept as {backup}")
    click.echo(
        '  run them with "Tasks: Run Task" in the Command Palette; findings of "msdoctor: check" '
        "appear in the Problems panel"
    )
    return int(ExitCode.OK)
