"""How MindFormers places the layers of a model on the pipeline stages: one function for every reader of a
training setup (the training-config check, the memory estimate and its validation).

MindFormers' ``LayerSetting`` (mindformers/models/utils.py, mindspore-lab/mindformers r1.5.0) takes
``model_config.offset`` (an int, one entry per stage, or ``pp_interleave_num`` rows of one per stage), requires it
to sum to L % (pp x vpp) before broadcasting it to (vpp, pp), and gives each chunk L // (pp x vpp) + its offset; a
stage holds the layers of its vpp chunks. DeepSeek's MTP layers are placed by the pipeline too
(``LayerSetting(num_layers + mtp_depth)``), so callers pass L = num_layers + mtp layers.
"""

from __future__ import annotations

from typing import Any, Optional


def _as_list(value: Any) -> Any:
    """Tuples (a frozen setup's copy of the offset) read as the lists the YAML gave."""
    if isinstance(value, tuple):
        return [_as_list(v) for v in value]
    return value


def stage_layers(layers: int, pp: int, vpp: int, offset: Any) -> tuple[Optional[list], str]:
    """Layers per stage as MindFormers' LayerSetting assigns them, or (None, why it refuses).

    mindformers/models/utils.py (r1.5.0) LayerSetting: the offset (an int, one per stage, or
    pp_interleave_num rows of one per stage) must sum to L % (pp x vpp) before it is broadcast to
    (vpp, pp); each chunk then gets L // (pp x vpp) + its offset.
    """
    offset = _as_list(offset)
    chunks = pp * vpp
    avg, rem = divmod(layers, chunks)
    if offset is None:
        offset = 0
    if isinstance(offset, bool):
        return None, "offset must be an integer or a list of integers"
    if isinstance(offset, int):
        total, grid = offset, [[offset] * pp for _ in range(vpp)]
    elif isinstance(offset, list) and offset and all(isinstance(x, list) for x in offset):
        if len(offset) != vpp or any(len(row) != pp for row in offset):
            return None, f"a 2-D offset needs {vpp} rows (pp_interleave_num) of {pp} entries (pipeline_stage)"
        if not all(isinstance(x, int) and not isinstance(x, bool) for row in offset for x in row):
            return None, "offset entries must be integers"
        total, grid = sum(sum(row) for row in offset), [list(row) for row in offset]
    elif isinstance(offset, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in offset):
        if len(offset) != pp:
            return None, f"offset has {len(offset)} entries, pipeline_stage is {pp}"
        total, grid = sum(offset), [list(offset) for _ in range(vpp)]
    else:
        return None, "offset must be an integer or a list of integers (one per pipeline stage)"
    if total != rem:
        return None, (
            f"the offsets sum to {total}, MindFormers needs {layers} % {chunks} = {rem}"
            + (" (the layers do not divide evenly; an offset list places the remainder)" if rem else "")
        )
    counts = [sum(avg + grid[v][s] for v in range(vpp)) for s in range(pp)]
    if min(counts) < 1:
        return None, f"a stage would get {min(counts)} layers"
    return counts, ""
