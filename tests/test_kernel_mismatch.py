"""kernel-mismatch: every interpreter a notebook, VS Code or the shell runs, judged against the target.

Pure verdict rules run on tiny builders; the facts (kernelspec search path, .vscode
files, notebooks) are read from real files; the integration test builds real venvs
(one layered over the test env's real MindSpore 2.7.0 and ipykernel, one bare
without MindSpore), real kernel.json files in a temp JUPYTER_DATA_DIR / JUPYTER_PATH
/ HOME, and runs the installed ``msdoctor``. Nothing here is faked.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from helpers import BASE_PYTHON, check_of, env_with, make_venv, run_json
from msdoctor.facts.interpreters import InterpInfo, ModuleAt, InterpreterProbes
from msdoctor.facts.jupyter import JupyterFacts, find_notebooks, kernel_interpreter, read_kernel_dir, scan_kernels
from msdoctor.facts.kernel_view import KernelView, Row, vscode_rows
from msdoctor.facts.vscode import gather, resolve, task_interpreter
from msdoctor.model import Location, Status
from msdoctor.probe import run_script, script_source

from msdoctor.checks.kernel_mismatch import evaluate

MS_HOME = "/envs/ms/lib/python3.11/site-packages/mindspore"


# -- builders ---------------------------------------------------------------------------------
def info(
    path: str,
    *,
    prefix: Optional[str] = None,
    ms: Optional[str] = MS_HOME,
    ipykernel: bool = True,
    error: Optional[str] = None,
) -> InterpInfo:
    if error:
        return InterpInfo(path, ok=False, error=error)
    modules = {
        "mindspore": ModuleAt(True, origin=f"{ms}/__init__.py", locations=(ms,)) if ms else ModuleAt(False),
        "ipykernel": ModuleAt(ipykernel, origin="/x/ipykernel/__init__.py" if ipykernel else None),
    }
    return InterpInfo(
        path,
        ok=True,
        executable=path,
        prefix=prefix or str(Path(path).parent.parent),
        version=(3, 11, 7),
        modules=modules,
        versions={"mindspore": "2.7.0" if ms else None},
    )


TARGET = "/envs/ms/bin/python"


def judge(*rows: Row, target: Optional[InterpInfo] = None, jupyter: bool = True) -> list:
    t = target or info(TARGET)
    jf = JupyterFacts(TARGET, "test", "/data", ["/data/kernels"], "/envs/ms/share/jupyter/kernels") if jupyter else None
    all_rows = [Row("target", "the target interpreter", TARGET, info=t), *rows]
    return evaluate(KernelView(TARGET, t, all_rows, jupyter=jf))


def kernel_row(name: str, interp: Optional[InterpInfo], *, used: bool = False, **kw: Any) -> Row:
    from msdoctor.facts.jupyter import KernelSpec

    spec = KernelSpec(
        name, f"/data/kernels/{name}", "/data/kernels", 0, argv=[interp.path if interp else "/gone"], language="python"
    )
    return Row("kernel", spec.label, interp.path if interp else None, used=used, info=interp, kernel=spec, **kw)


def by_code(findings: list, code: str) -> list:
    return [f for f in findings if f.code == code]


# -- verdict rules ----------------------------------------------------------------------------------
def test_kernel_of_the_target_passes_and_says_what_it_proved() -> None:
    found = judge(kernel_row("ms", info("/envs/ms/bin/python3")))
    assert [f.status for f in found] == [Status.PASS, Status.PASS]
    assert found[1].proved == f"/envs/ms/bin/python3 resolves mindspore to {MS_HOME}"


def test_kernel_without_mindspore_warns_and_no_kernel_for_target_fails() -> None:
    found = judge(kernel_row("py", info("/usr/bin/python3", ms=None)))
    (row,) = by_code(found, "kernel-mismatch")
    assert row.status is Status.WARN and "cannot import mindspore, the target can" in row.title
    assert row.fix.endswith(f"msdoctor fix-kernel --python {TARGET}")
    (agg,) = by_code(found, "no-kernel-for-target")
    assert agg.status is Status.FAIL and agg.fix == f"msdoctor fix-kernel --python {TARGET}"


def test_kernel_a_notebook_uses_fails_when_it_cannot_import_mindspore() -> None:
    row = kernel_row("py", info("/usr/bin/python3", ms=None), used=True, notebooks=["/p/train.ipynb"])
    found = judge(row, kernel_row("ms", info(TARGET)))
    (bad,) = by_code(found, "kernel-mismatch")
    assert bad.status is Status.FAIL and "/p/train.ipynb" in bad.detail
    assert not by_code(found, "no-kernel-for-target")  # kernel 'ms' runs the target


def test_other_env_with_the_same_mindspore_copy_passes_another_copy_does_not() -> None:
    layered = info("/envs/layer/bin/python")  # another prefix, same mindspore directory
    other = info("/envs/old/bin/python", ms="/envs/old/lib/python3.11/site-packages/mindspore")
    found = judge(kernel_row("layer", layered), kernel_row("old", other, used=True))
    assert found[1].status is Status.PASS and "same mindspore as the target" in found[1].title
    assert found[2].status is Status.FAIL and "imports another copy" in found[2].title


def test_stale_kernel_warns_with_remove_stale_fix() -> None:
    row = kernel_row("old", None, problem="its interpreter /gone no longer exists", problem_kind="stale")
    (f,) = by_code(judge(row), "kernel-stale")
    assert f.status is Status.WARN and f.fix.endswith("--remove-stale")


def test_kernel_without_ipykernel_warns_with_the_kernels_own_pip() -> None:
    k = info("/envs/ms/bin/python3", ipykernel=False)
    (f,) = by_code(judge(kernel_row("ms", k)), "kernel-no-ipykernel")
    assert f.status is Status.WARN and f.fix == "/envs/ms/bin/python3 -m pip install ipykernel"


def test_target_without_mindspore_skips_and_points_at_the_interpreter_that_has_it() -> None:
    t = info(TARGET, ms=None)
    other = info("/envs/other/bin/python", ms="/envs/other/lib/mindspore")
    found = judge(Row("path", "`python` on PATH", other.path, info=other), target=t)
    assert found[0].status is Status.SKIP
    (f,) = by_code(found, "target-lacks-mindspore")
    assert f.fix == "msdoctor check --python /envs/other/bin/python"


def test_vscode_setting_is_used_so_a_mismatch_fails() -> None:
    from msdoctor.facts.vscode import InterpreterRef

    bare = info("/envs/bare/bin/python", ms=None)
    ref = InterpreterRef(
        "default", "/p/.vscode/settings.json", 4, "python.defaultInterpreterPath", bare.path, bare.path
    )
    row = Row(
        "vscode",
        "python.defaultInterpreterPath",
        bare.path,
        used=True,
        info=bare,
        ref=ref,
        location=Location(ref.file, ref.line),
    )
    (f,) = by_code(judge(row), "vscode-mismatch")
    assert f.status is Status.FAIL and str(f.location) == "/p/.vscode/settings.json:4"
    assert f.fix.startswith(f"msdoctor fix-kernel --python {TARGET} --vscode")


def test_activated_other_env_warns_even_if_it_sees_the_same_mindspore() -> None:
    layered = info("/envs/layer/bin/python")
    row = Row("activated", "activated VIRTUAL_ENV=/envs/layer", layered.path, info=layered)
    (f,) = by_code(judge(row), "activated-mismatch")
    assert f.status is Status.WARN and "/envs/layer" in f.detail


def test_running_kernel_that_is_not_the_target_fails() -> None:
    k = info("/usr/bin/python3", ms=None)
    row = Row("running-kernel", "the Jupyter kernel msdoctor runs in", k.path, used=True, info=k)
    (f,) = by_code(judge(row), "kernel-mismatch")
    assert f.status is Status.FAIL and "switch this notebook's kernel" in f.fix


def test_interpreter_that_cannot_run_is_reported_not_crashed() -> None:
    broken = info("/envs/x/bin/python", error="/envs/x/bin/python exited with status 1")
    (f,) = by_code(judge(kernel_row("x", broken, used=True)), "interpreter-broken")
    assert f.status is Status.FAIL and "exited with status 1" in f.detail


def test_no_kernels_at_all_is_a_skip_with_the_command_to_register_one() -> None:
    found = judge()
    assert found[-1].status is Status.SKIP and "fix-kernel" in found[-1].detail


# -- facts from real files ----------------------------------------------------------------------------
def write_kernel(kdir: Path, name: str, argv: Any, **extra: Any) -> Path:
    d = kdir / name
    d.mkdir(parents=True)
    body = {"argv": argv, "display_name": extra.pop("display_name", name), "language": "python", **extra}
    (d / "kernel.json").write_text(json.dumps(body, indent=1))
    return d


def test_kernel_json_errors_carry_their_line(tmp_path: Path) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "kernel.json").write_text('{\n "argv": ["/x/python",\n "display_name": "B"\n}\n')
    spec = read_kernel_dir(str(d), "Broken", str(tmp_path), 0)
    assert spec.name == "broken" and spec.error_line == 3 and "invalid JSON" in spec.error
    (d / "kernel.json").write_text('{\n "display_name": "B",\n "argv": "python -m ipykernel"\n}\n')
    spec = read_kernel_dir(str(d), "broken", str(tmp_path), 0)
    assert spec.error_line == 3 and "non-empty list" in spec.error


def test_first_kernel_on_the_search_path_wins(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_kernel(a, "ms", ["/first/python"])
    write_kernel(b, "MS", ["/second/python"])
    write_kernel(b, "other", ["/second/python"])
    kernels = scan_kernels([str(a), str(b), str(tmp_path / "missing")])
    shadowed = [k for k in kernels if k.shadowed_by]
    assert [(k.name, k.argv[0]) for k in shadowed] == [("ms", "/second/python")]
    jf = JupyterFacts("/t/python", "test", str(tmp_path), [str(a), str(b)], "", version=(3, 11, 7), kernels=kernels)
    assert jf.find("MS").argv == ["/first/python"]


@pytest.mark.parametrize(
    "argv0, how",
    [
        ("python", "jupyter"),
        ("python3.11", "jupyter"),
        ("python3.9", "missing"),
        ("conda", "wrapper"),
        ("bin/python", "relative"),
        ("/abs/python", "absolute"),
    ],
)
def test_kernel_argv0_resolution_follows_jupyter_client(argv0: str, how: str, tmp_path: Path) -> None:
    from msdoctor.facts.jupyter import KernelSpec

    jf = JupyterFacts("/t/bin/python", "test", "", [], "", version=(3, 11, 7))
    spec = KernelSpec("k", "/k", "/", 0, argv=[argv0, "-m", "ipykernel_launcher"])
    path, found_how = kernel_interpreter(spec, jf, {"PATH": str(tmp_path)})
    assert found_how == how
    if how == "jupyter":
        assert path == "/t/bin/python"


def test_notebooks_are_found_outside_environments_and_read(tmp_path: Path) -> None:
    nb = {
        "cells": [{"cell_type": "code", "source": ["x = 1\n", "from mindspore import nn\n"]}],
        "metadata": {"kernelspec": {"name": "ms", "display_name": "MS"}},
    }
    (tmp_path / "a.ipynb").write_text(json.dumps(nb))
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "venv" / "skip.ipynb").write_text("{}")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("{}")
    (tmp_path / "bad.ipynb").write_text('{\n "cells": [\n}')
    found = find_notebooks(tmp_path)
    assert [p.name for p in found] == ["a.ipynb", "bad.ipynb"]
    from msdoctor.facts.jupyter import read_notebook

    good, bad = (read_notebook(p) for p in found)
    assert (good.kernel_name, good.imports_mindspore) == ("ms", True)
    assert bad.error_line == 3


VSCODE_SETTINGS = """\
// team settings
{
    "editor.tabSize": 4, // keep
    "python.defaultInterpreterPath": "${workspaceFolder}/.venv/bin/python",
    "python.pythonPath": "~/old/bin/python",
    "jupyter.kernels.excludePythonEnvironments": ["${env:MS_ENV}/bin/python",],
}
"""


def test_vscode_files_are_read_as_jsonc_with_variables_expanded(tmp_path: Path) -> None:
    vs = tmp_path / ".vscode"
    vs.mkdir()
    (vs / "settings.json").write_text(VSCODE_SETTINGS)
    (vs / "launch.json").write_text(
        '{"configurations": [\n {"name": "train", "python": "/envs/ms/bin/python"}, // dbg\n],}'
    )
    (vs / "tasks.json").write_text(
        json.dumps(
            {
                "tasks": [
                    {"label": "a", "type": "shell", "command": "${workspaceFolder}/.venv/bin/python -m msdoctor check"},
                    {"label": "b", "type": "shell", "command": "python train.py"},
                    {"label": "c", "type": "process", "command": "${command:python.interpreterPath}"},
                ]
            },
            indent=2,
        )
    )
    facts = gather(tmp_path, {"HOME": "/home/u", "MS_ENV": "/envs/ms", "PATH": ""})
    refs = {(r.kind, r.key): r for r in facts.refs}
    assert refs[("default", "python.defaultInterpreterPath")].resolved == str(tmp_path / ".venv/bin/python")
    assert refs[("default", "python.defaultInterpreterPath")].line == 4
    assert refs[("legacy", "python.pythonPath")].resolved == "/home/u/old/bin/python"
    hidden = refs[("hidden", "jupyter.kernels.excludePythonEnvironments[0]")]
    assert (hidden.resolved, hidden.line) == ("/envs/ms/bin/python", 6)
    assert refs[("launch", "train: python")].line == 2
    tasks = [r for r in facts.refs if r.kind == "task"]
    assert [r.key for r in tasks] == ["a: command"]  # bare `python` follows the activated env


def test_unparseable_vscode_file_is_a_failing_row_with_its_line(tmp_path: Path) -> None:
    vs = tmp_path / ".vscode"
    vs.mkdir()
    (vs / "settings.json").write_text('{\n  "a": 1,\n  "b": 2\n  "c": 3\n}\n')
    facts = gather(tmp_path, {})
    f = facts.file("settings.json")
    assert (f.ok, f.line) == (False, 4)
    (row,) = vscode_rows(facts)
    (finding,) = by_code(judge(row), "file-invalid")
    assert finding.status is Status.FAIL
    assert str(finding.location) == f"{vs / 'settings.json'}:4:3"
    assert "comma is missing" in finding.title


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("/x/bin/python", "/x/bin/python"),
        ("python", None),
        ("${command:python.interpreterPath}", None),
        ("${unknownVar}/python", None),
        ("", None),
    ],
)
def test_resolve_vscode_paths(raw: str, expected: Optional[str], tmp_path: Path) -> None:
    assert resolve(raw, tmp_path, {"PATH": str(tmp_path)})[0] == expected


@pytest.mark.parametrize(
    "command, kind, expected",
    [
        ("/e/bin/python train.py", "shell", "/e/bin/python"),
        ("python3 x.py", "shell", None),
        ("${workspaceFolder}/.venv/bin/python3.11", "process", "${workspaceFolder}/.venv/bin/python3.11"),
        ("make train", "shell", None),
        ("'unbalanced", "shell", None),
    ],
)
def test_task_commands_naming_an_interpreter(command: str, kind: str, expected: Optional[str]) -> None:
    assert task_interpreter(command, kind) == expected


# -- the probe -------------------------------------------------------------------------------------
def test_interp_probe_parses_as_python_3_7() -> None:
    ast.parse(script_source("interp_probe.py"), feature_version=(3, 7))


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"JUPYTER_PATH": "/jp/one:/jp/two", "JUPYTER_DATA_DIR": "/jdata"},
        {"JUPYTER_PREFER_ENV_PATH": "0", "XDG_DATA_HOME": "/xdg"},
        {"JUPYTER_PREFER_ENV_PATH": "yes", "IPYTHONDIR": "/ipy"},
    ],
)
def test_documented_rules_agree_with_jupyter_core(env: dict, tmp_path: Path) -> None:
    """The stdlib fallback (for targets without jupyter_core) gives jupyter_core's own answer."""
    full = env_with(
        {"HOME": str(tmp_path), **env},
        drop=["JUPYTER_PATH", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "JUPYTER_PREFER_ENV_PATH", "IPYTHONDIR"],
    )
    real, _ = run_script(BASE_PYTHON, "interp_probe.py", timeout=60, env=full, args={"jupyter": True})
    rules, _ = run_script(BASE_PYTHON, "interp_probe.py", timeout=60, env=full, args={"jupyter": "rules"})
    assert real["jupyter"]["source"].startswith("jupyter_core ")
    assert rules["jupyter"]["source"].startswith("jupyter_core's documented")
    assert rules["jupyter"]["kernel_dirs"] == real["jupyter"]["kernel_dirs"]
    assert rules["jupyter"]["data_dir"] == real["jupyter"]["data_dir"]


def test_probe_cache_runs_each_interpreter_once_and_reports_missing_ones(tmp_path: Path) -> None:
    probes = InterpreterProbes({"PATH": os.environ["PATH"]}, timeout=60)
    got = probes.many([sys.executable, sys.executable, str(tmp_path / "nope")])
    assert got[sys.executable].ok and got[sys.executable].mindspore.importable
    assert got[str(tmp_path / "nope")].ok is False and "does not exist" in got[str(tmp_path / "nope")].error
    assert probes.get(sys.executable) is got[sys.executable]


# -- the real thing ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Real venvs, real kernel.json files, a real project with .vscode and a notebook."""
    root = tmp_path_factory.mktemp("kernel-world")
    ms = make_venv(root / "ms-env", layered=True)
    bare = make_venv(root / "bare-env")
    home, data, extra = root / "home", root / "home" / "jdata", root / "jpath"
    kdir = data / "kernels"
    write_kernel(kdir, "nomind", [bare.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    write_kernel(kdir, "stale", [str(root / "deleted-env/bin/python"), "-m", "ipykernel_launcher"])
    write_kernel(extra / "kernels", "good", [ms.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    (kdir / "broken").mkdir()
    (kdir / "broken" / "kernel.json").write_text('{\n "argv": ["/x/python",\n "display_name": "Broken"\n}\n')
    project = root / "project"
    (project / ".vscode").mkdir(parents=True)
    (project / ".vscode" / "settings.json").write_text(
        '// mine\n{\n    "python.defaultInterpreterPath": "%s", // wrong one\n}\n' % bare.python
    )
    (project / "train.ipynb").write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "code", "source": "import mindspore\n"}],
                "metadata": {"kernelspec": {"name": "nomind", "display_name": "nomind"}},
            }
        )
    )
    env = env_with(
        {
            "HOME": str(home),
            "JUPYTER_DATA_DIR": str(data),
            "JUPYTER_PATH": str(extra),
            "VIRTUAL_ENV": str(root / "bare-env"),
        },
        drop=["CONDA_PREFIX", "CONDA_DEFAULT_ENV", "JPY_PARENT_PID", "IPYTHONDIR", "XDG_DATA_HOME"],
        path_first=[ms.bin],
    )
    res, report = run_json("check", "--only", "kernel-mismatch", "--python", ms.python, env=env, cwd=project)
    return {
        "root": root,
        "ms": ms,
        "bare": bare,
        "res": res,
        "check": check_of(report, "kernel-mismatch"),
        "project": project,
        "kdir": kdir,
    }


def finding(world: dict, title_part: str) -> dict:
    hits = [f for f in world["check"]["findings"] if title_part in f["title"]]
    assert len(hits) == 1, [f["title"] for f in world["check"]["findings"]]
    return hits[0]


@pytest.mark.slow
def test_real_mismatches_fail_the_check_without_a_traceback(world: dict) -> None:
    assert world["res"].returncode == 1, world["res"].stderr
    assert "Traceback" not in world["res"].stderr
    assert world["check"]["status"] == "fail"


@pytest.mark.slow
def test_real_kernel_without_mindspore_used_by_a_notebook_fails(world: dict) -> None:
    f = finding(world, "kernel 'nomind'")
    assert f["status"] == "fail" and "cannot import mindspore, the target can" in f["title"]
    assert str(world["project"] / "train.ipynb") in f["detail"]
    # the JSON report writes the home directory as ~ (HOME is the temp home here)
    assert f["location"]["path"] == "~/jdata/kernels/nomind/kernel.json"


@pytest.mark.slow
def test_real_stale_and_broken_kernels_warn_with_file_and_line(world: dict) -> None:
    stale = finding(world, "kernel 'stale'")
    assert stale["status"] == "warn" and stale["code"] == "kernel-stale"
    broken = finding(world, "kernel 'broken'")
    assert broken["status"] == "warn" and broken["location"]["line"] == 3
    assert "invalid JSON" in broken["title"]


@pytest.mark.slow
def test_real_kernel_of_the_target_on_jupyter_path_passes(world: dict) -> None:
    f = finding(world, "kernel 'good'")
    assert f["status"] == "pass" and f["evidence"]["mindspore"] == "2.7.0"


@pytest.mark.slow
def test_real_activated_venv_and_vscode_setting_pointing_elsewhere(world: dict) -> None:
    act = finding(world, "activated VIRTUAL_ENV")
    assert act["status"] == "warn" and act["code"] == "activated-mismatch"
    vs = finding(world, "python.defaultInterpreterPath")
    assert vs["status"] == "fail" and vs["location"]["line"] == 3
    assert vs["evidence"]["resolved"] == world["bare"].python
    path_rows = [f for f in world["check"]["findings"] if f["evidence"].get("role") == "path"]
    assert path_rows and all(f["status"] == "pass" for f in path_rows)  # PATH starts with the target's bin


@pytest.mark.slow
def test_real_unparseable_settings_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    vs = tmp_path / ".vscode"
    vs.mkdir()
    (vs / "settings.json").write_text('{\n  "python.defaultInterpreterPath": "/x" /* no comma */\n  "a": 1\n}\n')
    env = env_with(
        {"HOME": str(tmp_path / "home"), "JUPYTER_DATA_DIR": str(tmp_path / "j")},
        drop=["JUPYTER_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "JPY_PARENT_PID"],
    )
    res, report = run_json("check", "--only", "kernel-mismatch", env=env, cwd=tmp_path)
    assert "Traceback" not in res.stderr
    (f,) = [f for f in check_of(report, "kernel-mismatch")["findings"] if f["code"] == "file-invalid"]
    assert f["status"] == "fail" and f["location"]["line"] == 3
    assert f["location"]["path"] == str(vs / "settings.json")


def test_python_and_python3_of_one_env_are_probed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = Path(sys.executable).parent
    names = [str(bin_dir / n) for n in ("python", "python3") if (bin_dir / n).exists()]
    if len(names) < 2 or os.path.realpath(names[0]) != os.path.realpath(names[1]):
        pytest.skip("this environment's python and python3 are not one file")
    probes = InterpreterProbes({"PATH": os.environ["PATH"]}, timeout=60)
    calls = []
    real_run = probes._run
    monkeypatch.setattr(probes, "_run", lambda path, jupyter: calls.append(path) or real_run(path, jupyter))
    got = probes.many(names)
    assert len(calls) == 1
    assert [got[n].path for n in names] == names  # each row keeps the name it was asked by
    assert got[names[0]].prefix == got[names[1]].prefix
