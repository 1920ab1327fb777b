"""NVIDIA facts: GPUs and driver from nvidia-smi, and the CUDA runtime / cuDNN the loader would find.

Public API:

* ``NVIDIA`` -> :class:`NvidiaInfo`, or None when the host shows no sign of
  NVIDIA at all (no nvidia-smi, no /dev/nvidia* node, no libcudart found).

  - ``smi_path``: the nvidia-smi that was run (None: not installed).
  - ``gpus``: list of :class:`NvidiaGpu` (index, name, memory_total_mb,
    memory_used_mb, driver_version) from
    ``nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version
    --format=csv,noheader,nounits``; empty when nvidia-smi failed.
  - ``driver_version``: the driver version (first GPU's row).
  - ``cuda_driver_version``: "CUDA Version: X.Y" of plain ``nvidia-smi``'s header:
    the newest CUDA runtime this driver supports.
  - ``smi_error``: why nvidia-smi gave no GPUs (failed, hung, printed nothing), else None.
  - ``cudart`` / ``cudnn``: every ``libcudart.so.*`` / ``libcudnn.so.*`` found, as
    :class:`CudaLib` (path, version from the real file name, found_via
    "LD_LIBRARY_PATH" | "ldconfig" | "CUDA_HOME", on_loader_path). The first one
    with ``on_loader_path`` is what the dynamic loader picks; CUDA_HOME is not on
    the loader's path, it is reported so a fix can name it.
  - ``device_nodes``: /dev/nvidia* names present.
  - ``cudart_version`` / ``cudnn_version`` properties: "major.minor" of what the loader picks.

* Pure helpers: :func:`parse_gpu_query`, :func:`parse_cuda_version`,
  :func:`parse_ldconfig`, :func:`lib_version`.

How MindSpore itself decides (mindspore/run_check/_check_version.py in the 2.7.0-2.10.0 wheels; docs/sources.md): the CUDA
version is the file-name suffix of the ``libcudart.so.X.Y.Z`` that ``ldd`` of the GPU
plugin resolves; plugins exist for CUDA 11.1 and 11.6; cuDNN < 7.6 (or < 8.0 with
CUDA >= 11) is warned about. The environment read is the TARGET process's
(``ctx.target.env``); fixed paths go through ``host_path`` for fixture trees.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Mapping, Optional

from msdoctor import proc
from msdoctor.context import Context, FactSpec, FactUnavailable
from msdoctor.facts.sysroot import host_path

NVIDIA_SMI_TIMEOUT_S = 15.0
QUERY = "--query-gpu=index,name,memory.total,memory.used,driver_version"


@dataclass
class NvidiaGpu:
    index: int
    name: str
    memory_total_mb: Optional[int]
    memory_used_mb: Optional[int]
    driver_version: Optional[str]


@dataclass
class CudaLib:
    """One CUDA runtime or cuDNN library file found on the host."""

    path: str  # as named in the directory searched (may be a symlink such as libcudart.so.11.0)
    version: Optional[str]  # from the real file's name: "11.6.55" (libcudart.so.11.6.55)
    found_via: str  # "LD_LIBRARY_PATH" | "ldconfig" | "CUDA_HOME"
    on_loader_path: bool

    @property
    def major_minor(self) -> Optional[str]:
        if not self.version:
            return None
        parts = self.version.split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else parts[0]


@dataclass
class NvidiaInfo:
    smi_path: Optional[str]
    gpus: list[NvidiaGpu] = field(default_factory=list)
    driver_version: Optional[str] = None
    cuda_driver_version: Optional[str] = None
    smi_error: Optional[str] = None
    cudart: list[CudaLib] = field(default_factory=list)
    cudnn: list[CudaLib] = field(default_factory=list)
    device_nodes: list[str] = field(default_factory=list)

    @staticmethod
    def _loaded(libs: list[CudaLib]) -> Optional[CudaLib]:
        for lib in libs:
            if lib.on_loader_path:
                return lib
        return None

    @property
    def cudart_loaded(self) -> Optional[CudaLib]:
        return self._loaded(self.cudart)

    @property
    def cudnn_loaded(self) -> Optional[CudaLib]:
        return self._loaded(self.cudnn)

    @property
    def cudart_version(self) -> Optional[str]:
        lib = self.cudart_loaded
        return lib.major_minor if lib else None

    @property
    def cudnn_version(self) -> Optional[str]:
        lib = self.cudnn_loaded
        return lib.version if lib else None


# -- parsing (pure) -------------------------------------------------------------
def _int(text: str) -> Optional[int]:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None  # "[N/A]", "N/A", "[Not Supported]"


def parse_gpu_query(text: str) -> list[NvidiaGpu]:
    """Rows of ``--query-gpu=index,name,memory.total,memory.used,driver_version --format=csv,noheader,nounits``.

    Fields are separated by ", " (names contain spaces, never commas); an
    unavailable value reads "[N/A]" / "N/A" and becomes None. Lines that are not
    rows (warnings, blank lines) are skipped.
    """
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5 or _int(parts[0]) is None:
            continue
        driver = parts[4] if parts[4] and "N/A" not in parts[4] else None
        gpus.append(NvidiaGpu(int(parts[0]), parts[1], _int(parts[2]), _int(parts[3]), driver))
    return gpus


_CUDA_RE = re.compile(r"CUDA Version:\s*(\d+\.\d+)")


def parse_cuda_version(header: str) -> Optional[str]:
    """The "CUDA Version: X.Y" of plain ``nvidia-smi`` output (the driver's newest CUDA)."""
    m = _CUDA_RE.search(header)
    return m.group(1) if m else None


_LDCONFIG_RE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


def parse_ldconfig(text: str) -> list[tuple[str, str]]:
    """(library name, path) pairs of ``ldconfig -p`` output, in cache order."""
    out = []
    for line in text.splitlines():
        m = _LDCONFIG_RE.match(line)
        if m:
            out.append((m.group(1), m.group(3)))
    return out


def lib_version(filename: str, stem: str) -> Optional[str]:
    """ "11.6.55" from "libcudart.so.11.6.55" (stem "libcudart.so"); None for the bare .so."""
    base = os.path.basename(filename)
    if not base.startswith(stem + "."):
        return None
    version = base[len(stem) + 1 :]
    return version if re.fullmatch(r"\d+(\.\d+)*", version) else None


# -- gathering ------------------------------------------------------------------
def _real_version(host_file: str, shown: str, stem: str) -> Optional[str]:
    """The version of the real file behind a (possibly symlinked) library name."""
    try:
        real = os.path.realpath(host_file)
    except OSError:
        real = host_file
    return lib_version(real, stem) or lib_version(shown, stem)


def _scan_dir(d: str, stem: str, environ: Mapping[str, str], via: str, on_path: bool) -> list[CudaLib]:
    host_dir = host_path(environ, d)
    try:
        names = sorted(os.listdir(host_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name == stem or name.startswith(stem + "."):
            if name != stem and lib_version(name, stem) is None:
                continue
            shown = os.path.join(d, name)
            out.append(CudaLib(shown, _real_version(str(host_dir / name), shown, stem), via, on_path))
    # one entry per real file: the soname symlink and the versioned file are the same library
    seen: set[Optional[str]] = set()
    unique = []
    for lib in sorted(out, key=lambda x: -len(x.version or "")):
        if lib.version in seen:
            continue
        seen.add(lib.version)
        unique.append(lib)
    return unique


def find_libs(
    stem: str, env: Mapping[str, str], environ: Mapping[str, str], ldconfig: list[tuple[str, str]]
) -> list[CudaLib]:
    """Every ``stem`` library in loader order: LD_LIBRARY_PATH, the ldconfig cache, then CUDA_HOME."""
    found: list[CudaLib] = []
    seen_dirs: set[str] = set()
    for d in [e for e in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if e]:
        if d not in seen_dirs and os.path.isabs(d):
            seen_dirs.add(d)
            found += _scan_dir(d, stem, environ, "LD_LIBRARY_PATH", True)
    for name, path in ldconfig:
        if name.startswith(stem) and os.path.dirname(path) not in seen_dirs:
            d = os.path.dirname(path)
            seen_dirs.add(d)
            found += _scan_dir(d, stem, environ, "ldconfig", True)
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home:
        for sub in ("lib64", "lib"):
            d = os.path.join(home, sub)
            if d not in seen_dirs:
                seen_dirs.add(d)
                found += _scan_dir(d, stem, environ, "CUDA_HOME", False)
    return found


def find_tool(name: str, environ: Mapping[str, str], fixed: tuple[str, ...]) -> Optional[str]:
    found = shutil.which(name, path=environ.get("PATH", ""))
    if found:
        return found
    for p in fixed:
        cand = host_path(environ, p)
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def ldconfig_cache(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(soname, path) of the dynamic loader's cache, as ``ldconfig -p`` lists it."""
    exe = find_tool("ldconfig", environ, ("/sbin/ldconfig", "/usr/sbin/ldconfig"))
    if exe is None:
        return []
    res = proc.run([exe, "-p"], timeout=5.0, env=environ)
    return parse_ldconfig(res.stdout) if res.ok else []


def _run_smi(
    path: str, environ: Mapping[str, str], timeout: float
) -> tuple[list[NvidiaGpu], Optional[str], Optional[str]]:
    """(gpus, cuda_driver_version, error) from the two nvidia-smi calls."""
    q = proc.run([path, QUERY, "--format=csv,noheader,nounits"], timeout=timeout, env=environ)
    if not q.ok:
        detail = (q.stderr or q.stdout).strip().splitlines()
        return [], None, q.describe_failure() if not detail else f"nvidia-smi failed: {detail[-1]}"
    gpus = parse_gpu_query(q.stdout)
    h = proc.run([path], timeout=timeout, env=environ)
    cuda = parse_cuda_version(h.stdout) if h.ok else None
    if not gpus:
        return [], cuda, "nvidia-smi listed no GPU"
    return gpus, cuda, None


#: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..." in /proc/driver/nvidia/version, which "lists
#: the installed driver revision" (http://http.download.nvidia.com/XFree86/Linux-x86_64/460.80/README/procinterface.html)
_PROC_DRIVER_RE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")


def proc_driver_version(environ: Mapping[str, str]) -> Optional[str]:
    """The loaded kernel driver's version from /proc/driver/nvidia/version (host paths through ``environ``)."""
    try:
        m = _PROC_DRIVER_RE.search(host_path(environ, "/proc/driver/nvidia/version").read_text(errors="replace"))
    except OSError:
        return None
    return m.group(1) if m else None


def gather(
    env: Mapping[str, str], environ: Mapping[str, str], timeout: float = NVIDIA_SMI_TIMEOUT_S
) -> Optional[NvidiaInfo]:
    """NVIDIA facts for a target process environment ``env`` (host paths through ``environ``)."""
    smi = find_tool("nvidia-smi", environ, ("/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"))
    try:
        nodes = sorted(n for n in os.listdir(host_path(environ, "/dev")) if re.fullmatch(r"nvidia(\d+|ctl|-uvm)", n))
    except OSError:
        nodes = []
    ldcache = ldconfig_cache(environ)
    cudart = find_libs("libcudart.so", env, environ, ldcache)
    if smi is None and not nodes and not cudart:
        return None
    info = NvidiaInfo(
        smi_path=smi, device_nodes=nodes, cudart=cudart, cudnn=find_libs("libcudnn.so", env, environ, ldcache)
    )
    if smi is None:
        info.smi_error = "nvidia-smi is not installed"
        return info
    info.gpus, info.cuda_driver_version, info.smi_error = _run_smi(smi, environ, timeout)
    info.driver_version = next((g.driver_version for g in info.gpus if g.driver_version), None)
    return info


def driver_version(info: Optional[NvidiaInfo], environ: Mapping[str, str]) -> Optional[str]:
    """The NVIDIA driver version, one answer for every reader: the loaded kernel module's
    (/proc/driver/nvidia/version), else what nvidia-smi reports."""
    return proc_driver_version(environ) or (info.driver_version if info is not None else None)


def _compute(ctx: Context) -> Optional[NvidiaInfo]:
    try:
        env = ctx.target.env
    except FactUnavailable:  # the probe failed: fall back to msdoctor's environment
        env = ctx.environ
    timeout = float(ctx.options.extra.get("nvidia_smi_timeout_s", NVIDIA_SMI_TIMEOUT_S))
    return gather(env, ctx.environ, timeout)


#: GPUs, driver, CUDA runtime and cuDNN; None when the host shows no sign of NVIDIA.
NVIDIA: FactSpec[Optional[NvidiaInfo]] = FactSpec("nvidia", _compute, description="NVIDIA GPUs and CUDA libraries")


def _compute_host(ctx: Context) -> Optional[NvidiaInfo]:
    if ctx.has(NVIDIA):
        return ctx.get(NVIDIA)
    timeout = float(ctx.options.extra.get("nvidia_smi_timeout_s", NVIDIA_SMI_TIMEOUT_S))
    return gather(ctx.environ, ctx.environ, timeout)


#: The same from msdoctor's own environment, without the target probe (``msdoctor memory``).
NVIDIA_HOST: FactSpec[Optional[NvidiaInfo]] = FactSpec(
    "nvidia-host", _compute_host, description="NVIDIA GPUs seen from msdoctor's environment"
)
