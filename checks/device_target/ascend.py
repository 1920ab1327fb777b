"""Static evidence for the Ascend target: plugin, device nodes, driver, npu-smi, set_env.sh, te/hccl (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from msdoctor.checks.device_target.common import Verdict
from msdoctor.facts.ascend import DeviceNodes
from msdoctor.facts.ascend_env import AscendEnv
from msdoctor.facts.npu_smi import NpuSmiFailed, NpuSmiInfo
from msdoctor.model import Finding, Status

CANN_INSTALL_DOC = "https://www.mindspore.cn/install (section: Installing CANN)"
DEVICE_FLAGS = "--device=/dev/davinci_manager --device=/dev/devmm_svm --device=/dev/hisi_hdc"


@dataclass
class AscendFacts:
    """Everything the Ascend evaluation needs, gathered by the check (tests build it directly)."""

    plugin: bool  # mindspore/lib/plugin/ascend exists in the target's MindSpore
    nodes: DeviceNodes
    env: AscendEnv
    npu_smi: Optional[NpuSmiInfo] = None
    npu_smi_error: Optional[NpuSmiFailed] = None
    te_found: Optional[bool] = None  # None: unknown (no probe data)
    hccl_found: Optional[bool] = None
    python_cmd: str = "python"
    ms_version: Optional[str] = None
    wanted_devices: Optional[int] = None  # device count the config asks for


def hardware_present(f: AscendFacts) -> bool:
    """Any sign of Ascend hardware on this host (device nodes, or npu-smi listing chips)."""
    return bool(f.nodes.davinci) or bool(f.npu_smi and f.npu_smi.chips)


def _plugin(f: AscendFacts) -> list[Finding]:
    if f.plugin:
        return []
    pin = f"mindspore=={f.ms_version}" if f.ms_version else "mindspore"
    return [
        Finding.fail(
            "the installed MindSpore has no Ascend backend (mindspore/lib/plugin/ascend is missing)",
            detail="Only wheels built with the Ascend plugin can run on NPUs; this one runs on CPU only. The unified "
            "x86_64/aarch64 wheels from PyPI carry the Ascend, GPU and CPU plugins (mindspore/lib/plugin/ in the 2.7.0 wheel).",
            fix=f"{f.python_cmd} -m pip install --force-reinstall {pin}",
            code="ascend-plugin-missing",
        )
    ]


def _nodes(f: AscendFacts) -> list[Finding]:
    n = f.nodes
    if not n.davinci:
        return [
            Finding.fail(
                f"no Ascend device nodes: {n.dev_dir}/davinci* does not exist",
                detail="Without /dev/davinciN the runtime sees no NPU. On a bare host the driver is not installed or "
                "not loaded; in a container the devices were not passed through (https://github.com/vllm-project/vllm-ascend/issues/2698).",
                fix=f"start the container with --device=/dev/davinci0 (one per NPU) {DEVICE_FLAGS} and mount "
                "/usr/local/Ascend/driver; on a bare host install the Ascend driver (npu-smi info must list the chips)",
                evidence={"dev_dir": n.dev_dir, "control_nodes": n.control},
                code="ascend-no-device-nodes",
            )
        ]
    if n.missing_control:
        missing = ", ".join(f"/dev/{m}" for m in n.missing_control)
        return [
            Finding.fail(
                f"Ascend control nodes missing: {missing}",
                detail=f"/dev/davinci{n.davinci} exist, but the runtime also opens the manager, memory and HDC nodes; "
                "without them device initialisation fails.",
                fix=f"pass them into the container too: {DEVICE_FLAGS}",
                evidence={"davinci": n.davinci, "control_nodes": n.control},
                code="ascend-control-nodes",
            )
        ]
    return []


def _driver(f: AscendFacts) -> list[Finding]:
    driver_on_ld = not any(g.problem.startswith("LD_LIBRARY_PATH lacks the driver") for g in f.env.gaps)
    if f.env.driver_dir is None and not driver_on_ld:
        return [
            Finding.fail(
                "the Ascend driver is not installed (or not mounted): /usr/local/Ascend/driver does not exist",
                detail="The CANN runtime loads the driver's libraries (libascend_hal.so) from the driver directory.",
                fix="install the Ascend HDK driver matching your CANN (see msdoctor matrix --cann); in a container mount it with "
                "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver",
                code="ascend-driver-missing",
            )
        ]
    return []


def _chips(f: AscendFacts) -> list[Finding]:
    out: list[Finding] = []
    if f.npu_smi_error is not None:
        e = f.npu_smi_error
        out.append(
            Finding.warn(
                f"npu-smi failed: {e.message}",
                detail="Chip health and memory could not be read. msdoctor judges the devices from /dev and the "
                "driver files instead (https://github.com/Ascend/cann-container-image/issues/46).",
                fix=e.fix,
                evidence={"npu_smi": e.path, "kind": e.kind, "code": e.code, "output": e.output},
                code=f"npu-smi-{e.kind}",
            )
        )
        return out
    smi = f.npu_smi
    if smi is None:
        if f.nodes.davinci:
            out.append(
                Finding.warn(
                    "npu-smi is not installed or not on PATH",
                    detail="It ships with the Ascend driver; without it chip health and HBM use cannot be checked.",
                    fix="add the driver's tools to PATH (npu-smi is usually /usr/local/bin/npu-smi), or in a "
                    "container mount it: -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi -v /usr/local/dcmi:/usr/local/dcmi",
                    code="npu-smi-missing",
                )
            )
        return out
    for chip in smi.unhealthy_chips():
        out.append(
            Finding.warn(
                f"{chip.label} reports health {chip.health}",
                detail="npu-smi marks this chip as not OK; jobs placed on it can fail or hang.",
                fix=f"run `npu-smi info -t health -i {chip.npu_id}` for the alarm codes; avoid the chip "
                "(set DEVICE_ID / ASCEND_RT_VISIBLE_DEVICES to healthy chips) or have the node serviced",
                evidence={"npu_id": chip.npu_id, "chip_id": chip.chip_id, "health": chip.health, "bus_id": chip.bus_id},
                code="npu-unhealthy",
            )
        )
    for chip in smi.busy_chips():
        procs = smi.processes_on(chip)
        pids = ", ".join(str(p.pid) for p in procs[:8]) + (" ..." if len(procs) > 8 else "")
        held = sum(p.memory_mb or 0 for p in procs)
        out.append(
            Finding.warn(
                f"{chip.label} is busy: {len(procs)} process(es) hold {held} MB (pids {pids})",
                detail=f"HBM in use {chip.device_memory_used_mb} / {chip.device_memory_total_mb} MB. A training job "
                "placed on this chip competes for its memory and may fail to initialise.",
                fix=f"stop those processes (`kill {procs[0].pid}` ...), or choose free chips with DEVICE_ID / "
                "ASCEND_RT_VISIBLE_DEVICES",
                evidence={
                    "npu_id": chip.npu_id,
                    "chip_id": chip.chip_id,
                    "pids": [p.pid for p in procs],
                    "memory_mb": held,
                },
                code="npu-busy",
            )
        )
    if f.wanted_devices and len(smi.chips) < f.wanted_devices:
        out.append(
            Finding.warn(
                f"the config asks for {f.wanted_devices} devices but npu-smi lists {len(smi.chips)} chip(s)",
                detail="Data/model/pipeline parallel degrees multiply to the device count; a single node shows fewer.",
                fix="lower the parallel degrees to the chips you have, or launch across nodes (msrun --worker_num)",
                evidence={"chips": len(smi.chips), "wanted": f.wanted_devices},
                code="npu-too-few",
            )
        )
    return out


def _environment(f: AscendFacts) -> list[Finding]:
    env = f.env
    if not env.sourced and not env.installed:
        return [
            Finding.fail(
                "CANN is not installed: no set_env.sh under /usr/local/Ascend and ASCEND_HOME_PATH is not set",
                detail="MindSpore's Ascend plugin needs the CANN toolkit (libge_runner.so and the operator packages).",
                fix=f"install the CANN toolkit matching MindSpore {f.ms_version or ''} ({CANN_INSTALL_DOC}), then "
                "source its set_env.sh",
                code="cann-missing",
            )
        ]
    gaps = [g for g in env.gaps if not g.problem.startswith("LD_LIBRARY_PATH lacks the driver") or env.sourced]
    if not env.sourced:
        return [
            Finding.fail(
                "CANN's set_env.sh was not sourced in the environment of this interpreter",
                detail="ASCEND_HOME_PATH, ASCEND_OPP_PATH, LD_LIBRARY_PATH (toolkit and driver lib64), PYTHONPATH (TBE "
                "op_impl) and PATH (ccec_compiler) are unset, so libmindspore_ascend.so cannot load "
                '("libge_runner.so: cannot open shared object file") and MindSpore quietly runs on CPU (https://github.com/mindspore-lab/mindyolo/issues/273).',
                fix=f"{env.source_command()}   (put it in ~/.bashrc or the job script, before starting Python)",
                evidence={"missing": [g.problem for g in gaps], "set_env_scripts": env.set_env_scripts},
                code="set-env-not-sourced",
            )
        ]
    out = []
    for g in gaps:
        make = Finding.fail if g.severity == "fail" else Finding.warn
        out.append(
            make(
                g.problem,
                detail=g.why,
                fix=f"{env.source_command()} again in this shell (something reset {g.variable} afterwards)",
                evidence={g.variable: env.variables.get(g.variable)},
                code=f"cann-env-{g.variable.lower()}",
            )
        )
    if env.ge_runner is None and not any(g.variable == "LD_LIBRARY_PATH" and g.severity == "fail" for g in gaps):
        out.append(
            Finding.fail(
                "libge_runner.so is not in any LD_LIBRARY_PATH directory",
                detail=f"ASCEND_HOME_PATH={env.home} is set, but the CANN runtime library the Ascend plugin links "
                "against is missing: a partial or non-toolkit CANN (nnrt) install (MindSpore FAQ: https://www.mindspore.cn/docs/en/master/faq/installation.html).",
                fix=f"install the full CANN toolkit ({CANN_INSTALL_DOC}) and {env.source_command()}",
                evidence={"LD_LIBRARY_PATH": env.variables.get("LD_LIBRARY_PATH")},
                code="ge-runner-missing",
            )
        )
    return out


def _cann_python(f: AscendFacts) -> list[Finding]:
    if not f.env.sourced:
        return []  # the set_env finding covers it: PYTHONPATH gains the packages when sourced
    missing = [n for n, found in (("te", f.te_found), ("hccl", f.hccl_found)) if found is False]
    if not missing:
        return []
    lib64 = f"{f.env.home}/lib64"
    wheels = " ".join(f"{lib64}/{n}-*-py3-none-any.whl" for n in missing)
    return [
        Finding.fail(
            f"CANN's Python package(s) {', '.join(missing)} cannot be imported by this interpreter",
            detail='MindSpore imports `te` at start-up on Ascend and fails with "MindSpore relies on whl packages of '
            '\\"te\\" and \\"hccl\\"" (mindspore/run_check/_check_version.py).',
            fix=f"{f.python_cmd} -m pip install {wheels}",
            evidence={"te": f.te_found, "hccl": f.hccl_found},
            code="cann-python-missing",
        )
    ]


def evaluate_ascend(f: AscendFacts) -> Verdict:
    """All Ascend findings; usable when nothing fails."""
    findings = _plugin(f) + _nodes(f) + _driver(f) + _environment(f) + _cann_python(f) + _chips(f)
    failing = [x for x in findings if x.status is Status.FAIL]
    visible = len(f.npu_smi.chips) if f.npu_smi and f.npu_smi.chips else (len(f.nodes.davinci) or None)
    if failing:
        return Verdict("Ascend", False, f"Ascend: not usable ({failing[0].title})", findings, visible)
    chips = (
        f"{len(f.npu_smi.chips)} chip(s) {f.npu_smi.chips[0].name}, driver {f.npu_smi.driver_version}"
        if f.npu_smi and f.npu_smi.chips
        else f"{len(f.nodes.davinci)} device node(s)"
    )
    proved = (
        f"static evidence for Ascend: MindSpore's Ascend plugin present; {chips}; "
        f"/dev/davinci{f.nodes.davinci} and control nodes present; CANN environment set "
        f"(ASCEND_HOME_PATH={f.env.home}, libge_runner.so at {f.env.ge_runner})"
    )
    evidence: dict[str, Any] = {"davinci": f.nodes.davinci, "ascend_home": f.env.home, "ge_runner": f.env.ge_runner}
    if f.npu_smi:
        evidence["npu_smi"] = {"driver": f.npu_smi.driver_version, "chips": len(f.npu_smi.chips)}
    findings.insert(0, Finding.passed(f"Ascend static evidence: {chips}", proved=proved, evidence=evidence))
    return Verdict("Ascend", True, f"Ascend: {chips}", findings, visible)
