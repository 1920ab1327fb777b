"""The python-env check: pure rules on probe data, then real interpreters and real environments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from helpers import env_with, make_venv, pip_from_index, probe_json, run_json
from msdoctor.facts.target import TargetFacts
from msdoctor.model import Status

from msdoctor.checks.python_env import evaluate


def facts(**env: str) -> TargetFacts:
    data = probe_json()
    data["env"] = {k: v for k, v in env.items()}
    return TargetFacts.from_probe(data)


def codes(findings) -> set:
    return {f.code for f in findings if f.status > Status.PASS}


def test_clean_env_passes_and_says_what_it_proved() -> None:
    (f,) = evaluate(facts())
    assert f.status is Status.PASS
    assert "PYTHONPATH adds no foreign site-packages" in f.proved
    assert f.evidence["python_version"] == ".".join(map(str, sys.version_info[:3]))


def test_activated_env_is_not_the_examined_one(tmp_path: Path) -> None:
    other = str(tmp_path / "other-venv")
    found = evaluate(facts(VIRTUAL_ENV=other))
    assert codes(found) == {"venv-mismatch"}
    bad = [f for f in found if f.code == "venv-mismatch"][0]
    assert bad.fix == f"examine the activated env with: msdoctor check --python {other}"


def test_pythonpath_foreign_site_and_stale_entries(tmp_path: Path) -> None:
    foreign = tmp_path / "miniconda3" / "envs" / "old" / "lib" / "python3.9" / "site-packages"
    foreign.mkdir(parents=True)
    stale = tmp_path / "gone"
    found = evaluate(facts(PYTHONPATH=os.pathsep.join([str(foreign), str(stale)])))
    assert codes(found) == {"pythonpath-foreign-site", "pythonpath-missing"}
    assert [f.status for f in found if f.code == "pythonpath-foreign-site"] == [Status.FAIL]


def test_pythonhome_fails() -> None:
    found = evaluate(facts(PYTHONHOME="/usr"))
    assert codes(found) == {"pythonhome"}


@pytest.mark.slow
def test_real_venv_activated_while_probing_another(tmp_path: Path) -> None:
    a = make_venv(tmp_path / "a")
    b = make_venv(tmp_path / "b")
    env = env_with({"VIRTUAL_ENV": str(a.root)}, path_first=[a.bin])
    res, data = run_json("check", "--quick", "--only", "python-env", "--python", b.python, env=env, cwd=tmp_path)
    assert res.returncode == 0  # a warning does not fail the run...
    check = data["checks"][0]
    assert check["status"] == "warn"
    assert any(str(a.root) in f["title"] for f in check["findings"])
    res, _ = run_json(
        "check", "--quick", "--strict", "--only", "python-env", "--python", b.python, env=env, cwd=tmp_path
    )
    assert res.returncode == 1  # ...unless --strict


@pytest.mark.slow
def test_real_pythonpath_leak_from_another_env(tmp_path: Path) -> None:
    """Another venv's site-packages on PYTHONPATH shadows the target's packages: a fail."""
    other = make_venv(tmp_path / "other")
    target = make_venv(tmp_path / "target")
    env = env_with({"PYTHONPATH": str(other.site_packages)})
    res, data = run_json("check", "--quick", "--only", "python-env", "--python", target.python, env=env, cwd=tmp_path)
    assert res.returncode == 1
    (bad,) = [f for f in data["checks"][0]["findings"] if f["status"] == "fail"]
    assert str(other.site_packages) in bad["title"]


@pytest.mark.slow
def test_real_user_site_with_stack_package(tmp_path: Path) -> None:
    """A base interpreter (user site on) with safetensors in a PYTHONUSERBASE user site: a warning with the fix."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    userbase = tmp_path / "userbase"
    usersite = userbase / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"

    pip_from_index(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(usersite), "safetensors"], timeout=300
    )
    env = env_with({"PYTHONUSERBASE": str(userbase)}, drop=["PYTHONNOUSERSITE", "VIRTUAL_ENV", "CONDA_PREFIX"])
    res, data = run_json("check", "--quick", "--only", "python-env", "--python", base, env=env, cwd=tmp_path)
    findings = data["checks"][0]["findings"]
    (leak,) = [f for f in findings if f["code"] == "user-site-stack"]
    assert "safetensors" in leak["title"]
    assert leak["fix"].startswith("set PYTHONNOUSERSITE=1")
