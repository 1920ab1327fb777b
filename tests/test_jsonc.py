"""msdoctor.jsonc: tolerant JSONC reading and edits that keep every comment and unrelated key."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msdoctor import jsonc

SETTINGS = """\
// workspace settings: the team's comment
{
    // which Python
    "python.defaultInterpreterPath": "/usr/bin/python3", // old one
    "editor.rulers": [80, 100,], /* inline block */
    "files.exclude": {"**/.git": true,},
    /* a block
       over two lines, with "quotes" and // slashes */
    "url": "http://example.com/a//b", // a // inside a string is not a comment
}
"""


def comments(text: str) -> list[str]:
    """Every // and /* */ comment outside strings, in order (an independent little scanner)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.index("*/", i) + 2
            out.append(text[i:end])
            i = end
        else:
            i += 1
    return out


def test_loads_accepts_comments_and_trailing_commas() -> None:
    assert jsonc.loads(SETTINGS) == {
        "python.defaultInterpreterPath": "/usr/bin/python3",
        "editor.rulers": [80, 100],
        "files.exclude": {"**/.git": True},
        "url": "http://example.com/a//b",
    }


def test_key_lines_are_one_based_lines_of_keys() -> None:
    lines = jsonc.key_lines(SETTINGS)
    assert lines[("python.defaultInterpreterPath",)] == 4
    assert lines[("editor.rulers", 1)] == 5
    assert lines[("url",)] == 9


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ('{\n  "a": 1\n  "b": 2\n}', 3, "comma is missing"),
        ('{\n  "a": 1,\n  /* never closed\n}', 3, "unterminated /* comment"),
        ("{\n  'a': 1\n}", 2, "quoted key"),
        ('{\n  "a": tru\n}', 2, "unexpected 'tru'"),
        ('{\n  "a": "x\n}', 2, "unterminated string"),
        ('{"a": 1}\n{"b": 2}', 2, "after the end"),
        ('{\n  "a": [1, 2\n', 2, "']' is missing"),
    ],
)
def test_errors_name_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(jsonc.JSONCError) as info:
        jsonc.loads(text)
    assert info.value.line == line
    assert fragment in info.value.message
    assert f"line {line}" in str(info.value)


def test_set_key_replaces_a_value_and_keeps_every_comment() -> None:
    out = jsonc.set_key(SETTINGS, ["python.defaultInterpreterPath"], "/env/bin/python")
    assert comments(out) == comments(SETTINGS)
    expected = jsonc.loads(SETTINGS) | {"python.defaultInterpreterPath": "/env/bin/python"}
    assert jsonc.loads(out) == expected
    # only the value changed: the rest of the text is byte-identical
    assert out == SETTINGS.replace('"/usr/bin/python3"', '"/env/bin/python"')


def test_set_key_adds_a_missing_key_after_a_trailing_comma_and_comment() -> None:
    out = jsonc.set_key(SETTINGS, ["jupyter.askForKernelRestart"], False)
    assert comments(out) == comments(SETTINGS)
    assert jsonc.loads(out) == jsonc.loads(SETTINGS) | {"jupyter.askForKernelRestart": False}
    # the comment after the last member stays on that member's line
    assert '"url": "http://example.com/a//b", // a // inside a string is not a comment\n' in out
    assert re.search(r'\n    "jupyter.askForKernelRestart": false\n}', out)


def test_set_key_nested_creates_objects_with_sibling_indentation() -> None:
    out = jsonc.set_key(SETTINGS, ["files.exclude", "**/__pycache__"], True)
    assert jsonc.loads(out)["files.exclude"] == {"**/.git": True, "**/__pycache__": True}
    out = jsonc.set_key(SETTINGS, ["a", "b"], [1])
    assert jsonc.loads(out)["a"] == {"b": [1]}
    assert comments(out) == comments(SETTINGS)


def test_one_line_object_stays_on_one_line_even_with_slashes_after_it() -> None:
    text = '{"o": {"a": 1}, "u": "http://x"}\n'
    out = jsonc.set_key(text, ["o", "b"], 2)
    assert out == '{"o": {"a": 1, "b": 2}, "u": "http://x"}\n'


def test_value_followed_by_line_comment_gets_its_comma_before_the_comment() -> None:
    out = jsonc.set_key('{\n  "a": 1 // one\n}\n', ["b"], 2)
    assert out == '{\n  "a": 1, // one\n  "b": 2\n}\n'


@pytest.mark.parametrize("text", ["", "   \n", "// only a comment\n", "/* block */"])
def test_documents_without_a_value_get_an_object(text: str) -> None:
    out = jsonc.set_key(text, ["k"], "v")
    assert jsonc.loads(out) == {"k": "v"}
    assert comments(out) == comments(text)


def test_duplicate_keys_the_last_one_wins_and_is_the_one_edited() -> None:
    text = '{"a": 1, "a": 2}'
    assert jsonc.loads(text) == {"a": 2} == json.loads(text)
    assert jsonc.loads(jsonc.set_key(text, ["a"], 3)) == {"a": 3}
    assert jsonc.key_lines('{\n"a": 1,\n"a": 2}')[("a",)] == 3


def test_set_key_refuses_a_non_object_path() -> None:
    with pytest.raises(jsonc.JSONCError):
        jsonc.set_key('{"a": [1]}', ["a", "b"], 1)
    with pytest.raises(ValueError):
        jsonc.set_key("{}", [], 1)


def test_append_items_keeps_comments_and_creates_missing_arrays() -> None:
    out = jsonc.append_items(SETTINGS, ["editor.rulers"], [120, 140])
    assert jsonc.loads(out)["editor.rulers"] == [80, 100, 120, 140]
    assert comments(out) == comments(SETTINGS)
    out = jsonc.append_items("{\n  // c\n}\n", ["tasks"], [{"label": "x"}])
    assert jsonc.loads(out) == {"tasks": [{"label": "x"}]}
    assert "// c" in out
    with pytest.raises(jsonc.JSONCError):
        jsonc.append_items(SETTINGS, ["url"], [1])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([None, 2, 4]))
def test_loads_agrees_with_json_on_plain_json(value: object, indent: object) -> None:
    assert jsonc.loads(json.dumps(value, indent=indent)) == value


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), json_values, max_size=5),
    st.text(max_size=6),
    json_values,
    st.sampled_from([None, 2, 4]),
)
def test_set_key_changes_exactly_one_key(doc: dict, key: str, value: object, indent: object) -> None:
    text = "// header\n" + json.dumps(doc, indent=indent) + "\n"
    out = jsonc.set_key(text, [key], value)
    assert jsonc.loads(out) == {**doc, key: value}
    assert out.startswith("// header\n")
