"""fix-kernel: the plan (pure, from real files), and the real thing end to end.

The end-to-end test uses a real venv layered over the test env's real MindSpore
2.7.0 and ipykernel, a real bare venv without MindSpore, a real
.vscode/settings.json with comments and trailing commas, and temp HOME /
JUPYTER_DATA_DIR / JUPYTER_PATH. After ``msdoctor fix-kernel --yes`` it starts the
registered kernel with jupyter_client's KernelManager and asks it for
sys.executable, and runs msdoctor inside that kernel.
"""

from __future__ import annotations

import copy
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

import pytest

from helpers import check_of, env_with, make_venv, msdoctor_exe, run_json, run_msdoctor
from msdoctor import jsonc
from msdoctor.facts.interpreters import InterpInfo, ModuleAt
from msdoctor.facts.jupyter import JupyterFacts, scan_kernels
from msdoctor.checks.kernel_mismatch.fix import (
    KernelRequest,
    TargetSummary,
    build_plan,
    check_kernel_name,
    default_kernel_name,
    render_plan,
    safe_kernel_name,
)
from msdoctor.checks.kernel_mismatch.fixer import jupyter_after, verify_plan
from msdoctor.model import Status

from test_jsonc import comments

SETTINGS = """\
// my project's settings: keep me
{
    "editor.fontSize": 14, // big font
    /* the interpreter, chosen by hand
       long ago */
    "python.defaultInterpreterPath": "%s", // wrong one
    "files.exclude": {"**/.git": true, "**/__pycache__": true,},
    "python.analysis.extraPaths": ["src", "lib",],
}
"""


# -- the plan, from real files ----------------------------------------------------------------------
def interp(python: str, *, ipykernel: bool = True, pip: bool = True, ms: bool = True) -> InterpInfo:
    mods = {
        "ipykernel": ModuleAt(ipykernel, origin="/x/ipykernel/__init__.py" if ipykernel else None),
        "pip": ModuleAt(pip, origin="/x/pip/__init__.py" if pip else None),
        "mindspore": ModuleAt(ms, origin="/x/mindspore/__init__.py" if ms else None, locations=("/x/mindspore",)),
    }
    return InterpInfo(
        python,
        True,
        executable=python,
        prefix=str(Path(python).parent.parent),
        version=(3, 11, 7),
        modules=mods,
        versions={"ipykernel": "7.4.0" if ipykernel else None, "mindspore": "2.7.0"},
    )


def summary(python: str, env_name: Optional[str] = "ms", kind: str = "venv", **kw: Any) -> TargetSummary:
    return TargetSummary(python, interp(python, **kw), env_name, kind)


def jfacts(tmp: Path, *dirs: Path) -> JupyterFacts:
    kdirs = [str(d) for d in dirs] or [str(tmp / "data" / "kernels")]
    return JupyterFacts(
        "/t",
        "test",
        str(tmp / "data"),
        kdirs,
        str(tmp / "env/share/jupyter/kernels"),
        version=(3, 11, 7),
        kernels=scan_kernels(kdirs),
    )


def kernel(kdir: Path, name: str, argv0: str) -> None:
    (kdir / name).mkdir(parents=True)
    (kdir / name / "kernel.json").write_text(
        json.dumps({"argv": [argv0, "-m", "ipykernel_launcher"], "display_name": name, "language": "python"})
    )


@pytest.mark.parametrize(
    "env_name, kind, prefix, expected",
    [
        ("mindspore_env", "conda", "/c/envs/mindspore_env", "mindspore_env"),
        (".venv", "venv", "/home/u/My Project/.venv", "my-project-venv"),
        ("base", "conda", "/opt/conda", "conda-base"),
        (None, "system", "/usr", "python3.11"),
        ("MS Env 2", "venv", "/e/MS Env 2", "ms-env-2"),
    ],
)
def test_default_kernel_name_is_safe_and_says_which_env(
    env_name: Optional[str], kind: str, prefix: str, expected: str
) -> None:
    t = summary(f"{prefix}/bin/python", env_name, kind)
    name = default_kernel_name(t)
    assert name == expected and check_kernel_name(name) is None


def test_bad_kernel_name_is_refused_with_a_safe_suggestion() -> None:
    assert "--name my-kernel" in (check_kernel_name("my kernel") or "")
    assert safe_kernel_name("  ") == "python3"


def test_plan_registers_a_kernel_and_mentions_vscode_only_when_asked(tmp_path: Path) -> None:
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(), tmp_path, {})
    assert [(s.kind, s.change) for s in plan.steps] == [("ipykernel", False), ("kernel", True)]
    kernel_step = plan.steps[1]
    assert kernel_step.command == [
        "/e/ms/bin/python",
        "-m",
        "ipykernel",
        "install",
        "--user",
        "--name",
        "ms",
        "--display-name",
        "Python 3.11 (ms)",
    ]
    assert any("pass --vscode" in n for n in plan.notes)
    assert "1. ok      ipykernel 7.4.0 is importable by /e/ms/bin/python" in render_plan(plan)


def test_plan_reuses_a_kernel_that_already_runs_the_target(tmp_path: Path) -> None:
    kdir = tmp_path / "data" / "kernels"
    kernel(kdir, "mine", "/e/ms/bin/python3")  # same env, another name of its interpreter
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(), tmp_path, {})
    assert not plan.changes
    assert "kernel 'mine' already runs /e/ms/bin/python" in plan.steps[1].title


def test_plan_replaces_a_same_named_kernel_of_another_env_with_a_backup(tmp_path: Path) -> None:
    kernel(tmp_path / "data" / "kernels", "ms", "/old/env/bin/python")
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(name="ms"), tmp_path, {})
    step = plan.steps[1]
    assert step.change and step.title.startswith("replace Jupyter kernel 'ms'") and step.data["backup"]
    assert "it runs /old/env/bin/python" in step.title


def test_plan_is_blocked_when_an_earlier_kernel_would_hide_the_new_one(tmp_path: Path) -> None:
    early, user = tmp_path / "jupyter_path" / "kernels", tmp_path / "data" / "kernels"
    kernel(early, "ms", "/old/env/bin/python")
    plan = build_plan(
        summary("/e/ms/bin/python"), jfacts(tmp_path, early, user), KernelRequest(name="ms"), tmp_path, {}
    )
    (blocked,) = plan.blocked
    assert "comes earlier on Jupyter's search path" in blocked.blocked and "--name ms-2" in blocked.blocked_fix


def test_plan_without_pip_is_blocked_with_the_ensurepip_command(tmp_path: Path) -> None:
    t = summary("/e/ms/bin/python", ipykernel=False, pip=False)
    plan = build_plan(t, jfacts(tmp_path), KernelRequest(), tmp_path, {})
    (blocked,) = plan.blocked
    assert blocked.kind == "ipykernel" and blocked.blocked_fix.startswith("/e/ms/bin/python -m ensurepip --upgrade")


def test_plan_for_vscode_creates_edits_or_refuses_a_broken_file(tmp_path: Path) -> None:
    vs = tmp_path / ".vscode"
    vs.mkdir()
    req = KernelRequest()
    create = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), req, tmp_path, {}).steps[2]
    assert create.change and jsonc.loads(create.data["new"]) == {"python.defaultInterpreterPath": "/e/ms/bin/python"}
    (vs / "settings.json").write_text(SETTINGS % "/usr/bin/python3")
    edit = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), req, tmp_path, {}).steps[2]
    assert edit.change and comments(edit.data["new"]) == comments(SETTINGS)
    (vs / "settings.json").write_text(
        '{"python.pythonPath": "/old", "python.defaultInterpreterPath": "${workspaceFolder}/../e/bin/python"}'
    )
    t = summary(str(tmp_path.parent / "e/bin/python"))
    plan = build_plan(t, jfacts(tmp_path), req, tmp_path, {})
    assert not plan.steps[2].change and any("legacy python.pythonPath" in n for n in plan.notes)
    (vs / "settings.json").write_text('{\n  "a": 1\n  "b": 2\n}')
    broken = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), req, tmp_path, {}).steps[2]
    assert broken.blocked.startswith(f"{vs / 'settings.json'}:3:3:") and "--no-vscode" in broken.blocked_fix


def test_stale_kernels_are_listed_and_removed_only_when_asked(tmp_path: Path) -> None:
    kernel(tmp_path / "data" / "kernels", "gone", str(tmp_path / "deleted/bin/python"))
    kernel(tmp_path / "data" / "kernels", "alive", "/bin/sh")
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(), tmp_path, {})
    assert any("1 stale kernel(s) (gone)" in n for n in plan.notes)
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(remove_stale=True), tmp_path, {})
    (stale,) = [s for s in plan.steps if s.kind == "stale"]
    assert "'gone'" in stale.title and stale.data["backup_dir"].endswith("kernels.msdoctor-backup")


# -- verify: the check's verdicts on the facts as the plan would leave them --------------------------------
def _world(tmp_path: Path, *, ipykernel: bool = True) -> tuple:
    """A target with mindspore and another interpreter without it (both files on disk: the check calls a
    kernel whose argv[0] is missing stale), a project with .vscode/settings.json naming the other one."""
    target, other = tmp_path / "e/ms/bin/python", tmp_path / "e/bare/bin/python"
    for py in (target, other):
        py.parent.mkdir(parents=True)
        py.touch()
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode/settings.json").write_text(SETTINGS % other)
    infos = {str(target): interp(str(target), ipykernel=ipykernel), str(other): interp(str(other), ms=False)}
    return str(target), str(other), infos


def _verify(plan: Any, tmp_path: Path, infos: dict) -> list:
    return verify_plan(
        plan, jfacts(tmp_path), infos[plan.target], lambda paths: {p: infos[p] for p in paths}, {}, tmp_path
    )


def test_verify_passes_a_plan_that_repairs_and_fails_one_that_would_not(tmp_path: Path) -> None:
    target, other, infos = _world(tmp_path)
    before = jfacts(tmp_path)
    plan = build_plan(TargetSummary(target, infos[target], "ms", "venv"), before, KernelRequest(), tmp_path, {})
    assert [(s.kind, s.change) for s in plan.steps] == [("ipykernel", False), ("kernel", True), ("vscode", True)]
    assert _verify(plan, tmp_path, infos) == []
    # a kernel registered by the wrong interpreter: its row and "no kernel runs the target" stay
    wrong = copy.deepcopy(plan)
    wrong.steps[1].command[0] = other
    titles = [f.title for f in _verify(wrong, tmp_path, infos)]
    assert any("cannot import mindspore, the target can" in t and other in t for t in titles), titles
    assert f"no Jupyter kernel runs the target {target}" in titles
    # VS Code's setting left on the other interpreter
    wrong = copy.deepcopy(plan)
    wrong.steps[2].data["new"] = jsonc.set_key(wrong.steps[2].data["new"], ["python.defaultInterpreterPath"], other)
    (f,) = _verify(wrong, tmp_path, infos)
    assert f.status is Status.FAIL and f.code == "vscode-mismatch" and other in f.title
    # without the planned vscode step the setting is not the plan's claim
    assert (
        _verify(
            build_plan(
                TargetSummary(target, infos[target], "ms", "venv"), before, KernelRequest(vscode=False), tmp_path, {}
            ),
            tmp_path,
            infos,
        )
        == []
    )


def test_verify_counts_the_ipykernel_the_plan_installs_and_misses_it_when_the_step_is_gone(tmp_path: Path) -> None:
    target, _, infos = _world(tmp_path, ipykernel=False)
    plan = build_plan(
        TargetSummary(target, infos[target], "ms", "venv"), jfacts(tmp_path), KernelRequest(vscode=False), tmp_path, {}
    )
    assert [(s.kind, s.change) for s in plan.steps] == [("ipykernel", True), ("kernel", True)]
    assert _verify(plan, tmp_path, infos) == []
    plan.steps.pop(0)
    found = {(f.status, f.code) for f in _verify(plan, tmp_path, infos)}
    assert found == {(Status.WARN, "kernel-no-ipykernel"), (Status.FAIL, "no-kernel-for-target")}


def test_verify_drops_the_stale_kernels_it_removes_and_shadows_again(tmp_path: Path) -> None:
    target, _, infos = _world(tmp_path)
    kdir = tmp_path / "data" / "kernels"
    kernel(kdir, "gone", str(tmp_path / "deleted/bin/python"))
    plan = build_plan(
        TargetSummary(target, infos[target], "ms", "venv"),
        jfacts(tmp_path),
        KernelRequest(vscode=False, remove_stale=True),
        tmp_path,
        {},
    )
    after, named = jupyter_after(plan, jfacts(tmp_path))
    assert [k.name for k in after.kernels] == ["ms"] and named == {str(kdir / "ms")}
    assert after.kernels[0].argv[0] == target and _verify(plan, tmp_path, infos) == []


# -- the real thing ----------------------------------------------------------------------------------
def snapshot(*roots: Path) -> dict:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                out[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("fixk")
    return {"root": root, "ms": make_venv(root / "ms-env", layered=True), "bare": make_venv(root / "bare-env")}


def make_world(root: Path, ms: Any, bare: Any) -> dict:
    home, data, jpath = root / "home", root / "home" / "jdata", root / "jpath"
    project = root / "project"
    (project / ".vscode").mkdir(parents=True)
    settings = project / ".vscode" / "settings.json"
    settings.write_text(SETTINGS % bare.python)
    kernel(data / "kernels", "old-env", str(root / "deleted-env/bin/python"))
    jpath.mkdir()
    env = env_with(
        {"HOME": str(home), "JUPYTER_DATA_DIR": str(data), "JUPYTER_PATH": str(jpath)},
        drop=[
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "CONDA_DEFAULT_ENV",
            "JPY_PARENT_PID",
            "IPYTHONDIR",
            "XDG_DATA_HOME",
            "JUPYTER_PREFER_ENV_PATH",
        ],
        path_first=[ms.bin],
    )
    return {"home": home, "data": data, "jpath": jpath, "project": project, "settings": settings, "env": env}


def fix(w: dict, *args: str, python: str, input: Optional[str] = None) -> subprocess.CompletedProcess:
    return run_msdoctor("fix-kernel", "--python", python, *args, env=w["env"], cwd=w["project"], input=input)


def run_in_kernel(name: str, code: str, w: dict, monkeypatch: pytest.MonkeyPatch) -> str:
    """Start kernel ``name`` with jupyter_client, run code, return what it printed."""
    from jupyter_client.manager import KernelManager

    for key in ("HOME", "JUPYTER_DATA_DIR", "JUPYTER_PATH", "PATH"):
        monkeypatch.setenv(key, w["env"][key])
    for key in ("VIRTUAL_ENV", "CONDA_PREFIX", "JPY_PARENT_PID"):
        monkeypatch.delenv(key, raising=False)
    km = KernelManager(kernel_name=name)
    km.start_kernel(cwd=str(w["project"]))
    out: list = []
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        hook = lambda msg: out.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None
        reply = kc.execute_interactive(code, output_hook=hook, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    return "".join(out)


@pytest.mark.slow
def test_fix_kernel_end_to_end(envs: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    ms, bare = envs["ms"], envs["bare"]
    w = make_world(envs["root"] / "e2e", ms, bare)
    before = snapshot(w["home"], w["project"])
    original = w["settings"].read_text()

    # 1. --dry-run shows the plan and changes nothing
    res = fix(w, "--remove-stale", "--dry-run", python=ms.python)
    assert res.returncode == 0, res.stderr
    assert "register Jupyter kernel 'ms-env'" in res.stdout and "remove stale kernel 'old-env'" in res.stdout
    assert f"set python.defaultInterpreterPath in {w['settings']} from '{bare.python}' to {ms.python}" in res.stdout
    assert "dry run: 3 change(s) planned, nothing was changed" in res.stdout
    assert snapshot(w["home"], w["project"]) == before

    # 2. not a terminal and no --yes: refused with exit 2, plan printed, nothing changed
    res = fix(w, "--remove-stale", python=ms.python, input="y\n")
    assert res.returncode == 2 and "register Jupyter kernel 'ms-env'" in res.stdout
    assert "not on a terminal and --yes was not given" in res.stderr and "Traceback" not in res.stderr
    assert snapshot(w["home"], w["project"]) == before

    # 3. --yes applies it
    res = fix(w, "--remove-stale", "--yes", python=ms.python)
    assert res.returncode == 0, res.stdout + res.stderr
    spec = json.loads((w["data"] / "kernels" / "ms-env" / "kernel.json").read_text())
    assert spec["argv"][0] == ms.python and spec["display_name"] == "Python 3.11 (ms-env)"
    assert not (w["data"] / "kernels" / "old-env").exists()
    kept = list((w["data"] / "kernels.msdoctor-backup").glob("old-env.*/kernel.json"))
    assert len(kept) == 1  # moved aside, not destroyed

    # the user's settings: every other key and every comment kept, a backup of the original
    new = w["settings"].read_text()
    assert comments(new) == comments(original)
    old_doc, new_doc = jsonc.loads(original), jsonc.loads(new)
    assert new_doc.pop("python.defaultInterpreterPath") == ms.python
    old_doc.pop("python.defaultInterpreterPath")
    assert new_doc == old_doc
    assert (w["settings"].parent / "settings.json.bak").read_text() == original

    # 4. a second run changes nothing and says so
    after = snapshot(w["home"], w["project"])
    res = fix(w, "--remove-stale", "--yes", python=ms.python)
    assert res.returncode == 0 and "nothing to change" in res.stdout
    assert snapshot(w["home"], w["project"]) == after

    # 5. afterwards kernel-mismatch passes
    res, report = run_json("check", "--only", "kernel-mismatch", "--python", ms.python, env=w["env"], cwd=w["project"])
    check = check_of(report, "kernel-mismatch")
    assert check["status"] == "pass", json.dumps(check["findings"], indent=1)
    assert res.returncode == 0

    # 6. Jupyter really starts the registered kernel with the target interpreter, and msdoctor
    #    started from a cell sees that it runs inside that kernel
    code = (
        "import sys, subprocess\n"
        "print('EXE=' + sys.executable)\n"
        f"r = subprocess.run([{msdoctor_exe()!r}, 'check', '--only', 'kernel-mismatch', '--python', "
        f"{ms.python!r}, '--format', 'json'], capture_output=True, text=True)\n"
        "print('JSON=' + r.stdout.replace(chr(10), ' '))\n"
    )
    printed = run_in_kernel("ms-env", code, w, monkeypatch)
    assert f"EXE={ms.python}\n" in printed
    inner = json.loads(printed.split("JSON=", 1)[1])
    (row,) = [
        f for f in check_of(inner, "kernel-mismatch")["findings"] if f["evidence"].get("role") == "running-kernel"
    ]
    assert row["status"] == "pass" and row["evidence"]["interpreter"] == ms.python
    assert "ipykernel" in " ".join(row["evidence"]["cmdline"])


def pty_run(argv: list, env: dict, cwd: Path, answer: bytes, timeout: float = 120) -> tuple:
    """Run argv on a pseudo-terminal, answer the first prompt, return (exit code, output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    out, answered, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                if not answered and b"[y/N]" in out:
                    os.write(master, answer)
                    answered = True
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=10), out.decode(errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_on_a_terminal_it_asks_and_a_no_changes_nothing(envs: dict) -> None:
    w = make_world(envs["root"] / "tty", envs["ms"], envs["bare"])
    before = snapshot(w["home"], w["project"])
    rc, out = pty_run([msdoctor_exe(), "fix-kernel", "--python", envs["ms"].python], w["env"], w["project"], b"n\n")
    assert "Apply 2 change(s)? [y/N]" in out and "aborted: nothing was changed" in out
    assert rc == 1
    assert snapshot(w["home"], w["project"]) == before


@pytest.mark.slow
def test_unparseable_settings_is_refused_and_left_untouched(envs: dict) -> None:
    w = make_world(envs["root"] / "broken", envs["ms"], envs["bare"])
    w["settings"].write_text('{\n  // mine\n  "editor.fontSize": 14\n  "python.defaultInterpreterPath": "/x"\n}\n')
    before = snapshot(w["home"], w["project"])
    res = fix(w, "--yes", python=envs["ms"].python)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{w['settings']}:4:3: expected ',' or '}}'" in res.stderr
    assert "repair" in res.stderr and "--no-vscode" in res.stderr
    assert snapshot(w["home"], w["project"]) == before


@pytest.mark.slow
def test_target_without_pip_or_ipykernel_is_refused_with_the_command_to_fix_it(envs: dict) -> None:
    w = make_world(envs["root"] / "nopip", envs["ms"], envs["bare"])
    before = snapshot(w["home"], w["project"])
    res = fix(w, "--yes", "--no-vscode", python=envs["bare"].python)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "install ipykernel into" in res.stdout and "NO mindspore" in res.stdout
    assert f"fix: {envs['bare'].python} -m ensurepip --upgrade" in res.stderr
    assert snapshot(w["home"], w["project"]) == before


@pytest.mark.slow
def test_installs_ipykernel_with_the_targets_pip_showing_its_progress(tmp_path: Path) -> None:
    """Real pip, real PyPI: ipykernel goes into a fresh venv that had only pip."""
    venv = make_venv(tmp_path / "fresh", with_pip=True)
    w = make_world(tmp_path, venv, venv)
    res = fix(w, "--yes", "--no-vscode", python=venv.python)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"$ {venv.python} -m pip install ipykernel" in res.stderr
    assert "Successfully installed" in res.stderr and "ipykernel-" in res.stderr
    spec = json.loads((w["data"] / "kernels" / "fresh" / "kernel.json").read_text())
    assert spec["argv"][0] == venv.python
    res = fix(w, "--yes", "--no-vscode", python=venv.python)
    assert res.returncode == 0 and "nothing to change" in res.stdout


def test_sys_prefix_scope_registers_inside_the_target_env(tmp_path: Path) -> None:
    plan = build_plan(summary("/e/ms/bin/python"), jfacts(tmp_path), KernelRequest(scope="sys-prefix"), tmp_path, {})
    assert plan.kernels_dir == str(tmp_path / "env/share/jupyter/kernels")
    assert "--sys-prefix" in plan.steps[1].command and plan.steps[1].data["resource_dir"].startswith(plan.kernels_dir)


def test_cli_refuses_an_unsafe_kernel_name_before_doing_anything(tmp_path: Path) -> None:
    res = run_msdoctor(
        "fix-kernel", "--name", "My Kernel", "--dry-run", cwd=tmp_path, env=env_with({"HOME": str(tmp_path)})
    )
    assert res.returncode == 2 and "--name my-kernel" in res.stderr and "Traceback" not in res.stderr
