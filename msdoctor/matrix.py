"""The compatibility matrix (compat_matrix/*.toml): loading, schema validation, and "what goes with X" lookups.

Data, not code: every version fact lives in one TOML file per relationship, each row with a
``source``. This module reads the files it owns (``MATRIX_FILES``; other TOML files in the folder,
such as the ``explain`` catalogue, belong to other modules and are ignored), validates them against
``SCHEMA`` (a bad file raises :class:`MatrixError` naming file, line and row), and answers lookups.

Public API::

    load() -> Matrix                          # packaged files, parsed once (cached)
    load_file(path) -> (kind, date, rows)     # one file, validated (tests, custom data)
    Matrix.mindspore(v) / .mindnlp(v) / .mindformers(v) / .cann(name) / .cuda(v)  -> row or None
    Matrix.accepted_cann_prefixes(ms_row) -> (prefixes, verified)
    Matrix.is_newer(kind, version) -> bool    # newer than every row of that kind
    Matrix.breakages(installed) -> [Breakage] # known bad combinations present in {name: version}
    with_mindspore(m, v) / with_cann(m, name) / with_python(m, "3.12") / with_mindnlp(m, v) -> dict
    cann_prefix("8.2.0.0.201") -> "8.2";  same_ascend_version("25.0.rc1.1", "25.0.RC1") -> True
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

#: the files this module owns, and the ``kind`` each must declare
MATRIX_FILES: dict[str, str] = {
    "mindspore.toml": "mindspore",
    "cann.toml": "cann",
    "mindnlp.toml": "mindnlp",
    "mindformers.toml": "mindformers",
    "gpu.toml": "gpu",
}

PACKAGE = "msdoctor.compat_matrix"


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

#: kind -> table name -> field -> (validator, required)
SCHEMA: dict[str, dict[str, dict[str, Field]]] = {
    "mindspore": {"release": {
        "version": (_is_version, True), "aliases": (_list_of(_is_version), False),
        "python": (_list_of(_PY), True), "numpy": (_is_spec, False), "protobuf": (_is_spec, False),
        "cann": (_list_of(_ASCEND), True), "cann_internal": (_list_of(_PREFIX), False),
        "cann_version_file": (_one_of("ASCEND_OPP_PATH", "ASCEND_HOME_PATH"), False),
        "custom_ops_cann": (_ASCEND, False), "driver": (_ASCEND, False), "cuda": (_list_of(_PREFIX), False),
        "mindformers": (_is_version, False), "on_pypi": (_is_bool, True), "source": (_is_source, True),
    }},
    "cann": {"release": {
        "commercial": (_ASCEND, True), "internal_prefix": (_PREFIX, True), "internal": (_ASCEND, False),
        "innerversion": (_regex(re.compile(r"^C\d+$"), "a C-number (e.g. 'C22')"), False),
        "driver": (_list_of(_ASCEND), False), "note": (_is_str, False), "source": (_is_source, True),
    }},
    "mindnlp": {
        "release": {
            "version": (_is_version, True), "mindspore": (_SPEC_OR_EMPTY, True),
            "mindspore_documented": (_is_spec, False), "transformers": (_is_spec, False),
            "transformers_works": (_is_spec, False), "python": (_list_of(_PY), False),
            "version_attr": (_is_str, False), "source": (_is_source, True),
        },
        "breakage": {
            "when": (_is_when, True), "package": (_is_str, True), "bad": (_is_spec, True),
            "good": (_is_spec, False), "symptom": (_is_str, True), "source": (_is_source, True),
        },
    },
    "mindformers": {"release": {
        "version": (_is_version, True), "mindspore": (_SPEC_OR_EMPTY, True),
        "mindspore_prefer": (_list_of(_is_version), False), "cann": (_ASCEND, False), "driver": (_ASCEND, False),
        "transformers": (_is_spec, False), "python": (_is_spec, False), "installable": (_is_bool, True),
        "install_error": (_is_str, False), "version_attr": (_is_str, False), "source": (_is_source, True),
    }},
    "gpu": {"cuda": {
        "version": (_PREFIX, True), "driver_min": (_is_str, True), "cudnn": (_list_of(_PREFIX), False),
        "source": (_is_source, True),
    }},
}

#: the key that names a row in messages and must be unique within its table
ROW_KEY = {"release": ("version", "commercial"), "cuda": ("version",), "breakage": ("package",)}


def _shallow(value: Any) -> Optional[str]:
    ok = isinstance(value, (bool, dict)) or (isinstance(value, str) and value.strip() != "") \
        or (isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)) or value == ""
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


def validate(text: str, path: str, expected_kind: Optional[str] = None, *,
             deep: bool = True) -> tuple[str, _dt.date, dict[str, list[dict]]]:
    """Parse and validate one matrix file; returns (kind, matrix_date, {table: rows}).

    deep=False checks the structure only (kind, date, known and required fields, value types) and
    skips parsing every version and specifier: the packaged files are validated deeply by the test
    suite (tests/test_matrix_data.py), and `msdoctor check --quick` must stay fast.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise MatrixError(path, f"malformed TOML: {exc}", line=int(m.group(1)) if m else None) from None
    kind = doc.get("kind")
    if kind not in SCHEMA:
        raise MatrixError(path, f"kind = {kind!r}: expected one of {', '.join(SCHEMA)}", line=_field_line(text, 0, "kind"))
    if expected_kind and kind != expected_kind:
        raise MatrixError(path, f"kind = {kind!r}, but this file must hold {expected_kind!r}")
    date = doc.get("matrix_date")
    if not isinstance(date, _dt.date) or isinstance(date, _dt.datetime):
        raise MatrixError(path, "matrix_date must be a TOML date (e.g. matrix_date = 2026-11-29)",
                          line=_field_line(text, 0, "matrix_date"))
    tables = SCHEMA[kind]
    for key in doc:
        if key not in ("kind", "matrix_date") and key not in tables:
            raise MatrixError(path, f"unknown top-level key {key!r} (tables of a {kind} file: {', '.join(tables)})",
                              line=_field_line(text, 0, key))
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
                    raise MatrixError(path, f"unknown field {key!r} (allowed: {', '.join(fields)})",
                                      line=_field_line(text, start, key), row=name)
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


# -- typed rows -------------------------------------------------------------------------------
@dataclass(frozen=True)
class MindSporeRelease:
    version: str
    python: tuple[str, ...]
    cann: tuple[str, ...]
    on_pypi: bool
    source: str
    aliases: tuple[str, ...] = ()
    numpy: Optional[str] = None
    protobuf: Optional[str] = None
    cann_internal: Optional[tuple[str, ...]] = None
    cann_version_file: Optional[str] = None
    custom_ops_cann: Optional[str] = None
    driver: Optional[str] = None
    cuda: tuple[str, ...] = ()
    mindformers: Optional[str] = None


@dataclass(frozen=True)
class CannRelease:
    commercial: str
    internal_prefix: str
    source: str
    internal: Optional[str] = None
    innerversion: Optional[str] = None
    driver: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class MindNLPRelease:
    version: str
    mindspore: str
    source: str
    mindspore_documented: Optional[str] = None
    transformers: Optional[str] = None
    transformers_works: Optional[str] = None
    python: tuple[str, ...] = ()
    version_attr: Optional[str] = None


@dataclass(frozen=True)
class MindFormersRelease:
    version: str
    mindspore: str
    installable: bool
    source: str
    mindspore_prefer: tuple[str, ...] = ()
    cann: Optional[str] = None
    driver: Optional[str] = None
    transformers: Optional[str] = None
    python: Optional[str] = None
    install_error: Optional[str] = None
    version_attr: Optional[str] = None


@dataclass(frozen=True)
class CudaRelease:
    version: str
    driver_min: str
    source: str
    cudnn: tuple[str, ...] = ()


@dataclass(frozen=True)
class Breakage:
    """A combination the metadata allows but that breaks at import."""

    when: Mapping[str, str]
    package: str
    bad: str
    symptom: str
    source: str
    good: Optional[str] = None


def _typed(cls: type, row: Mapping[str, Any]) -> Any:
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})


def _vkey(v: str) -> Any:
    from packaging.version import Version

    return Version(v)


def _public(v: str) -> str:
    """The version without a local part (2.7.0+cpu -> 2.7.0); unparseable strings unchanged."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(v).public
    except InvalidVersion:
        return v


@dataclass
class Matrix:
    """All matrix files, typed. ``dates`` maps file name -> matrix_date."""

    mindspore_rows: list[MindSporeRelease] = field(default_factory=list)
    cann_rows: list[CannRelease] = field(default_factory=list)
    mindnlp_rows: list[MindNLPRelease] = field(default_factory=list)
    mindformers_rows: list[MindFormersRelease] = field(default_factory=list)
    cuda_rows: list[CudaRelease] = field(default_factory=list)
    breakage_rows: list[Breakage] = field(default_factory=list)
    dates: dict[str, _dt.date] = field(default_factory=dict)

    @property
    def date(self) -> str:
        """The matrix date: the oldest file date (what every row is at least as fresh as)."""
        return min(self.dates.values()).isoformat() if self.dates else "unknown"

    # -- lookups ---------------------------------------------------------------------------
    def mindspore(self, version: Optional[str]) -> Optional[MindSporeRelease]:
        if not version:
            return None
        v = _public(version)
        for row in self.mindspore_rows:
            if v == row.version or v in row.aliases or _same_pep440(v, row.version):
                return row
        return None

    def mindnlp(self, version: Optional[str]) -> Optional[MindNLPRelease]:
        return _find(self.mindnlp_rows, version)

    def mindformers(self, version: Optional[str]) -> Optional[MindFormersRelease]:
        return _find(self.mindformers_rows, version)

    def cann(self, name: Optional[str]) -> Optional[CannRelease]:
        """The row of a CANN commercial version; pre-release suffixes (8.0.RC3.beta1) match their release."""
        if not name:
            return None
        key = cann_release_name(name).casefold()
        for row in self.cann_rows:
            if row.commercial.casefold() == key:
                return row
        return None

    def cann_by_prefix(self, prefix: str) -> list[CannRelease]:
        return [r for r in self.cann_rows if r.internal_prefix == prefix]

    def cuda(self, version: str) -> Optional[CudaRelease]:
        return next((r for r in self.cuda_rows if r.version == version), None)

    def accepted_cann_prefixes(self, ms: MindSporeRelease) -> tuple[tuple[str, ...], bool]:
        """Internal CANN prefixes MindSpore accepts, and whether the list is MindSpore's own.

        Without a verified list (2.3.0, 2.4.x-2.6.0) the prefixes of the CANN the docs pair with
        the release are returned, with verified=False: a mismatch is then a warning, not a failure.
        """
        if ms.cann_internal:
            return ms.cann_internal, True
        derived = tuple(dict.fromkeys(r.internal_prefix for c in ms.cann if (r := self.cann(c)) is not None))
        return derived, False

    def is_newer(self, kind: str, version: str) -> bool:
        """True when version is newer than every row of kind (mindspore, mindnlp, mindformers)."""
        rows = {"mindspore": self.mindspore_rows, "mindnlp": self.mindnlp_rows,
                "mindformers": self.mindformers_rows}[kind]
        try:
            return all(_vkey(version) > _vkey(r.version) for r in rows)
        except Exception:
            return False

    def newest(self, kind: str) -> str:
        rows = {"mindspore": self.mindspore_rows, "mindnlp": self.mindnlp_rows,
                "mindformers": self.mindformers_rows}[kind]
        return max((r.version for r in rows), key=_vkey)

    def breakages(self, installed: Mapping[str, Optional[str]]) -> list[Breakage]:
        """Known bad combinations present among installed {canonical name: version}."""
        out = []
        for b in self.breakage_rows:
            have = installed.get(b.package)
            if not have or not spec_contains(b.bad, have):
                continue
            if all(installed.get(k) and spec_contains(s, installed[k] or "") for k, s in b.when.items()):
                out.append(b)
        return out


def _same_pep440(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False


def _find(rows: Sequence[Any], version: Optional[str]) -> Any:
    if not version:
        return None
    v = _public(version)
    return next((r for r in rows if r.version == v or _same_pep440(v, r.version)), None)


def spec_contains(spec: str, version: str) -> bool:
    """PEP 440 membership with pre-releases allowed (pip check semantics); "" matches everything."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion

    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


# -- Ascend version strings -------------------------------------------------------------------
def cann_prefix(internal: Optional[str]) -> Optional[str]:
    """The first two dot components, as MindSpore compares them: 8.2.0.0.201 -> 8.2."""
    if not internal:
        return None
    parts = internal.strip().split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def cann_release_name(name: str) -> str:
    """8.0.RC3.beta1 / 8.0.RC2.alpha001 / 9.2.0-beta.2 -> 8.0.RC3 / 8.0.RC2 / 9.2.0."""
    return re.sub(r"([.-](alpha|beta)\.?\d+)$", "", name.strip(), flags=re.IGNORECASE)


def same_ascend_version(actual: str, listed: str) -> bool:
    """Compare driver / CANN versions case-insensitively on the listed components.

    Real driver files say ``25.0.rc1.1`` where VERSION_MAP says ``25.0.RC1``; a listed ``25.5``
    stands for every 25.5.x.
    """
    a = actual.strip().casefold().split(".")
    b = listed.strip().casefold().split(".")
    return a[: len(b)] == b


# -- loading ----------------------------------------------------------------------------------
def load_file(path: Path, expected_kind: Optional[str] = None) -> tuple[str, _dt.date, dict[str, list[dict]]]:
    """Validate one matrix file from disk (raises MatrixError)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixError(str(path), f"cannot read: {exc}") from None
    return validate(text, str(path), expected_kind)


def _package_texts() -> Iterable[tuple[str, str, str]]:
    from importlib import resources

    base = resources.files(PACKAGE)
    for name, kind in MATRIX_FILES.items():
        yield f"compat_matrix/{name}", kind, base.joinpath(name).read_text(encoding="utf-8")


def build(texts: Iterable[tuple[str, str, str]], *, deep: bool = True) -> Matrix:
    """A Matrix from (display path, kind, text) triples; validates each (see validate for deep)."""
    m = Matrix()
    for path, kind, text in texts:
        _, date, tables = validate(text, path, kind, deep=deep)
        m.dates[path] = date
        if kind == "mindspore":
            m.mindspore_rows = [_typed(MindSporeRelease, r) for r in tables["release"]]
        elif kind == "cann":
            m.cann_rows = [_typed(CannRelease, r) for r in tables["release"]]
        elif kind == "mindnlp":
            m.mindnlp_rows = [_typed(MindNLPRelease, r) for r in tables["release"]]
            m.breakage_rows = [Breakage(**r) for r in tables["breakage"]]
        elif kind == "mindformers":
            m.mindformers_rows = [_typed(MindFormersRelease, r) for r in tables["release"]]
        elif kind == "gpu":
            m.cuda_rows = [_typed(CudaRelease, r) for r in tables["cuda"]]
    _cross_check(m)
    return m


def _cross_check(m: Matrix) -> None:
    """Relations between files: every CANN a MindSpore row names has a row in cann.toml."""
    for ms in m.mindspore_rows:
        for c in ms.cann:
            if m.cann_rows and m.cann(c) is None:
                raise MatrixError("compat_matrix/mindspore.toml", f"cann {c!r} has no row in compat_matrix/cann.toml",
                                  row=f"[[release]] (version {ms.version})")
    for ms in m.mindspore_rows:
        for cu in ms.cuda:
            if m.cuda_rows and m.cuda(cu) is None:
                raise MatrixError("compat_matrix/mindspore.toml", f"cuda {cu!r} has no row in compat_matrix/gpu.toml",
                                  row=f"[[release]] (version {ms.version})")


@functools.lru_cache(maxsize=1)
def load() -> Matrix:
    """The packaged matrix, parsed and (structurally) validated once per process."""
    return build(_package_texts(), deep=False)


# -- planning queries (msdoctor matrix --mindspore / --cann / --python / --mindnlp) -------------
def with_mindspore(m: Matrix, version: str) -> dict[str, Any]:
    ms = m.mindspore(version)
    if ms is None:
        return {"query": f"mindspore {version}", "known": False, "newest_known": m.newest("mindspore"),
                "matrix_date": m.date}
    prefixes, verified = m.accepted_cann_prefixes(ms)
    nlp = [r.version for r in m.mindnlp_rows if r.mindspore and spec_contains(r.mindspore, ms.version)]
    mf = [r.version for r in m.mindformers_rows if ms.version in r.mindspore_prefer]
    return {
        "query": f"mindspore {version}", "known": True, "mindspore": ms.version,
        "python": list(ms.python), "numpy": ms.numpy, "protobuf": ms.protobuf,
        "cann": list(ms.cann), "cann_internal_accepted": list(prefixes), "cann_list_verified": verified,
        "driver": ms.driver, "cuda": list(ms.cuda), "mindformers": mf,
        "mindnlp_allowing": nlp, "on_pypi": ms.on_pypi, "source": ms.source, "matrix_date": m.date,
    }


def with_cann(m: Matrix, name: str) -> dict[str, Any]:
    row = m.cann(name)
    if row is None:
        return {"query": f"cann {name}", "known": False, "matrix_date": m.date,
                "known_cann": [r.commercial for r in m.cann_rows]}
    accepting = []
    for ms in m.mindspore_rows:
        prefixes, verified = m.accepted_cann_prefixes(ms)
        if row.internal_prefix in prefixes:
            accepting.append({"mindspore": ms.version, "verified": verified,
                              "paired_by_docs": any(m.cann(c) is row for c in ms.cann)})
    return {
        "query": f"cann {name}", "known": True, "cann": row.commercial, "internal_prefix": row.internal_prefix,
        "internal": row.internal, "innerversion": row.innerversion, "driver": list(row.driver),
        "mindspore_accepting": accepting, "note": row.note, "source": row.source, "matrix_date": m.date,
    }


def with_python(m: Matrix, pyver: str) -> dict[str, Any]:
    minor = ".".join(pyver.split(".")[:2])
    ms = [r.version for r in m.mindspore_rows if minor in r.python]
    nlp = [r.version for r in m.mindnlp_rows if r.python and minor in r.python]
    mf = [r.version for r in m.mindformers_rows if r.python and spec_contains(r.python, minor + ".0")]
    return {"query": f"python {pyver}", "python": minor, "mindspore_wheels": ms, "mindnlp_documented": nlp,
            "mindformers_requires_python": mf, "matrix_date": m.date}


def with_mindnlp(m: Matrix, version: str) -> dict[str, Any]:
    row = m.mindnlp(version)
    if row is None:
        return {"query": f"mindnlp {version}", "known": False, "newest_known": m.newest("mindnlp"),
                "matrix_date": m.date}
    ms = [r.version for r in m.mindspore_rows if not row.mindspore or spec_contains(row.mindspore, r.version)]
    breaks = [{"package": b.package, "bad": b.bad, "good": b.good, "symptom": b.symptom, "source": b.source}
              for b in m.breakage_rows if "mindnlp" in b.when and spec_contains(b.when["mindnlp"], row.version)]
    return {
        "query": f"mindnlp {version}", "known": True, "mindnlp": row.version,
        "mindspore_metadata": row.mindspore or "(no bound)", "mindspore_documented": row.mindspore_documented,
        "mindspore_in_matrix": ms, "transformers_metadata": row.transformers,
        "transformers_works": row.transformers_works, "python_documented": list(row.python),
        "known_breakages": breaks, "version_attr": row.version_attr, "source": row.source, "matrix_date": m.date,
    }


def fits(m: Matrix, *, mindspore: Optional[str] = None, cann: Optional[str] = None,
         python: Optional[str] = None, mindnlp: Optional[str] = None) -> list[dict[str, Any]]:
    """Pairwise verdicts for a planned set: ok True / False, or None when the matrix cannot tell."""
    out: list[dict[str, Any]] = []
    ms = m.mindspore(mindspore) if mindspore else None
    py = ".".join(python.split(".")[:2]) if python else None

    def add(a: str, b: str, ok: Optional[bool], why: str) -> None:
        out.append({"pair": [a, b], "ok": ok, "why": why})

    if mindspore and py:
        if ms is None:
            add(f"mindspore {mindspore}", f"python {py}", None, "MindSpore version not in the matrix")
        else:
            add(f"mindspore {ms.version}", f"python {py}", py in ms.python, f"wheels exist for {', '.join(ms.python)}")
    if mindspore and cann:
        row = m.cann(cann)
        if ms is None or row is None:
            add(f"mindspore {mindspore}", f"cann {cann}", None, "version not in the matrix")
        else:
            prefixes, verified = m.accepted_cann_prefixes(ms)
            ok = row.internal_prefix in prefixes
            add(f"mindspore {ms.version}", f"cann {row.commercial}", ok if (ok or verified) else None,
                f"CANN {row.commercial} is internal {row.internal_prefix}; MindSpore {ms.version} accepts "
                f"{', '.join(prefixes)}" + ("" if verified else " (from the CANN its docs name; its own list is unknown)"))
    if mindnlp:
        nlp = m.mindnlp(mindnlp)
        if mindspore:
            ok = spec_contains(nlp.mindspore, mindspore) if nlp else None
            add(f"mindnlp {mindnlp}", f"mindspore {mindspore}", ok,
                f"mindnlp declares mindspore{nlp.mindspore or ' (any)'}" if nlp else "mindnlp version not in the matrix")
        if py and nlp and nlp.python:
            add(f"mindnlp {mindnlp}", f"python {py}", py in nlp.python, f"docs name Python {', '.join(nlp.python)}")
    return out
