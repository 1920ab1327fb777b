"""The stable API for check plugins: import from here, not from internal modules.

A plugin check is a class with ``id`` (kebab-case), ``title``, ``description`` and
``run(ctx) -> list[Finding]``; register it in your distribution's pyproject.toml::

    [project.entry-points."msdoctor.checks"]
    my-check = "my_package.checks:MyCheck"

The facts a plugin may read with ``ctx.get(SPEC)`` (and list in its ``prefetch``) are exported here too,
with the types of their values; all but TARGET are imported on first use, so importing this module
stays cheap. See docs/plugins.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from msdoctor.context import Context, FactSpec, FactUnavailable, Options
from msdoctor.facts.target import TARGET, Distribution, TargetFacts
from msdoctor.model import Finding, Location, Status
from msdoctor.plugins import Check, CheckSpec

if TYPE_CHECKING:  # pragma: no cover - what the lazy names below are, for type checkers
    from msdoctor.facts.ascend import DEVICE_NODES, DeviceNodes  # noqa: F401
    from msdoctor.facts.ascend_env import ASCEND_ENV, AscendEnv  # noqa: F401
    from msdoctor.facts.cann import CANN, CannFacts  # noqa: F401
    from msdoctor.facts.config import CONFIG, ConfigFacts  # noqa: F401
    from msdoctor.facts.import_smoke import IMPORT_SMOKE, SmokeResult  # noqa: F401
    from msdoctor.facts.jupyter import KERNELSPECS, JupyterFacts  # noqa: F401
    from msdoctor.facts.live import LIVE_DEVICE, LiveDevice  # noqa: F401
    from msdoctor.facts.matrix import MATRIX  # noqa: F401
    from msdoctor.facts.npu_smi import NPU_SMI, NpuSmiInfo  # noqa: F401
    from msdoctor.facts.nvidia import NVIDIA, NvidiaInfo  # noqa: F401
    from msdoctor.facts.vscode import VSCODE, VSCodeFacts  # noqa: F401
    from msdoctor.matrix import Matrix  # noqa: F401

#: name -> module of the facts (and their value types) that load on first use
_LAZY = {
    "DEVICE_NODES": "msdoctor.facts.ascend",
    "DeviceNodes": "msdoctor.facts.ascend",
    "ASCEND_ENV": "msdoctor.facts.ascend_env",
    "AscendEnv": "msdoctor.facts.ascend_env",
    "CANN": "msdoctor.facts.cann",
    "CannFacts": "msdoctor.facts.cann",
    "CONFIG": "msdoctor.facts.config",
    "ConfigFacts": "msdoctor.facts.config",
    "IMPORT_SMOKE": "msdoctor.facts.import_smoke",
    "SmokeResult": "msdoctor.facts.import_smoke",
    "KERNELSPECS": "msdoctor.facts.jupyter",
    "JupyterFacts": "msdoctor.facts.jupyter",
    "LIVE_DEVICE": "msdoctor.facts.live",
    "LiveDevice": "msdoctor.facts.live",
    "MATRIX": "msdoctor.facts.matrix",
    "Matrix": "msdoctor.matrix",
    "NPU_SMI": "msdoctor.facts.npu_smi",
    "NpuSmiInfo": "msdoctor.facts.npu_smi",
    "NVIDIA": "msdoctor.facts.nvidia",
    "NvidiaInfo": "msdoctor.facts.nvidia",
    "VSCODE": "msdoctor.facts.vscode",
    "VSCodeFacts": "msdoctor.facts.vscode",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'msdoctor.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Check",
    "CheckSpec",
    "Context",
    "Distribution",
    "FactSpec",
    "FactUnavailable",
    "Finding",
    "Location",
    "Options",
    "Status",
    "TARGET",
    "TargetFacts",
    *sorted(_LAZY),
]
