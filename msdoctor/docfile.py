"""Reading user documents (YAML, JSON, TOML) with line numbers for every key.

A malformed file raises :class:`msdoctor.errors.UserError` naming the file,
line and column, and what to do; a readable one gives the data plus a map
from key paths (``("model", "num_layers")``) to 1-based line numbers, so
later validation errors can point at the key.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from msdoctor.errors import UserError

KeyPath = tuple  # tuple[str | int, ...]


@dataclass
class Document:
    path: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    #: keys given twice in one YAML mapping: (key path, first line, repeated line); YAML keeps the last silently
    duplicates: list[tuple[KeyPath, int, int]] = field(default_factory=list)

    def line_of(self, *keys: Any) -> Optional[int]:
        """Line of the deepest known key on the path (None when unknown)."""
        keys = tuple(keys)
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return None

    def where(self, *keys: Any) -> str:
        line = self.line_of(*keys)
        return f"{self.path}:{line}" if line else str(self.path)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file", "check the path you passed") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a file", "pass the file itself") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied", "make the file readable, or copy it somewhere you can read") from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: not UTF-8 text (byte {exc.start})", "save the file as UTF-8"
        ) from None


def _yaml_lines(node: Any, prefix: KeyPath, out: dict[KeyPath, int],
                dups: Optional[list[tuple[KeyPath, int, int]]] = None) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            path = prefix + (key,)
            line = key_node.start_mark.line + 1
            if dups is not None and key in seen and key != "<<":
                dups.append((path, seen[key], line))
            seen.setdefault(key, line)
            out[path] = line
            _yaml_lines(value_node, path, out, dups)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = prefix + (i,)
            out[path] = item.start_mark.line + 1
            _yaml_lines(item, path, out, dups)


def load_yaml_text(text: str, path: Path) -> Document:
    import yaml

    try:
        # libyaml's loader when present: ~7x faster on a MindFormers config; same nodes and marks
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = exc.problem or exc.context or "invalid YAML"
        raise UserError(
            f"{where}: malformed YAML: {problem}",
            "fix the syntax at that line (indentation, a missing ':' or quote, tabs instead of spaces)",
        ) from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: malformed YAML: {exc}", "fix the file's syntax") from None
    lines: dict[KeyPath, int] = {}
    dups: list[tuple[KeyPath, int, int]] = []
    if node is not None:
        _yaml_lines(node, (), lines, dups)
    return Document(path, data, lines, dups)


def load_json_text(text: str, path: Path) -> Document:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}",
            "fix the syntax at that line (a missing comma or quote, a trailing comma)",
        ) from None
    return Document(path, data, _json_key_lines(text))


def _json_key_lines(text: str) -> dict[KeyPath, int]:
    """Lines of top-level and nested object keys, by a light scan (good enough for messages)."""
    from msdoctor import jsonc

    try:
        return jsonc.key_lines(text)
    except jsonc.JSONCError:  # json accepted it; lines are only for messages, so a disagreement costs them only
        return {}


def load_toml_text(text: str, path: Path) -> Document:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: malformed TOML: {exc}", "fix the syntax at that line") from None
    lines: dict[KeyPath, int] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if s.startswith("[") and s.endswith("]"):
            lines[tuple(s.strip("[]").strip().split("."))] = i
    return Document(path, data, lines)


def load(path: Path) -> Document:
    """Load a YAML (.yaml/.yml), JSON (.json) or TOML (.toml) file with key lines."""
    path = Path(path).expanduser()
    text = _read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return load_json_text(text, path)
    if suffix == ".toml":
        return load_toml_text(text, path)
    return load_yaml_text(text, path)
