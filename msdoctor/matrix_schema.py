"""Schema of the compat_matrix/ files: field validators, ``SCHEMA``, and ``validate`` with file:line:row errors.

Used by msdoctor.matrix (structure only at run time, ``deep=False``) and by the test suite
(``deep=True``: every version and specifier parsed), so bad data fails CI with file, line and row.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, Mapping, Optional


class MatrixError(Exception):
    """A matrix file does not follow the schema; names file, line, row and field."""

    def __init__(self, path: str, message: str, *, line: Optional[int] = None, row: Optional[str] = None) -> None:
        where = f"{path}:{line}" if line else path
        text = f"{where}: {row + ': ' if row else ''}{message}"
        super().__init__(text)
        self.path, self.line, self.row, self.message = path, line, row, message


# -- field validators: value -> None when fine, else the problem -----------------------------
_ASCEND_RE = re.compile(r"^\d+\.\d+(\.[0-9A-Za-z]+)*([.-](alpha|beta)\.?\d+)?$")
_PY_RE = re.compile(r"^3\.\d+$")
_PREFIX_RE = re.compile(r"^\d+\.\d+$")


def _is_version(v: Any) -> Optional[str]:
    from packaging.version import InvalidVersion, Version

    if not isinstance(v, str):
        return f"{v!r} is not a string"
    try:
        Version(v)
    except InvalidVersion:
        return f"{v!r} is not a PEP 440 version"
    return None


def _is_spec(v: Any) -> Optional[str]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(v, str):
        return f"{v!r} is not a string"
    try:
        SpecifierSet(v)
    except InvalidSpecifier:
        return f"{v!r} is not a PEP 440 specifier (e.g. '>=1.20,<2')"
    return None


def _is_str(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and v.strip() else f"{v!r} is not a non-empty string"


def _regex(rx: "re.Pattern[str]", what: str) -> Callable[[Any], Optional[str]]:
    def check(v: Any) -> Optional[str]:
        return None if isinstance(v, str) and rx.match(v) else f"{v!r} is not {what}"

    return check


def _list_of(item: Callable[[Any], Optional[str]]) -> Callable[[Any], Optional[str]]:
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, list) or not v:
            return f"{v!r} is not a non-empty list"
        for x in v:
            problem = item(x)
            if problem:
                return problem
        return None

    return check


def _is_bool(v: Any) -> Optional[str]:
    return None if isinstance(v, bool) else f"{v!r} is not true/false"


def _is_source(v: Any) -> Optional[str]:
    # a source is a URL, a wheel / repository file, or "observed: <how to reproduce>"
    if not isinstance(v, str) or len(v.strip()) < 12:
        return "every row needs a source (URL, wheel or repository file, or 'observed: <how>')"
    return None


def _is_when(v: Any) -> Optional[str]:
    if not isinstance(v, dict) or not v:
        return f"{v!r} is not a table of package = specifier"
    for k, spec in v.items():
        problem = _is_spec(spec)
        if problem:
            return f"{k}: {problem}"
    return None


def _one_of(*choices: str) -> Callable[[Any], Optional[str]]:
    return lambda v: None if v in choices else f"{v!r} is not one of {', '.join(choices)}"


_SPEC_OR_EMPTY = lambda v: None if v == "" else _is_spec(v)  # noqa: E731  "" = no bound at all
_ASCEND = _regex(_ASCEND_RE, "an Ascend version (e.g. 8.2.RC1, 25.0.rc1.1)")
_PY = _regex(_PY_RE, "a Python minor version (e.g. '3.11')")
_PREFIX = _regex(_PREFIX_RE, "a major.minor prefix (e.g. '8.2')")

Field = tuple  # (validator, required)

#: roles of compat_matrix/stack.toml whose packages are the training stack (its header says what each means)
STACK_ROLES = ("framework", "model-library", "tokenizer", "weights", "numeric", "serialization", "cann")
#: roles listed beside the stack (reports, the preflight's per-rank versions) that are not part of it
NEAR_STACK_ROLES = ("notebook", "doctor")

#: kind -> table name -> field -> (validator, required)
SCHEMA: dict[str, dict[str, dict[str, Field]]] = {
    "mindspore": {
        "release": {
            "version": (_is_version, True),
            "aliases": (_list_of(_is_version), False),
            "python": (_list_of(_PY), True),
            "numpy": (_is_spec, False),
            "protobuf": (_is_spec, False),
            "cann": (_list_of(_ASCEND), True),
            "cann_internal": (_list_of(_PREFIX), False),
            "cann_version_file": (_one_of("ASCEND_OPP_PATH", "ASCEND_HOME_PATH"), False),
            "custom_ops_cann": (_ASCEND, False),
            "driver": (_ASCEND, False),
            "cuda": (_list_of(_PREFIX), False),
            "mindformers": (_is_version, False),
            "on_pypi": (_is_bool, True),
            "source": (_is_source, True),
        }
    },
    "cann": {
        "release": {
            "commercial": (_ASCEND, True),
            "internal_prefix": (_PREFIX, True),
            "internal": (_ASCEND, False),
            "innerversion": (_regex(re.compile(r"^C\d+$"), "a C-number (e.g. 'C22')"), False),
            "driver": (_list_of(_ASCEND), False),
            "note": (_is_str, False),
            "source": (_is_source, True),
        }
    },
    "mindnlp": {
        "release": {
            "version": (_is_version, True),
            "mindspore": (_SPEC_OR_EMPTY, True),
            "mindspore_documented": (_is_spec, False),
            "transformers": (_is_spec, False),
            "transformers_works": (_is_spec, False),
            "python": (_list_of(_PY), False),
            "version_attr": (_is_str, False),
            "source": (_is_source, True),
        },
        "breakage": {
            "when": (_is_when, True),
            "package": (_is_str, True),
            "bad": (_is_spec, True),
            "good": (_is_spec, False),
            "symptom": (_is_str, True),
            "source": (_is_source, True),
        },
    },
    "mindformers": {
        "release": {
            "version": (_is_version, True),
            "mindspore": (_SPEC_OR_EMPTY, True),
            "mindspore_prefer": (_list_of(_is_version), False),
            "cann": (_ASCEND, False),
            "driver": (_ASCEND, False),
            "transformers": (_is_spec, False),
            "python": (_is_spec, False),
            "installable": (_is_bool, True),
            "install_error": (_is_str, False),
            "version_attr": (_is_str, False),
            "source": (_is_source, True),
        }
    },
    "gpu": {
        "cuda": {
            "version": (_PREFIX, True),
            "driver_min": (_is_str, True),
            "cudnn": (_list_of(_PREFIX), False),
            "source": (_is_source, True),
        }
    },
    "stack": {
        "package": {
            "name": (
                _regex(
                    re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$"), "a canonical distribution name (e.g. 'jupyter-client')"
                ),
                True,
            ),
            "role": (_one_of(*STACK_ROLES, *NEAR_STACK_ROLES), True),
            "source": (_is_source, True),
        }
    },
}

#: the key that names a row in messages and must be unique within its table
ROW_KEY = {"release": ("version", "commercial"), "cuda": ("version",), "breakage": ("package",), "package": ("name",)}


def _shallow(value: Any) -> Optional[str]:
    ok = (
        isinstance(value, (bool, dict))
        or (isinstance(value, str) and value.strip() != "")
        or (isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value))
        or value == ""
    )
    return None if ok else f"{value!r} has the wrong type"


def _header_lines(text: str) -> dict[str, list[int]]:
    """Line number of every ``[[table]]`` header, per table, in file order."""
    out: dict[str, list[int]] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*\[\[\s*([A-Za-z0-9_]+)\s*\]\]", raw)
        if m:
            out.setdefault(m.group(1), []).append(i)
    return out


def _field_line(text: str, start: Optional[int], key: str) -> Optional[int]:
    if start is None:
        return None
    lines = text.splitlines()
    for i in range(start, len(lines)):
        s = lines[i].strip()
        if s.startswith("["):
            break
        if re.match(rf"^{re.escape(key)}\s*=", s):
            return i + 1
    return start


def _row_name(table: str, index: int, row: Mapping[str, Any]) -> str:
    for key in ROW_KEY.get(table, ()):
        if isinstance(row.get(key), str):
            return f"[[{table}]] #{index + 1} ({key} {row[key]})"
    return f"[[{table}]] #{index + 1}"


def validate(
    text: str, path: str, expected_kind: Optional[str] = None, *, deep: bool = True
) -> tuple[str, _dt.date, dict[str, list[dict]]]:
    """Parse and validate one matrix file; returns (kind, matrix_date, {table: rows}).

    deep=False checks the structure only (kind, date, known and required fields, value types) and
    skips parsing every version and specifier: the packaged files are validated deeply by the test
    suite (tests/test_matrix_data.py), and `msdoctor check --quick` must stay fast.
    """
    from msdoctor.tomlcompat import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise MatrixError(path, f"malformed TOML: {exc}", line=int(m.group(1)) if m else None) from None
    kind = doc.get("kind")
    if kind not in SCHEMA:
        raise MatrixError(
            path, f"kind = {kind!r}: expected one of {', '.join(SCHEMA)}", line=_field_line(text, 0, "kind")
        )
    if expected_kind and kind != expected_kind:
        raise MatrixError(path, f"kind = {kind!r}, but this file must hold {expected_kind!r}")
    date = doc.get("matrix_date")
    if not isinstance(date, _dt.date) or isinstance(date, _dt.datetime):
        raise MatrixError(
            path,
            "matrix_date must be a TOML date (e.g. matrix_date = 2026-11-29)",
            line=_field_line(text, 0, "matrix_date"),
        )
    tables = SCHEMA[kind]
    for key in doc:
        if key not in ("kind", "matrix_date") and key not in tables:
            raise MatrixError(
                path,
                f"unknown top-level key {key!r} (tables of a {kind} file: {', '.join(tables)})",
                line=_field_line(text, 0, key),
            )
    headers = _header_lines(text)
    out: dict[str, list[dict]] = {}
    for table, fields in tables.items():
        rows = doc.get(table, [])
        if not isinstance(rows, list):
            raise MatrixError(path, f"{table} must be an array of tables ([[{table}]])")
        seen: dict[str, str] = {}
        for i, row in enumerate(rows):
            start = headers.get(table, [])[i] if i < len(headers.get(table, [])) else None
            name = _row_name(table, i, row)
            for key, value in row.items():
                if key not in fields:
                    raise MatrixError(
                        path,
                        f"unknown field {key!r} (allowed: {', '.join(fields)})",
                        line=_field_line(text, start, key),
                        row=name,
                    )
                problem = fields[key][0](value) if deep else _shallow(value)
                if problem:
                    raise MatrixError(path, f"{key}: {problem}", line=_field_line(text, start, key), row=name)
            for key, (_, required) in fields.items():
                if required and key not in row:
                    raise MatrixError(path, f"missing required field {key!r}", line=start, row=name)
            ident = next((row[k] for k in ROW_KEY.get(table, ()) if k in row), None)
            if table != "breakage" and ident is not None:
                if ident in seen:
                    raise MatrixError(path, f"duplicate row: {ident!r} also in {seen[ident]}", line=start, row=name)
                seen[ident] = name
        out[table] = rows
    return kind, date, out
