"""Static evidence for the GPU target: plugin CUDA versions, nvidia-smi, CUDA runtime and cuDNN (pure).

MindSpore 2.7-2.10 wheels carry GPU plugins for CUDA 11.1 and 11.6
(``lib/plugin/gpu11.1``, ``gpu11.6``); its checker takes the CUDA version from the
``libcudart.so.X.Y.Z`` the loader resolves and warns when cuDNN < 7.6, or < 8.0
with CUDA >= 11 (mindspore/run_check/_check_version.py). The driver's "CUDA Version" is the
newest runtime it supports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from msdoctor.checks.device_target.common import Verdict
from msdoctor.facts.nvidia import NvidiaInfo
from msdoctor.model import Finding, Status

GPU_DOC = "https://www.mindspore.cn/install (GPU: CUDA 11.1 with cuDNN 8.0.x, or CUDA 11.6 with cuDNN 8.5.x)"


@dataclass
class GpuFacts:
    plugin_cuda: list[str] = field(default_factory=list)  # CUDA versions of the GPU plugins ("11.1", "11.6")
    nvidia: Optional[NvidiaInfo] = None
    python_cmd: str = "python"
    wanted_devices: Optional[int] = None
    #: the driver version from its one source, msdoctor.facts.nvidia.driver_version (/proc, else nvidia-smi)
    driver: Optional[str] = None


def _vtuple(v: Optional[str]) -> tuple[int, ...]:
    out = []
    for part in (v or "").split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def _plugin(f: GpuFacts) -> list[Finding]:
    if f.plugin_cuda:
        return []
    return [
        Finding.fail(
            "the installed MindSpore has no GPU backend (no mindspore/lib/plugin/gpu* directory)",
            detail="Only wheels that carry the GPU plugin can run on NVIDIA GPUs (mindspore/lib/plugin/ in the wheel).",
            fix=f"{f.python_cmd} -m pip install --force-reinstall mindspore  (a unified wheel with lib/plugin/gpu11.x)",
            code="gpu-plugin-missing",
        )
    ]


def _smi(f: GpuFacts) -> list[Finding]:
    nv = f.nvidia
    if nv is None or nv.smi_path is None:
        return [
            Finding.fail(
                "no NVIDIA driver: nvidia-smi is not installed"
                + ("" if nv and nv.device_nodes else " and /dev/nvidia* is absent"),
                detail="Without the driver (libcuda.so) MindSpore's GPU plugin cannot load and MindSpore runs on CPU.",
                fix="install the NVIDIA driver (>= 450.80.02 for CUDA 11.1, >= 510.39.01 for CUDA 11.6); in a container "
                "run with --gpus all (NVIDIA Container Toolkit)",
                code="gpu-no-driver",
            )
        ]
    if nv.smi_error or not nv.gpus:
        return [
            Finding.fail(
                f"nvidia-smi lists no usable GPU: {nv.smi_error or 'empty list'}",
                detail="The driver does not answer or sees no GPU, so the CUDA runtime will not find a device.",
                fix='run `nvidia-smi` by hand: "couldn\'t communicate with the NVIDIA driver" means the kernel module is '
                "not loaded (reboot or reinstall the driver); in a container pass --gpus all",
                evidence={"nvidia_smi": nv.smi_path},
                code="gpu-smi-failed",
            )
        ]
    out = []
    if f.wanted_devices and len(nv.gpus) < f.wanted_devices:
        out.append(
            Finding.warn(
                f"the config asks for {f.wanted_devices} devices but nvidia-smi lists {len(nv.gpus)} GPU(s)",
                fix="lower the parallel degrees to the GPUs you have, or launch across nodes",
                evidence={"gpus": len(nv.gpus), "wanted": f.wanted_devices},
                code="gpu-too-few",
            )
        )
    return out


def _cuda(f: GpuFacts) -> list[Finding]:
    nv = f.nvidia
    if nv is None or not f.plugin_cuda:
        return []
    out = []
    lib = nv.cudart_loaded
    if lib is None:
        home = next((l for l in nv.cudart if l.found_via == "CUDA_HOME"), None)
        where = f" ({home.path} exists under CUDA_HOME but is not on the loader path)" if home else ""
        out.append(
            Finding.fail(
                f"no CUDA runtime (libcudart.so) on the loader path{where}",
                detail=f"MindSpore's GPU plugins need the CUDA {' or '.join(f.plugin_cuda)} runtime.",
                fix=(
                    f"export LD_LIBRARY_PATH={home.path.rsplit('/', 1)[0]}:$LD_LIBRARY_PATH"
                    if home
                    else f"install CUDA {f.plugin_cuda[-1]} ({GPU_DOC}) and add its lib64 to LD_LIBRARY_PATH"
                ),
                code="cudart-missing",
            )
        )
    elif lib.major_minor not in f.plugin_cuda:
        out.append(
            Finding.fail(
                f"the loader finds CUDA runtime {lib.version or '?'} ({lib.path}); MindSpore's GPU plugins are built for "
                f"CUDA {' / '.join(f.plugin_cuda)}",
                detail="MindSpore reads the CUDA version from the libcudart file name and loads the matching plugin; "
                "another major version cannot be loaded.",
                fix=f"install CUDA {f.plugin_cuda[-1]} and put its lib64 first on LD_LIBRARY_PATH ({GPU_DOC})",
                evidence={"cudart": lib.path, "version": lib.version, "plugins": f.plugin_cuda},
                code="cudart-mismatch",
            )
        )
    elif nv.cuda_driver_version and _vtuple(nv.cuda_driver_version) < _vtuple(lib.major_minor):
        out.append(
            Finding.fail(
                f"the NVIDIA driver supports CUDA up to {nv.cuda_driver_version}, older than the runtime {lib.major_minor}",
                detail='A CUDA runtime newer than the driver fails with "CUDA driver version is insufficient".',
                fix="upgrade the NVIDIA driver (>= 510.39.01 for CUDA 11.6)",
                evidence={"driver_cuda": nv.cuda_driver_version, "cudart": lib.version},
                code="driver-too-old",
            )
        )
    dnn = nv.cudnn_loaded
    if lib is not None and dnn is None:
        out.append(
            Finding.fail(
                "cuDNN (libcudnn.so) is not on the loader path",
                detail="MindSpore's GPU plugin needs cuDNN (8.0.x for CUDA 11.1, 8.5.x for CUDA 11.6).",
                fix=f"install cuDNN for CUDA {lib.major_minor} and add its directory to LD_LIBRARY_PATH ({GPU_DOC})",
                code="cudnn-missing",
            )
        )
    elif dnn is not None:
        v = _vtuple(dnn.version)
        if v and (v < (7, 6) or (v < (8, 0) and _vtuple(lib.major_minor if lib else None) >= (11,))):
            out.append(
                Finding.warn(
                    f"cuDNN {dnn.version} is older than MindSpore supports",
                    detail="MindSpore warns when cuDNN < 7.6, or < 8.0 with CUDA >= 11 (mindspore/run_check/_check_version.py).",
                    fix=f"install cuDNN 8.x for CUDA {lib.major_minor if lib else '11.x'}",
                    code="cudnn-old",
                )
            )
    return out


def evaluate_gpu(f: GpuFacts) -> Verdict:
    findings = _plugin(f) + _smi(f) + _cuda(f)
    nv = f.nvidia
    visible = len(nv.gpus) if nv and nv.gpus else None
    failing = [x for x in findings if x.status is Status.FAIL]
    if failing:
        return Verdict("GPU", False, f"GPU: not usable ({failing[0].title})", findings, visible)
    assert nv is not None  # _smi fails without it
    gpus = (
        f"{len(nv.gpus)} x {nv.gpus[0].name}, driver {f.driver or nv.driver_version} (CUDA <= {nv.cuda_driver_version})"
    )
    cudart, cudnn = nv.cudart_loaded, nv.cudnn_loaded
    proved = (
        f"static evidence for GPU: nvidia-smi lists {gpus}; the loader finds CUDA runtime "
        f"{cudart.version if cudart else '?'} and cuDNN {cudnn.version if cudnn else '?'}; MindSpore has GPU "
        f"plugins for CUDA {', '.join(f.plugin_cuda)}"
    )
    findings.insert(
        0,
        Finding.passed(
            f"GPU static evidence: {gpus}",
            proved=proved,
            evidence={"gpus": [g.name for g in nv.gpus], "cudart": cudart.path if cudart else None},
        ),
    )
    return Verdict("GPU", True, f"GPU: {gpus}", findings, visible)
