"""Type checkers and editors resolve msdoctor.checks / msdoctor.training (checks/ and training/ in the repository)
the way docs/architecture.md says: from a strict editable install, whose link tree setuptools builds from
pyproject.toml's package-dir (the default editable install maps them with an import hook, which static tools do
not run). Real parts: a real venv, the real pip and setuptools, the real mypy of the test environment.
Pyright/Pylance read the same install (shown by hand with basedpyright, see the page)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, make_venv

pytestmark = pytest.mark.slow

USE = """\
from msdoctor.checks.version_matrix.fix import FIXER
from msdoctor.training.config import ConfigError
from msdoctor.doctor import diagnose
reveal_type(FIXER)
reveal_type(ConfigError)
"""


def test_mypy_resolves_the_remapped_packages_from_a_strict_editable_install(tmp_path: Path) -> None:
    src = tmp_path / "src"  # what the wheel is built from (a copy: the install writes build/ into it)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("msdoctor", "checks", "training", "compat_matrix", "docs"):
        shutil.copytree(REPO / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    venv = make_venv(tmp_path / "venv")
    venv.pip("install", "--no-deps", "--quiet", "-e", str(src), "--config-settings", "editable_mode=strict")
    use = tmp_path / "use.py"
    use.write_text(USE)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--python-executable",
            venv.python,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-incremental",
            str(use),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert "Cannot find implementation" not in res.stdout, res.stdout
    # FIXER is typed as the protocol of its plan (msdoctor.fix.Fixer), so mypy checks that StackFixer follows it
    assert 'Revealed type is "msdoctor.fix.Fixer[msdoctor.checks.version_matrix.fix.StackPlan]"' in res.stdout, (
        res.stdout
    )
    assert 'Revealed type is "def (' in res.stdout and "msdoctor.training.config.ConfigError" in res.stdout
    # the default (import hook) install is what the static tools cannot follow
    plain = make_venv(tmp_path / "plain")
    plain.pip("install", "--no-deps", "--quiet", "-e", str(src))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--python-executable",
            plain.python,
            "--cache-dir",
            str(tmp_path / "cache2"),
            "--no-incremental",
            str(use),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert 'Cannot find implementation or library stub for module named "msdoctor' in res.stdout, res.stdout
