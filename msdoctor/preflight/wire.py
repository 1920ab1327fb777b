"""Every rank's JSON to every rank over AllGather: lengths first, then the padded bytes. No pickle.

``mindspore.mint.distributed.all_gather_object`` works on CPU but unpickles what other ranks send;
``comm_func.all_gather_into_tensor`` has no CPU kernel (observed on MindSpore 2.7.0:
"The kernel InnerCommAllGather unregistered"). ``ops.AllGather`` on int32 works on mccl, HCCL and NCCL,
so the payload travels as int32 words: step 1 gathers each rank's byte length (one int32), step 2 the
UTF-8 bytes padded to the longest, 4 bytes per int32, little-endian.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable, Sequence

#: allgather(words) -> every rank's words concatenated in rank order (equal length on every rank)
AllGather = Callable[[Sequence[int]], Sequence[int]]

#: a rank's JSON larger than this is refused before it is sent (a runaway report, not a preflight)
MAX_BYTES = 64 << 20


def to_words(data: bytes, length: int) -> list[int]:
    """``data`` padded with zero bytes to ``length`` (a multiple of 4), as signed little-endian int32 words."""
    if length % 4 or len(data) > length:
        raise ValueError(f"cannot pack {len(data)} bytes into {length}")
    padded = data + b"\0" * (length - len(data))
    return list(struct.unpack(f"<{length // 4}i", padded))


def from_words(words: Sequence[int], nbytes: int) -> bytes:
    raw = struct.pack(f"<{len(words)}i", *(int(w) for w in words))
    return raw[:nbytes]


def gather_bytes(payload: bytes, allgather: AllGather) -> list[bytes]:
    """Every rank's payload, in rank order, on every rank (two collectives)."""
    if len(payload) > MAX_BYTES:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_BYTES}")
    lengths = [int(x) for x in allgather([len(payload)])]
    if any(n < 0 or n > MAX_BYTES for n in lengths):
        raise ValueError(f"implausible payload lengths gathered: {lengths}")
    longest = max(lengths) if lengths else 0
    padded = max(4, (longest + 3) // 4 * 4)
    words = list(allgather(to_words(payload, padded)))
    per = padded // 4
    if len(words) != per * len(lengths):
        raise ValueError(f"gathered {len(words)} words, expected {per} x {len(lengths)} ranks")
    return [from_words(words[r * per:(r + 1) * per], n) for r, n in enumerate(lengths)]


def gather_json(doc: Any, allgather: AllGather) -> list[Any]:
    """Every rank's JSON document, decoded, in rank order."""
    blob = json.dumps(doc, separators=(",", ":"), default=str, ensure_ascii=False).encode("utf-8")
    return [json.loads(b.decode("utf-8")) for b in gather_bytes(blob, allgather)]
