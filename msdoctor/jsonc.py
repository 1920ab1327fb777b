"""JSON with comments and trailing commas (JSONC), as VSCode and Jupyter files are written.

Reading is tolerant (``//`` and ``/* */`` comments, trailing commas); an
unparseable file raises :class:`JSONCError` with the 1-based line and column.
Editing works on the text itself, so every comment, every unrelated key and
the user's formatting survive: :func:`set_key` replaces or inserts one value,
:func:`append_items` adds elements at the end of an array.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence


class JSONCError(ValueError):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass
class Node:
    kind: str  # "object" | "array" | "string" | "number" | "literal"
    start: int
    end: int  # exclusive
    value: Any = None
    #: object: [(key, key_start, node)], array: [(None, start, node)]
    members: list = field(default_factory=list)

    def get(self, key: Any) -> Optional["Node"]:
        # a duplicated key: the last one wins, as in VS Code and json.loads
        for k, _, node in reversed(self.members):
            if self.kind == "object" and k == key:
                return node
        if self.kind == "array" and isinstance(key, int) and 0 <= key < len(self.members):
            return self.members[key][2]
        return None


#: Deeper nesting is refused with a JSONCError (the parser recurses; real settings files nest a few levels).
MAX_DEPTH = 100


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    def pos(self, i: Optional[int] = None) -> tuple[int, int]:
        i = self.i if i is None else i
        line = self.text.count("\n", 0, i) + 1
        col = i - (self.text.rfind("\n", 0, i) + 1) + 1
        return line, col

    def fail(self, message: str, at: Optional[int] = None) -> JSONCError:
        line, col = self.pos(at)
        return JSONCError(message, line, col)

    def skip(self) -> None:
        t, n = self.text, len(self.text)
        while self.i < n:
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif t.startswith("//", self.i):
                nl = t.find("\n", self.i)
                self.i = n if nl < 0 else nl + 1
            elif t.startswith("/*", self.i):
                close = t.find("*/", self.i + 2)
                if close < 0:
                    raise self.fail("unterminated /* comment")
                self.i = close + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.i >= len(self.text):
            raise self.fail("unexpected end of file: a value is missing")
        c = self.text[self.i]
        if c in "{[":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.fail(f"nested more than {MAX_DEPTH} levels deep")
            try:
                return self.obj() if c == "{" else self.arr()
            finally:
                self.depth -= 1
        if c == '"':
            return self.string()
        return self.scalar()

    def obj(self) -> Node:
        node = Node("object", self.i, self.i, {})
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.text):
                raise self.fail("unexpected end of file: '}' is missing", node.start)
            if self.text[self.i] == "}":
                self.i += 1
                node.end = self.i
                return node
            if self.text[self.i] != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.i
            key = self.string().value
            self.skip()
            if self.i >= len(self.text) or self.text[self.i] != ":":
                raise self.fail(f"expected ':' after key {key!r}")
            self.i += 1
            child = self.value()
            node.members.append((key, key_start, child))
            node.value[key] = child.value
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == ",":
                self.i += 1
            elif self.i < len(self.text) and self.text[self.i] != "}":
                raise self.fail("expected ',' or '}' (a comma is missing between members?)")

    def arr(self) -> Node:
        node = Node("array", self.i, self.i, [])
        self.i += 1
        while True:
            self.skip()
            if self.i >= len(self.text):
                raise self.fail("unexpected end of file: ']' is missing", node.start)
            if self.text[self.i] == "]":
                self.i += 1
                node.end = self.i
                return node
            child = self.value()
            node.members.append((None, child.start, child))
            node.value.append(child.value)
            self.skip()
            if self.i < len(self.text) and self.text[self.i] == ",":
                self.i += 1
            elif self.i < len(self.text) and self.text[self.i] != "]":
                raise self.fail("expected ',' or ']' (a comma is missing between elements?)")

    def string(self) -> Node:
        start = self.i
        j = start + 1
        t = self.text
        while j < len(t):
            c = t[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                break
            if c == "\n":
                raise self.fail("unterminated string", start)
            j += 1
        else:
            raise self.fail("unterminated string", start)
        try:
            value = json.loads(t[start : j + 1])
        except ValueError as exc:
            raise self.fail(f"invalid string: {exc}", start) from None
        self.i = j + 1
        return Node("string", start, self.i, value)

    def scalar(self) -> Node:
        start = self.i
        t = self.text
        j = start
        while j < len(t) and (t[j].isalnum() or t[j] in "+-.eE"):
            j += 1
        word = t[start:j]
        if not word:
            raise self.fail(f"unexpected character {t[start]!r}")
        literals = {"true": True, "false": False, "null": None}
        if word in literals:
            self.i = j
            return Node("literal", start, j, literals[word])
        try:
            value = json.loads(word)
        except ValueError:
            raise self.fail(f"unexpected {word!r} (strings need double quotes)", start) from None
        self.i = j
        return Node("number", start, j, value)


def parse(text: str) -> Node:
    """Parse JSONC text into a Node tree (an empty document is an empty object)."""
    p = _Parser(text)
    p.skip()
    if p.i >= len(text):
        return Node("object", len(text), len(text), {})
    root = p.value()
    p.skip()
    if p.i < len(text):
        raise p.fail("unexpected text after the end of the document")
    return root


def loads(text: str) -> Any:
    """The Python value of a JSONC document."""
    return parse(text).value


_TOKEN = re.compile(r""""(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/|[{}\[\],:]|[^\s{}\[\],:"/]+|/""", re.S)


def key_lines(text: str) -> dict[tuple, int]:
    """1-based line of every object key and array element, by key path.

    One pass over the tokens (a regular expression, no recursion, no tree): linear in the text, so a
    5 MB config.json takes about a second. ``text`` is valid JSONC (callers parse it first).
    """
    out: dict[tuple, int] = {}
    # frames: [kind, path, index]; kind "o" (object) or "a" (array); for objects, index holds the pending key
    stack: list[list[Any]] = []
    line, last = 1, 0
    expect_key = False
    top: Optional[list] = None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == "/" and tok[:2] in ("//", "/*"):
            continue
        if c in ",:":
            if c == "," and stack:
                top = stack[-1]
                if top[0] == "a":
                    top[2] += 1
                else:
                    expect_key = True
            continue
        if c in "}]":
            if stack:
                stack.pop()
            expect_key = False
            continue
        start = m.start()
        line += text.count("\n", last, start)
        last = start
        top = stack[-1] if stack else None
        if top is not None and top[0] == "o" and expect_key and c == '"':
            key = json.loads(tok) if "\\" in tok else tok[1:-1]
            top[2] = key
            out[top[1] + (key,)] = line
            expect_key = False
            continue
        # a value starts here
        if top is None:
            path: tuple = ()
        elif top[0] == "a":
            path = top[1] + (top[2],)
            out[path] = line
        else:
            path = top[1] + (top[2],)
        if c == "{":
            stack.append(["o", path, None])
            expect_key = True
        elif c == "[":
            stack.append(["a", path, 0])
    return out


def _indent_at(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip())]


def _child_indent(text: str, node: Node) -> str:
    if node.members:
        return _indent_at(text, node.members[0][1])
    return _indent_at(text, node.start) + "    "


def _dump(value: Any, indent: str) -> str:
    dumped = json.dumps(value, indent=4, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _line_comment_end(text: str, pos: int) -> Optional[int]:
    """If a ``//`` comment follows pos on the same line (after blanks or /* */), the index of its newline."""
    i, n = pos, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0 or "\n" in text[i:close]:
                return None
            i = close + 2
        elif text.startswith("//", i):
            nl = text.find("\n", i)
            return n if nl < 0 else nl
        else:
            return None
    return None


def _insert_member(text: str, node: Node, key: Optional[str], value: Any) -> str:
    """Insert ``key: value`` (object) or ``value`` (array) as the last member of node.

    A one-line container stays on one line; otherwise the new member gets its own
    line with the indentation of its siblings. Comments stay where they are: one
    after the last member stays on that member's line.
    """
    indent = _child_indent(text, node)
    close = node.end - 1  # position of '}' or ']'
    prefix = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
    one_line = "\n" not in text[node.start : node.end]
    if node.members:
        after = node.members[-1][2].end
        p = _Parser(text)
        p.i = after
        p.skip()
        comma = p.i if p.i < len(text) and text[p.i] == "," else None
        if one_line:
            member = prefix + json.dumps(value, ensure_ascii=False)
            if comma is not None:
                return text[: comma + 1] + " " + member + text[comma + 1 :]
            return text[:after] + ", " + member + text[after:]
        member = prefix + _dump(value, indent)
        if comma is not None:
            insert_at = comma + 1
            eol = _line_comment_end(text, insert_at)
            if eol is not None:
                insert_at = eol
            return text[:insert_at] + "\n" + indent + member + text[insert_at:]
        eol = _line_comment_end(text, after)
        if eol is not None:
            # "value // comment": the comma goes right after the value, the member after the comment
            return text[:after] + "," + text[after:eol] + "\n" + indent + member + text[eol:]
        return text[:after] + ",\n" + indent + member + text[after:]
    member = prefix + _dump(value, indent)
    closing_indent = _indent_at(text, close) if not one_line else _indent_at(text, node.start)
    inner = text[node.start + 1 : close]
    return (
        text[: node.start + 1]
        + inner.rstrip(" \t")
        + ("" if inner.rstrip(" \t").endswith("\n") else "\n")
        + indent
        + member
        + "\n"
        + closing_indent
        + text[close:]
    )


def _with_root(text: str) -> str:
    """A document with no value (empty, or only comments) gets an empty object after its comments."""
    p = _Parser(text)
    p.skip()
    if p.i < len(text):
        return text
    body = text.rstrip()
    return (body + "\n" if body else "") + "{}\n"


def set_key(text: str, path: Sequence[str], value: Any) -> str:
    """Set the value at key path (objects only), creating missing objects; keeps everything else."""
    if not path:
        raise ValueError("empty key path")
    text = _with_root(text)
    root = parse(text)
    node = root
    for depth, key in enumerate(path):
        if node.kind != "object":
            raise JSONCError(
                f"{'.'.join(path[:depth]) or 'the document'} is not an object", *_Parser(text).pos(node.start)
            )
        child = node.get(key)
        if child is None:
            rest = value
            for k in reversed(path[depth + 1 :]):
                rest = {k: rest}
            return _insert_member(text, node, key, rest)
        if depth == len(path) - 1:
            indent = _indent_at(text, child.start) if text.rfind("\n", 0, child.start) >= 0 else ""
            key_indent = _indent_at(text, child.start)
            return text[: child.start] + _dump(value, key_indent or indent) + text[child.end :]
        node = child
    return text  # pragma: no cover - loop always returns


def append_items(text: str, path: Sequence[str], items: Sequence[Any]) -> str:
    """Append items to the array at key path, creating it (and its parents) when missing."""
    text = _with_root(text)
    root = parse(text)
    node: Optional[Node] = root
    for key in path:
        node = node.get(key) if node is not None and node.kind == "object" else None
    if node is None:
        return set_key(text, path, list(items))
    if node.kind != "array":
        raise JSONCError(f"{'.'.join(path)} is not an array", *_Parser(text).pos(node.start))
    for item in items:
        root = parse(text)
        node = root
        for key in path:
            node = node.get(key)  # type: ignore[union-attr]
        text = _insert_member(text, node, None, item)  # type: ignore[arg-type]
    return text
