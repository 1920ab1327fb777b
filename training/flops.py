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
    """Rough fp32 peak of this CPU: cores x GHz x FLOPs/cycle (2 FMA units x SIMD lanes x 2).

    AVX-512: 64 fp32 FLOPs/cycle/core, AVX2+FMA: 32 (Intel 64 and IA-32 Architectures
    Optimization Reference Manual, peak FLOPs per cycle tables). An upper bound: turbo, SMT
    siblings and a VM's vCPUs make it approximate, so CPU MFU is a rough figure.
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
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 16 if "avx" in flags else 8
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = cores
    tflops = n * max(mhz) * 1e6 * per_cycle / 1e12
    return tflops, f"estimate: {n} cores x {max(mhz):.0f} MHz x {per_cycle} fp32 FLOPs/cycle (/proc/cpuinfo)"


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
