"""Typed reading of a parsed config (``msdoctor.docfile.Document``) with each value's key and line.

Wrong types become ``Problem``s at the key's file:line; unknown keys are listed with a
did-you-mean. Shared by the MindFormers, Hugging Face and msdoctor readers.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from msdoctor.docfile import Document
from msdoctor.memory.source import DeviceCap
from msdoctor.memory.spec import TARGETS, Setup
from msdoctor.memory.units import SizeError, parse_size
from msdoctor.domain.problems import ConfigError, Problem


@dataclass
class Partial:
    """What a reader could read of a file it could not read whole: the layout (batch, parallel degrees,
    precision, optimizer, recompute) does not depend on the model shape, so the training-config rules can
    still use it. ``setup`` is None when not even that could be read."""

    setup: Optional[Setup]
    target: Optional[str] = None
    devices: Optional[int] = None
    origins: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    unknown: list = field(default_factory=list)


class SourceError(ConfigError):
    """A file the reader could not read whole: the problems (each with file:line) and what it did read."""

    def __init__(self, path: Optional[Path], problems: list, partial: Optional[Partial] = None) -> None:
        super().__init__(path, problems)
        self.partial = partial


DTYPE_NAMES = {
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
}


class Reader:
    """Typed access to a Document's values; wrong types become problems at the key's line."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.origins: dict[str, tuple] = {}
        #: field -> the key that would have set it, for fields that took their default (for messages)
        self.defaults: dict[str, tuple] = {}

    def section(self, *path: str) -> dict:
        node: Any = self.doc.data
        for p in path:
            node = node.get(p) if isinstance(node, dict) else None
        if node is None:
            return {}
        if not isinstance(node, dict):
            self.problems.append(
                Problem(path, f"must be a mapping of keys, got {type(node).__name__}", None, self.doc.line_of(*path))
            )
            return {}
        return node

    def find(self, path: tuple, names: tuple) -> tuple[Any, Optional[tuple]]:
        sec = self.section(*path)
        for n in names:
            if n in sec and sec[n] is not None:
                return sec[n], path + (n,)
        return None, None

    def _absent(self, fieldname: str, path: tuple, names: tuple) -> None:
        if fieldname not in self.origins and names:
            self.defaults.setdefault(fieldname, path + (names[0],))

    def bad(self, keys: tuple, msg: str, value: Any) -> None:
        self.problems.append(Problem(keys, msg, value, self.doc.line_of(*keys)))

    def int(self, fieldname: str, path: tuple, names: tuple, default: Optional[int] = None) -> Optional[int]:
        value, keys = self.find(path, names)
        if keys is None:
            self._absent(fieldname, path, names)
            return default
        self.origins[fieldname] = keys
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            self.bad(keys, "expected an integer", value)
            return default
        return value

    def bool(self, fieldname: str, path: tuple, names: tuple, default: bool = False) -> bool:
        value, keys = self.find(path, names)
        if keys is None:
            self._absent(fieldname, path, names)
            return default
        self.origins[fieldname] = keys
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            self.bad(keys, "expected true or false", value)
            return default
        return value

    def number(self, fieldname: str, path: tuple, names: tuple, default: float = 0.0) -> float:
        value, keys = self.find(path, names)
        if keys is None:
            self._absent(fieldname, path, names)
            return default
        self.origins[fieldname] = keys
        try:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        except (TypeError, ValueError):
            self.bad(keys, "expected a number", value)
            return default

    def dtype(self, fieldname: str, path: tuple, names: tuple, default: str) -> str:
        value, keys = self.find(path, names)
        if keys is None:
            self._absent(fieldname, path, names)
            return default
        self.origins[fieldname] = keys
        got = DTYPE_NAMES.get(str(value).strip().lower())
        if got is None:
            self.bad(keys, "expected a dtype: float16, bfloat16 or float32", value)
            return default
        return got


#: unknown keys that get a did-you-mean (difflib is quadratic in the key's length and linear in the
#: known keys); past these, unknown keys are listed without one
MAX_HINTS = 64
MAX_HINT_KEY = 80


def did_you_mean(key: str, known: Any) -> str:
    if len(str(key)) > MAX_HINT_KEY:
        return ""
    close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def unknown_keys(
    doc: Document,
    path: tuple,
    known: frozenset,
    out: list,
    relevant: list,
    is_relevant: bool,
    relevant_names: tuple = (),
) -> None:
    node: Any = doc.data
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return
    for key in node:
        if key in known:
            continue
        keys = path + (key,)
        hinted = len(out) < MAX_HINTS
        hint = did_you_mean(key, known) if hinted else ""
        msg = "unknown key, not read by the memory estimate" + (f"; {hint}" if hint else "")
        problem = Problem(keys, msg, None, doc.line_of(*keys))
        out.append(problem)
        near_relevant = (
            hinted
            and bool(relevant_names)
            and len(str(key)) <= MAX_HINT_KEY
            and bool(difflib.get_close_matches(str(key), relevant_names, n=1, cutoff=0.75))
        )
        if is_relevant or near_relevant:
            relevant.append(problem)


def target_of(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    for t in TARGETS:
        if value.strip().lower() == t.lower():
            return t
    return None


def cap_of(r: Reader, path: tuple, names: tuple) -> Optional[DeviceCap]:
    value, keys = r.find(path, names)
    if keys is None:
        return None
    r.origins["device_memory"] = keys
    try:
        n = parse_size(value, gb_is_gib=True)
    except SizeError as exc:
        r.bad(keys, f"{exc}", None)
        return None
    return DeviceCap(n, str(value), ".".join(keys), r.doc.line_of(*keys))
