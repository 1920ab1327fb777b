"""version-matrix rule 5: CUDA runtime and cuDNN the loader finds vs MindSpore's GPU plugins; the driver's CUDA.

MindSpore's own GPUEnvChecker takes the CUDA version from the file-name suffix of the
``libcudart.so.X.Y.Z`` the loader resolves for its GPU plugin and compares major.minor with its list
(mindspore/run_check/_check_version.py). Which libcudart/libcudnn the loader finds is one fact,
computed once in msdoctor/facts/nvidia.py (LD_LIBRARY_PATH first, then the ldconfig cache; nothing is
loaded): this module takes the NVIDIA fact's libraries that are on the loader's path.
The NVIDIA driver version is msdoctor.facts.nvidia.driver_version: /proc/driver/nvidia/version, else nvidia-smi.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Optional

from msdoctor.facts.sysroot import host_path

if TYPE_CHECKING:
    from msdoctor.facts.target import TargetFacts
    from msdoctor.facts.nvidia import NvidiaInfo
from msdoctor.matrix import Matrix
from msdoctor.model import Finding


@dataclass
class GpuFacts:
    nvidia: bool
    driver: Optional[str] = None
    #: "cudart" / "cudnn" -> [(major.minor, file)] in loader order
    libs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    plugin_cuda: list[str] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)


def read_gpu(
    environ: Mapping[str, str],
    ld_library_path: str,
    msdir: Optional[str],
    nvidia_info: Optional[Callable[[], Optional["NvidiaInfo"]]] = None,
) -> GpuFacts:
    """The GPU side of the matrix; ``nvidia_info`` gives the NVIDIA fact (the check passes the Context's),
    else the libraries are looked up here the same way, for ``ld_library_path``."""
    proc_version = host_path(environ, "/proc/driver/nvidia/version")
    nvidia = proc_version.exists() or host_path(environ, "/dev/nvidiactl").exists()
    plugin = _plugin_cuda(msdir)
    if not nvidia:  # nothing to compare: do not list the system library folders
        return GpuFacts(False, plugin_cuda=plugin)
    from msdoctor.facts import nvidia as nv

    info = nvidia_info() if nvidia_info is not None else None
    driver = nv.driver_version(info, environ)
    if info is None:
        env = {"LD_LIBRARY_PATH": ld_library_path}
        cache = nv.ldconfig_cache(environ)
        cudart, cudnn = (nv.find_libs(stem, env, environ, cache) for stem in ("libcudart.so", "libcudnn.so"))
    else:
        cudart, cudnn = info.cudart, info.cudnn
    libs = {
        name: [(lib.major_minor, lib.path) for lib in found if lib.on_loader_path and lib.major_minor]
        for name, found in (("cudart", cudart), ("cudnn", cudnn))
    }
    dirs = [d for d in ld_library_path.split(":") if d] + ["the ldconfig cache (ldconfig -p)"]
    return GpuFacts(nvidia, driver, libs, plugin, dirs)


def _plugin_cuda(msdir: Optional[str]) -> list[str]:
    """CUDA versions of the installed MindSpore's GPU plugins (lib/plugin/libmindspore_gpu.so.X.Y)."""
    try:
        names = sorted(os.listdir(os.path.join(msdir, "lib", "plugin"))) if msdir else []
    except OSError:
        return []
    return [m.group(1) for m in (re.match(r"^libmindspore_gpu\.so\.(\d+\.\d+)$", n) for n in names) if m]


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def evaluate_gpu(t: "TargetFacts", gpu: GpuFacts, m: Matrix, requested: Optional[str]) -> list[Finding]:
    ms = t.version_of("mindspore")
    if not gpu.nvidia or requested in ("Ascend", "CPU") or not ms:
        reason = (
            "no NVIDIA driver (/proc/driver/nvidia/version, /dev/nvidiactl)"
            if not gpu.nvidia
            else f"the run asks for {requested}"
            if requested in ("Ascend", "CPU")
            else "MindSpore is not installed"
        )
        return [Finding.skipped("CUDA versions not compared", reason=reason)]
    row = m.mindspore(ms)
    wanted = gpu.plugin_cuda or (list(row.cuda) if row else [])
    found = [v for v, _ in gpu.libs["cudart"]]
    evidence = {
        "pair": ["mindspore", "cuda"],
        "plugin_cuda": wanted,
        "cudart": gpu.libs["cudart"],
        "cudnn": gpu.libs["cudnn"],
        "driver": gpu.driver,
        "searched": gpu.searched,
    }
    if not wanted:
        return [
            Finding.warn(
                f"MindSpore {ms} carries no GPU plugin",
                detail="lib/plugin has no libmindspore_gpu.so.X.Y.",
                fix="install a MindSpore build with GPU support",
                evidence=evidence,
                code="no-gpu-plugin",
            )
        ]
    usable = [v for v in found if v in wanted]
    if not usable:
        return [
            Finding.fail(
                f"no CUDA {' / '.join(wanted)} runtime found for MindSpore {ms}"
                + (f" (found CUDA {', '.join(dict.fromkeys(found))})" if found else ""),
                detail=f"MindSpore's GPU plugins are built for CUDA {' / '.join(wanted)}; its loader needs libcudart.so of "
                "that version on LD_LIBRARY_PATH or in the system library path.",
                fix=f"install CUDA {wanted[-1]} and put its lib64 first: export LD_LIBRARY_PATH=/usr/local/cuda-{wanted[-1]}/lib64:$LD_LIBRARY_PATH",
                evidence=evidence,
                code="cuda-runtime",
            )
        ]
    cuda = usable[0]
    out: list[Finding] = []
    need = m.cuda(cuda)
    if need and gpu.driver and _ver(gpu.driver) < _ver(need.driver_min):
        out.append(
            Finding.fail(
                f"NVIDIA driver {gpu.driver} is too old for CUDA {cuda} (needs >= {need.driver_min})",
                detail="The CUDA runtime refuses to start on an older driver.",
                fix=f"upgrade the NVIDIA driver to {need.driver_min} or newer",
                evidence=evidence,
                code="cuda-driver",
            )
        )
    cudnn = [v for v, _ in gpu.libs["cudnn"]]
    if not cudnn:
        out.append(
            Finding.warn(
                f"no cuDNN library found for CUDA {cuda}",
                detail="MindSpore's GPU kernels need cuDNN.",
                fix=f"install cuDNN {' / '.join(need.cudnn) if need else '8.x'} for CUDA {cuda}",
                evidence=evidence,
                code="cudnn-missing",
            )
        )
    elif _ver(cudnn[0]) < (8, 0):
        out.append(
            Finding.warn(
                f"cuDNN {cudnn[0]} is older than 8.0, which CUDA >= 11 needs",
                fix=f"install cuDNN {' / '.join(need.cudnn) if need else '8.x'}",
                evidence=evidence,
                code="cudnn-old",
            )
        )
    if not out:
        out.append(
            Finding.passed(
                f"CUDA {cuda} runtime matches MindSpore {ms}'s GPU plugin",
                proved=(
                    f"{dict(gpu.libs['cudart'])[cuda]} (CUDA {cuda}) is on the loader's search path and MindSpore's GPU "
                    f"plugins are built for CUDA {', '.join(wanted)}; cuDNN {cudnn[0]} found"
                    + (f"; driver {gpu.driver} >= {need.driver_min}" if need and gpu.driver else "")
                ),
                evidence=evidence,
            )
        )
    return out
