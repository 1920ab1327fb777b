"""What the training-config rules share: the facts around a config (:class:`Env`, :class:`Fact`, the datasets and
the checkpoint size as found) and how a finding points at a key (:func:`_loc`) and spells its edit (:func:`_set`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from msdoctor.domain.run_plan import Resolved, Val
from msdoctor.model import Location


DEFAULT_MAX_LOST_HOURS = 2.0


@dataclass(frozen=True)
class Fact:
    """A number from outside the file, with where it came from ("--devices-per-node", "npu-smi: 8 chips")."""

    value: Any
    source: str


@dataclass
class DataFacts:
    """One dataset path as found on disk.

    Attributes:
        val: the path as written, with its key.
        resolved: the path checked (relative paths resolved against the launch directory).
        placeholder: the value is a template to fill in ("", /path/to/..., <...>).
        exists, readable: what the file system says.
        kind: mindrecord | megatron | text-glob | stdlib.
        sequences: records (MindRecord rows, Megatron sequences), None when not counted.
        tokens: tokens (Megatron) or bytes of text (an upper bound of the tokens), None when not counted.
        files: files found.
        note: how it was counted, or why not.
    """

    val: Val
    resolved: str
    placeholder: bool = False
    exists: bool = True
    readable: bool = True
    kind: str = "unknown"
    sequences: Optional[int] = None
    tokens: Optional[int] = None
    files: int = 0
    note: str = ""


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes one checkpoint takes on the checkpoint directory's disk, and how they were counted."""

    bytes: int
    why: str


@dataclass
class Env:
    """What the check found out around the config (tests build it by hand)."""

    devices: Optional[Fact] = None
    devices_per_node: Optional[Fact] = None
    device_target: Optional[Fact] = None  # --device-target (overrides the file's)
    base_global_batch: Optional[Fact] = None  # --base-global-batch (overrides the file's)
    ckpt_dir: Optional[str] = None  # the checkpoint directory, resolved
    disk_free: Optional[Fact] = None  # bytes free on the file system holding ckpt_dir
    ckpt_existing: int = 0  # bytes of checkpoints already in ckpt_dir (kept, so they count as room)
    ckpt_writable: Optional[bool] = None  # this user can create / write the checkpoint directory
    ckpt_size: Optional[CheckpointSize] = None
    ckpt_size_problem: Optional[str] = None  # why the size is unknown
    params: Optional[int] = None  # parameters of the model (for the batch-range rule)
    data: list = field(default_factory=list)  # DataFacts
    step_time: Optional[Fact] = None  # seconds per optimizer step, stated or measured
    max_lost_hours: Fact = field(default_factory=lambda: Fact(DEFAULT_MAX_LOST_HOURS, "msdoctor's default"))


# -- helpers ---------------------------------------------------------------------------
def _loc(res: Resolved, v: Optional[Val]) -> Location:
    """The key's line; for a key the file lacks, the line of its nearest parent that is there."""
    if v is None:
        return Location(str(res.path))
    line = v.line
    if line is None and v.keys and not str(v.keys[0]).startswith(("-", "#")):
        line = res.line_of(*v.keys)
    return Location(str(res.path), line)


def _set(res: Resolved, v: Val, new: Any) -> str:
    """The edit that sets a key: ``file:line: set a.b: 3`` (or where to add it when absent)."""
    if v.keys and str(v.keys[0]).startswith("# msdoctor"):
        return f"{res.where(v)}: change the comment to `{v.keys[0]}={new}`"
    if v.line:
        return f"{res.where(v)}: set {v.key}: {new}"
    parent = v.keys[:-1]
    pline = res.line_of(*parent) if parent else None
    where = f"{res.path}:{pline}" if pline else str(res.path)
    under = f" under {'.'.join(str(k) for k in parent)}" if parent else ""
    return f"{where}: add {v.keys[-1]}: {new}{under}"
