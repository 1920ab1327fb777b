"""duplicate-installs against real environments built with the real pip, through the real `msdoctor`.

Each test builds one broken layout the way users get it (a `pip install --user` next to a venv,
`pip install --ignore-installed`, a deleted source tree, a killed pip run) from small real
packages of the package index, then asserts what `msdoctor check --only duplicate-installs`
reports, and where possible what the real pip and the real import system say about the same
layout, so the finding is checked against the tools it describes. The healthy cases run on the
test environment's real MindSpore 2.7.0 install (directly and through a layered venv).
"""

from __future__ import annotations

import json
import re
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    BASE_PYTHON,
    REPO,
    Venv,
    check_of,
    env_with,
    make_venv,
    pip_from_index,
    probe_json,
    run_json,
    skip_if_index_unreachable,
)
from msdoctor.checks.duplicate_installs.record import Records
from msdoctor.facts.target import TargetFacts

pytestmark = pytest.mark.slow


def _pip(venv: Venv, *args: str, env: dict) -> subprocess.CompletedProcess:
    """The test env's real pip driving ``venv`` (``pip --python``), with an explicit environment."""
    cmd = [BASE_PYTHON, "-m", "pip", "--python", venv.python, "--disable-pip-version-check", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    skip_if_index_unreachable(res)
    assert res.returncode == 0, f"pip {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
    return res


def _check(python: str, env: dict, *extra: str, cwd: Path | None = None) -> tuple[int, dict]:
    res, report = run_json("check", "--python", python, "--only", "duplicate-installs", *extra, env=env, cwd=cwd)
    return res.returncode, check_of(report, "duplicate-installs")


def _codes(check: dict) -> list[str]:
    return [f.get("code") for f in check["findings"]]


def _one(check: dict, code: str) -> dict:
    found = [f for f in check["findings"] if f.get("code") == code]
    assert len(found) == 1, f"expected one {code} finding, got: {json.dumps(check['findings'], indent=1)}"
    return found[0]


def test_three_copies_pythonpath_venv_user_site_and_the_printed_fixes_remove_the_extra_ones(tmp_path: Path) -> None:
    """tomli in a PYTHONPATH directory, in the venv, and in the user site (a venv made with
    --system-site-packages sees the user site, after its own site-packages)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    root = tmp_path / "venv"
    subprocess.run(
        [base, "-m", "venv", "--without-pip", "--system-site-packages", str(root)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    venv = Venv(root)
    extra = tmp_path / "extra"
    env = env_with({"PYTHONUSERBASE": str(tmp_path / "userbase"), "PYTHONPATH": str(extra)}, drop=["PYTHONNOUSERSITE"])
    # `pip install --user` with the base interpreter (pip refuses --user from inside the venv) and a
    # `pip install --target` directory put on PYTHONPATH, then the venv's own copy
    for args in (["--user", "tomli==2.0.2"], ["--target", str(extra), "tomli==2.0.0"]):
        pip_from_index(
            [base, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", *args], env=env, timeout=300
        )
    _pip(venv, "install", "--no-deps", "tomli==2.0.1", env=env)
    user_site = subprocess.run(
        [venv.python, "-c", "import site; print(site.getusersitepackages())"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()

    rc, check = _check(venv.python, env)
    f = _one(check, "same-project-twice")
    assert f["status"] == "warn" and rc == 0  # tomli is not a training-stack package: warn, exit 0
    assert f["title"] == (
        "tomli is installed 3 times on sys.path (2.0.0, 2.0.1, 2.0.2); "
        "the import uses 2.0.0 from a PYTHONPATH directory"
    )
    ev = f["evidence"]
    assert [c["location"] for c in ev["copies"]] == [str(extra), str(venv.site_packages), user_site]
    assert ev["imported_from"] == str(extra) and ev["pip_acts_on"] == str(extra)
    assert ev["pip_can_uninstall_it"] is False and ev["keep"] == str(venv.site_packages)
    # the real import system and the real pip agree with the finding
    imported = subprocess.run(
        [venv.python, "-c", "import tomli; print(tomli.__file__)"], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    assert imported == str(extra / "tomli" / "__init__.py")
    shown = _pip(venv, "show", "tomli", env=env).stdout
    assert "Version: 2.0.0" in shown and f"Location: {extra}" in shown

    # the fixes: PYTHONPATH entry (or rm -rf of that copy), and the base interpreter's pip for the
    # user site (a venv's pip refuses to uninstall outside the venv); run them as printed
    on_path, user = f["fix"].split(" ; ")
    assert on_path.startswith(f"remove {extra} from PYTHONPATH, or delete this copy: rm -rf ")
    assert (
        user == f"PYTHONUSERBASE={tmp_path / 'userbase'} {os.path.realpath(base)} -m pip uninstall -y tomli"
        or user.endswith(" -m pip uninstall -y tomli")
        and user.startswith(f"PYTHONUSERBASE={tmp_path / 'userbase'} ")
    )
    for command in (on_path.split("delete this copy: ", 1)[1], user):
        subprocess.run(["bash", "-c", command], check=True, capture_output=True, env=env, timeout=120)
    _, after = _check(venv.python, env)
    assert "same-project-twice" not in _codes(after), after["findings"]
    assert (
        subprocess.run(
            [venv.python, "-c", "import tomli, importlib.metadata as m; print(m.version('tomli'))"],
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
        == "2.0.1"
    )


def test_ignore_installed_leaves_two_dist_infos_and_the_current_one_is_found_by_hash(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    env = env_with()
    _pip(venv, "install", "--no-deps", "six==1.16.0", env=env)
    _pip(venv, "install", "--no-deps", "--ignore-installed", "six==1.17.0", env=env)
    infos = sorted(p.name for p in venv.site_packages.glob("six-*.dist-info"))
    assert infos == ["six-1.16.0.dist-info", "six-1.17.0.dist-info"]

    rc, check = _check(venv.python, env)
    f = _one(check, "two-dist-infos")
    assert f["status"] == "warn" and "six has 2 dist-info directories" in f["title"]
    assert f["evidence"]["matches_disk"] == {"six-1.16.0.dist-info": False, "six-1.17.0.dist-info": True}
    assert f["evidence"]["keep"].endswith("six-1.17.0.dist-info")
    assert f["fix"].startswith(f"rm -rf {venv.site_packages / 'six-1.16.0.dist-info'} ;")
    assert f"{venv.python} -m pip install --force-reinstall --no-deps six==1.17.0" in f["fix"]
    # one directory: not reported as "installed twice on sys.path", and the stale RECORD is not sampled
    assert _codes(check) == ["two-dist-infos"]


def test_shadowing_numpy_package_in_the_project_directory_fails(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "numpy").mkdir(parents=True)
    (project / "numpy" / "__init__.py").write_text("# a local experiment named numpy\n")
    (project / "transformers").mkdir()  # no __init__.py: a namespace portion, loses to the real package
    conf_dir = tmp_path / "job"
    conf_dir.mkdir()
    (conf_dir / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    (conf_dir / "safetensors.py").write_text("# shadows safetensors when job/train.py runs\n")

    rc, check = _check(BASE_PYTHON, env_with(), "--project", str(project), "--config", str(conf_dir / "config.json"))
    assert rc == 1 and check["status"] == "fail"
    f = _one(check, "shadowed-module")
    assert f["status"] == "fail" and f["location"]["path"] == str(project / "numpy")
    assert f["evidence"]["shadowed_dist"] == "numpy" and "current (project) directory" in f["detail"]
    assert f"mv {project / 'numpy'} {project / 'numpy'}_local" in f["fix"]
    s = _one(check, "shadowed-module-script-dir")
    assert s["location"]["path"] == str(conf_dir / "safetensors.py") and s["status"] == "fail"
    assert not any("transformers" in x["title"] for x in check["findings"])


def test_deleted_trees_missing_record_files_and_pip_leftovers(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", layered=True)  # setuptools of the test env builds the editable install
    env = env_with()
    _pip(venv, "install", "--no-deps", "toml==0.10.2", env=env)
    src = tmp_path / "mylib_src"
    (src / "mylib").mkdir(parents=True)
    (src / "mylib" / "__init__.py").write_text("VALUE = 1\n")
    (src / "pyproject.toml").write_text(
        '[project]\nname = "mylib"\nversion = "0.1"\n'
        '[build-system]\nrequires = ["setuptools>=64"]\n'
        'build-backend = "setuptools.build_meta"\n'
    )
    _pip(venv, "install", "--no-deps", "--no-build-isolation", "-e", str(src), env=env)
    sp = venv.site_packages
    gone = tmp_path / "old_checkout"
    gone.mkdir()
    (sp / "old_checkout.pth").write_text(f"{gone}\n")
    shutil.rmtree(gone)
    shutil.rmtree(src)
    (sp / "toml" / "__init__.py").unlink()
    shutil.copytree(sp / "toml", sp / "~oml")  # what a pip run killed mid-upgrade leaves
    shutil.copytree(sp / "toml-0.10.2.dist-info", sp / "~oml-0.10.2.dist-info")

    rc, check = _check(venv.python, env)
    assert rc == 0 and check["status"] == "warn"  # none of these is a training-stack package
    assert sorted(_codes(check)) == [
        "editable-missing-source",
        "pip-leftover",
        "pth-missing-path",
        "record-missing-files",
    ]
    assert _one(check, "editable-missing-source")["evidence"]["source"] == str(src)
    pth = _one(check, "pth-missing-path")
    assert pth["evidence"]["resolved"] == str(gone)
    assert pth["fix"] == f"delete the line '{gone}' from {sp / 'old_checkout.pth'}"
    rec = _one(check, "record-missing-files")
    assert rec["evidence"]["missing"] == ["toml/__init__.py"]
    assert rec["fix"] == f"{venv.python} -m pip install --force-reinstall --no-deps toml==0.10.2"
    left = _one(check, "pip-leftover")
    assert left["evidence"]["leftovers"] == ["~oml", "~oml-0.10.2.dist-info"]
    assert left["evidence"]["projects"] == ["toml"]
    quoted = [shlex.quote(str(sp / n)) for n in ("~oml", "~oml-0.10.2.dist-info")]
    assert left["fix"].startswith(f"rm -rf {quoted[0]} {quoted[1]} ;")
    # the real pip sees the same leftovers
    listing = _pip(venv, "list", env=env)
    # pip <= 24 says "invalid distribution", later pips "incompletely removed distribution"
    assert re.search(r"Ignoring (invalid|incompletely removed) distribution ~oml", listing.stderr), listing.stderr


def test_real_mindspore_environment_has_no_false_positive() -> None:
    """The test env (MindSpore 2.7.0, transformers, an editable msdoctor whose egg-info sits in the repo)."""
    rc, check = _check(BASE_PYTHON, env_with(), cwd=REPO)
    assert rc == 0 and check["status"] == "pass", json.dumps(check["findings"], indent=1)
    ev = check["findings"][0]["evidence"]
    assert ev["projects"] > 50 and ev["record_files_checked"] > 250
    # what was looked at: MindSpore's native libraries, as its RECORD lists them
    ms = TargetFacts.from_probe(probe_json()).dist("mindspore")
    sampled = Records().sample(ms)
    assert sum(p.startswith("mindspore/lib/") and ".so" in p for p in sampled) > 50, sampled
    assert Records().missing(ms) == ([], len(sampled))


def test_layered_venv_over_the_real_mindspore_has_no_false_positive(layered_venv: Venv, tmp_path: Path) -> None:
    rc, check = _check(layered_venv.python, env_with(), cwd=tmp_path)
    assert rc == 0 and check["status"] == "pass", json.dumps(check["findings"], indent=1)
