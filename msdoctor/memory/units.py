"""Byte sizes: parse "64GiB" / "58GB" / "65536MB", format bytes as GiB with the exact count."""

from __future__ import annotations

import re
from typing import Optional

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

# SI units (powers of 1000) and IEC units (powers of 1024). A bare number is bytes.
_SI = {
    "": 1,
    "B": 1,
    "K": 10**3,
    "KB": 10**3,
    "M": 10**6,
    "MB": 10**6,
    "G": 10**9,
    "GB": 10**9,
    "T": 10**12,
    "TB": 10**12,
}
_IEC = {"KIB": KIB, "MIB": MIB, "GIB": GIB, "TIB": TIB}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


class SizeError(ValueError):
    """A memory size that cannot be read."""


def parse_size(text: object, *, gb_is_gib: bool = False) -> int:
    """Bytes of a size such as "64GiB", "68.7GB", "65536MiB" or 68719476736.

    Args:
        text: the size; a bare number is bytes.
        gb_is_gib: read K/M/G/T(B) as powers of 1024, as MindSpore reads
            ``max_device_memory`` ("58GB" is 58 * 2**30 bytes: MindSpore's context
            parser multiplies the number before "GB" by 1024**3). Without it,
            "GB" is 10**9 and only "GiB" is 2**30.

    Raises:
        SizeError: not a positive size with a known unit.
    """
    if isinstance(text, bool):
        raise SizeError(f"{text!r} is not a memory size")
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise SizeError(f"{text!r} is not a memory size (write e.g. 64GiB, 58GB or 65536MiB)")
        value, unit = float(m.group(1)), m.group(2).upper()
    if unit in _IEC:
        factor = _IEC[unit]
    elif unit in _SI:
        factor = _SI[unit]
        if gb_is_gib and unit not in ("", "B"):
            factor = {"K": KIB, "M": MIB, "G": GIB, "T": TIB}[unit[0]]
    else:
        raise SizeError(f"{text!r}: unknown unit {unit!r} (use B, MB, GB, TB, MiB, GiB or TiB)")
    out = int(round(value * factor))
    if out <= 0:
        raise SizeError(f"{text!r} is not a positive memory size")
    return out


def gib(n: float) -> float:
    return n / GIB


def fmt_gib(n: Optional[float], digits: int = 2) -> str:
    """``12.34 GiB`` (None: ``unknown``)."""
    if n is None:
        return "unknown"
    return f"{n / GIB:.{digits}f} GiB"


def fmt_bytes(n: Optional[float]) -> str:
    """A size for a person: GiB for large values, MiB / KiB / B for small ones."""
    if n is None:
        return "unknown"
    a = abs(n)
    if a >= GIB:
        return f"{n / GIB:.2f} GiB"
    if a >= MIB:
        return f"{n / MIB:.1f} MiB"
    if a >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{int(n)} B"


def fmt_count(n: float) -> str:
    """A parameter count: 6.74B, 131.1M, 4096."""
    a = abs(n)
    if a >= 1e9:
        return f"{n / 1e9:.2f}B"
    if a >= 1e6:
        return f"{n / 1e6:.1f}M"
    if a >= 1e4:
        return f"{n / 1e3:.1f}K"
    return f"{int(n)}"
