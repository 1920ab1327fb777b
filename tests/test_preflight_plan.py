"""`msdoctor preflight --plan` on one node (issue 29): a loopback master fails on every node_rank of a multi-node
job, and the fix for a `python` without msdoctor is one that works (msdoctor is not on the package index)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from helpers import REPO
from msdoctor.preflight.plan import MsrunArgs, check, msdoctor_source


def _master(addr: str, node_rank: int, worker_num: int = 4, local: int = 2) -> dict:
    res = check(
        MsrunArgs(worker_num, local, addr, 29996, node_rank),
        device_target="CPU",
        expected_python=None,
        env={"PATH": "/nonexistent"},
    )
    return [f for f in res.findings if f.code == "master-addr"][0]


@pytest.mark.parametrize("addr", ["127.0.0.1", "localhost", "::1", "127.0.1.1"])
@pytest.mark.parametrize("node_rank", [0, 1])
def test_a_loopback_master_fails_on_every_node_of_a_multi_node_job(addr: str, node_rank: int) -> None:
    f = _master(addr, node_rank)
    assert f.status.value == "fail" and "loopback" in f.title, (f.title, f.detail)
    assert "answered" not in f.title
    if node_rank:
        assert "this node itself" in f.detail


def test_a_loopback_master_is_fine_for_one_node() -> None:
    f = _master("127.0.0.1", 0, worker_num=2, local=2)
    assert f.status.value == "pass", f.title


def test_node_rank_1_with_a_loopback_master_exits_1() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "msdoctor",
            "preflight",
            "--plan",
            "--json",
            "--worker-num",
            "4",
            "--local-worker-num",
            "2",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            "29995",
            "--node-rank",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = json.loads(r.stdout)
    f = [f for f in out["findings"] if f["code"] == "master-addr"][0]
    assert r.returncode == 1 and f["status"] == "fail" and "loopback" in f["title"], f


def _plan_fix(tmp_path: Path, python: str) -> str:
    venv.create(tmp_path / "bare", with_pip=False)
    bare = tmp_path / "bare" / "bin"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "msdoctor",
            "preflight",
            "--plan",
            "--json",
            "--worker-num",
            "1",
            "--local-worker-num",
            "1",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            "29994",
            "--node-rank",
            "0",
            "--python",
            python or str(bare / "python"),
        ],
        capture_output=True,
        text=True,
        env={"PATH": f"{bare}:/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=60,
    )
    f = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "msdoctor-importable"]
    assert f and f[0]["status"] == "fail", r.stdout
    return f[0]["fix"]


def test_this_msdoctor_says_where_it_was_installed_from() -> None:
    source, what = msdoctor_source()  # the test venv is an editable install of this checkout
    assert source is not None and Path(source).resolve() == REPO and "checkout" in what


def test_fix_for_python_without_msdoctor_is_the_path_export_or_this_checkout(tmp_path: Path) -> None:
    fix = _plan_fix(tmp_path, sys.executable)  # the job's interpreter has msdoctor; `python` on PATH has not
    assert "pip install msdoctor " not in fix + " "
    assert f"export PATH={Path(sys.executable).parent}:$PATH" in fix and "verified here" in fix
    assert f"-m pip install {msdoctor_source()[0]} on every node" in fix and "unverified" in fix


def test_fix_when_the_job_interpreter_lacks_msdoctor_too(tmp_path: Path) -> None:
    fix = _plan_fix(tmp_path, "")
    assert "pip install msdoctor " not in fix + " " and "export PATH" not in fix
    assert f"-m pip install {msdoctor_source()[0]} on every node" in fix and "unverified" in fix
