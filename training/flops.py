"""Model FLOPs per token and device peaks, for the MFU estimate the trainer logs.

MFU (model FLOPs utilisation) = achieved model FLOP/s / peak FLOP/s of the devices, with model
FLOPs counted from the shape alone (PaLM, Chowdhery et al. 2022, arXiv 2204.02311, appendix B):
6 FLOPs per matmul parameter per token (2 forward, 4 backward) plus 12 * layers * hidden * seq
for attention scores and the weighted sum. Recompute is not counted (that would be HFU).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from .config import ModelConfig

#: peak dense 16-bit TFLOP/s per device (no sparsity). Override with runtime.device_peak_tflops.
PEAK_TFLOPS: dict[str, tuple[float, str]] = {
    # Huawei publishes the original Ascend 910 only; 910B SKUs are third-party figures.
    "910A": (256.0, "Huawei, Hot Chips 31 (2019) 'DaVinci' slides: Ascend 910 FP16 256 TFLOPS"),
    "910B1": (414.0, "third-party (no Huawei datasheet): 910B1 FP16 ~414 TFLOPS"),
    "910B2": (376.0, "third-party (no Huawei datasheet): 910B2 FP16 ~376 TFLOPS"),
    "910B3": (313.0, "third-party (no Huawei datasheet): 910B3 FP16 ~313 TFLOPS"),
    "910B4": (280.0, "third-party (no Huawei datasheet): 910B4 FP16 ~280 TFLOPS"),
    "A100": (312.0, "NVIDIA A100 Tensor Core GPU datasheet: BF16 312 TFLOPS dense"),
    "H100": (989.0, "NVIDIA H100 SXM datasheet: BF16 1979 TFLOPS with sparsity, 989 dense"),
    "H200": (989.0, "NVIDIA H200 datasheet: BF16 1979 TFLOPS with sparsity, 989 dense"),
}


def matmul_params(m: ModelConfig, vocab: int) -> int:
    """Parameters that take part in a matmul per token: q,k,v,o, FFN, LM head (not the lookup)."""
    h, d = m.hidden_size, m.head_dim
    attn = h * (m.num_heads * d) * 2 + h * (m.kv_heads * d) * 2
    ffn = h * m.ffn_size * (3 if m.activation == "swiglu" else 2)
    return m.num_layers * (attn + ffn) + h * vocab  # the head runs even when tied to the embedding


def flops_per_token(m: ModelConfig, seq_length: int, vocab: int) -> float:
    """Training FLOPs per token: 6 N + 12 L h s (PaLM appendix B; nanoGPT estimate_mfu)."""
    return 6.0 * matmul_params(m, vocab) + 12.0 * m.num_layers * m.hidden_size * seq_length


def cpu_peak_tflops(cpuinfo: Optional[str] = None, cores: Optional[int] = None) -> Optional[tuple[float, str]]:
    """Rough fp32 peak of this CPU: cores x GHz x FLOPs/cycle (FMA units x SIMD lanes x 2), an upper bound.

    FLOPs per cycle and core follow the microarchitecture, not only the instruction set:

    * AVX2 + FMA (Haswell and later, AMD Zen 1-4): 2 FMA units x 8 lanes x 2 = 32.
    * AVX-512 on AMD Zen 4 (family 19h) runs on 256-bit datapaths, two passes per 512-bit
      instruction (AMD Software Optimization Guide for Family 19h Processors, pub. 57647): still 32.
    * AVX-512 on Zen 5 (family 1Ah) and on Intel cores with two 512-bit FMA units: 64. Several
      Xeon Silver/Bronze/Gold 5xxx parts and client Ice Lake have one (Intel 64 and IA-32
      Architectures Optimization Reference Manual): 32 there, so for Intel AVX-512 the figure is
      an upper bound by up to 2x, and says so.

    Turbo clocks, SMT siblings and a VM's vCPUs make every figure approximate: CPU MFU is rough.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return None
    found = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    flags = set(found.group(1).split()) if found else set()
    mhz = [float(x) for x in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo, re.M)]
    if not mhz:
        return None
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M)
    family = re.search(r"^cpu family\s*:\s*(\d+)", cpuinfo, re.M)
    amd_family = int(family.group(1)) if family and vendor and vendor.group(1) == "AuthenticAMD" else None
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 16 if "avx" in flags else 8
    bound = ""
    if per_cycle == 64 and amd_family is not None and amd_family < 0x1A:
        per_cycle = 32  # Zen 4: AVX-512 on 256-bit units
    elif per_cycle == 64 and amd_family is None:
        bound = ", an upper bound: Intel cores with one 512-bit FMA unit do 32"
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = cores
    tflops = n * max(mhz) * 1e6 * per_cycle / 1e12
    return tflops, f"estimate: {n} cores x {max(mhz):.0f} MHz x {per_cycle} fp32 FLOPs/cycle (/proc/cpuinfo{bound})"


def peak_tflops(device_target: str, configured: Optional[float], chip_name: str = "") -> Optional[tuple[float, str]]:
    """(peak TFLOP/s per device, where the figure comes from), or None when unknown."""
    if configured:
        return configured, "runtime.device_peak_tflops"
    if device_target == "CPU":
        return cpu_peak_tflops()
    for key, value in PEAK_TFLOPS.items():
        if key.lower() in chip_name.lower():
            return value
    return None


def mfu(tokens_per_s: float, per_token: float, devices: int, peak: Optional[float]) -> Optional[float]:
    """Achieved model FLOP/s over the devices' peak (None without a peak)."""
    if not peak or tokens_per_s <= 0:
        return None
    return tokens_per_s * per_token / (devices * peak * 1e12)
