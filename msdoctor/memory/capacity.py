"""Device capacity: what the estimate is compared against, and the runtime reserve on top of it.

Sources, strongest first:

1. ``--device-memory X`` (planning without the hardware): the device's total memory.
2. The device itself: Ascend HBM per chip from ``npu-smi info`` (``NPU_SMI`` fact), GPU
   memory from ``nvidia-smi`` (``NVIDIA`` fact), CPU: available RAM from psutil, shared
   by the workers of one host.
3. The config's cap: MindSpore ``max_device_memory`` / msdoctor ``runtime.device_memory``
   ("58GB" on a 64 GB 910B, MindFormers' recommendation: docs advanced_development/
   performance_optimization.md).

A cap is MindSpore's memory pool: the runtime (CANN) lives outside it, so no reserve is
counted against a cap, unless the cap exceeds the device's total minus that reserve, in
which case the device is the limit. Reserves: Ascend 4.5 GiB (MindSpeed's fixed
"cann_memory", Ascend/MindSpeed mindspeed/core/auto_parallel/search/memory_model.py); GPU
2 GiB (CUDA context + NCCL buffers, 1-2 GiB); CPU none (available RAM is already net of what runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from msdoctor.memory.spec import Device
from msdoctor.memory.units import GIB, MIB, fmt_gib

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context

RESERVE = {"Ascend": int(4.5 * GIB), "GPU": 2 * GIB, "CPU": 0}
RESERVE_WHY = {
    "Ascend": "CANN runtime outside MindSpore's pool: 4.5 GiB (Ascend/MindSpeed "
    "mindspeed/core/auto_parallel/search/memory_model.py cann_memory)",
    "GPU": "CUDA context + NCCL buffers: 2 GiB (observed 1-2 GiB: torch.cuda.mem_get_info before and after "
    "init_process_group)",
    "CPU": "",
}
FRAGMENTATION = 0.05


@dataclass
class Detected:
    """What the machine says about its devices."""

    total: Optional[int] = None  # bytes per device (the smallest device)
    count: Optional[int] = None
    source: str = ""
    notes: list = field(default_factory=list)


def from_npu_smi(info: Any) -> Detected:
    """HBM per chip from a parsed `npu-smi info` (msdoctor.facts.npu_smi.NpuSmiInfo); MB there are MiB."""
    if info is None:
        return Detected(notes=["npu-smi is not installed here: Ascend memory unknown"])
    chips = list(getattr(info, "chips", None) or [])
    sizes = []
    for chip in chips:
        mb = getattr(chip, "device_memory_total_mb", None)
        if mb is None:
            mb = getattr(chip, "hbm_total_mb", None) or getattr(chip, "memory_total_mb", None)
        if mb:
            sizes.append(int(mb))
    if not sizes:
        return Detected(count=len(chips) or None, notes=["npu-smi listed no chip with a memory size"])
    names = sorted({str(getattr(c, "name", "?")) for c in chips})
    smallest = min(sizes)
    src = f"npu-smi: {len(chips)} x {'/'.join(names)}, {smallest} MB HBM each"
    if len(set(sizes)) > 1:
        src += " (the smallest)"
    return Detected(smallest * MIB, len(chips), src)


def from_nvidia(info: Any) -> Detected:
    """Memory per GPU from msdoctor.facts.nvidia.NvidiaInfo (nvidia-smi memory.total, MiB)."""
    if info is None:
        return Detected(notes=["no NVIDIA GPU here: GPU memory unknown"])
    gpus = list(getattr(info, "gpus", None) or [])
    sizes = [int(g.memory_total_mb) for g in gpus if getattr(g, "memory_total_mb", None)]
    if not sizes:
        why = getattr(info, "smi_error", None) or "nvidia-smi listed no GPU memory"
        return Detected(notes=[f"GPU memory unknown: {why}"])
    names = sorted({str(getattr(g, "name", "?")) for g in gpus})
    return Detected(min(sizes) * MIB, len(gpus), f"nvidia-smi: {len(gpus)} x {'/'.join(names)}, {min(sizes)} MiB each")


def from_host_ram(workers: int) -> Detected:
    import psutil

    avail = int(psutil.virtual_memory().available)
    workers = max(1, workers)
    if workers == 1:
        return Detected(avail, 1, f"psutil: {fmt_gib(avail)} RAM available")
    return Detected(avail // workers, 1, f"psutil: {fmt_gib(avail)} RAM available, shared by {workers} workers")


def detect(ctx: "Context", target: str, workers: int = 1, *, probe: bool = True) -> Detected:
    """Ask the machine (through the Context's facts) how much memory a device has."""
    from msdoctor.context import FactUnavailable

    if target == "CPU":
        return from_host_ram(workers)
    if target == "Ascend":
        from msdoctor.facts.npu_smi import NPU_SMI

        try:
            return from_npu_smi(ctx.get(NPU_SMI))
        except FactUnavailable as exc:
            return Detected(notes=[f"npu-smi failed: {exc.message}"])
    try:
        return from_nvidia(ctx.get(_nvidia_spec(ctx, probe)))
    except FactUnavailable as exc:
        return Detected(notes=[f"nvidia-smi failed: {exc.message}"])


def _nvidia_spec(ctx: "Context", probe: bool) -> Any:
    """The NVIDIA fact: the target's (runs the target probe) or, without the probe, msdoctor's own
    environment (enough for nvidia-smi; ``msdoctor memory``)."""
    from msdoctor.facts.nvidia import NVIDIA, NVIDIA_HOST

    return NVIDIA if probe or ctx.has(NVIDIA) else NVIDIA_HOST


def machine_target(ctx: "Context", probe: bool = False) -> Optional[str]:
    """Ascend or GPU when the Context's device facts show such devices here, else None."""
    from msdoctor.context import FactUnavailable
    from msdoctor.facts.npu_smi import NPU_SMI

    try:
        info = ctx.get(NPU_SMI)
        if info is not None and getattr(info, "chips", None):
            return "Ascend"
    except FactUnavailable:
        pass
    try:
        nv = ctx.get(_nvidia_spec(ctx, probe))
        if nv is not None and nv.gpus:
            return "GPU"
    except FactUnavailable:
        pass
    return None


def make_device(
    target: str, detected: Detected, cap: Any = None, override: Optional[int] = None, override_text: str = ""
) -> Device:
    """Combine the device's total, the config's cap and --device-memory into what is compared against.

    Args:
        cap: a msdoctor.memory.sources.DeviceCap, or None.
        override: --device-memory in bytes (replaces the detected total).
    """
    notes = list(detected.notes)
    reserve = RESERVE.get(target, 0)
    total, source = detected.total, detected.source
    if override is not None:
        total, source = override, f"--device-memory {override_text or fmt_gib(override)}"
        notes = []
    if cap is not None and target == "CPU":
        notes.append(f"{cap.key} = {cap.text} applies to device memory; on CPU the host's RAM is the limit")
        cap = None
    if cap is not None:
        where = f"{cap.key} = {cap.text}" + (f" (line {cap.line})" if cap.line else "")
        if total is not None and cap.bytes > total - reserve:
            notes.append(
                f"{where} is more than the device's {fmt_gib(total)} minus the "
                f"{fmt_gib(reserve)} runtime reserve: the device is the limit"
            )
            return Device(
                target, total, reserve, RESERVE_WHY.get(target, ""), FRAGMENTATION, source, detected.count, tuple(notes)
            )
        why = f"none counted: {cap.key} caps MindSpore's memory pool; the runtime lives outside it"
        if total is None:
            notes = [n for n in notes if "unknown" not in n]  # the cap decides; "device unknown" is noise here
        return Device(target, cap.bytes, 0, why, FRAGMENTATION, where, detected.count, tuple(notes))
    return Device(
        target,
        total,
        reserve,
        RESERVE_WHY.get(target, ""),
        FRAGMENTATION,
        source or "unknown",
        detected.count,
        tuple(notes),
    )
