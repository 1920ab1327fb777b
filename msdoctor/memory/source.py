"""What a config file says about memory, in the estimator's terms (the readers' common output)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from msdoctor.memory.spec import ModelShape, Setup


@dataclass(frozen=True)
class DeviceCap:
    """A memory cap the config sets (MindSpore max_device_memory / runtime.device_memory)."""

    bytes: int
    text: str
    key: str
    line: Optional[int]


@dataclass
class Source:
    """What a config file says about memory, in the estimator's terms.

    Attributes:
        origins: estimator field name -> the key path it came from (for error locations).
        unknown: unknown keys, each with a did-you-mean or the known keys.
        relevant_unknown: the subset that may change the estimate (a typo in a
            memory-relevant section, or a near miss of such a section's name).
        notes: keys that have no effect, defaults filled in, what is not modelled.
        defaults: estimator field name -> the key path that would have set it (the field took its default).
    """

    path: Optional[Path]
    kind: str
    model: ModelShape
    setup: Setup
    target: Optional[str] = None
    cap: Optional[DeviceCap] = None
    devices: Optional[int] = None
    origins: dict = field(default_factory=dict)
    unknown: list = field(default_factory=list)
    relevant_unknown: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)

    def line_of(self, keys: tuple) -> Optional[int]:
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return None

    def key_of(self, fieldname: str) -> tuple:
        return tuple(self.origins.get(fieldname, (fieldname,)))


@dataclass(frozen=True)
class Overrides:
    """Command-line values that replace or complete the file's (``msdoctor memory`` options)."""

    seq_length: Optional[int] = None
    micro_batch_size: Optional[int] = None
    grad_accumulation: Optional[int] = None
    data_parallel: Optional[int] = None
    tensor_parallel: Optional[int] = None
    pipeline_stages: Optional[int] = None
    devices: Optional[int] = None
    recompute: Optional[str] = None
    optimizer_sharding: Optional[str] = None
    precision: Optional[str] = None
    param_dtype: Optional[str] = None
    device_target: Optional[str] = None
    micro_batch_num: Optional[int] = None
    sequence_parallel: Optional[bool] = None
    flash_attention: Optional[bool] = None
    dropout: Optional[bool] = None
    framework: Optional[str] = None
    master_weights: Optional[bool] = None
    grad_dtype: Optional[str] = None
    selective_ffn: Optional[bool] = None
    pretrained_model_dir: Optional[str] = None
    expert_parallel: Optional[int] = None
    stage_offsets: Optional[tuple] = None

    def given(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}
