"""CANN / Ascend driver facts and the MindSpore <-> CANN <-> driver rules, on fixture trees.

There is no Ascend hardware or CANN install here: every case is a directory tree whose files
reproduce, character for character, the real samples of public reports and install trees (docs/sources.md)
(driver/firmware version.info B1-B2, ascend_toolkit_install.info B4, version.cfg B5, component
version.info B6), laid out like /usr/local/Ascend (the CANN <= 8.3 ascend-toolkit layout and the
CANN >= 8.5 cann-<ver> layout), and selected by the variables CANN's set_env.sh exports or by
MSDOCTOR_SYSROOT for the default layout. MindSpore itself is the real 2.7.0 of the test environment.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

import pytest

from helpers import BASE_PYTHON, check_of, env_with, probe_json, run_json
from msdoctor.checks.version_matrix import MatrixInputs, evaluate_static
from msdoctor.checks.version_matrix.ascend import cann_seen_by_mindspore, evaluate_ascend
from msdoctor.checks.version_matrix.gpu import GpuFacts
from msdoctor.facts.cann import (
    CannFacts,
    parse_c_ranges,
    parse_kv,
    parse_version_cfg,
    read_cann,
)
from msdoctor.facts.target import TargetFacts
from msdoctor.matrix import load
from msdoctor.model import Status

# -- verbatim samples (public reports and install trees) ---------------------------------------------
DRIVER_25_0_RC1_1 = """Version=25.0.rc1.1
ascendhal_version=7.35.23
aicpu_version=1.0
tdt_version=1.0
log_version=1.0
prof_version=2.0
dvppkernels_version=1.1
tsfw_version=1.0
Innerversion=V100R001C21SPC002B220
compatible_version=[V100R001C17],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21]
compatible_version_fw=[7.0.0,7.7.99]
package_version=25.0.rc1.1
"""
DRIVER_24_1_RC1 = """Version=24.1.rc1
ascendhal_version=7.35.19
aicpu_version=1.0
tdt_version=1.0
log_version=1.0
prof_version=2.0
dvppkernels_version=1.1
tsfw_version=1.0
Innerversion=V100R001C15SPC006B220
compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]
compatible_version_fw=[7.0.0,7.2.99]
"""
FIRMWARE_7_7 = """Version=7.7.0.1.231
firmware_version=1.0
package_version=25.0.rc1.1
compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]
"""
INSTALL_INFO_8_2_RC1 = """package_name=Ascend-cann-toolkit
version=8.2.RC1
innerversion=V100R001C22SPC001B231
compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]
arch=aarch64
os=linux
path=/usr/local/Ascend/ascend-toolkit/8.2.RC1/aarch64-linux
"""
INSTALL_INFO_8_0_RC3 = """package_name=Ascend-cann-toolkit
version=8.0.RC3
innerversion=V100R001C19SPC001B155
compatible_version=[V100R001C13,V100R001C19],[V100R001C30]
arch=aarch64
os=linux
path=/usr/local/Ascend/ascend-toolkit/8.0.RC3/aarch64-linux
"""
INSTALL_INFO_8_5_0 = """package_name=Ascend-cann-toolkit
version=8.5.0
innerversion=V100R001C25SPC001B212
compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21],[V100R001C23]
arch=aarch64
os=linux
path=/usr/local/Ascend/cann-8.5.0/aarch64-linux
"""
TOOLKIT_VERSION_8_2_RC1 = """Version=8.2.0.0.201
version_dir=8.2.RC1
timestamp=20250724_194044950
required_package_amct_acl_version="8.2"
required_package_aoe_version="8.2"
required_package_compiler_version="8.2"
required_package_fwkplugin_version="8.2"
required_package_hccl_version="8.2"
required_package_nca_version="8.2"
required_package_ncs_version="8.2"
required_package_opp_version="8.2"
required_package_opp_kernel_version=">=7.6, <=8.2"
required_package_runtime_version="8.2"
"""
OPP_VERSION_8_5_0 = """Version=8.5.0.2.220
version_dir=8.5.0
timestamp=20251117_000024591
required_package_amct_acl_version="8.5"
"""
OPP_KERNEL_VERSION_8_2_RC1 = """Version=8.2.0.0.201
version_dir=8.2.RC1
timestamp=20250724_194044950
ops_version=8.2.0.0.201
adk_version=8.2.0.0.201
required_package_amct_acl_version=">=7.6, <=8.2"
required_package_aoe_version=">=7.6, <=8.2"
required_package_compiler_version=">=7.6, <=8.2"
required_package_fwkplugin_version=">=7.6, <=8.2"
required_package_hccl_version=">=7.6, <=8.2"
required_package_nca_version=">=7.6, <=8.2"
required_package_ncs_version=">=7.6, <=8.2"
required_package_opp_version=">=7.6, <=8.2"
required_package_runtime_version=">=7.6, <=8.2"
required_package_toolkit_version=">=7.6, <=8.2"
"""
VERSION_CFG_8_0_0 = """# version: 1.0
runtime_running_version=[7.6.0.1.220:8.0.0]
compiler_running_version=[7.6.0.1.220:8.0.0]
hccl_running_version=[7.6.0.1.220:8.0.0]
opp_running_version=[7.6.0.1.220:8.0.0]
toolkit_running_version=[7.6.0.1.220:8.0.0]
aoe_running_version=[7.6.0.1.220:8.0.0]
ncs_running_version=[7.6.0.1.220:8.0.0]
runtime_installed_version=[7.6.0.1.220:8.0.0]
"""
VERSION_CFG_8_1_RC1_HISTORY = """runtime_running_version=[7.7.T20.0.B210:8.1.RC1]
compiler_running_version=[7.7.T20.0.B210:8.1.RC1]
toolkit_installed_version=[7.7.T9.0.B057:8.1.T6][7.7.T20.0.B210:8.1.RC1]
opp_kernel_installed_version=[7.7.T9.0.B057:8.1.T6][7.7.T12.0.B078:8.1.RC1][7.7.T20.0.B210:8.1.RC1]
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def toolkit(
    ascend: Path,
    version: str,
    *,
    info: Optional[str],
    internal: str,
    flavour: str = "ascend-toolkit",
    cfg: Optional[str] = None,
    layout: str = "toolkit",
) -> Path:
    """One CANN version dir with its `latest` (<= 8.3) or `cann` (>= 8.5) link, as the installer leaves it.

    compiler/version.info has no public verbatim sample (UNVERIFIED): it is written in the
    shape of the other component files, `Version=` first, which is all MindSpore reads.
    """
    if layout == "toolkit":
        root = ascend / flavour / version
        (ascend / flavour).mkdir(parents=True, exist_ok=True)
        os.symlink(version, ascend / flavour / "latest")
    else:
        root = ascend / f"cann-{version}"
        root.mkdir(parents=True)
        os.symlink(f"cann-{version}", ascend / "cann")
    if info:
        write(root / "aarch64-linux" / "ascend_toolkit_install.info", info)
    write(root / "compiler" / "version.info", f"Version={internal}\nversion_dir={version}\n")
    write(root / "opp" / "version.info", f"Version={internal}\nversion_dir={version}\n")
    # the CANN kernels package (opp_kernel), which MindSpore 2.7.0 requires
    write(root / "opp_kernel" / "version.info", f"Version={internal}\nversion_dir={version}\n")
    if cfg:
        write(root / "version.cfg", cfg)
    return root


def set_env(root: Path) -> dict[str, str]:
    """The variables CANN's set_env.sh exports, pointing into the fixture tree."""
    return {
        "ASCEND_TOOLKIT_HOME": str(root),
        "ASCEND_HOME_PATH": str(root),
        "ASCEND_OPP_PATH": f"{root}/opp",
        "ASCEND_AICPU_PATH": str(root),
        "TOOLCHAIN_HOME": f"{root}/toolkit",
    }


def machine(tmp_path: Path, cann: str, *, driver: str = DRIVER_25_0_RC1_1) -> tuple[Path, Path]:
    """A sysroot with driver + firmware and one CANN toolkit: (sysroot, toolkit version dir)."""
    sysroot = tmp_path / "root"
    ascend = sysroot / "usr/local/Ascend"
    write(ascend / "driver" / "version.info", driver)
    write(ascend / "firmware" / "version.info", FIRMWARE_7_7)
    if cann == "8.2.RC1":
        root = toolkit(ascend, "8.2.RC1", info=INSTALL_INFO_8_2_RC1, internal="8.2.0.0.201")
        write(root / "toolkit" / "version.info", TOOLKIT_VERSION_8_2_RC1)
        write(root / "opp_kernel" / "version.info", OPP_KERNEL_VERSION_8_2_RC1)
    elif cann == "8.0.RC3":
        root = toolkit(ascend, "8.0.RC3", info=INSTALL_INFO_8_0_RC3, internal="7.5.0.1.129")
    else:
        root = toolkit(ascend, "8.5.0", info=INSTALL_INFO_8_5_0, internal="8.5.0.2.220", layout="cann")
        write(root / "opp" / "version.info", OPP_VERSION_8_5_0)
    return sysroot, root


# -- parsing the real formats ------------------------------------------------------------------
def test_parse_driver_and_firmware_samples(tmp_path: Path) -> None:
    sysroot, _ = machine(tmp_path, "8.2.RC1")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot)}, machine="aarch64")
    d = facts.driver
    assert (d.version, d.package_version, d.c_number) == ("25.0.rc1.1", "25.0.rc1.1", 21)
    assert d.compatible == ((17, 17), (18, 18), (19, 19), (20, 20), (21, 21))
    assert d.compatible_fw == (("7.0.0", "7.7.99"),)
    assert facts.firmware.version == "7.7.0.1.231"
    assert facts.firmware.compatible_drv[1] == ("24.0", "24.0.")
    old = parse_kv(DRIVER_24_1_RC1)  # no package_version line in this sample
    assert old["Version"] == "24.1.rc1" and "package_version" not in old


def test_parse_install_info_and_version_cfg() -> None:
    assert parse_c_ranges(parse_kv(INSTALL_INFO_8_0_RC3)["compatible_version"]) == ((13, 19), (30, 30))
    cfg = parse_version_cfg(VERSION_CFG_8_0_0)
    assert cfg["compiler_running_version"] == [("7.6.0.1.220", "8.0.0")]
    hist = parse_version_cfg(VERSION_CFG_8_1_RC1_HISTORY)
    assert hist["opp_kernel_installed_version"][-1] == ("7.7.T20.0.B210", "8.1.RC1")
    assert len(hist["opp_kernel_installed_version"]) == 3
    assert parse_kv(TOOLKIT_VERSION_8_2_RC1)["required_package_opp_kernel_version"] == ">=7.6, <=8.2"


# -- finding installs --------------------------------------------------------------------------
def test_set_env_variables_select_the_active_install(tmp_path: Path) -> None:
    sysroot, root = machine(tmp_path, "8.2.RC1")
    latest = root.parent / "latest"  # set_env.sh exports .../ascend-toolkit/latest
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(latest)}, machine="aarch64")
    assert len(facts.installs) == 1  # latest -> 8.2.RC1 and the default layout are one install
    a = facts.active
    assert (a.commercial, a.internal, a.internal_prefix, a.flavour) == ("8.2.RC1", "8.2.0.0.201", "8.2", "toolkit")
    assert a.files["commercial"].endswith("aarch64-linux/ascend_toolkit_install.info")
    assert "ASCEND_HOME_PATH" in a.found_via and "default layout ascend-toolkit/latest" in a.found_via
    assert a.compatible_with(21) is True and a.compatible_with(22) is False
    reads = facts.compiler_reads
    assert reads["ASCEND_HOME_PATH"].version == "8.2.0.0.201"
    assert reads["ASCEND_OPP_PATH"].path == f"{latest}/compiler/version.info"  # cut at "opp", as 2.7.0 does


def test_default_layout_without_set_env(tmp_path: Path) -> None:
    sysroot, _ = machine(tmp_path, "8.0.RC3")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot)}, machine="aarch64")
    assert facts.active is None and facts.default.commercial == "8.0.RC3"
    assert facts.default.internal_prefix == "7.5"


def test_cann_8_5_layout_is_found(tmp_path: Path) -> None:
    """CANN >= 8.5: /usr/local/Ascend/cann-8.5.0, the `cann` link, and ascend-toolkit/latest -> cann."""
    sysroot, root = machine(tmp_path, "8.5.0")
    ascend = sysroot / "usr/local/Ascend"
    (ascend / "ascend-toolkit").mkdir()
    os.symlink(ascend / "cann", ascend / "ascend-toolkit" / "latest")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot)}, machine="aarch64")
    assert len(facts.installs) == 1
    inst = facts.installs[0]
    assert inst.real_root == os.path.realpath(root)
    assert (inst.commercial, inst.internal_prefix, inst.flavour) == ("8.5.0", "8.5", "toolkit")
    assert set(inst.found_via) == {
        "default layout ascend-toolkit/latest",
        "default layout cann",
        "default layout cann-8.5.0",
    }
    env_facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root)}, machine="aarch64")
    assert env_facts.active.commercial == "8.5.0"


def test_version_cfg_only_install_and_nnae_plus_toolkit(tmp_path: Path) -> None:
    ascend = tmp_path / "root/usr/local/Ascend"
    toolkit(ascend, "8.0.0", info=None, internal="7.6.0.1.220", cfg=VERSION_CFG_8_0_0)
    nnae = toolkit(ascend, "8.0.0", info=None, internal="7.6.0.1.220", flavour="nnae")
    (nnae / "compiler/version.info").unlink()
    write(nnae / "version.cfg", VERSION_CFG_8_0_0)
    facts = read_cann({"MSDOCTOR_SYSROOT": str(tmp_path / "root")}, machine="x86_64")
    assert sorted(i.flavour for i in facts.installs) == ["nnae", "toolkit"]
    n = facts.by_flavour("nnae")[0]
    assert (n.commercial, n.internal) == ("8.0.0", "7.6.0.1.220") and "version.cfg" in n.files["internal"]


def test_env_pointing_at_nothing_is_reported(tmp_path: Path) -> None:
    facts = read_cann({"MSDOCTOR_SYSROOT": str(tmp_path), "ASCEND_HOME_PATH": str(tmp_path / "gone")})
    assert facts.env_problems == (f"ASCEND_HOME_PATH={tmp_path / 'gone'} does not exist",)
    assert facts.present and not facts.installs


# -- MindSpore <-> CANN <-> driver, with the real installed MindSpore 2.7.0 -----------------------
@pytest.fixture(scope="module")
def real_target() -> TargetFacts:
    return TargetFacts.from_probe(probe_json(BASE_PYTHON))


def _ascend(t: TargetFacts, facts: CannFacts) -> list:
    return evaluate_ascend(t, facts, load())


@pytest.mark.mindspore
def test_cann_8_0_rc3_under_mindspore_270_fails(tmp_path: Path, real_target: TargetFacts) -> None:
    sysroot, root = machine(tmp_path, "8.0.RC3")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root.parent / "latest")}, machine="aarch64")
    out = _ascend(real_target, facts)
    f = next(x for x in out if x.code == "mindspore-cann")
    assert f.status is Status.FAIL
    assert f.title == "CANN 8.0.RC3 (internal 7.5) does not match MindSpore 2.7.0, which accepts 7.7, 7.8, 8.2"
    assert "8.1.RC1" in f.detail and "8.2.RC1" in f.detail  # the CANN versions that would match
    assert f.evidence["source"] == "the installed mindspore/run_check/_check_version.py"
    assert str(f.location).endswith("compiler/version.info")


@pytest.mark.mindspore
def test_cann_8_2_rc1_under_mindspore_270_passes(tmp_path: Path, real_target: TargetFacts) -> None:
    sysroot, root = machine(tmp_path, "8.2.RC1")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root.parent / "latest")}, machine="aarch64")
    out = _ascend(real_target, facts)
    assert [f.status for f in out] == [Status.PASS, Status.PASS]
    assert out[0].title == "MindSpore 2.7.0 accepts CANN 8.2.RC1"
    assert "8.2.0.0.201" in out[0].proved and "starts with 8.2" in out[0].proved
    assert out[1].title == "driver 25.0.rc1.1 is listed by CANN 8.2.RC1"


@pytest.mark.mindspore
def test_mindspore_270_reads_the_opp_path_not_home(tmp_path: Path, real_target: TargetFacts) -> None:
    """2.7.0 derives compiler/version.info from ASCEND_OPP_PATH: that install decides."""
    sysroot, good = machine(tmp_path, "8.2.RC1")
    other = toolkit(tmp_path / "elsewhere", "8.0.RC3", info=INSTALL_INFO_8_0_RC3, internal="7.5.0.1.129")
    env = {"MSDOCTOR_SYSROOT": str(sysroot), **set_env(other), "ASCEND_OPP_PATH": f"{good}/opp"}
    facts = read_cann(env, machine="aarch64")
    seen = cann_seen_by_mindspore(facts, "2.7.0", load().mindspore("2.7.0"))
    assert seen["internal"] == "8.2.0.0.201" and seen["via"] == "ASCEND_OPP_PATH"
    assert cann_seen_by_mindspore(facts, "2.7.2", load().mindspore("2.7.2"))["internal"] == "7.5.0.1.129"


@pytest.mark.mindspore
def test_mindspore_270_without_the_kernels_package_fails(tmp_path: Path, real_target: TargetFacts) -> None:
    sysroot, root = machine(tmp_path, "8.2.RC1")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root)}, machine="aarch64")
    assert not [x for x in _ascend(real_target, facts) if x.code == "opp-kernel-missing"]
    shutil.rmtree(root / "opp_kernel")  # toolkit installed without the kernels package
    f = next(x for x in _ascend(real_target, facts) if x.code == "opp-kernel-missing")
    assert f.status is Status.FAIL and f"{root}/opp_kernel" in f.detail


def test_driver_not_listed_by_cann_and_firmware_out_of_range_warn(tmp_path: Path, real_target: TargetFacts) -> None:
    sysroot, root = machine(tmp_path, "8.0.RC3", driver=DRIVER_25_0_RC1_1)  # C21 not in [C13..C19],[C30]
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root)}, machine="aarch64")
    f = next(x for x in _ascend(real_target, facts) if x.code == "cann-driver")
    assert f.status is Status.WARN and "does not list driver 25.0.rc1.1 (C21)" in f.title
    assert "24.1.rc3" in f.fix
    write(sysroot / "usr/local/Ascend/driver/version.info", DRIVER_24_1_RC1)  # fw 7.7 outside [7.0.0,7.2.99]
    facts = read_cann({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root)}, machine="aarch64")
    fw = next(x for x in _ascend(real_target, facts) if x.code == "driver-firmware")
    assert fw.title == "firmware 7.7.0.1.231 is outside driver 24.1.rc1's compatible_version_fw [7.0.0,7.2.99]"


def test_nnae_and_toolkit_with_old_mindspore_fails(tmp_path: Path) -> None:
    from test_version_matrix import dist, target

    ascend = tmp_path / "root/usr/local/Ascend"
    toolkit(ascend, "8.0.RC2", info=None, internal="7.3.0.1.231")
    toolkit(ascend, "8.0.RC2", info=None, internal="7.3.0.1.231", flavour="nnae")
    facts = read_cann({"MSDOCTOR_SYSROOT": str(tmp_path / "root")}, machine="x86_64")
    out = _ascend(target(dist("mindspore", "2.3.1")), facts)
    assert next(f for f in out if f.code == "cann-nnae-and-toolkit").status is Status.FAIL
    assert any(f.status is Status.PASS and f.title == "MindSpore 2.3.1 accepts CANN 8.0.RC2" for f in out)  # 7.3


def test_te_wheel_from_another_cann_fails(tmp_path: Path) -> None:
    from test_version_matrix import MS270, dist, target

    sysroot, used = machine(tmp_path, "8.2.RC1")
    old = toolkit(tmp_path / "old", "8.0.RC3", info=INSTALL_INFO_8_0_RC3, internal="7.5.0.1.129")
    env = {"MSDOCTOR_SYSROOT": str(sysroot), **set_env(used), "ASCEND_TOOLKIT_HOME": str(old)}
    facts = read_cann(env, machine="aarch64")
    te = dist("te", "0.4.0", direct_url=f"file://{old}/lib64/te-0.4.0-py3-none-any.whl")
    f = next(x for x in _ascend(target(MS270, te), facts) if x.code == "cann-wheel")
    assert f.status is Status.FAIL and "installed from CANN 8.0.RC3" in f.title and "CANN 8.2.RC1" in f.title
    assert f.fix.startswith("/env/bin/python -m pip uninstall -y te hccl && /env/bin/python -m pip install")


def test_no_ascend_software_is_a_skip(tmp_path: Path) -> None:
    from test_version_matrix import MS270, target

    out = evaluate_static(
        MatrixInputs(target(MS270), load(), read_cann({"MSDOCTOR_SYSROOT": str(tmp_path)}), GpuFacts(nvidia=False))
    )
    assert any(f.status is Status.SKIP and f.title == "no Ascend software found" for f in out)


# -- through the real msdoctor command -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.mindspore
@pytest.mark.parametrize("cann,status", [("8.0.RC3", "fail"), ("8.2.RC1", "pass")])
def test_msdoctor_check_on_an_ascend_fixture(tmp_path: Path, cann: str, status: str) -> None:
    """The real `msdoctor check --quick` on the real MindSpore 2.7.0, with a fixture CANN selected by set_env.sh variables."""
    sysroot, root = machine(tmp_path, cann)
    env = env_with({"MSDOCTOR_SYSROOT": str(sysroot), **set_env(root.parent / "latest")})
    res, report = run_json("check", "--python", BASE_PYTHON, "--only", "version-matrix", "--quick", env=env)
    c = check_of(report, "version-matrix")
    assert c["status"] == status, c
    cann_finding = next(f for f in c["findings"] if "CANN" in f["title"] and f["status"] != "skip")
    assert cann in cann_finding["title"]
    assert res.returncode == (1 if status == "fail" else 0)
