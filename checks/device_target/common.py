"""Shared pieces of the device-target check: the per-target verdict and MindSpore's backend plugins."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from msdoctor.model import Finding

TARGETS = ("Ascend", "GPU", "CPU")


def skipped_no_mindspore(python_cmd: str) -> Finding:
    """No MindSpore in the target: version-matrix owns that finding (with the install command from the matrix);
    this check says only that it could not examine device use."""
    return Finding.skipped(
        f"device use not examined: MindSpore is not installed in {python_cmd}",
        reason="No device can be used without it. The version-matrix check reports it, with the install command.",
        code="skipped-mindspore-missing",
    )


@dataclass
class Verdict:
    """Outcome of one target's static evidence: usable or not, and the findings behind it."""

    target: str
    usable: bool
    summary: str  # one line for the availability overview
    findings: list[Finding] = field(default_factory=list)
    visible_devices: Optional[int] = None


@dataclass
class Plugins:
    """Backend plugins inside the target's MindSpore (mindspore/lib/plugin/* in the wheel)."""

    root: Optional[str]  # the plugin directory, None when MindSpore is not found
    ascend: bool = False
    gpu_cuda: list[str] = field(default_factory=list)  # "11.1", "11.6" from gpu11.1/, gpu11.6/
    cpu: bool = False


def read_plugins(mindspore_dir: Optional[str]) -> Plugins:
    """Plugins of the MindSpore package at ``mindspore_dir`` (the directory holding __init__.py)."""
    if not mindspore_dir:
        return Plugins(None)
    root = os.path.join(mindspore_dir, "lib", "plugin")
    try:
        names = os.listdir(root)
    except OSError:
        return Plugins(root)
    cuda = sorted(
        {m.group(1) for m in (re.fullmatch(r"gpu(\d+\.\d+)", n) for n in names) if m},
        key=lambda v: tuple(int(x) for x in v.split(".")),
    )
    return Plugins(root, ascend="ascend" in names, gpu_cuda=cuda, cpu="cpu" in names)
