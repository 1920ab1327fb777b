"""Shared fixtures. Helpers live in tests/helpers.py so test modules can import them."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import BASE_PYTHON, Venv, make_venv  # noqa: E402

#: the user's own cache folder, as the XDG rule finds it before the suite moves XDG_CACHE_HOME (an xdist
#: worker starts after the move: the controller passes the real one on)
REAL_CACHE_HOME = Path(os.environ.get("MSDOCTOR_TEST_REAL_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME")
                       or Path.home() / ".cache")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.is_dir() else set()


def pytest_configure(config: pytest.Config) -> None:
    """The suite writes only under temporary folders: XDG_CACHE_HOME (where the trainer keeps its token
    files, $XDG_CACHE_HOME/msdoctor/tokens) is a folder of this pytest process, set before any test or
    subprocess starts, so no test fills the user's ~/.cache/msdoctor. pip keeps the user's cache
    (PIP_CACHE_DIR): the wheels tests install come from it, as for a user."""
    if os.environ.get("MSDOCTOR_TEST_CACHE_HOME"):  # already set up (an xdist worker of this run)
        return
    config._msdoctor_saved_env = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "PIP_CACHE_DIR")}  # type: ignore[attr-defined]
    os.environ.setdefault("PIP_CACHE_DIR", str(REAL_CACHE_HOME / "pip"))
    cache = tempfile.mkdtemp(prefix="msdoctor-test-cache-")
    os.environ["XDG_CACHE_HOME"] = cache
    os.environ["MSDOCTOR_TEST_CACHE_HOME"] = cache
    os.environ["MSDOCTOR_TEST_REAL_CACHE_HOME"] = str(REAL_CACHE_HOME)
    config._msdoctor_real_cache = (REAL_CACHE_HOME / "msdoctor", _tree(REAL_CACHE_HOME / "msdoctor"))  # type: ignore[attr-defined]
    config._msdoctor_test_cache = cache  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = getattr(config, "_msdoctor_test_cache", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop("MSDOCTOR_TEST_CACHE_HOME", None)
        os.environ.pop("MSDOCTOR_TEST_REAL_CACHE_HOME", None)
        for key, value in config._msdoctor_saved_env.items():  # type: ignore[attr-defined]
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    """Say so when something still wrote to the user's msdoctor cache during the run."""
    before = getattr(config, "_msdoctor_real_cache", None)
    if before is None:
        return
    root, old = before
    new = sorted(_tree(root) - old)
    if new:
        terminalreporter.write_line(f"WARNING: {len(new)} new file(s) in {root} during the run (the suite must write "
                                    f"only under temporary folders; another process may also have): {new[:5]}",
                                    yellow=True)


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No colour, no spinner, fixed width, no inherited PYTHONPATH or plugin switch."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("MSDOCTOR_NO_SPINNER", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("MSDOCTOR_DISABLE_PLUGIN_AUTOLOAD", raising=False)


@pytest.fixture(scope="session")
def base_python() -> str:
    """The test interpreter: real MindSpore 2.7.0, transformers 4.57.1, ipykernel."""
    return BASE_PYTHON


@pytest.fixture
def layered_venv(tmp_path: Path) -> Venv:
    """A fresh real venv that also sees the test environment's packages (through a .pth)."""
    return make_venv(tmp_path / "venv", layered=True)
