"""No project code runs, ever: every command, from a folder whose files shadow what msdoctor and the target import.

The folder holds json.py, platform.py, mindspore.py, transformers.py, ipykernel.py and msdoctor.py, each
writing a marker file when imported. Every command runs from it (cwd) and, where it takes one, with
``--project .``; no marker may appear. The shadowing is still reported: found on disk, not by importing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, REPO, env_with, run_msdoctor

SHADOWS = ("json", "platform", "mindspore", "transformers", "ipykernel", "msdoctor")
MINDSPORE_ERROR = "RuntimeError: Unsupported device target GPU. This process only supports one of the ['CPU']."


def marker_folder(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    for name in SHADOWS:
        (project / f"{name}.py").write_text(
            f"import os as _os\nopen(_os.path.join({str(root)!r}, 'MARKER-{name}'), 'w').close()\n"
        )
    return project


def markers(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("MARKER-*"))


@pytest.fixture
def world(tmp_path: Path) -> dict:
    project = marker_folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = env_with(
        {"HOME": str(home), "JUPYTER_DATA_DIR": str(home / "jdata"), "JUPYTER_PATH": str(tmp_path / "jp")},
        drop=["VIRTUAL_ENV", "CONDA_PREFIX", "JPY_PARENT_PID", "XDG_DATA_HOME", "JUPYTER_PREFER_ENV_PATH"],
    )
    return {"root": tmp_path, "project": project, "env": env}


def _run(w: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    res = run_msdoctor(*args, env=w["env"], cwd=w["project"], timeout=timeout)
    assert markers(w["root"]) == [], f"{args}: project code ran: {markers(w['root'])}\n{res.stdout}\n{res.stderr}"
    assert res.returncode in (0, 1), f"{args}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def test_quick_commands_run_no_project_file(world: dict) -> None:
    py = ["--python", BASE_PYTHON]
    for project in ([], ["--project", "."]):
        res = _run(world, "check", "--quick", *py, *project, "--format", "json")
        report = json.loads(res.stdout)
        dup = next(c for c in report["checks"] if c["id"] == "duplicate-installs")
        found = {f["evidence"].get("module") for f in dup["findings"]}
        # reported from the file system: the stack as shadowed installs, the standard library too
        assert {"mindspore", "transformers", "ipykernel", "json", "platform"} <= found, dup["findings"]
        _run(world, "report", "--quick", *py, *project, "--output", str(world["root"] / "r.md"))
        _run(world, "explain", MINDSPORE_ERROR, "--quick", *py, *project)
        _run(world, "vscode", "init", *py, *project, "--dry-run")
    _run(world, "list-checks")
    _run(world, "matrix", *py)
    _run(world, "memory", "--config", str(REPO / "training" / "configs" / "tiny-cpu.yaml"))


def test_vscode_tasks_do_not_import_the_workspace_msdoctor(world: dict) -> None:
    _run(world, "vscode", "init", "--python", BASE_PYTHON)
    from msdoctor import jsonc

    tasks = jsonc.loads((world["project"] / ".vscode" / "tasks.json").read_text())["tasks"]
    task = tasks[0]
    start = [task["command"], *task["args"][: task["args"].index("check")]]
    res = subprocess.run(
        [*start, "list-checks"], cwd=world["project"], env=world["env"], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0 and "duplicate-installs" in res.stdout, res.stderr
    assert markers(world["root"]) == []


@pytest.mark.slow
def test_full_check_explain_train_and_fix_kernel_run_no_project_file(world: dict, tmp_path: Path) -> None:
    py = ["--python", BASE_PYTHON]
    res = _run(world, "check", *py, "--project", ".", "--format", "json")
    report = json.loads(res.stdout)
    vm = next(c for c in report["checks"] if c["id"] == "version-matrix")
    # the live smoke imported the installed MindSpore, not the project's mindspore.py
    assert vm["status"] != "error", vm["findings"]
    _run(world, "explain", MINDSPORE_ERROR, *py)
    _run(
        world,
        "train",
        *py,
        "--config",
        str(REPO / "training" / "configs" / "tiny-cpu.yaml"),
        "--max-steps",
        "21",
        "--output-dir",
        str(tmp_path / "run"),
    )
    _run(world, "fix-kernel", *py, "--yes", "--no-vscode", "--project", ".")
    assert os.path.isdir(world["env"]["JUPYTER_DATA_DIR"])  # the kernel was registered (ipykernel from the env)


def test_the_launcher_for_pythons_before_311_drops_the_workspace_from_sys_path(world: dict) -> None:
    """Python < 3.11 has no -P: the task runs SAFE_MAIN, which removes the cwd entry before importing msdoctor."""
    from msdoctor.commands.vscode import SAFE_MAIN, launcher

    assert launcher("/envs/a/bin/python", True, (3, 9, 18)) == ["/envs/a/bin/python", "-c", SAFE_MAIN]
    assert launcher("/envs/a/bin/python", True, (3, 12, 1))[1:3] == ["-P", "-m"]
    res = subprocess.run(
        [BASE_PYTHON, "-c", SAFE_MAIN, "list-checks"],
        cwd=world["project"],
        env=world["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0 and "duplicate-installs" in res.stdout, res.stderr
    assert markers(world["root"]) == []
