"""The distribution: a real wheel holds everything under msdoctor/, nothing generic at the top level."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, REPO, env_with, make_venv


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools writes build/ and *.egg-info into the source tree it builds
    src = out / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "runs"))
    subprocess.run(
        [BASE_PYTHON, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    (whl,) = out.glob("msdoctor-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_installs_nothing_generic_at_top_level(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"msdoctor", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for sub in ("checks", "training", "compat_matrix"):
        assert any(n.startswith(f"msdoctor/{sub}/") for n in names), sub
    assert "msdoctor/probe/target_probe.py" in names
    assert "msdoctor/checks/python_env/__init__.py" in names
    assert "msdoctor/training/config.py" in names


@pytest.mark.slow
def test_wheel_ships_every_check_module(wheel: Path) -> None:
    """pyproject lists packages by hand: a check sub-package missing from that list would ship without its rules."""
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p.relative_to(REPO).as_posix() for p in (REPO / "checks").rglob("*.py")]
    assert any("/" in rel[len("checks/"):] for rel in sources)  # one sub-package per check
    for rel in sources:
        assert f"msdoctor/{rel}" in names, rel


@pytest.mark.slow
def test_wheel_ships_data_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    repo_data = [p.relative_to(REPO).as_posix() for p in (REPO / "compat_matrix").glob("*.toml")]
    repo_data += [p.relative_to(REPO).as_posix() for p in (REPO / "training" / "configs").glob("*.yaml")]
    zf = zipfile.ZipFile(wheel)
    for rel in repo_data:
        assert f"msdoctor/{rel}" in names, rel
        assert zf.read(f"msdoctor/{rel}") == (REPO / rel).read_bytes(), rel


@pytest.mark.slow
def test_wheel_registers_console_script_and_builtin_checks(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    ep = next(n for n in zf.namelist() if n.endswith("entry_points.txt"))
    text = zf.read(ep).decode()
    assert "msdoctor = msdoctor.cli:main" in text
    assert "[msdoctor.checks]" in text and "python-env = msdoctor.checks.python_env:PythonEnvCheck" in text


@pytest.mark.slow
def test_installed_wheel_runs_from_a_plain_venv(wheel: Path, tmp_path: Path) -> None:
    """A plain (non-editable) install with its dependencies into a fresh venv, as `pip install .` does."""
    venv = make_venv(tmp_path / "v")
    venv.pip("install", str(wheel))
    site = venv.site_packages
    assert (site / "msdoctor" / "checks" / "python_env" / "__init__.py").exists()
    assert not (site / "checks").exists() and not (site / "training").exists()
    res = subprocess.run([str(venv.bin / "msdoctor"), "check", "--quick", "--only", "python-env"],
                         capture_output=True, text=True, env=env_with(), cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    import_path = venv.run("import msdoctor; print(msdoctor.__file__)", cwd=tmp_path).stdout.strip()
    assert import_path.startswith(str(site))
