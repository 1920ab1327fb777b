"""The ``msdoctor.checks`` entry points of the installed distributions, read directly from their
``*.dist-info/entry_points.txt`` (msdoctor.plugins loads what they name)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

ENTRY_POINT_GROUP = "msdoctor.checks"


@dataclass(frozen=True)
class _Dist:
    name: str
    _path: str


@dataclass(frozen=True)
class EntryPoint:
    """One ``msdoctor.checks`` entry point, as :func:`entry_points` read it (the subset of
    importlib.metadata.EntryPoint the loader uses: name, value, dist, load)."""

    name: str
    value: str
    dist: _Dist

    def load(self) -> Any:
        """The object ``value`` names (``module``, ``module:attr`` or ``module:attr.attr``; extras ignored)."""
        import importlib

        spec = self.value.split("[", 1)[0].strip()
        module, _, attrs = spec.partition(":")
        obj = importlib.import_module(module.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj


_DIST_DIR = re.compile(r"^(?P<name>[^-]+)(?:-[^/]*)?\.(?:dist|egg)-info$", re.IGNORECASE)


def entry_points(group: str = ENTRY_POINT_GROUP, path: Optional[Sequence[str]] = None) -> list[Any]:
    """The entry points of ``group`` that importlib.metadata.entry_points() gives, read directly.

    The first distribution of a name on sys.path wins, as in importlib.metadata; each ``*.dist-info`` /
    ``*.egg-info`` directory is checked for an entry_points.txt naming the group. Reading these few files
    costs ~1 ms; importing importlib.metadata (email, zipfile, csv) and reading every METADATA cost 20-50 ms
    of ``check --quick``. A zip file on sys.path (an egg, a zipapp) is left to importlib.metadata.
    """
    entries = list(sys.path if path is None else path)
    if any(os.path.isfile(e) for e in entries if e):
        return _metadata_entry_points(group)
    seen: set[str] = set()
    out: list[Any] = []
    header = f"[{group}]"
    for entry in entries:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for fname in names:
            m = _DIST_DIR.match(fname)
            if m is None:
                continue
            key = re.sub(r"[-_.]+", "_", m.group("name")).lower()
            if key in seen:
                continue
            seen.add(key)
            dist_dir = os.path.join(entry or ".", fname)
            text = _read_small(os.path.join(dist_dir, "entry_points.txt"))
            if text is None or header not in text:
                continue
            dist = _Dist(_dist_name(dist_dir) or m.group("name"), dist_dir)
            out.extend(EntryPoint(name, value, dist) for name, value in _section(text, group))
    return out


def _read_small(path: str, limit: int = 1 << 20) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` lines of section ``[group]`` of an entry_points.txt (comments and blanks skipped)."""
    rows, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, value = line.split("=", 1)
            rows.append((name.strip(), value.strip()))
    return rows


def _dist_name(dist_dir: str) -> Optional[str]:
    """The Name header of the distribution's METADATA (or PKG-INFO), read without email.parser."""
    for meta in ("METADATA", "PKG-INFO"):
        text = _read_small(os.path.join(dist_dir, meta), 64 * 1024)
        if text is None:
            continue
        for line in text.splitlines():
            if not line.strip():
                break  # end of the headers
            if line[:5].lower() == "name:":
                return line[5:].strip() or None
    return None


def _metadata_entry_points(group: str) -> list[Any]:
    from importlib import metadata

    eps = metadata.entry_points()
    if hasattr(eps, "select"):  # Python >= 3.10
        return list(eps.select(group=group))
    return list(eps.get(group, []))  # pragma: no cover - Python 3.9
