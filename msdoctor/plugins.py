"""The check plugin API and its discovery through entry points.

A check is any object with ``id``, ``title``, ``description`` and
``run(ctx) -> list[Finding]``. Checks are found through the entry-point group
``msdoctor.checks``; msdoctor's own checks are registered in its pyproject.toml
exactly as a third-party distribution registers its own::

    [project.entry-points."msdoctor.checks"]
    my-check = "my_pkg.checks:MyCheck"

The entry point may name a Check class (instantiated without arguments), a
Check instance, or a zero-argument callable returning one Check or an iterable
of Checks. Loading is lazy (only when a registry is built), a plugin that fails
to load becomes an ``error`` result named after its distribution, and two
checks with one id are refused, naming both providers.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from msdoctor.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context, FactSpec

try:  # Protocol is 3.8+, runtime_checkable too
    from typing import Protocol, runtime_checkable
except ImportError:  # pragma: no cover
    from typing_extensions import Protocol, runtime_checkable  # type: ignore

ENTRY_POINT_GROUP = "msdoctor.checks"
DISABLE_AUTOLOAD_ENV = "MSDOCTOR_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PROVIDER = "msdoctor"

_ID_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


@runtime_checkable
class Check(Protocol):
    """What a check provides. Optional attributes are read with getattr:

    * ``prefetch``: FactSpecs the check will need and that are slow; the runner
      starts them before any check runs, so they overlap.
    * ``timeout_s``: the most this check may take (default: runner's per-check timeout).
    * ``needs_config``: True when the check only applies with ``--config``.
    * ``order``: where it appears in reports (lower first; default 100, then by id).
    """

    id: str
    title: str
    description: str

    def run(self, ctx: "Context") -> list[Finding]:  # pragma: no cover - protocol
        ...


def validate_check(obj: Any) -> Optional[str]:
    """Return why obj is not a usable check, or None if it is."""
    for attr in ("id", "title", "description"):
        value = getattr(obj, attr, None)
        if not isinstance(value, str) or not value.strip():
            return f"has no {attr!r} string"
    if not callable(getattr(obj, "run", None)):
        return "has no run(ctx) method"
    if not _ID_RE.match(obj.id):
        return f"id {obj.id!r} is not kebab-case (lowercase words joined by '-')"
    return None


@dataclass
class LoadedCheck:
    """A check together with where it came from."""

    check: Any
    provider: str  # distribution name, "msdoctor" for built-ins
    entry_point: str  # "name = module:attr"

    @property
    def id(self) -> str:
        return self.check.id


@dataclass
class LoadFailure:
    """A plugin that could not be loaded; reported as an error result."""

    provider: str
    entry_point: str
    message: str
    traceback: str

    @property
    def id(self) -> str:
        # stable, selectable id for the failure row: plugin-<distribution>
        slug = re.sub(r"[^a-z0-9]+", "-", self.provider.lower()).strip("-") or "unknown"
        return f"plugin-{slug}"


class DuplicateCheckId(Exception):
    """Two providers register the same check id."""


@dataclass
class Registry:
    checks: list[LoadedCheck] = field(default_factory=list)
    failures: list[LoadFailure] = field(default_factory=list)

    def ids(self) -> list[str]:
        return [c.id for c in self.checks]

    def get(self, check_id: str) -> Optional[LoadedCheck]:
        for c in self.checks:
            if c.id == check_id:
                return c
        return None


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


def _entry_points() -> list[Any]:
    return entry_points(ENTRY_POINT_GROUP)


def _provider_of(ep: Any, names: Optional[dict] = None) -> str:
    """The distribution that declares ``ep``; ``names`` caches one METADATA read per distribution."""
    dist = getattr(ep, "dist", None)
    key = str(getattr(dist, "_path", id(dist)))
    if names is not None and key in names:
        return names[key]
    name = getattr(dist, "name", None) if dist is not None else None
    if name:
        if names is not None:
            names[key] = str(name)
        return str(name)
    # Python 3.9 entry points carry no dist: fall back to the module's top package
    return ep.value.split(":", 1)[0].split(".", 1)[0]


def _instantiate(obj: Any) -> list[Any]:
    """Turn what an entry point names into a list of check objects."""
    if isinstance(obj, type):
        return [obj()]
    if validate_check(obj) is None:
        return [obj]
    if callable(obj):
        produced = obj()
        if validate_check(produced) is None:
            return [produced]
        if isinstance(produced, Iterable) and not isinstance(produced, (str, bytes)):
            return list(produced)
        return [produced]
    return [obj]


def autoload_disabled(environ: Optional[dict] = None) -> bool:
    value = (environ if environ is not None else os.environ).get(DISABLE_AUTOLOAD_ENV, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def load_registry(
    *,
    plugins: bool = True,
    entry_points: Optional[Sequence[Any]] = None,
    extra: Sequence[Any] = (),
) -> Registry:
    """Discover and load every check.

    Args:
        plugins: load third-party plugins too (False: only msdoctor's own checks).
        entry_points: the entry points to load (tests); default: the installed ones.
        extra: check objects to add as built-ins (tests).

    Raises:
        DuplicateCheckId: when two providers register one id.
    """
    registry = Registry()
    seen: dict[str, LoadedCheck] = {}
    for check in extra:
        _add(registry, seen, check, BUILTIN_PROVIDER, f"{check.id} = <builtin>")
    eps = list(entry_points) if entry_points is not None else _entry_points()
    for ep, provider in _ordered_entry_points(eps, plugins):
        ep_text = f"{ep.name} = {ep.value}"
        for obj in _load_entry_point(ep, provider, ep_text, registry.failures):
            _add(registry, seen, obj, provider, ep_text)
    # report order: msdoctor's own checks by their `order`, then plugins; ties by id
    registry.checks.sort(key=lambda c: (c.provider != BUILTIN_PROVIDER, _order(c.check), c.id))
    return registry


def _ordered_entry_points(eps: Sequence[Any], plugins: bool) -> list[tuple[Any, str]]:
    """The entry points to load with their providers: msdoctor's own first, then plugins (only with
    ``plugins``) sorted by name: a deterministic order."""
    providers: dict = {}
    ordered = sorted(eps, key=lambda ep: (_provider_of(ep, providers) != BUILTIN_PROVIDER, ep.name))
    pairs = [(ep, _provider_of(ep, providers)) for ep in ordered]
    return [(ep, provider) for ep, provider in pairs if plugins or provider == BUILTIN_PROVIDER]


def _load_entry_point(ep: Any, provider: str, ep_text: str, failures: list[LoadFailure]) -> list[Any]:
    """The check objects ``ep`` gives; a plugin that fails to load is appended to ``failures`` instead."""
    try:
        return _instantiate(ep.load())
    except Exception as exc:  # noqa: BLE001 - a broken plugin is a result, never a crash
        failures.append(
            LoadFailure(
                provider,
                ep_text,
                f"could not load {ep_text}: {type(exc).__name__}: {exc}",
                traceback.format_exc(),
            )
        )
        return []


def _add(registry: Registry, seen: dict[str, LoadedCheck], check: Any, provider: str, ep_text: str) -> None:
    """Add one check to ``registry`` (an invalid one as a failure); ``seen`` maps the ids added so far."""
    problem = validate_check(check)
    if problem is not None:
        registry.failures.append(
            LoadFailure(provider, ep_text, f"{ep_text} {problem}", "")
        )
        return
    if check.id in seen:
        other = seen[check.id]
        raise DuplicateCheckId(
            f"check id {check.id!r} is registered twice: by {other.provider} "
            f"({other.entry_point}) and by {provider} ({ep_text}). "
            "Uninstall one of them, or run with --no-plugins."
        )
    loaded = LoadedCheck(check, provider, ep_text)
    seen[check.id] = loaded
    registry.checks.append(loaded)


def _order(check: Any) -> float:
    value = getattr(check, "order", 100)
    return value if isinstance(value, (int, float)) else 100


def load_failure_finding(failure: LoadFailure) -> Finding:
    return Finding.error(
        f"plugin from {failure.provider!r} failed to load",
        detail=failure.message,
        fix=(
            f"{sys.executable} -m pip install --upgrade {failure.provider}  "
            f"(or uninstall it, or run msdoctor with --no-plugins)"
        ),
        evidence={"entry_point": failure.entry_point, "distribution": failure.provider},
    )


def check_prefetch(check: Any) -> Sequence["FactSpec"]:
    return tuple(getattr(check, "prefetch", ()) or ())


def check_timeout(check: Any, default: float) -> float:
    value = getattr(check, "timeout_s", None)
    return float(value) if value else default


RunFn = Callable[["Context"], "list[Finding]"]
