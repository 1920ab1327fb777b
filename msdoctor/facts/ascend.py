"""Ascend facts: device nodes here; `npu-smi info` in msdoctor.facts.npu_smi and the environment
CANN's set_env.sh sets in msdoctor.facts.ascend_env, re-exported here for callers.

Public API (other checks read these):

* ``NPU_SMI`` -> :class:`NpuSmiInfo` or None (npu-smi not installed). Raises
  :class:`NpuSmiFailed` (a ``FactUnavailable``) when npu-smi exists but fails: a
  dcmi error inside a container (-8005 / -8020: https://github.com/vllm-project/vllm-ascend/issues/2698), a hang
  (stopped after ``NPU_SMI_TIMEOUT_S``), or output that is not the table. Callers
  to whom npu-smi is optional catch it.
* :func:`parse_npu_smi_info` (pure): the text of ``npu-smi info`` -> NpuSmiInfo.
  ``NpuChip.device_memory_total_mb`` is the memory a training job can use (HBM,
  or the DDR of cards without HBM such as the 310P).
* ``DEVICE_NODES`` -> :class:`DeviceNodes` (``/dev/davinci*`` and the control nodes).
* ``ASCEND_ENV`` -> :class:`AscendEnv`: what set_env.sh sets, as the TARGET
  interpreter's process saw it (``ctx.target.env``), with every gap listed.

Formats and facts: docs/sources.md (set_env.sh, npu-smi, what MindSpore's own checker reads, the
libge_runner.so fallback to CPU, npu-smi in containers); test fixtures under
tests/data/npu_smi/ are real outputs (sources in tests/data/npu_smi/SOURCES.md).
Fixed system paths go through ``host_path`` so tests can point MSDOCTOR_SYSROOT
at a fixture tree.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from msdoctor.context import FactSpec
from msdoctor.facts.sysroot import host_path

# one import path for every Ascend fact: npu-smi and set_env.sh live in their own modules
from msdoctor.facts.ascend_env import (
    ASCEND_ENV,
    DRIVER_DIR,
    SET_ENV_CANDIDATES,
    SET_ENV_VARIABLES,
    TBE_IMPL,
    AscendEnv,
    EnvGap,
    ascend_env,
)
from msdoctor.facts.npu_smi import (
    NPU_SMI,
    NPU_SMI_TIMEOUT_S,
    NpuChip,
    NpuProcess,
    NpuSmiFailed,
    NpuSmiInfo,
    NpuSmiParseError,
    dcmi_error,
    find_npu_smi,
    parse_npu_smi_info,
    run_npu_smi,
)

__all__ = [
    "ASCEND_ENV",
    "CONTROL_NODES",
    "DEVICE_NODES",
    "DRIVER_DIR",
    "NPU_SMI",
    "NPU_SMI_TIMEOUT_S",
    "SET_ENV_CANDIDATES",
    "SET_ENV_VARIABLES",
    "TBE_IMPL",
    "AscendEnv",
    "DeviceNodes",
    "EnvGap",
    "NpuChip",
    "NpuProcess",
    "NpuSmiFailed",
    "NpuSmiInfo",
    "NpuSmiParseError",
    "ascend_env",
    "dcmi_error",
    "find_npu_smi",
    "parse_npu_smi_info",
    "read_device_nodes",
    "run_npu_smi",
]


# -- device nodes ---------------------------------------------------------------
CONTROL_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
_DAVINCI_RE = re.compile(r"^davinci(\d+)$")


@dataclass
class DeviceNodes:
    """Ascend device nodes under /dev (a container needs all of them: https://github.com/Ascend/cann-container-image/issues/46).

    Attributes:
        dev_dir: the directory read (host /dev, or the fixture tree's).
        davinci: ids N of /dev/davinciN, sorted.
        control: each of davinci_manager, devmm_svm, hisi_hdc -> present.
    """

    dev_dir: str
    davinci: list[int]
    control: dict[str, bool]

    @property
    def any(self) -> bool:
        return bool(self.davinci) or any(self.control.values())

    @property
    def missing_control(self) -> list[str]:
        return [n for n, ok in self.control.items() if not ok]


def read_device_nodes(dev_dir: Path) -> DeviceNodes:
    try:
        names = os.listdir(dev_dir)
    except OSError:
        names = []
    ids = sorted(int(m.group(1)) for m in (_DAVINCI_RE.match(n) for n in names) if m)
    return DeviceNodes(str(dev_dir), ids, {n: n in names for n in CONTROL_NODES})


DEVICE_NODES: FactSpec[DeviceNodes] = FactSpec(
    "ascend-device-nodes",
    lambda ctx: read_device_nodes(host_path(ctx.environ, "/dev")),
    description="Ascend device nodes",
)
