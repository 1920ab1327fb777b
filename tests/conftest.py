"""Shared fixtures. Helpers live in tests/helpers.py so test modules can import them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import BASE_PYTHON, Venv, make_venv  # noqa: E402


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No colour, no spinner, fixed width; Jupyter and user config dirs in a temp home."""
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
