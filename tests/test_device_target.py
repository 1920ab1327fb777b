"""device-target static evidence: Ascend and NVIDIA through fixture trees and fake tools.

No NPU or GPU exists here. Ascend and NVIDIA facts come from:
- fixture trees under MSDOCTOR_SYSROOT (device nodes /dev/davinci* as plain files, the
  driver and CANN toolkit directories, CUDA libraries named as their packages install them);
- fake `npu-smi` / `nvidia-smi` / `ldconfig` executables first on PATH that print real
  outputs (tests/data/npu_smi, tests/data/nvidia_smi; sources in their SOURCES.md);
- the environment exactly as CANN's set_env.sh (CANN 8.0.0, as printed in https://github.com/vllm-project/vllm-ascend/issues/629) exports it.
The target interpreter and its MindSpore (with its real lib/plugin directories) are real;
these runs use --quick, so MindSpore is not imported (the live probe is tested in
test_device_target_live.py).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Optional

import pytest

from helpers import check_of, env_with, fake_tool, run_json
from msdoctor.checks.device_target.multi import check_rank_table, multi_device_findings
from msdoctor.docfile import load_json_text
from msdoctor.facts.ascend import CONTROL_NODES, ascend_env
from msdoctor.model import Status

NPU = Path(__file__).parent / "data" / "npu_smi"
NV = Path(__file__).parent / "data" / "nvidia_smi"
TK = "/usr/local/Ascend/ascend-toolkit/latest"
ARCH = "x86_64"


def set_env_exports(extra_pythonpath: str = "") -> dict[str, str]:
    """The variables CANN 8.0.0's set_env.sh exports, starting from empty variables."""
    drv = "/usr/local/Ascend/driver"
    ld = [
        f"{TK}/tools/aml/lib64",
        f"{TK}/tools/aml/lib64/plugin",
        f"{TK}/lib64",
        f"{TK}/lib64/plugin/opskernel",
        f"{TK}/lib64/plugin/nnengine",
        f"{TK}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/{ARCH}",
        f"{drv}/lib64",
        f"{drv}/lib64/common",
        f"{drv}/lib64/driver",
    ]
    pp = [f"{TK}/python/site-packages", f"{TK}/opp/built-in/op_impl/ai_core/tbe"]
    return {
        "ASCEND_TOOLKIT_HOME": TK,
        "ASCEND_HOME_PATH": TK,
        "ASCEND_OPP_PATH": f"{TK}/opp",
        "ASCEND_AICPU_PATH": TK,
        "TOOLCHAIN_HOME": f"{TK}/toolkit",
        "LD_LIBRARY_PATH": ":".join(ld),
        "PYTHONPATH": ":".join(([extra_pythonpath] if extra_pythonpath else []) + pp),
        "PATH_PREFIX": f"{TK}/bin:{TK}/compiler/ccec_compiler/bin:{TK}/tools/ccec_compiler/bin",
    }


def ascend_tree(root: Path, *, chips: int = 2, control: bool = True, driver: bool = True, toolkit: bool = True) -> Path:
    """A host tree: device nodes as plain files, the driver and toolkit directories."""
    dev = root / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    for i in range(chips):
        (dev / f"davinci{i}").write_text("")
    if control:
        for name in CONTROL_NODES:
            (dev / name).write_text("")
    if driver:
        (root / "usr/local/Ascend/driver/lib64").mkdir(parents=True)
    if toolkit:
        latest = root / TK.lstrip("/")
        (latest / "lib64").mkdir(parents=True)
        (latest / "lib64/libge_runner.so").write_text("")
        (latest / "opp/built-in/op_impl/ai_core/tbe").mkdir(parents=True)
        (root / "usr/local/Ascend/ascend-toolkit/set_env.sh").write_text("# CANN set_env.sh (fixture)\n")
    return root


def cann_python(tmp: Path) -> str:
    """Importable stand-ins for CANN's te and hccl wheels (the probe only locates them, never imports)."""
    site = tmp / "cann_py"
    for name in ("te", "hccl"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
    return str(site)


def run_device(
    tmp: Path,
    *,
    target: Optional[str],
    env: dict[str, str],
    tools: dict[str, str] = (),
    extra_args: tuple[str, ...] = (),
) -> dict:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in dict(tools).items():
        fake_tool(bin_dir, name, text)
    env = dict(env)
    prefix = env.pop("PATH_PREFIX", "")
    full = env_with(env, path_first=[bin_dir])
    if prefix:
        full["PATH"] = f"{bin_dir}:{prefix}:{full['PATH'].split(':', 1)[1]}"
    args = ["check", "--only", "device-target", "--quick", *extra_args]
    if target:
        args += ["--device-target", target]
    res, report = run_json(*args, env=full, cwd=tmp)
    return {"rc": res.returncode, "check": check_of(report, "device-target"), "report": report}


def codes(check: dict, status: Optional[str] = None) -> list[str]:
    return [f["code"] for f in check["findings"] if status is None or f["status"] == status]


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {"MSDOCTOR_SYSROOT": str(tmp / "root")}
    env.update(extra)
    return env


# -- Ascend --------------------------------------------------------------------------
@pytest.mark.slow
def test_sourced_healthy_ascend_passes(tmp_path: Path) -> None:
    ascend_tree(tmp_path / "root")
    env = base_env(tmp_path, **set_env_exports(cann_python(tmp_path)))
    out = run_device(tmp_path, target="Ascend", env=env, tools={"npu-smi": (NPU / "910b2c_idle_2of16.txt").read_text()})
    check = out["check"]
    assert check["status"] == "pass", json.dumps(check, indent=1)
    titles = " | ".join(f["title"] for f in check["findings"])
    assert "Ascend static evidence: 2 chip(s) 910B2C, driver 24.1.rc2.2" in titles
    assert "Ascend usable" in titles
    (summary,) = [f for f in check["findings"] if f["title"].startswith("device targets:")]
    assert summary["proved"].endswith("(static evidence only: the live probe is skipped with --quick)")


@pytest.mark.slow
def test_not_sourced_fails_with_the_source_command(tmp_path: Path) -> None:
    ascend_tree(tmp_path / "root")
    out = run_device(
        tmp_path,
        target="Ascend",
        env=base_env(tmp_path),
        tools={"npu-smi": (NPU / "910b2c_idle_2of16.txt").read_text()},
    )
    assert out["rc"] == 1
    (f,) = [f for f in out["check"]["findings"] if f["code"] == "set-env-not-sourced"]
    assert f["status"] == "fail"
    assert f["fix"].startswith("source /usr/local/Ascend/ascend-toolkit/set_env.sh")
    assert any("ASCEND_HOME_PATH is not set" in m for m in f["evidence"]["missing"])
    assert "libge_runner.so" in f["detail"]


@pytest.mark.slow
def test_alarm_chip_and_busy_chip_warn(tmp_path: Path) -> None:
    ascend_tree(tmp_path / "root", chips=8)
    table = (NPU / "910b3_mixed_idle_busy.txt").read_text()
    # NPU 5 in Alarm state: the real table with one Health cell changed
    table = table.replace("| 5     910B3               | OK      ", "| 5     910B3               | Alarm   ")
    env = base_env(tmp_path, **set_env_exports(cann_python(tmp_path)))
    out = run_device(tmp_path, target="Ascend", env=env, tools={"npu-smi": table})
    check = out["check"]
    assert check["status"] == "warn" and out["rc"] == 0
    warns = {f["code"]: f for f in check["findings"] if f["status"] == "warn"}
    assert warns["npu-unhealthy"]["title"] == "NPU 5 chip 0 (910B3) reports health Alarm"
    assert "NPU 2 chip 0 (910B3) is busy: 1 process(es) hold 37709 MB (pids 1333928)" == warns["npu-busy"]["title"]
    assert "kill 1333928" in warns["npu-busy"]["fix"]


@pytest.mark.slow
def test_container_without_device_nodes(tmp_path: Path) -> None:
    # a container started without --device: CANN and the driver mounted, /dev empty, npu-smi fails (https://github.com/vllm-project/vllm-ascend/issues/2698)
    ascend_tree(tmp_path / "root", chips=0, control=False)
    env = base_env(tmp_path, **set_env_exports(cann_python(tmp_path)))
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "npu-smi", (NPU / "dcmi_8005.txt").read_text(), exit_code=255)
    out = run_device(tmp_path, target="Ascend", env=env)
    by_code = {f["code"]: f for f in out["check"]["findings"]}
    assert by_code["ascend-no-device-nodes"]["status"] == "fail"
    assert "--device=/dev/davinci0" in by_code["ascend-no-device-nodes"]["fix"]
    assert by_code["npu-smi-dcmi"]["status"] == "warn" and "-8005" in by_code["npu-smi-dcmi"]["title"]
    assert out["rc"] == 1


@pytest.mark.slow
def test_no_target_requested_with_unusable_npu_warns(tmp_path: Path) -> None:
    ascend_tree(tmp_path / "root")
    out = run_device(
        tmp_path, target=None, env=base_env(tmp_path), tools={"npu-smi": (NPU / "a3_ascend910_2chips.txt").read_text()}
    )
    check = out["check"]
    assert check["status"] == "warn"
    (f,) = [f for f in check["findings"] if f["code"] == "ascend-present-unusable"]
    assert "set_env.sh was not sourced" in f["title"] and f["fix"].startswith("source ")


# -- NVIDIA --------------------------------------------------------------------------
def fake_nvidia_smi(bin_dir: Path) -> None:
    """nvidia-smi answering the query with CSV and the plain call with the table (real samples)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat "{NV / "t4_query.csv"}";; *) cat "{NV / "t4_colab.txt"}";; esac\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def cuda_tree(root: Path, cudart: str = "11.6.55", cudnn: str = "8.5.0") -> str:
    lib = root / "usr/local/cuda-11.6/lib64"
    lib.mkdir(parents=True)
    (lib / f"libcudart.so.{cudart}").write_text("")
    os.symlink(f"libcudart.so.{cudart}", lib / "libcudart.so.11.0")
    (lib / f"libcudnn.so.{cudnn}").write_text("")
    os.symlink(f"libcudnn.so.{cudnn}", lib / "libcudnn.so.8")
    return "/usr/local/cuda-11.6/lib64"


@pytest.mark.slow
def test_gpu_absent_fails(tmp_path: Path) -> None:
    (tmp_path / "root/dev").mkdir(parents=True)
    out = run_device(tmp_path, target="GPU", env=base_env(tmp_path), tools={"ldconfig": ""})
    by_code = {f["code"]: f for f in out["check"]["findings"]}
    assert by_code["gpu-no-driver"]["status"] == "fail" and out["rc"] == 1


@pytest.mark.slow
def test_gpu_present_with_matching_cuda_passes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    (root / "dev/nvidia0").write_text("")
    cuda_tree(root)
    fake_nvidia_smi(tmp_path / "bin")
    out = run_device(
        tmp_path, target="GPU", env=base_env(tmp_path), tools={"ldconfig": (NV / "ldconfig_cuda116.txt").read_text()}
    )
    check = out["check"]
    assert check["status"] == "pass", json.dumps(check, indent=1)
    (static,) = [f for f in check["findings"] if f["title"].startswith("GPU static evidence")]
    assert static["title"] == "GPU static evidence: 1 x Tesla T4, driver 535.104.05 (CUDA <= 12.2)"
    assert "CUDA runtime 11.6.55 and cuDNN 8.5.0" in static["proved"]


@pytest.mark.slow
def test_gpu_driver_version_is_the_loaded_module_in_the_check_and_the_facts(tmp_path: Path) -> None:
    """/proc/driver/nvidia/version names another driver than nvidia-smi's rows (a driver upgraded without a
    reboot): device-target's line, version-matrix and the report's facts all name the loaded module's, from the
    one source (msdoctor.facts.nvidia.driver_version). The /proc line's format:
    http://http.download.nvidia.com/XFree86/Linux-x86_64/460.80/README/procinterface.html"""
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    (root / "dev/nvidia0").write_text("")
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    )
    cuda_tree(root)
    fake_nvidia_smi(tmp_path / "bin")
    out = run_device(
        tmp_path, target="GPU", env=base_env(tmp_path), tools={"ldconfig": (NV / "ldconfig_cuda116.txt").read_text()}
    )
    (static,) = [f for f in out["check"]["findings"] if f["title"].startswith("GPU static evidence")]
    assert static["title"] == "GPU static evidence: 1 x Tesla T4, driver 550.54.15 (CUDA <= 12.2)"
    assert out["report"]["facts"]["nvidia"]["driver"] == "550.54.15"


@pytest.mark.slow
def test_gpu_with_cuda12_runtime_fails(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    lib = root / "opt/cuda12/lib64"
    lib.mkdir(parents=True)
    (lib / "libcudart.so.12.2.140").write_text("")
    fake_nvidia_smi(tmp_path / "bin")
    out = run_device(
        tmp_path, target="GPU", env=base_env(tmp_path, LD_LIBRARY_PATH="/opt/cuda12/lib64"), tools={"ldconfig": ""}
    )
    (f,) = [f for f in out["check"]["findings"] if f["code"] == "cudart-mismatch"]
    assert "12.2.140" in f["title"] and "11.1 / 11.6" in f["title"]


# -- pure pieces ---------------------------------------------------------------------
def test_ascend_env_partial_reset_lists_gaps(tmp_path: Path) -> None:
    ascend_tree(tmp_path)
    env = set_env_exports()
    env["PATH"] = env.pop("PATH_PREFIX") + ":/usr/bin:/bin"
    env["LD_LIBRARY_PATH"] = "/usr/local/Ascend/driver/lib64"  # something overwrote it after sourcing
    got = ascend_env(env, {"MSDOCTOR_SYSROOT": str(tmp_path)})
    assert got.sourced and got.ge_runner is None
    assert [g.problem for g in got.gaps] == [f"LD_LIBRARY_PATH lacks the toolkit's {TK}/lib64"]
    assert got.set_env_scripts == ["/usr/local/Ascend/ascend-toolkit/set_env.sh"]


RANK_TABLE_2P = {  # the 2-card example of MindSpore's rank table tutorial (r2.7.2), IPs filled in
    "version": "1.0",
    "server_count": "1",
    "server_list": [
        {
            "server_id": "10.0.0.1",
            "device": [
                {"device_id": "0", "device_ip": "192.1.0.6", "rank_id": "0"},
                {"device_id": "1", "device_ip": "192.2.0.6", "rank_id": "1"},
            ],
            "host_nic_ip": "reserve",
        }
    ],
    "status": "completed",
}


def test_rank_table_valid_and_invalid(tmp_path: Path) -> None:
    path = tmp_path / "rank_table_2pcs.json"
    text = json.dumps(RANK_TABLE_2P, indent=4)
    assert check_rank_table(load_json_text(text, path), rank_size=2, visible=8) == []
    broken = json.loads(text)
    broken["server_list"][0]["device"][1]["rank_id"] = "0"
    broken["server_list"][0]["device"][1]["device_id"] = "9"
    problems = check_rank_table(load_json_text(json.dumps(broken, indent=4), path), rank_size=4, visible=8)
    assert any("device_id 9" in p for p in problems)
    assert any("rank_ids must be 0..1" in p for p in problems)
    assert any("RANK_SIZE=4" in p for p in problems)
    assert all(str(path) in p for p in problems)


def test_multi_device_variables(tmp_path: Path) -> None:
    bad_json = tmp_path / "hccl.json"
    bad_json.write_text('{\n  "version": "1.0",\n  "server_list": [\n}\n')
    findings, present = multi_device_findings(
        {"DEVICE_ID": "8", "RANK_ID": "3", "RANK_SIZE": "2", "RANK_TABLE_FILE": str(bad_json), "MS_WORKER_NUM": "x"},
        visible=8,
    )
    by_code = {f.code: f for f in findings}
    assert by_code["device-id-range"].title == "DEVICE_ID=8 but only 8 device(s) are visible (ids 0..7)"
    assert by_code["rank-id-range"].status is Status.FAIL
    assert by_code["ms-worker-num-invalid"].status is Status.FAIL
    malformed = by_code["rank-table-malformed"]
    assert f"{bad_json}:4:" in malformed.title and malformed.location.path == str(bad_json)
    assert set(present) == {"DEVICE_ID", "RANK_ID", "RANK_SIZE", "RANK_TABLE_FILE", "MS_WORKER_NUM"}
    ok, _ = multi_device_findings({"DEVICE_ID": "3", "RANK_ID": "1", "RANK_SIZE": "2"}, visible=8)
    assert ok == []


def test_live_probe_script_parses_as_python37() -> None:
    import ast

    from msdoctor.probe import script_source

    ast.parse(script_source("live.py"), feature_version=(3, 7))


@pytest.mark.slow
def test_config_requests_ascend_more_devices_than_present(tmp_path: Path) -> None:
    """A MindFormers YAML asks for Ascend with dp=8 on a 2-chip host; DEVICE_ID points past the chips."""
    ascend_tree(tmp_path / "root")
    cfg = tmp_path / "finetune.yaml"
    cfg.write_text(
        'run_mode: train\ncontext:\n  mode: 0\n  device_target: "Ascend"\n'
        "parallel_config:\n  data_parallel: 8\n  model_parallel: 1\n  pipeline_stage: 1\n"
    )
    env = base_env(tmp_path, DEVICE_ID="5", **set_env_exports(cann_python(tmp_path)))
    out = run_device(
        tmp_path,
        target=None,
        env=env,
        extra_args=("--config", str(cfg)),
        tools={"npu-smi": (NPU / "910b2c_idle_2of16.txt").read_text()},
    )
    by_code = {f["code"]: f for f in out["check"]["findings"]}
    assert by_code["npu-too-few"]["title"] == "the config asks for 8 devices but npu-smi lists 2 chip(s)"
    assert by_code["device-id-range"]["title"] == "DEVICE_ID=5 but only 2 device(s) are visible (ids 0..1)"
    (summary,) = [f for f in out["check"]["findings"] if f["title"].startswith("device targets:")]
    assert f"requested Ascend (from {cfg}:4)" in summary["title"]
