"""`msdoctor diff` on two real reports whose nodes differ in CANN: the versions the checks read are in the facts.

The two "nodes" are fixture sysroots (no Ascend here): the real CANN file formats
of a CANN install (docs/sources.md), selected by the variables set_env.sh exports, under the
test environment's real MindSpore 2.7.0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, env_with, run_msdoctor
from test_cann_facts import machine, set_env


def node_report(tmp_path: Path, name: str, cann: str) -> tuple[Path, dict]:
    sysroot, root = machine(tmp_path / name, cann)
    env = env_with({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root.parent / "latest")})
    out = tmp_path / f"{name}.json"
    res = run_msdoctor(
        "check",
        "--python",
        BASE_PYTHON,
        "--only",
        "version-matrix",
        "--quick",
        "--format",
        "json",
        "--output",
        str(out),
        env=env,
        cwd=tmp_path,
    )
    assert out.exists(), res.stdout + res.stderr
    return out, json.loads(out.read_text())


@pytest.mark.slow
def test_cann_versions_are_report_facts_and_diff_names_them(tmp_path: Path) -> None:
    a_path, a = node_report(tmp_path, "node1", "8.2.RC1")
    b_path, b = node_report(tmp_path, "node2", "8.0.RC3")
    assert a["facts"]["ascend"]["cann"] == "8.2.RC1"
    assert a["facts"]["ascend"]["cann_internal"] == "8.2.0.0.201"
    assert b["facts"]["ascend"]["cann"] == "8.0.RC3"
    assert a["facts"]["ascend"]["driver"] == b["facts"]["ascend"]["driver"] == "25.0.rc1.1"
    res = run_msdoctor("diff", str(a_path), str(b_path), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "8.2.RC1" in res.stdout and "8.0.RC3" in res.stdout
    # the same node twice differs in nothing that matters
    res = run_msdoctor("diff", str(a_path), str(a_path), cwd=tmp_path)
    assert res.returncode == 0, res.stdout
