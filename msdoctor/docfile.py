"""Reading user documents (YAML, JSON, TOML) with line numbers for every key.

A malformed file raises :class:`msdoctor.errors.UserError` naming the file,
line and column, and what to do; a readable one gives the data plus a map
from key paths (``("model", "num_layers")``) to 1-based line numbers, so
later validation errors can point at the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from msdoctor.errors import UserError
from msdoctor.inputs import MAX_DEPTH, depth_of, too_deep

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


#: The most YAML nodes a document may stand for once its aliases are expanded (real configs: a few
#: thousand). More is an alias bomb ("billion laughs"): every later walk of the data would explode.
MAX_EXPANDED_NODES = 1_000_000
#: Key lines are kept this deep: messages name config keys a few levels down, never the inside of big tables.
LINE_DEPTH = 8


def _read_text(path: Path) -> str:
    from msdoctor.inputs import CONFIG_CAP, read_text

    return read_text(path, cap=CONFIG_CAP, what="config")


def _refuse_alias_bomb(root: Any, path: Path) -> None:
    """UserError (file:line) when aliases make the document expand past MAX_EXPANDED_NODES or refer to
    themselves. The expanded size is counted per node once (memoised), so this check is linear."""
    import yaml

    size: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = (
            [c for kv in node.value for c in kv]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
            if isinstance(node, yaml.SequenceNode)
            else []
        )
        if done:
            on_stack.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            if size[key] > MAX_EXPANDED_NODES:
                raise UserError(
                    f"{path}:{node.start_mark.line + 1}: YAML aliases expand this value to more than "
                    f"{MAX_EXPANDED_NODES:,} nodes (an alias bomb); msdoctor does not expand it",
                    "write the values out, or use fewer nested aliases (*name) of anchors (&name)",
                )
            continue
        if key in size:
            continue
        if key in on_stack:
            raise UserError(
                f"{path}:{node.start_mark.line + 1}: a YAML alias refers to the value that contains it",
                "remove the alias (*name) inside its own anchor (&name)",
            )
        on_stack.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def _yaml_lines(
    node: Any,
    prefix: KeyPath,
    out: dict[KeyPath, int],
    dups: Optional[list[tuple[KeyPath, int, int]]] = None,
    seen: Optional[set[int]] = None,
) -> None:
    """Key path -> line for every key down to LINE_DEPTH levels (deeper ones report the line of their
    ancestor, Document.line_of); a node reached again through an alias is not walked twice."""
    import yaml

    seen = set() if seen is None else seen
    if id(node) in seen or len(prefix) >= LINE_DEPTH:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen_keys: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            path = prefix + (key,)
            line = key_node.start_mark.line + 1
            if dups is not None and key in seen_keys and key != "<<":
                dups.append((path, seen_keys[key], line))
            seen_keys.setdefault(key, line)
            out[path] = line
            _yaml_lines(value_node, path, out, dups, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = prefix + (i,)
            out[path] = item.start_mark.line + 1
            _yaml_lines(item, path, out, dups, seen)


def load_yaml_text(text: str, path: Path) -> Document:
    import yaml

    try:
        # libyaml's loader when present: ~7x faster on a MindFormers config; same nodes and marks
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
        try:
            node = loader.get_single_node()
            if node is not None and "&" in text:  # no anchor, no alias: nothing to expand
                _refuse_alias_bomb(node, path)
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
    except RecursionError:
        raise too_deep(path) from None
    if depth_of(data) > MAX_DEPTH:
        raise too_deep(path)
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
    except RecursionError:
        raise too_deep(path) from None
    if depth_of(data) > MAX_DEPTH:
        raise too_deep(path)
    return Document(path, data, _json_key_lines(text))


def _json_key_lines(text: str) -> dict[KeyPath, int]:
    """Lines of top-level and nested object keys, by a light scan (good enough for messages)."""
    from msdoctor import jsonc

    try:
        return jsonc.key_lines(text)
    except jsonc.JSONCError:  # json accepted it; lines are only for messages, so a disagreement costs them only
        return {}


def load_toml_text(text: str, path: Path) -> Document:
    from msdoctor.tomlcompat import tomllib

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: malformed TOML: {exc}", "fix the syntax at that line") from None
    if depth_of(data) > MAX_DEPTH:
        raise too_deep(path)
    lines: dict[KeyPath, int] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if s.startswith("[") and s.endswith("]"):
            lines[tuple(s.strip("[]").strip().split("."))] = i
    return Document(path, data, lines)


def load_json_file(path: Path, what: str = "file") -> Document:
    """A user's JSON document (a plan, a baseline, a report) through the one bounded reader: a regular file,
    at most CONFIG_CAP bytes, UTF-8, nested at most MAX_DEPTH levels; UserError (exit 2) with file and line."""
    from msdoctor.inputs import CONFIG_CAP, read_text

    path = Path(path).expanduser()
    return load_json_text(read_text(path, cap=CONFIG_CAP, what=what), path)


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
