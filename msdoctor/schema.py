"""Shape checks for the JSON documents users hand to msdoctor (plans, baselines, reports).

A document that parses can still be the wrong shape: ``"worker_num": "8"`` in a hand-edited plan, a list where
an object belongs. Every reader asks here first, so a wrong field is exit 2 with the file, the line, the field
and what was expected, never a ``TypeError`` deep in the comparison (exit 3).

A spec is a small tree: a :class:`Shape` per value, objects with their fields, lists with their item shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from msdoctor.docfile import Document, KeyPath
from msdoctor.errors import UserError

#: the JSON kind of each type json.loads produces (a bool is a boolean, not an integer)
_KIND = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "list"}


def kind_of(value: Any) -> str:
    """The JSON kind of a parsed value: object, list, string, integer, number, boolean or null."""
    return _KIND.get(type(value), "null")


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind if kind != "null" else "null"


@dataclass(frozen=True)
class Shape:
    """What one value must be.

    Attributes:
        kinds: the accepted kinds (``"number"`` accepts integers too).
        fields: for objects, the known fields and their shapes (others are allowed and not checked).
        required: for objects, the fields that must be present.
        items: for lists, every item's shape.
        values: for objects whose keys are free (``busbw_gbs``), every value's shape.
        low, high: for numbers, the inclusive range.
    """

    kinds: tuple[str, ...]
    fields: Mapping[str, "Shape"] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Optional["Shape"] = None
    values: Optional["Shape"] = None
    low: Optional[float] = None
    high: Optional[float] = None


def dotted(path: KeyPath) -> str:
    """``("args", "worker_num")`` -> ``args.worker_num``; list indices in brackets."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the document"


def problem(value: Any, shape: Shape, path: KeyPath = ()) -> Optional[tuple[KeyPath, str]]:
    """The first place where ``value`` is not ``shape`` (its key path and what is wrong), or None."""
    stack: list[tuple[Any, Shape, KeyPath]] = [(value, shape, path)]
    while stack:
        v, s, p = stack.pop()
        got = kind_of(v)
        ok = got in s.kinds or (got == "integer" and "number" in s.kinds)
        if not ok:
            want = " or ".join(_article(k) for k in s.kinds)
            return p, f"{dotted(p)} is {_article(got)}" + (
                f" ({v!r})" if got in ("string", "integer", "number", "boolean") else ""
            ) + f", expected {want}"
        if got in ("integer", "number"):
            if (s.low is not None and v < s.low) or (s.high is not None and v > s.high):
                lo = "" if s.low is None else f"{s.low:g}"
                hi = "" if s.high is None else f"{s.high:g}"
                return p, f"{dotted(p)} is {v!r}, outside {lo}..{hi}"
        if got == "object":
            for name in s.required:
                if name not in v:
                    return p, f"{dotted(p + (name,))} is missing"
            later: list[tuple[Any, Shape, KeyPath]] = []
            for name, sub in s.fields.items():
                if name in v:
                    later.append((v[name], sub, p + (name,)))
            if s.values is not None:
                later.extend((sub_v, s.values, p + (str(k),)) for k, sub_v in v.items())
            stack.extend(reversed(later))
        elif got == "list" and s.items is not None:
            stack.extend(reversed([(item, s.items, p + (i,)) for i, item in enumerate(v)]))
    return None


def require(doc: Document, shape: Shape, *, what: str, fix: str) -> Any:
    """``doc.data`` when it has ``shape``; UserError (exit 2) naming file:line, the field and the fix otherwise."""
    found = problem(doc.data, shape)
    if found is None:
        return doc.data
    path, why = found
    where = doc.where(*path) if path else f"{doc.path}:1"  # the root object starts the document
    raise UserError(f"{where}: not {what}: {why}", fix)


INTEGER = Shape(("integer",))
COUNT = Shape(("integer",), low=0)
TEXT = Shape(("string",))
NUMBER = Shape(("number",))

#: ``msdoctor preflight plan --format json``'s output, as ``preflight compare`` reads it
PLAN = Shape(
    ("object",),
    required=("args",),
    fields={
        "args": Shape(
            ("object",),
            required=("worker_num", "local_worker_num", "node_rank"),
            fields={
                "worker_num": Shape(("integer",), low=1),
                "local_worker_num": COUNT,
                "node_rank": COUNT,
                "master_addr": TEXT,
                "master_port": Shape(("integer",), low=0, high=65535),
                "cluster_time_out": COUNT,
            },
        ),
        "status": TEXT,
        "findings": Shape(("list",), items=Shape(("object",), fields={"title": TEXT, "status": TEXT})),
    },
)

#: a busbw baseline for ``preflight --baseline`` (not the earlier-report form, which is read separately)
BASELINE = Shape(
    ("object",),
    required=("busbw_gbs",),
    fields={
        "warn_below": Shape(("number",), low=0, high=1),
        "fail_below": Shape(("number",), low=0, high=1),
        "busbw_gbs": Shape(("object",), values=Shape(("number",), low=0)),
    },
)

#: ``msdoctor check --format json``'s output, as ``diff`` reads it
_FINDING = Shape(("object",), fields={"title": TEXT, "status": TEXT, "evidence": Shape(("object", "null"))})
REPORT = Shape(
    ("object",),
    required=("schema_version", "checks"),
    fields={
        "schema_version": Shape(("integer",), low=1),
        "target": Shape(("object", "null")),
        "facts": Shape(("object", "null"), values=Shape(("object", "null"))),
        "checks": Shape(
            ("list",),
            items=Shape(
                ("object",),
                fields={
                    "id": TEXT,
                    "status": TEXT,
                    "findings": Shape(("list", "null"), items=_FINDING),
                },
            ),
        ),
    },
)

#: an earlier ``preflight-report.json`` used as a baseline: its bandwidth rows
EARLIER_REPORT = Shape(
    ("object",),
    fields={
        "bandwidth": Shape(
            ("list",),
            items=Shape(
                ("object",),
                required=("group", "op", "size_bytes", "busbw_gbs"),
                fields={"group": TEXT, "op": TEXT, "size_bytes": COUNT, "busbw_gbs": Shape(("number",), low=0)},
            ),
        )
    },
)
