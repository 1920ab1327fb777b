"""The compatibility matrix (compat_matrix/*.toml): loading, schema validation, and "what goes with X" lookups.

Data, not code: every version fact lives in one TOML file per relationship, each row with a
``source``. This module reads the files it owns (``MATRIX_FILES``; other TOML files in the folder,
such as the ``explain`` catalogue, belong to other modules and are ignored), validates them against
``msdoctor.matrix_schema.SCHEMA`` (a bad file raises :class:`MatrixError` naming file, line and row),
and answers lookups.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from msdoctor.matrix_schema import MatrixError, validate  # noqa: F401  (part of this module's API)

#: the files this module owns, and the ``kind`` each must declare
MATRIX_FILES: dict[str, str] = {
    "mindspore.toml": "mindspore",
    "cann.toml": "cann",
    "mindnlp.toml": "mindnlp",
    "mindformers.toml": "mindformers",
    "gpu.toml": "gpu",
}

PACKAGE = "msdoctor.compat_matrix"


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
    from packaging.version import Version

    try:
        return Version(v).public
    except ValueError:  # InvalidVersion, or a release part past int's digit limit (ValueError)
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

    def _rows(self, kind: str) -> Sequence[Any]:
        table: dict[str, Sequence[Any]] = {
            "mindspore": self.mindspore_rows,
            "mindnlp": self.mindnlp_rows,
            "mindformers": self.mindformers_rows,
        }
        return table[kind]

    def is_newer(self, kind: str, version: str) -> bool:
        """True when version is newer than every row of kind (mindspore, mindnlp, mindformers)."""
        rows = self._rows(kind)
        try:
            return all(_vkey(version) > _vkey(r.version) for r in rows)
        except ValueError:  # InvalidVersion or a part past int's digit limit: not "newer"; the caller says unknown
            return False

    def newest(self, kind: str) -> str:
        rows = self._rows(kind)
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
    from packaging.version import Version

    try:
        return Version(a) == Version(b)
    except ValueError:  # InvalidVersion, or a release part past int's digit limit (ValueError)
        return False


def _find(rows: Sequence[Any], version: Optional[str]) -> Any:
    if not version:
        return None
    v = _public(version)
    return next((r for r in rows if r.version == v or _same_pep440(v, r.version)), None)


def spec_contains(spec: str, version: str) -> bool:
    """PEP 440 membership with pre-releases allowed (pip check semantics); "" matches everything."""
    from packaging.specifiers import SpecifierSet

    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except ValueError:  # InvalidSpecifier, InvalidVersion, and a part past int's digit limit
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
    from msdoctor.shipped import read_text

    for name, kind in MATRIX_FILES.items():
        yield f"compat_matrix/{name}", kind, read_text(f"compat_matrix/{name}")


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
                raise MatrixError(
                    "compat_matrix/mindspore.toml",
                    f"cann {c!r} has no row in compat_matrix/cann.toml",
                    row=f"[[release]] (version {ms.version})",
                )
    for ms in m.mindspore_rows:
        for cu in ms.cuda:
            if m.cuda_rows and m.cuda(cu) is None:
                raise MatrixError(
                    "compat_matrix/mindspore.toml",
                    f"cuda {cu!r} has no row in compat_matrix/gpu.toml",
                    row=f"[[release]] (version {ms.version})",
                )


@functools.lru_cache(maxsize=1)
def load() -> Matrix:
    """The packaged matrix, parsed and (structurally) validated once per process."""
    return build(_package_texts(), deep=False)


# -- planning queries (msdoctor matrix --mindspore / --cann / --python / --mindnlp) -------------
def with_mindspore(m: Matrix, version: str) -> dict[str, Any]:
    ms = m.mindspore(version)
    if ms is None:
        return {
            "query": f"mindspore {version}",
            "known": False,
            "newest_known": m.newest("mindspore"),
            "matrix_date": m.date,
        }
    prefixes, verified = m.accepted_cann_prefixes(ms)
    nlp = [r.version for r in m.mindnlp_rows if r.mindspore and spec_contains(r.mindspore, ms.version)]
    mf = [r.version for r in m.mindformers_rows if ms.version in r.mindspore_prefer]
    return {
        "query": f"mindspore {version}",
        "known": True,
        "mindspore": ms.version,
        "python": list(ms.python),
        "numpy": ms.numpy,
        "protobuf": ms.protobuf,
        "cann": list(ms.cann),
        "cann_internal_accepted": list(prefixes),
        "cann_list_verified": verified,
        "driver": ms.driver,
        "cuda": list(ms.cuda),
        "mindformers": mf,
        "mindnlp_allowing": nlp,
        "on_pypi": ms.on_pypi,
        "source": ms.source,
        "matrix_date": m.date,
    }


def with_cann(m: Matrix, name: str) -> dict[str, Any]:
    row = m.cann(name)
    if row is None:
        return {
            "query": f"cann {name}",
            "known": False,
            "matrix_date": m.date,
            "known_cann": [r.commercial for r in m.cann_rows],
        }
    accepting = []
    for ms in m.mindspore_rows:
        prefixes, verified = m.accepted_cann_prefixes(ms)
        if row.internal_prefix in prefixes:
            accepting.append(
                {
                    "mindspore": ms.version,
                    "verified": verified,
                    "paired_by_docs": any(m.cann(c) is row for c in ms.cann),
                }
            )
    return {
        "query": f"cann {name}",
        "known": True,
        "cann": row.commercial,
        "internal_prefix": row.internal_prefix,
        "internal": row.internal,
        "innerversion": row.innerversion,
        "driver": list(row.driver),
        "mindspore_accepting": accepting,
        "note": row.note,
        "source": row.source,
        "matrix_date": m.date,
    }


def with_python(m: Matrix, pyver: str) -> dict[str, Any]:
    minor = ".".join(pyver.split(".")[:2])
    ms = [r.version for r in m.mindspore_rows if minor in r.python]
    nlp = [r.version for r in m.mindnlp_rows if r.python and minor in r.python]
    mf = [r.version for r in m.mindformers_rows if r.python and spec_contains(r.python, minor + ".0")]
    return {
        "query": f"python {pyver}",
        "python": minor,
        "mindspore_wheels": ms,
        "mindnlp_documented": nlp,
        "mindformers_requires_python": mf,
        "matrix_date": m.date,
    }


def with_mindnlp(m: Matrix, version: str) -> dict[str, Any]:
    row = m.mindnlp(version)
    if row is None:
        return {
            "query": f"mindnlp {version}",
            "known": False,
            "newest_known": m.newest("mindnlp"),
            "matrix_date": m.date,
        }
    ms = [r.version for r in m.mindspore_rows if not row.mindspore or spec_contains(row.mindspore, r.version)]
    breaks = [
        {"package": b.package, "bad": b.bad, "good": b.good, "symptom": b.symptom, "source": b.source}
        for b in m.breakage_rows
        if "mindnlp" in b.when and spec_contains(b.when["mindnlp"], row.version)
    ]
    return {
        "query": f"mindnlp {version}",
        "known": True,
        "mindnlp": row.version,
        "mindspore_metadata": row.mindspore or "(no bound)",
        "mindspore_documented": row.mindspore_documented,
        "mindspore_in_matrix": ms,
        "transformers_metadata": row.transformers,
        "transformers_works": row.transformers_works,
        "python_documented": list(row.python),
        "known_breakages": breaks,
        "version_attr": row.version_attr,
        "source": row.source,
        "matrix_date": m.date,
    }


def fits(
    m: Matrix,
    *,
    mindspore: Optional[str] = None,
    cann: Optional[str] = None,
    python: Optional[str] = None,
    mindnlp: Optional[str] = None,
) -> list[dict[str, Any]]:
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
            ok: Optional[bool] = row.internal_prefix in prefixes
            add(
                f"mindspore {ms.version}",
                f"cann {row.commercial}",
                ok if (ok or verified) else None,
                f"CANN {row.commercial} is internal {row.internal_prefix}; MindSpore {ms.version} accepts "
                f"{', '.join(prefixes)}"
                + ("" if verified else " (from the CANN its docs name; its own list is unknown)"),
            )
    if mindnlp:
        nlp = m.mindnlp(mindnlp)
        if mindspore:
            ok = spec_contains(nlp.mindspore, mindspore) if nlp else None
            add(
                f"mindnlp {mindnlp}",
                f"mindspore {mindspore}",
                ok,
                f"mindnlp declares mindspore{nlp.mindspore or ' (any)'}"
                if nlp
                else "mindnlp version not in the matrix",
            )
        if py and nlp and nlp.python:
            add(f"mindnlp {mindnlp}", f"python {py}", py in nlp.python, f"docs name Python {', '.join(nlp.python)}")
    return out
