"""One memory plan: a config source, the device it runs on, the estimate and the suggestions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from msdoctor.memory.capacity import Detected, detect, machine_target, make_device
from msdoctor.memory.estimator import estimate
from msdoctor.memory.suggest import Suggestion, search
from msdoctor.memory.sources import Source
from msdoctor.memory.spec import Estimate
from msdoctor.memory.units import parse_size

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context


#: the setup fields each kind of term scales with (estimator formulas): activations grow with the micro-batch,
#: the sequence and the micro-batches in flight, and shrink with tensor / context parallel and recompute; model
#: states shrink with tensor, pipeline and expert parallel and the parallel optimizer's group
DRIVERS = {
    "activation": (
        "micro_batch_size",
        "seq_length",
        "recompute",
        "micro_batch_num",
        "tensor_parallel",
        "context_parallel",
    ),
    "state": (
        "tensor_parallel",
        "pipeline_stages",
        "expert_parallel",
        "optimizer_sharding",
        "data_parallel",
        "param_dtype",
    ),
}


@dataclass(frozen=True)
class Driver:
    """A config value the estimate's largest term scales with, and where it is set."""

    fieldname: str
    key: str
    line: Optional[int]
    value: Any


@dataclass
class Plan:
    source: Source
    estimate: Estimate
    suggestions: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.estimate.verdict

    @property
    def largest_kind(self) -> str:
        """activation | state: the kind of term that weighs most on the device."""
        by = {k: sum(c.bytes for c in self.estimate.components if c.kind == k) for k in DRIVERS}
        return max(by, key=lambda k: by[k])

    def drivers(self) -> list[Driver]:
        """The values set in the config (key and line) that the largest kind of term scales with, first the
        one that scales it most directly: the keys to change when it does not fit."""
        src, out = self.source, []
        for name in DRIVERS[self.largest_kind]:
            keys = src.origins.get(name)
            if not keys:
                continue
            keys = tuple(keys)
            line = None if str(keys[0]).startswith("--") else src.line_of(keys)
            out.append(Driver(name, ".".join(str(k) for k in keys), line, getattr(src.setup, name)))
        return out


def _default_target(ctx: "Context", device_memory: Optional[str], probe: bool, notes: list) -> str:
    """The device a config that names none will run on: what the Context's device facts show, else a guess."""
    found = machine_target(ctx, probe)
    if found:
        return found
    if device_memory:
        notes.append(
            "the config names no device and none was found here: Ascend assumed (pass --device-target to change)"
        )
        return "Ascend"
    notes.append("the config names no device and no NPU or GPU was found here: planning for this host's RAM")
    return "CPU"


def make_plan(
    source: Source,
    ctx: "Context",
    *,
    device_memory: Optional[str] = None,
    probe: bool = True,
    limit: int = 3,
    detected: Optional[Detected] = None,
) -> Plan:
    """Estimate a source against the device it will run on and search for changes that fit.

    Args:
        ctx: a msdoctor Context (device facts come from it).
        device_memory: --device-memory text ("64GiB"); replaces the detected device total.
        probe: the NVIDIA fact may run the target probe (True inside `msdoctor check`).
        detected: the machine's answer, when the caller has it already (tests inject it).

    Raises:
        msdoctor.memory.units.SizeError: device_memory is not a size.
    """
    notes: list[str] = []
    target = source.target or _default_target(ctx, device_memory, probe, notes)
    override = parse_size(device_memory) if device_memory else None
    if detected is None:
        if override is not None and target != "CPU":
            detected = Detected()
        else:
            detected = detect(ctx, target, source.setup.devices, probe=probe)
    device = make_device(target, detected, source.cap, override, device_memory or "")
    est = estimate(source.model, source.setup, device)
    suggestions: list[Suggestion] = []
    if est.verdict in ("tight", "does not fit"):
        suggestions = search(source.model, source.setup, device, devices=source.devices, limit=limit)
    return Plan(source, est, suggestions, notes)
