"""Check: is the requested device (Ascend / GPU / CPU) really usable, and what does MindSpore actually run on."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Optional

from msdoctor.checks.device_target.ascend import AscendFacts, evaluate_ascend, hardware_present
from msdoctor.checks.device_target.common import TARGETS, Plugins, Verdict, read_plugins, skipped_no_mindspore
from msdoctor.checks.device_target.gpu import GpuFacts, evaluate_gpu
from msdoctor.checks.device_target.live import LiveContext, live_findings
from msdoctor.checks.device_target.multi import multi_device_findings
from msdoctor.context import Context
from msdoctor.facts.ascend import DEVICE_NODES
from msdoctor.facts.ascend_env import ASCEND_ENV
from msdoctor.facts.npu_smi import NPU_SMI, NpuSmiFailed
from msdoctor.facts.config import CONFIG, requested_device_target
from msdoctor.facts.live import LIVE_DEVICE, LiveDevice
from msdoctor.facts.nvidia import NVIDIA, driver_version
from msdoctor.model import Finding, Location, Status


@dataclass
class DeviceFacts:
    """Everything the evaluation needs (tests build it from fixtures)."""

    requested: Optional[str]
    requested_from: Optional[str]  # "--device-target" or "config.yaml:12"
    plugins: Plugins
    ascend: AscendFacts
    gpu: GpuFacts
    live: Optional[LiveDevice]
    env: dict[str, str] = field(default_factory=dict)  # the target process's environment
    python_cmd: str = "python"
    location: Optional[Location] = None


def _cpu(plugins: Plugins) -> Verdict:
    return Verdict(
        "CPU", plugins.root is not None, "CPU: always available" if plugins.root else "CPU: MindSpore missing"
    )


def _unusable_hardware(v: Verdict) -> Finding:
    first = next(x for x in v.findings if x.status is Status.FAIL)
    return Finding.warn(
        f"{v.target} hardware is present but not usable: {first.title}",
        detail=f"No device target was requested, so this is not fatal, but a run on {v.target} would fail or "
        f"fall back to CPU. {first.detail}",
        fix=first.fix,
        evidence=dict(first.evidence),
        code=f"{v.target.lower()}-present-unusable",
    )


def _summary(verdicts: dict[str, Verdict], f: DeviceFacts) -> Finding:
    lines = [v.summary for v in verdicts.values()]
    asked = f"requested {f.requested} (from {f.requested_from})" if f.requested else "no device target requested"
    return Finding.passed(
        f"device targets: {'; '.join(v.target + (' usable' if v.usable else ' not usable') for v in verdicts.values())}"
        f" ({asked})",
        proved="read MindSpore's backend plugins, /dev device nodes, npu-smi, nvidia-smi, the CUDA libraries on the "
        "loader path and the CANN environment of the target: "
        + "; ".join(lines)
        + ("" if f.live is not None else " (static evidence only: the live probe is skipped with --quick)"),
        evidence={
            "plugins": {
                "root": f.plugins.root,
                "ascend": f.plugins.ascend,
                "gpu_cuda": f.plugins.gpu_cuda,
                "cpu": f.plugins.cpu,
            },
            "requested": f.requested,
            "requested_from": f.requested_from,
        },
    )


def evaluate(f: DeviceFacts) -> list[Finding]:
    """All findings of the check, from gathered facts (pure)."""
    if f.requested is not None and f.requested not in TARGETS:
        return [
            Finding.fail(
                f"unknown device target {f.requested!r} (from {f.requested_from})",
                detail="MindSpore accepts Ascend, GPU or CPU.",
                fix="set device_target to Ascend, GPU or CPU",
                location=f.location,
                code="unknown-target",
            )
        ]
    verdicts = {"Ascend": evaluate_ascend(f.ascend), "GPU": evaluate_gpu(f.gpu), "CPU": _cpu(f.plugins)}
    hardware = {
        "Ascend": hardware_present(f.ascend),
        "GPU": bool(f.gpu.nvidia and (f.gpu.nvidia.gpus or f.gpu.nvidia.device_nodes)),
    }
    out: list[Finding] = [_summary(verdicts, f)]
    if f.plugins.root is None and f.live is None:
        out.append(skipped_no_mindspore(f.python_cmd))
    if f.requested in ("Ascend", "GPU"):
        out += [
            x if x.location or x.status is not Status.FAIL else _at(x, f.location)
            for x in verdicts[f.requested].findings
        ]
    elif f.requested is None:
        out += [_unusable_hardware(v) for t, v in verdicts.items() if hardware.get(t) and not v.usable]
    env = f.ascend.env
    source = (
        env.source_command()
        if env.installed or env.sourced
        else "install the CANN toolkit (https://www.mindspore.cn/install), then source its set_env.sh"
    )
    lc = LiveContext(f.requested, f.python_cmd, source, hardware, f.ascend.wanted_devices)
    static_codes = {x.code for x in out}
    # the static count warning (npu-smi / nvidia-smi) already says it; keep one
    out += [
        x
        for x in live_findings(f.live, lc)
        if not (x.code == "too-few-devices" and static_codes & {"npu-too-few", "gpu-too-few"})
    ]
    chosen = f.requested or (f.live.device_target if f.live else None) or "CPU"
    visible = verdicts[chosen].visible_devices if chosen in verdicts else None
    if visible is None and f.live is not None and f.live.device_count is not None:
        visible = f.live.device_count
    multi, present = multi_device_findings(f.env, visible)
    out += multi
    if present and not multi:
        out.append(
            Finding.passed(
                "multi-device variables are consistent: " + ", ".join(f"{k}={v}" for k, v in present.items()),
                proved=f"checked {', '.join(present)} against each other and {visible if visible is not None else 'an unknown number of'} visible device(s)",
                evidence=present,
            )
        )
    return out


def _at(finding: Finding, location: Optional[Location]) -> Finding:
    if location is None:
        return finding
    return replace(finding, location=location)


# -- gathering ------------------------------------------------------------------
def _requested(ctx: Context) -> tuple[Optional[str], Optional[str], Optional[Location]]:
    target = requested_device_target(ctx)
    if target is None:
        return None, None, None
    if ctx.options.device_target:
        # a command that chose the target itself (explain: from the error it explains) says where from
        return target, str(ctx.options.extra.get("device_target_from") or "--device-target"), None
    cfg = ctx.get(CONFIG)
    assert cfg is not None  # the target came from the config: requested_device_target read it there
    if cfg.kind == "msdoctor":
        line = cfg.doc.line_of("runtime", "device_target")
    else:  # the training setup's key for it (context.device_target), as memory-fit and training-config name it
        origin = cfg.setup.origin("device_target") if cfg.setup is not None else None
        line = origin.line if origin is not None else None
    return target, f"{cfg.path}:{line}" if line else str(cfg.path), Location(str(cfg.path), line)


def gather(ctx: Context) -> DeviceFacts:
    t = ctx.target
    origin = t.module_origin("mindspore")
    ms_dir = os.path.dirname(origin) if origin and origin.endswith("__init__.py") else origin
    plugins = read_plugins(ms_dir)
    cfg = ctx.get(CONFIG)
    wanted = cfg.devices_per_node if cfg is not None else None  # what this node's msrun workers use
    wanted = wanted if isinstance(wanted, int) and wanted > 1 else None
    try:
        smi, smi_error = ctx.get(NPU_SMI), None
    except NpuSmiFailed as exc:
        smi, smi_error = None, exc
    spec = lambda m: (t.find_spec.get(m) or {}).get("found") if m in t.find_spec else None  # noqa: E731
    ascend = AscendFacts(
        plugin=plugins.ascend,
        nodes=ctx.get(DEVICE_NODES),
        env=ctx.get(ASCEND_ENV),
        npu_smi=smi,
        npu_smi_error=smi_error,
        te_found=spec("te"),
        hccl_found=spec("hccl"),
        python_cmd=t.python_cmd(),
        ms_version=t.version_of("mindspore"),
        wanted_devices=wanted,
    )
    nvidia = ctx.get(NVIDIA)
    gpu = GpuFacts(
        plugin_cuda=plugins.gpu_cuda,
        nvidia=nvidia,
        python_cmd=t.python_cmd(),
        wanted_devices=wanted,
        driver=driver_version(nvidia, ctx.environ),
    )
    requested, source, location = _requested(ctx)
    live = None if ctx.quick else ctx.get(LIVE_DEVICE)
    return DeviceFacts(requested, source, plugins, ascend, gpu, live, dict(t.env), t.python_cmd(), location)


class DeviceTargetCheck:
    id = "device-target"
    title = "Device target"
    description = "Whether the requested device (Ascend/GPU/CPU) is usable, proved by a live matmul, and what MindSpore really runs on"
    order = 40  # place in reports: environment first, then stack, devices, editors, project
    prefetch = (LIVE_DEVICE,)

    def run(self, ctx: Context) -> list[Finding]:
        return evaluate(gather(ctx))
