"""Shared fixtures. Helpers live in tests/helpers.py so test modules can import them."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import BASE_PYTHON, Venv, make_venv  # noqa: E402

#: the user's own cache folder, as the XDG rule finds it before the suite moves XDG_CACHE_HOME (an xdist
#: worker starts after the move: the controller passes the real one on)
REAL_CACHE_HOME = Path(
    os.environ.get("MSDOCTOR_TEST_REAL_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
)


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
    os.environ["MSDOCTOR_TEST_SCOPES"] = os.path.join(cache, ".xdist-units.json")
    config._msdoctor_real_cache = (REAL_CACHE_HOME / "msdoctor", _tree(REAL_CACHE_HOME / "msdoctor"))  # type: ignore[attr-defined]
    config._msdoctor_test_cache = cache  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = getattr(config, "_msdoctor_test_cache", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop("MSDOCTOR_TEST_CACHE_HOME", None)
        os.environ.pop("MSDOCTOR_TEST_REAL_CACHE_HOME", None)
        os.environ.pop("MSDOCTOR_TEST_SCOPES", None)
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
        terminalreporter.write_line(
            f"WARNING: {len(new)} new file(s) in {root} during the run (the suite must write "
            f"only under temporary folders; another process may also have): {new[:5]}",
            yellow=True,
        )


def _module_bound(item: pytest.Item) -> bool:
    """Does the test use a fixture wider than a function (a module's venv, a two-node msrun run) that its own
    module defines? Such tests stay together on one worker, so the fixture is built once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return True
    module = item.nodeid.split("::", 1)[0]
    for defs in info.name2fixturedefs.values():
        for d in defs:
            if d.scope != "function" and d.baseid.startswith(module):
                return True
    return False


def _loadgroup(config: pytest.Config) -> bool:
    # an xdist worker has option.loadgroup (its option.dist is reset to "no"); the controller has option.dist
    return bool(getattr(config.option, "loadgroup", False) or getattr(config.option, "dist", "no") == "loadgroup")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (scripts/test.sh): a test file whose tests share a module fixture is one
    unit of work for one worker, as with ``--dist loadfile``; every other test is a unit of its own, so the
    long independent ones (trainer runs) spread over the workers. The shared units go first, the single
    tests after them fill the gaps at the end. A test's own ``xdist_group`` mark names its unit.

    The worker writes each test's unit to a file that the controller's scheduler reads
    (:func:`pytest_xdist_make_scheduler`): xdist 3.8 marks a group by renaming the test's nodeid, which
    pytest 9 no longer allows."""
    scopes_file = os.environ.get("MSDOCTOR_TEST_SCOPES")
    if not (_loadgroup(config) and scopes_file):
        return
    shared, single, scopes = [], [], {}
    for item in items:
        bound = _module_bound(item)
        marks = [m.args[0] if m.args else m.kwargs.get("name", "default") for m in item.iter_markers("xdist_group")]
        module = item.nodeid.split("::", 1)[0]
        scopes[item.nodeid] = (
            "group:" + "_".join(sorted(map(str, marks))) if marks else (module if bound else item.nodeid)
        )
        (shared if bound or marks else single).append(item)
    items[:] = shared + single
    tmp = f"{scopes_file}.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(scopes, f)
    os.replace(tmp, scopes_file)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """``--dist loadgroup`` with the units of :func:`pytest_collection_modifyitems`."""
    scopes_file = os.environ.get("MSDOCTOR_TEST_SCOPES")
    if not (_loadgroup(config) and scopes_file):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        _scopes: Optional[dict] = None

        def _split_scope(self, nodeid: str) -> str:
            if self._scopes is None:
                try:
                    with open(scopes_file) as f:
                        self._scopes = json.load(f)
                except (OSError, ValueError):
                    self._scopes = {}
            return self._scopes.get(nodeid) or nodeid.split("::", 1)[0]

    return UnitScheduling(config, log)


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
