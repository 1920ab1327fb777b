"""`npu-smi info` parsing against real outputs.

Every fixture under tests/data/npu_smi/ is a verbatim output of the real tool
(sources in tests/data/npu_smi/SOURCES.md). No
Ascend hardware is used: the fact is exercised through a fake `npu-smi` on PATH
that prints those outputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import fake_tool, make_ctx
from msdoctor.facts.ascend import (
    NPU_SMI,
    NpuSmiFailed,
    NpuSmiParseError,
    dcmi_error,
    parse_npu_smi_info,
)

DATA = Path(__file__).parent / "data" / "npu_smi"


def sample(name: str) -> str:
    return (DATA / name).read_text()


def test_910b3_eight_npus_with_processes() -> None:
    info = parse_npu_smi_info(sample("910b3_8npu_processes.txt"))
    assert (info.tool_version, info.driver_version) == ("25.2.0", "25.2.0")
    assert [c.npu_id for c in info.chips] == list(range(8))
    first = info.chips[0]
    assert (first.name, first.health, first.chip_id, first.phy_id) == ("910B3", "OK", 0, None)
    assert (first.power_w, first.temp_c, first.aicore_pct) == (94.6, 36, 0)
    assert (first.memory_used_mb, first.memory_total_mb) == (0, 0)
    assert (first.hbm_used_mb, first.hbm_total_mb) == (37705, 65536)  # "37705/ 65536": number touches the slash
    assert first.bus_id == "0000:C1:00.0"
    assert first.device_memory_total_mb == 65536
    assert info.chips[7].bus_id == "0000:42:00.0" and info.chips[7].hbm_used_mb == 39053
    # 8 rows on NPU 0, one on each of NPU 1..7
    assert len(info.processes) == 15
    assert [p.pid for p in info.processes if p.npu_id == 0][:2] == [3104272, 3104266]
    big = next(p for p in info.processes if p.pid == 3104266)
    assert (big.npu_id, big.chip_id, big.memory_mb, big.name) == (0, 0, 33895, "")
    assert len(info.busy_chips()) == 8 and info.has_process_table and info.idle_npus == []


def test_910b2c_idle_chip_table_only() -> None:
    info = parse_npu_smi_info(sample("910b2c_idle_2of16.txt"))
    assert info.driver_version == "24.1.rc2.2"
    assert [(c.npu_id, c.name, c.hbm_used_mb, c.hbm_total_mb, c.bus_id) for c in info.chips] == [
        (0, "910B2C", 3418, 65536, "0000:5A:00.0"),
        (1, "910B2C", 3392, 65536, "0000:19:00.0"),
    ]
    assert info.processes == [] and not info.has_process_table and info.busy_chips() == []


def test_a3_two_chips_per_npu_with_phy_id() -> None:
    info = parse_npu_smi_info(sample("a3_ascend910_2chips.txt"))
    assert info.driver_version == "25.3.rc1"
    a, b = info.chips
    assert (a.npu_id, a.chip_id, a.phy_id, a.name, a.power_w) == (0, 0, 0, "Ascend910", 165.4)
    # the second chip of an A3 NPU prints "-" for power, after a +-----+ separator
    assert (b.npu_id, b.chip_id, b.phy_id, b.power_w, b.temp_c) == (0, 1, 1, None, 36)
    assert (b.hbm_used_mb, b.hbm_total_mb, b.bus_id) == (2885, 65536, "0000:9F:00.0")
    assert info.npu_ids() == [0]


def test_910prob_ddr_and_hbm() -> None:
    info = parse_npu_smi_info(sample("910prob_ddr_hbm.txt"))
    (chip,) = info.chips
    assert (info.tool_version, chip.name, chip.power_w, chip.temp_c) == ("22.0.4", "910ProB", 82.0, 45)
    assert (chip.memory_used_mb, chip.memory_total_mb) == (945, 15137)
    assert (chip.hbm_used_mb, chip.hbm_total_mb) == (0, 32768)
    assert chip.device_memory_total_mb == 32768  # a job uses HBM, not the DDR column


def test_310p_without_hbm_column() -> None:
    info = parse_npu_smi_info(sample("310p3_2chips_no_hbm.txt"))
    a, b = info.chips
    assert (a.npu_id, a.chip_id, a.phy_id, a.name, a.power_w) == (2, 0, 0, "310P3", None)  # power "NA"
    assert (a.memory_used_mb, a.memory_total_mb, a.hbm_total_mb) == (1529, 44280, None)
    assert (b.chip_id, b.phy_id, b.memory_total_mb) == (1, 1, 43693)
    assert a.device_memory_total_mb == 44280  # no HBM: the DDR is the device memory
    assert a.device_memory_used_mb == 1529


def test_idle_rows_and_one_busy_npu() -> None:
    info = parse_npu_smi_info(sample("910b3_mixed_idle_busy.txt"))
    assert info.idle_npus == [0, 1, 3, 4, 5, 6, 7]
    (proc,) = info.processes
    assert (proc.npu_id, proc.chip_id, proc.pid, proc.memory_mb) == (2, 0, 1333928, 37709)
    assert [c.label for c in info.busy_chips()] == ["NPU 2 chip 0 (910B3)"]
    assert info.chips[2].hbm_used_mb == 41052


def test_alarm_health_is_unhealthy() -> None:
    # the real table with one chip's Health column changed to a state npu-smi prints for faults
    text = sample("910b2c_idle_2of16.txt").replace("| OK            | 95.0", "| Alarm         | 95.0")
    info = parse_npu_smi_info(text)
    assert [c.npu_id for c in info.unhealthy_chips()] == [1]
    assert info.chips[1].health == "Alarm" and info.chips[0].healthy


@pytest.mark.parametrize("name", ["dcmi_8005.txt", "dcmi_8020.txt", "common_t_i0.txt"])
def test_not_a_table_raises(name: str) -> None:
    with pytest.raises(NpuSmiParseError):
        parse_npu_smi_info(sample(name))


def test_dcmi_codes() -> None:
    assert dcmi_error(sample("dcmi_8005.txt")) == -8005
    assert dcmi_error(sample("dcmi_8020.txt")) == -8020
    assert dcmi_error(sample("910b3_8npu_processes.txt")) is None


# -- the fact, through a fake npu-smi on PATH -------------------------------------
def _ctx(bin_dir: Path, tmp_path: Path, **extra):
    # the fake tool is a /bin/sh script that needs cat and sleep from the system PATH
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")])
    return make_ctx(environ={"PATH": path, "MSDOCTOR_SYSROOT": str(tmp_path / "root")}, extra=extra)


def test_fact_parses_fake_tool(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "npu-smi", sample("a3_ascend910_2chips.txt"))
    info = _ctx(bin_dir, tmp_path).get(NPU_SMI)
    assert info is not None and len(info.chips) == 2 and info.chips[1].phy_id == 1


def test_fact_none_without_npu_smi(tmp_path: Path) -> None:
    ctx = make_ctx(environ={"PATH": str(tmp_path), "MSDOCTOR_SYSROOT": str(tmp_path / "root")})
    assert ctx.get(NPU_SMI) is None


def test_fact_dcmi_failure_is_clear(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "npu-smi", sample("dcmi_8005.txt"), exit_code=255)
    with pytest.raises(NpuSmiFailed) as info:
        _ctx(bin_dir, tmp_path).get(NPU_SMI)
    assert info.value.kind == "dcmi" and info.value.code == -8005
    assert "-8005" in info.value.message and "--device=/dev/davinci" in info.value.fix


def test_fact_hang_is_stopped(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "npu-smi", sample("910b2c_idle_2of16.txt"), sleep=30)
    with pytest.raises(NpuSmiFailed) as info:
        _ctx(bin_dir, tmp_path, npu_smi_timeout_s=0.5).get(NPU_SMI)
    assert info.value.kind == "timeout" and "did not answer within" in info.value.message
