"""The fix-stack search against a real pip and a local wheelhouse (no package index needed).

The wheels are tiny but real (METADATA with Requires-Dist, WHEEL, RECORD) and the target's packages are
installed by the real pip; the search asks that pip with ``PIP_NO_INDEX`` and ``PIP_FIND_LINKS`` as a user's
pip.conf would. The case is the shape of a real one (mindnlp 0.5.1 over a current index, 2026-12): transformers
4.57 needs huggingface-hub<1.0, the newest datasets needs >=1.31, and the datasets that fits is many releases
down. Here ``app`` needs ``hub<1.0``, ``data`` 4.0-4.9 need ``hub>=1.31``, ``data`` 3.6 is the newest that
takes ``hub>=0.30``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers import BASE_PURELIB, make_venv

from msdoctor.fix.resolver import Resolver

pytestmark = pytest.mark.slow  # about 20 s of pip calls (no index, no MindSpore)

DATA_NEW = [f"4.{i}" for i in range(10)]  # 4.0 ... 4.9, each needs hub>=1.31
DATA_OLD = ["3.4", "3.5", "3.6"]  # need hub>=0.30


def _wheel(where: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: msdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = []
    for rel, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(text.encode())}")
    rows.append(f"{info}/RECORD,,")
    path = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("search")
    wh = root / "wheelhouse"
    wh.mkdir()
    for v in ("0.30", "0.36", "1.31", "2.4"):
        _wheel(wh, "hubx", v)
    _wheel(wh, "appx", "4.57", ("hubx>=0.34,<1.0",))
    for v in DATA_NEW:
        _wheel(wh, "datax", v, ("hubx>=1.31",))
    for v in DATA_OLD:
        _wheel(wh, "datax", v, ("hubx>=0.30",))
    venv = make_venv(root / "venv")
    # the target's own pip (the resolver runs `python -m pip`): the test environment's pip, linked in
    (venv.site_packages / "pip").symlink_to(Path(BASE_PURELIB) / "pip")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wh),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    subprocess.run(
        [venv.python, "-m", "pip", "install", "--no-deps", "--quiet", "appx==4.57", "datax==4.9", "hubx==2.4"],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    return venv.python, env


def _plan(python: str, env: dict[str, str]):
    from msdoctor.checks.version_matrix.fix import plan_stack
    from msdoctor.context import Context, Options
    from msdoctor.matrix import load

    t = Context(Options(python=python)).target
    resolver = Resolver(python, environ=env)
    return plan_stack(t, load(), resolver), resolver


@pytest.fixture(scope="module")
def quick(target):
    return _plan(*target)


def test_the_owner_that_must_move_far_is_placed_by_pips_resolver_in_one_step(target, quick) -> None:
    python, env = target
    plan, resolver = quick
    assert plan.state == "found", plan.to_json()
    changes = sorted(str(c) for c in plan.changes)
    assert changes == ["datax 4.9 -> 3.6", "hubx 2.4 -> 0.36"], changes
    # the printed command installs exactly the checked set, and pip accepts it
    res = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet", *[a for a in plan.command if "==" in a]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert resolver.calls <= 12, resolver.calls


def test_stepping_down_one_release_per_round_takes_many_more_pip_calls(target, quick, monkeypatch) -> None:
    """What the shortcut saves: without pip's pick, datax walks down from 4.9 a release at a time."""
    from msdoctor.checks.version_matrix import fix

    python, env = target
    quick, quick_r = quick
    monkeypatch.setattr(fix._Search, "pip_pick", lambda *_a, **_k: None)
    slow, slow_r = _plan(python, env)
    assert [str(c) for c in quick.changes] == [str(c) for c in slow.changes] or slow.state != "found"
    assert slow_r.calls > quick_r.calls + 5, (slow_r.calls, quick_r.calls)
