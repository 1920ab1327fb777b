"""device-target live probe with the REAL MindSpore 2.7.0 of the test environment, on this CPU.

Nothing is faked about MindSpore: it is imported in a subprocess of the target
interpreter, asked for the device, and runs a real matmul. The Ascend case uses
the real "Unsupported device target Ascend" error MindSpore raises on a machine
without CANN, and MindSpore's own CANN version warning, provoked by a CANN
compiler/version.info in a temp directory (the format of a CANN toolkit's compiler/version.info).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import check_of, env_with, make_venv, run_json
from msdoctor.checks.device_target import DeviceTargetCheck
from msdoctor.context import Context, Options
from msdoctor.plugins import LoadedCheck
from msdoctor.runner import run_checks

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]


def test_cpu_target_passes_with_numeric_proof(tmp_path: Path) -> None:
    res, report = run_json("check", "--only", "device-target", "--device-target", "CPU", cwd=tmp_path)
    check = check_of(report, "device-target")
    assert res.returncode == 0 and check["status"] == "pass", check
    (ran,) = [f for f in check["findings"] if "ran a 64x64 matmul" in f["title"]]
    assert ran["title"] == "MindSpore 2.7.0 ran a 64x64 matmul on CPU:0"
    assert "max abs error" in ran["proved"] and "vs NumPy float64" in ran["proved"]
    comp = ran["evidence"]["compute"]
    assert comp["shape"] == [64, 64] and comp["finite"] is True
    assert comp["max_rel_err"] < 1e-5  # float32 on CPU against a float64 reference
    assert ran["evidence"]["device_target"] == "CPU" and ran["evidence"]["device_count"] == 1
    assert ran["evidence"]["timings"]["import_s"] > 0
    assert not list(tmp_path.iterdir())  # the probe ran in a scratch directory, not the project


def test_ascend_target_fails_with_the_real_error_explained(tmp_path: Path) -> None:
    # a CANN whose compiler/version.info says internal version 7.5 (CANN 8.0.RC3): MindSpore 2.7.0
    # reads it through ASCEND_OPP_PATH (cut before "opp") and logs its own mismatch warning
    cann = tmp_path / "cann"
    (cann / "compiler").mkdir(parents=True)
    (cann / "opp").mkdir()
    (cann / "opp_kernel").mkdir()
    (cann / "compiler" / "version.info").write_text("Version=7.5.0.1.220\n")
    env = env_with({"ASCEND_HOME_PATH": str(cann), "ASCEND_OPP_PATH": str(cann / "opp")})
    res, report = run_json("check", "--only", "device-target", "--device-target", "Ascend", env=env, cwd=tmp_path)
    check = check_of(report, "device-target")
    assert res.returncode == 1 and check["status"] == "fail"
    by_code = {f["code"]: f for f in check["findings"]}
    unusable = by_code["device-unusable"]
    assert "Unsupported device target Ascend" in unusable["title"]
    assert "libge_runner.so: cannot open shared object file" in unusable["detail"]
    assert "set_env.sh was not sourced, or CANN is not installed" in unusable["detail"]
    assert ["libmindspore_ascend.so.2", "libge_runner.so"] in unusable["evidence"]["missing_libraries"]
    assert any("_check_version.py" in line for line in unusable["evidence"]["log_warnings"])
    mismatch = by_code["cann-version-mismatch"]
    assert mismatch["status"] == "fail"
    assert mismatch["title"].startswith("MindSpore 2.7.0 does not accept the installed CANN (internal version 7.5;")
    assert "_check_version.py" in mismatch["evidence"]["log"]


def test_probe_that_exceeds_its_timeout_is_an_error_not_a_hang(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "slow", layered=True)
    (venv.site_packages / "sitecustomize.py").write_text("import time\ntime.sleep(6)\n")
    ctx = Context(
        Options(python=venv.python, project_dir=tmp_path, device_target="CPU", live_timeout_s=2.0), environ=env_with()
    )
    (result,) = run_checks([LoadedCheck(DeviceTargetCheck(), "msdoctor", "device-target")], ctx)
    by_code = {f.code: f for f in result.findings}
    timeout = by_code["live-timeout"]
    assert timeout.status.value == "error"
    assert timeout.title == ("the live device probe did not finish within 2 s (it was in phase 'interpreter start-up')")
    assert "sitecustomize.py" in timeout.detail
    assert timeout.evidence["phase"] is None  # killed before the probe's first phase marker
