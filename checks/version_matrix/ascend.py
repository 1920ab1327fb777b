"""version-matrix rule 4: MindSpore <-> CANN <-> Ascend driver/firmware, two CANN installs, te/hccl wheels.

Pure functions of TargetFacts, CannFacts (msdoctor.facts.cann) and the Matrix. Which CANN MindSpore
sees is derived the way MindSpore derives it (mindspore/run_check/_check_version.py): the compiler/version.info
under ASCEND_OPP_PATH's prefix (2.7.0-2.7.1) or ASCEND_HOME_PATH (>= 2.7.2); without set_env.sh
sourced, the install the default set_env.sh would select.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Optional, Sequence

from msdoctor.checks.version_matrix.common import mindspore_dir, read_text
from msdoctor.facts.cann import CannFacts, CannInstall, in_range
from msdoctor.matrix import Matrix, MindSporeRelease, cann_prefix
from msdoctor.model import Finding, Location

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts

INSTALL_URL = "https://www.mindspore.cn/install"


def installed_accepted_list(msdir: Optional[str]) -> Optional[list[str]]:
    """AscendEnvChecker's accepted CANN prefixes, read from the installed _check_version.py (not imported)."""
    text = read_text(os.path.join(msdir, "run_check", "_check_version.py")) if msdir else None
    if not text or "class AscendEnvChecker" not in text:
        return None
    m = re.search(r"self\.version\s*=\s*\[([^\]]*)\]", text.split("class AscendEnvChecker", 1)[1])
    return re.findall(r"[\"']([\d.]+)[\"']", m.group(1)) if m else None


def custom_ops_version(msdir: Optional[str]) -> Optional[str]:
    """custom_opp_compiler_version of MindSpore's bundled Ascend C ops (mindspore/lib/plugin/ascend/custom_ascendc_910b/version.info)."""
    text = (
        read_text(os.path.join(msdir, "lib", "plugin", "ascend", "custom_ascendc_910b", "version.info"))
        if msdir
        else None
    )
    m = re.search(r"custom_opp_compiler_version=(\S+)", text or "")
    return m.group(1) if m else None


def _owner(cann: CannFacts, path: Optional[str]) -> Optional[CannInstall]:
    real = os.path.realpath(path) if path else ""
    return next((i for i in cann.installs if real.startswith(i.real_root.rstrip("/") + "/")), None)


def cann_seen_by_mindspore(cann: CannFacts, ms_version: str, row: Optional[MindSporeRelease]) -> dict[str, Any]:
    """The CANN version MindSpore would compare, where it reads it from, and whether set_env.sh is in effect."""
    from packaging.version import Version

    rule = (
        row.cann_version_file
        if row and row.cann_version_file
        else ("ASCEND_HOME_PATH" if Version(ms_version) >= Version("2.7.2") else "ASCEND_OPP_PATH")
    )
    read = cann.compiler_reads.get(rule)
    if read is not None and read.version:
        return {"internal": read.version, "file": read.path, "via": rule, "install": _owner(cann, read.path)}
    install = cann.active or cann.default
    if install is None:
        return {"internal": None, "file": read.path if read else None, "via": rule, "install": None}
    via = "set_env.sh variables" if cann.active else "default layout (set_env.sh not sourced)"
    return {"internal": install.internal, "file": install.files.get("internal"), "via": via, "install": install}


def evaluate_ascend(t: "TargetFacts", cann: CannFacts, m: Matrix) -> list[Finding]:
    ms = t.version_of("mindspore")
    if not cann.present:
        return [
            Finding.skipped(
                "no Ascend software found",
                reason=(
                    f"no CANN under ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME / ASCEND_OPP_PATH or {cann.ascend_root}, "
                    "no driver/version.info: the MindSpore-CANN-driver relation does not apply"
                ),
            )
        ]
    out: list[Finding] = []
    if ms:
        out += _opp_kernel(cann, ms)
        out += _mindspore_vs_cann(t, cann, m, ms)
        out += _two_installs(t, cann, ms)
        out += _cann_wheels(t, cann, cann_seen_by_mindspore(cann, ms, m.mindspore(ms))["install"])
    out += _driver(cann, m)
    return out


def _mindspore_vs_cann(t: "TargetFacts", cann: CannFacts, m: Matrix, ms: str) -> list[Finding]:
    row = m.mindspore(ms)
    seen = cann_seen_by_mindspore(cann, ms, row)
    inst: Optional[CannInstall] = seen["install"]
    prefix = cann_prefix(seen["internal"])
    release = m.cann(inst.commercial) if inst is not None else None
    if prefix is None and release is not None:
        prefix = release.internal_prefix  # only the commercial name was readable
    name = (inst.commercial if inst and inst.commercial else None) or seen["internal"] or "unknown"
    if prefix is None:
        return [_cann_unknown(cann, ms, seen)]
    msdir = mindspore_dir(t)
    listed = installed_accepted_list(msdir)
    accepted: Sequence[str] = listed or ()
    verified, source = True, "the installed mindspore/run_check/_check_version.py"
    if listed is None:
        if row is None:
            return [
                Finding.warn(
                    f"MindSpore {ms} is not in the matrix (dated {m.date}); CANN {name} cannot be judged",
                    fix="upgrade msdoctor for a newer matrix",
                    code="not-in-matrix",
                    evidence={"cann": name, "internal_prefix": prefix},
                )
            ]
        accepted, verified = m.accepted_cann_prefixes(row)
        source = row.source
    evidence = {
        "pair": ["mindspore", "cann"],
        "mindspore": ms,
        "cann": name,
        "internal": seen["internal"],
        "internal_prefix": prefix,
        "accepted": list(accepted),
        "read_from": seen["file"],
        "via": seen["via"],
        "source": source,
    }
    loc = Location(seen["file"]) if seen["file"] else None
    if prefix not in accepted:
        wanted = [c.commercial for p in accepted for c in m.cann_by_prefix(p)] or (list(row.cann) if row else [])
        make = Finding.fail if verified else Finding.warn
        return [
            make(
                f"CANN {name} (internal {prefix}) does not match MindSpore {ms}, which accepts {', '.join(accepted)}",
                detail=(
                    "MindSpore logs 'version ... does not match' at import and then runs ops compiled for another "
                    "CANN; users report a segmentation fault right after that warning. "
                    if verified
                    else f"msdoctor knows only the CANN the docs pair with MindSpore {ms}, not MindSpore's own list. "
                )
                + (f"CANN versions with a matching internal version: {', '.join(wanted)}." if wanted else ""),
                fix=f"install CANN {' or '.join(wanted) or ', '.join(accepted)} (see {INSTALL_URL}) and source its "
                f"set_env.sh, or install a MindSpore that accepts CANN {name}: msdoctor matrix --cann {name}",
                location=loc,
                evidence=evidence,
                code="mindspore-cann",
            )
        ]
    return [
        Finding.passed(
            f"MindSpore {ms} accepts CANN {name}",
            proved=f"the CANN internal version {seen['internal'] or prefix} (read from {seen['file'] or seen['via']}) "
            f"starts with {prefix}, one of {', '.join(accepted)} accepted by {source}",
            evidence=evidence,
        )
    ] + _custom_ops(msdir, ms, prefix, seen)


def _cann_unknown(cann: CannFacts, ms: str, seen: dict[str, Any]) -> Finding:
    return Finding.warn(
        "cannot tell which CANN version MindSpore will use",
        detail=f"MindSpore {ms} derives compiler/version.info from {seen['via']}"
        + (f" ({seen['file']}), which is missing or has no Version= line" if seen["file"] else ", which is unset")
        + "; MindSpore then skips its own version check.",
        fix="source the set_env.sh of the CANN you mean to use, e.g. source /usr/local/Ascend/ascend-toolkit/set_env.sh",
        evidence={"via": seen["via"], "file": seen["file"], "installs": [i.root for i in cann.installs]},
        code="cann-unknown",
    )


def _custom_ops(msdir: Optional[str], ms: str, prefix: str, seen: dict[str, Any]) -> list[Finding]:
    """MindSpore's bundled custom ops built for another CANN than the matching one in use."""
    custom = custom_ops_version(msdir)
    if not custom or cann_prefix(custom) == prefix:
        return []
    return [
        Finding.warn(
            f"MindSpore {ms}'s bundled custom ops were built for CANN {cann_prefix(custom)}, this CANN is {prefix}",
            detail="MindSpore then disables its fused AllFinite overflow check and falls back silently to the "
            "slower path (mindspore/amp.py).",
            fix=f"use CANN {cann_prefix(custom)} for the full speed of MindSpore {ms}",
            evidence={"custom_opp_compiler_version": custom, "cann_internal": seen["internal"]},
            code="custom-ops-cann",
        )
    ]


def _opp_kernel(cann: CannFacts, ms: str) -> list[Finding]:
    """MindSpore 2.7.0 only: import raises when the CANN kernels package (opp_kernel) is missing (mindspore/run_check/_check_version.py in the 2.7.0 wheel)."""
    opp = cann.env.get("ASCEND_OPP_PATH")
    if ms != "2.7.0" or not opp or os.path.exists(opp.replace("opp", "opp_kernel")):
        return []
    return [
        Finding.fail(
            "MindSpore 2.7.0 will raise 'Ascend opp_kernel is not installed'",
            detail=f"MindSpore 2.7.0 checks {opp.replace('opp', 'opp_kernel')} (ASCEND_OPP_PATH with every 'opp' replaced "
            "by 'opp_kernel') at import and raises when it is missing: the CANN kernels package is not installed, "
            "or the install path contains 'opp' elsewhere. "
            "MindSpore 2.7.1 dropped this check (mindspore/run_check/_check_version.py in the 2.7.0 and 2.7.1 wheels).",
            fix="install the CANN kernels package (Ascend-cann-kernels) matching the toolkit, or use MindSpore 2.7.1",
            evidence={"ASCEND_OPP_PATH": opp},
            code="opp-kernel-missing",
        )
    ]


def _cann_wheels(t: "TargetFacts", cann: CannFacts, used: Optional[CannInstall]) -> list[Finding]:
    """te / hccl pip-installed from another CANN's lib64 than the one in use (MindSpore's Ascend install guide)."""
    from urllib.parse import unquote, urlparse

    out = []
    for name in ("te", "hccl"):
        d = t.dist(name)
        if d is None or not (d.direct_url or "").startswith("file://") or used is None:
            continue
        wheel = unquote(urlparse(d.direct_url).path)
        origin = _owner(cann, os.path.dirname(wheel) + "/x")
        if origin is None or origin.real_root == used.real_root:
            continue
        out.append(
            Finding.fail(
                f"the {name} wheel was installed from {origin.label}, but MindSpore uses {used.label}",
                detail="MindSpore checks te's CANN version at import and warns, then compiles operators with the other "
                "CANN's te; the te/hccl wheels must be reinstalled after every CANN upgrade (MindSpore install "
                "guide).",
                fix=f"{t.python_cmd()} -m pip uninstall -y te hccl && {t.python_cmd()} -m pip install "
                f"{used.root}/lib64/te-*-py3-none-any.whl {used.root}/lib64/hccl-*-py3-none-any.whl",
                evidence={"pair": ["cann", name], "wheel": wheel, "cann_in_use": used.root},
                code="cann-wheel",
            )
        )
    return out


def _two_installs(t: "TargetFacts", cann: CannFacts, ms: str) -> list[Finding]:
    from packaging.version import Version

    nnae, toolkit = cann.by_flavour("nnae"), cann.by_flavour("toolkit")
    if not (nnae and toolkit):
        return []
    both = [nnae[0].label, toolkit[0].label]
    if Version(ms) < Version("2.4.0"):
        return [
            Finding.fail(
                f"two CANN installs (nnae and toolkit) with MindSpore {ms} (< 2.4.0)",
                detail="Before 2.4.0 MindSpore finds CANN through RPATH with nnae before ascend-toolkit and ignores "
                "LD_LIBRARY_PATH, so binaries of both get mixed: segmentation faults, missing .so (MindSpore FAQ, installation).",
                fix="upgrade to MindSpore >= 2.4.0 and source one CANN's set_env.sh, or remove one of the two installs",
                evidence={"installs": both},
                code="cann-nnae-and-toolkit",
            )
        ]
    if cann.active is None:
        return [
            Finding.warn(
                "two CANN installs (nnae and toolkit) and no set_env.sh sourced",
                detail="Which one MindSpore uses depends on the set_env.sh you source; without one it finds neither.",
                fix=f"source the set_env.sh of the one you mean: {toolkit[0].root}/../set_env.sh or {nnae[0].root}/../set_env.sh",
                evidence={"installs": both},
                code="cann-nnae-and-toolkit",
            )
        ]
    return []


def _driver(cann: CannFacts, m: Matrix) -> list[Finding]:
    out: list[Finding] = []
    drv, fw, inst = cann.driver, cann.firmware, cann.active or cann.default
    if drv is None:
        return [
            Finding.warn(
                "no Ascend driver version found",
                detail=f"{cann.ascend_root}/driver/version.info is missing: the NPU driver "
                "is not installed, or not mounted into this container (mount driver/version.info and /etc/ascend_install.info).",
                fix="install the Ascend HDK driver, or mount /usr/local/Ascend/driver into the container",
                code="driver-missing",
            )
        ]
    if inst is not None:
        ok = inst.compatible_with(drv.c_number)
        release = m.cann(inst.commercial) if inst.commercial else None
        paired = release.driver if release is not None else ()
        evidence = {
            "pair": ["cann", "driver"],
            "driver": drv.version,
            "driver_innerversion": drv.innerversion,
            "cann": inst.commercial,
            "cann_compatible_version": [list(r) for r in inst.compatible],
            "paired_in_matrix": list(paired),
        }
        if ok is False:
            out.append(
                Finding.warn(
                    f"CANN {inst.commercial} does not list driver {drv.version} (C{drv.c_number}) as compatible",
                    detail="Its ascend_toolkit_install.info compatible_version omits the driver's Innerversion; in every "
                    "working pair found it was listed, and a CANN newer than the driver fails with 'Invalid opp "
                    "version ... Please check if it is within the required range' (ACL error E19999).",
                    fix=f"install the driver paired with CANN {inst.commercial}: {', '.join(paired) or 'see the CANN release notes'}",
                    location=Location(drv.path),
                    evidence=evidence,
                    code="cann-driver",
                )
            )
        elif ok:
            out.append(
                Finding.passed(
                    f"driver {drv.version} is listed by CANN {inst.commercial}",
                    proved=(
                        f"C{drv.c_number} (driver Innerversion {drv.innerversion}) is in CANN {inst.commercial}'s "
                        "compatible_version list"
                    ),
                    evidence=evidence,
                )
            )
    if (
        fw is not None
        and fw.version
        and drv.compatible_fw
        and not any(in_range(fw.version, lo, hi) for lo, hi in drv.compatible_fw)
    ):
        out.append(
            Finding.warn(
                f"firmware {fw.version} is outside driver {drv.version}'s compatible_version_fw "
                + ", ".join(f"[{lo},{hi}]" for lo, hi in drv.compatible_fw),
                detail="Driver and firmware are installed from one Ascend HDK release; in the samples found the firmware "
                "lies within the driver's range (ascend_toolkit_install.info).",
                fix="install the firmware package of the same HDK release as the driver",
                location=Location(fw.path),
                evidence={"firmware": fw.version, "driver": drv.version},
                code="driver-firmware",
            )
        )
    return out
