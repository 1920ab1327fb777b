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

import math
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from msdoctor.entry_points import ENTRY_POINT_GROUP, EntryPoint, _Dist, _metadata_entry_points, entry_points
from msdoctor.model import Finding
from msdoctor.plugin_trial import trial_import

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.context import Context, FactSpec

try:  # Protocol is 3.8+, runtime_checkable too
    from typing import Protocol, runtime_checkable
except ImportError:  # pragma: no cover
    from typing_extensions import Protocol, runtime_checkable  # type: ignore

DISABLE_AUTOLOAD_ENV = "MSDOCTOR_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PROVIDER = "msdoctor"

_ID_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


@runtime_checkable
class Check(Protocol):
    """What a check provides: ``id`` (kebab-case), ``title``, ``description`` and ``run(ctx)``.

    Optional members, validated when the check registers (:func:`describe_check`); a wrong one makes the
    check an ``error`` result of its own, never a crash of the run:

    * ``prefetch``: a tuple (or list) of FactSpecs the check will need and that are slow; the runner starts
      them before any check runs, so they overlap.
    * ``timeout_s``: a positive number, the most seconds this check may take (default: the runner's).
    * ``needs_config``: True when the check only applies with ``--config``; without one the runner reports it
      skipped and does not run it.
    * ``order``: a number, where it appears in reports (lower first; default 100, then by id).
    """

    id: str
    title: str
    description: str

    def run(self, ctx: "Context") -> list[Finding]:  # pragma: no cover - protocol
        ...


DEFAULT_ORDER = 100.0


@dataclass(frozen=True)
class CheckSpec:
    """A check's members as read, once, at registration: what the runner and the reports use (a property that
    raises, or changes its answer, cannot break a run later)."""

    id: str
    title: str
    description: str
    prefetch: tuple = ()  # tuple[FactSpec, ...]
    timeout_s: Optional[float] = None
    order: float = DEFAULT_ORDER
    needs_config: bool = False


class InvalidCheck(Exception):
    """A check object whose members do not follow the protocol (the message says which and why)."""


def _member(obj: Any, name: str, default: Any = None) -> Any:
    try:
        return getattr(obj, name, default)
    except Exception as exc:  # noqa: BLE001 - a property that raises is the plugin's bug, reported as such
        raise InvalidCheck(f"reading its {name!r} raised {type(exc).__name__}: {exc}") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def describe_check(obj: Any) -> CheckSpec:
    """The validated members of check object ``obj``.

    Raises:
        InvalidCheck: a required member is missing or not a non-empty string, ``run`` is not callable, the id
            is not kebab-case, or an optional member (``prefetch``, ``timeout_s``, ``order``,
            ``needs_config``) has the wrong type.
    """
    from msdoctor.context import FactSpec

    text = {}
    for attr in ("id", "title", "description"):
        value = _member(obj, attr)
        if not isinstance(value, str) or not value.strip():
            raise InvalidCheck(f"has no {attr!r} string")
        text[attr] = value
    if not callable(_member(obj, "run")):
        raise InvalidCheck("has no run(ctx) method")
    if not _ID_RE.match(text["id"]):
        raise InvalidCheck(f"id {text['id']!r} is not kebab-case (lowercase words joined by '-')")
    prefetch = _member(obj, "prefetch", ())
    if prefetch is None:
        prefetch = ()
    if isinstance(prefetch, FactSpec):
        raise InvalidCheck(
            f"prefetch must be a tuple of FactSpec, got one FactSpec: write prefetch = ({prefetch.name.upper().replace('-', '_')},)"
        )
    if not isinstance(prefetch, (tuple, list)) or not all(isinstance(f, FactSpec) for f in prefetch):
        raise InvalidCheck(f"prefetch must be a tuple of FactSpec, got {_shown(prefetch)}")
    timeout = _member(obj, "timeout_s", None)
    if timeout is not None and not (_number(timeout) and timeout > 0):
        raise InvalidCheck(f"timeout_s must be a positive number of seconds, got {_shown(timeout)}")
    order = _member(obj, "order", DEFAULT_ORDER)
    if not _number(order):
        raise InvalidCheck(f"order must be a number, got {_shown(order)}")
    needs_config = _member(obj, "needs_config", False)
    if not isinstance(needs_config, bool):
        raise InvalidCheck(f"needs_config must be True or False, got {_shown(needs_config)}")
    return CheckSpec(
        text["id"],
        text["title"],
        text["description"],
        tuple(prefetch),
        float(timeout) if timeout is not None else None,
        float(order),
        needs_config,
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def validate_check(obj: Any) -> Optional[str]:
    """Return why obj is not a usable check, or None if it is."""
    try:
        describe_check(obj)
    except InvalidCheck as exc:
        return str(exc)
    return None


@dataclass
class LoadedCheck:
    """A check together with where it came from, and its members as validated at registration."""

    check: Any
    provider: str  # distribution name, "msdoctor" for built-ins
    entry_point: str  # "name = module:attr"
    spec: Optional[CheckSpec] = None  # read from ``check`` when not given (raises InvalidCheck)

    def __post_init__(self) -> None:
        if self.spec is None:
            self.spec = describe_check(self.check)

    @property
    def info(self) -> CheckSpec:
        assert self.spec is not None  # set by __post_init__
        return self.spec

    @property
    def id(self) -> str:
        return self.info.id


@dataclass
class LoadFailure:
    """A plugin that could not be loaded; reported as an error result."""

    provider: str
    entry_point: str
    message: str
    traceback: str
    check_id: Optional[str] = None  # the check's own id, when it could be read and is valid

    @property
    def id(self) -> str:
        if self.check_id:
            return self.check_id
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
    trial: Optional[bool] = None,
) -> Registry:
    """Discover and load every check.

    Args:
        plugins: load third-party plugins too (False: only msdoctor's own checks).
        entry_points: the entry points to load (tests); default: the installed ones.
        extra: check objects to add as built-ins (tests).
        trial: import third-party plugins in a child first (msdoctor/plugin_trial.py); default: only for the
            installed entry points (the ones given by a test may not be importable by name).

    Raises:
        DuplicateCheckId: when two providers register one id.
    """
    registry = Registry()
    seen: dict[str, LoadedCheck] = {}
    for check in extra:
        _add(registry, seen, check, BUILTIN_PROVIDER, f"{_member(check, 'id')} = <builtin>")
    eps = list(entry_points) if entry_points is not None else _entry_points()
    pairs = _ordered_entry_points(eps, plugins)
    refused = trial_import(pairs, BUILTIN_PROVIDER) if (trial if trial is not None else entry_points is None) else {}
    if any(provider != BUILTIN_PROVIDER for _ep, provider in pairs):
        from msdoctor import proc

        proc.watch_strays()  # what a plugin starts and leaves running is killed when msdoctor exits
    for i, (ep, provider) in enumerate(pairs):
        ep_text = f"{ep.name} = {ep.value}"
        if i in refused:
            registry.failures.append(LoadFailure(provider, ep_text, f"could not load {ep_text}: {refused[i]}", ""))
            continue
        for obj in _load_entry_point(ep, provider, ep_text, registry.failures):
            _add(registry, seen, obj, provider, ep_text)
    # report order: msdoctor's own checks by their `order`, then plugins; ties by id
    registry.checks.sort(key=lambda c: (c.provider != BUILTIN_PROVIDER, c.info.order, c.id))
    return registry


def _ordered_entry_points(eps: Sequence[Any], plugins: bool) -> list[tuple[Any, str]]:
    """The entry points to load with their providers: msdoctor's own first, then plugins (only with
    ``plugins``) sorted by name: a deterministic order."""
    providers: dict = {}
    ordered = sorted(eps, key=lambda ep: (_provider_of(ep, providers) != BUILTIN_PROVIDER, ep.name))
    pairs = [(ep, _provider_of(ep, providers)) for ep in ordered]
    return [(ep, provider) for ep, provider in pairs if plugins or provider == BUILTIN_PROVIDER]


def _load_entry_point(ep: Any, provider: str, ep_text: str, failures: list[LoadFailure]) -> list[Any]:
    """The check objects ``ep`` gives; a plugin that fails to load is appended to ``failures`` instead.

    Whatever the plugin raises is caught, BaseException included: a ``sys.exit(0)`` or a
    ``KeyboardInterrupt`` at import must not end msdoctor with exit 0 and no output. A real Ctrl-C (or
    SIGTERM) that arrives meanwhile still stops msdoctor.
    """
    watch = _SigintWatch()
    try:
        with watch:
            return _instantiate(ep.load())
    except BaseException as exc:  # noqa: BLE001 - a broken plugin is a result, never a crash or a silent exit
        if (isinstance(exc, KeyboardInterrupt) and watch.seen) or type(exc).__module__ == "msdoctor.cli":
            raise  # Ctrl-C / SIGTERM from the user, not the plugin
        failures.append(
            LoadFailure(provider, ep_text, f"could not load {ep_text}: {_raised(exc)}", traceback.format_exc())
        )
        return []


def _raised(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) while loading"
    if isinstance(exc, KeyboardInterrupt):
        return "it raised KeyboardInterrupt while loading (no Ctrl-C was pressed)"
    return f"{type(exc).__name__}: {exc}"


class _SigintWatch:
    """Tells a Ctrl-C from a KeyboardInterrupt that plugin code raises itself: while active (main thread only)
    SIGINT sets ``seen`` before it raises KeyboardInterrupt as Python's own handler does."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None
        self._installed = False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def __enter__(self) -> "_SigintWatch":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
                self._installed = True
            except (ValueError, TypeError):  # pragma: no cover - embedded interpreters without signals
                pass
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            import signal

            signal.signal(signal.SIGINT, self._previous)


def _add(registry: Registry, seen: dict[str, LoadedCheck], check: Any, provider: str, ep_text: str) -> None:
    """Add one check to ``registry`` (an invalid one as a failure, under its own id when that is readable and
    valid); ``seen`` maps the ids added so far."""
    try:
        spec = describe_check(check)
    except InvalidCheck as exc:
        registry.failures.append(LoadFailure(provider, ep_text, f"{ep_text} {exc}", "", check_id=_valid_id(check)))
        return
    if spec.id in seen:
        other = seen[spec.id]
        raise DuplicateCheckId(
            f"check id {spec.id!r} is registered twice: by {other.provider} "
            f"({other.entry_point}) and by {provider} ({ep_text}). "
            "Uninstall one of them, or run with --no-plugins."
        )
    loaded = LoadedCheck(check, provider, ep_text, spec)
    seen[spec.id] = loaded
    registry.checks.append(loaded)


def _valid_id(check: Any) -> Optional[str]:
    try:
        value = getattr(check, "id", None)
    except Exception:  # noqa: BLE001 - the raising property is reported by describe_check
        return None
    return value if isinstance(value, str) and _ID_RE.match(value) else None


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
    """The validated ``prefetch`` of a LoadedCheck (or of a bare check object: () when it is invalid)."""
    if isinstance(check, LoadedCheck):
        return check.info.prefetch
    try:
        return describe_check(check).prefetch
    except InvalidCheck:
        return ()


def check_timeout(check: Any, default: float) -> float:
    """The validated ``timeout_s`` of a LoadedCheck (or of a bare check object), else ``default``."""
    if isinstance(check, LoadedCheck):
        return check.info.timeout_s or default
    try:
        return describe_check(check).timeout_s or default
    except InvalidCheck:
        return default


RunFn = Callable[["Context"], "list[Finding]"]


__all__ = [
    "BUILTIN_PROVIDER",
    "Check",
    "CheckSpec",
    "DuplicateCheckId",
    "ENTRY_POINT_GROUP",
    "EntryPoint",
    "InvalidCheck",
    "LoadFailure",
    "LoadedCheck",
    "Registry",
    "_Dist",
    "_metadata_entry_points",
    "autoload_disabled",
    "check_prefetch",
    "check_timeout",
    "describe_check",
    "entry_points",
    "load_registry",
    "validate_check",
]
