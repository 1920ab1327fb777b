"""The probes that run INSIDE the target (live.py, interp_probe.py) run for real under old interpreters.

They promise to parse and run on Python 3.7 (msdoctor/probe/__init__.py); ast.parse(feature_version=...)
checks only the grammar, not a call to something newer. pyenv on these machines keeps 3.7.16 and 3.8.18
(tests/helpers.which_python); where neither is installed the tests skip and say so.
"""

from __future__ import annotations

import pytest

from helpers import no_python_reason, which_python
from msdoctor.facts.import_smoke import run_smoke
from msdoctor.facts.interpreters import InterpreterProbes
from msdoctor.facts.live import run_live

OLD = ["3.7", "3.8"]


def old_python(version: str) -> str:
    python = which_python(version)
    if python is None:
        pytest.skip(no_python_reason(version))
    return python


@pytest.mark.parametrize("version", OLD)
def test_live_probe_import_smoke_under_an_old_python(version: str) -> None:
    python = old_python(version)
    steps = [
        {"module": "json", "touch": ["dumps"], "version_attr": None},
        {"module": "no_such_module_xyz", "touch": [], "version_attr": None},
        {"module": "csv", "touch": [], "version_attr": None},
    ]
    res = run_smoke(python, steps, timeout=60, environ={"PATH": "/usr/bin:/bin"})
    assert res.state == "ran", res
    assert [s["module"] for s in res.steps] == ["json", "no_such_module_xyz"]
    assert res.steps[0]["ok"] and res.steps[0]["touched"] == ["dumps"]
    assert res.steps[1]["last_line"] == "ModuleNotFoundError: No module named 'no_such_module_xyz'"


@pytest.mark.parametrize("version", OLD)
def test_live_probe_device_part_under_an_old_python_without_mindspore(version: str) -> None:
    python = old_python(version)
    live = run_live(python, "CPU", timeout=60, environ={"PATH": "/usr/bin:/bin"})
    assert live.failure is None and not live.timed_out, (live.failure, live.stderr_tail)
    assert live.last_phase == "done", (live.last_phase, live.stderr_tail)  # ran to its end on this Python
    assert live.data["python"] == python and live.data["requested"] == "CPU"
    assert live.data["mindspore_missing"] is True and live.data["import_error"] is None


@pytest.mark.parametrize("version", OLD)
def test_interp_probe_under_an_old_python(version: str) -> None:
    python = old_python(version)
    info = InterpreterProbes({"PATH": "/usr/bin:/bin"}, timeout=60).get(python, jupyter=True)
    assert info.ok, info.error
    assert ".".join(map(str, info.version[:2])) == version
    assert not info.mindspore.importable and info.module("pip").importable
    assert info.jupyter is not None and info.jupyter["kernel_dirs"], info.jupyter
