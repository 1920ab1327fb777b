"""Helpers of the duplicate-installs check: names, severity, paths, and which distribution owns a module."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import shlex
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar
from urllib.parse import unquote, urlparse

from msdoctor.domain.stack import in_stack
from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Status

#: Every copy of every project, by canonical name, in sys.path order.
Groups = dict[str, list[Distribution]]


def is_stack(*names: Optional[str]) -> bool:
    """Whether a package is in the training stack (compat_matrix/stack.toml): a problem with one of them fails."""
    return in_stack(*names)


def status_for(*names: Optional[str]) -> Status:
    """fail for the training stack, warn for everything else (the training stack is what breaks a run)."""
    return Status.FAIL if is_stack(*names) else Status.WARN


T = TypeVar("T")

#: realpath answers of the evaluation running in this thread (evaluate() opens one with :func:`paths_memo`)
_REAL: contextvars.ContextVar[Optional[dict[str, str]]] = contextvars.ContextVar(
    "duplicate_installs_real", default=None
)


@contextlib.contextmanager
def paths_memo() -> Iterator[None]:
    """Memoise :func:`real` for one evaluation, in this thread only (files change between runs)."""
    token = _REAL.set({})
    try:
        yield
    finally:
        _REAL.reset(token)


def with_paths_memo(fn: Callable[..., T]) -> Callable[..., T]:
    """Run ``fn`` inside :func:`paths_memo` (the check's evaluate)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with paths_memo():
            return fn(*args, **kwargs)

    return wrapper


def real(path: str) -> str:
    """os.path.realpath, memoised inside :func:`paths_memo`."""
    memo = _REAL.get()
    if memo is not None and path in memo:
        return memo[path]
    try:
        found = os.path.realpath(path)
    except (OSError, ValueError):
        found = path
    if memo is not None:
        memo[path] = found
    return found


def under(path: str, root: str) -> bool:
    p, r = real(path), real(root).rstrip(os.sep)
    return p == r or p.startswith(r + os.sep)


def q(path: str) -> str:
    return shlex.quote(path)


def is_leftover(d: Distribution) -> bool:
    """A dist-info renamed '~name' by an interrupted pip run: pip ignores it, so do we."""
    return os.path.basename(d.path).startswith("~")


#: Top-level names some wheels ship by mistake (a `tests` package) and that nothing imports: they
#: collide with nearly every project's own tests/ or docs/ directory, so they are not reported.
GENERIC_NAMES = frozenset({"tests", "test", "docs", "doc", "examples", "benchmarks"})


def importable(name: str) -> bool:
    """A top-level name worth reporting: an identifier, not a setuptools editable finder, not generic."""
    return name.isidentifier() and not name.startswith("__editable__") and name not in GENERIC_NAMES


def specs(t: TargetFacts) -> dict[str, Mapping[str, Any]]:
    """find_spec answers of the probe: the key modules plus the names worth asking about."""
    out = dict(t.raw.get("top_level_specs") or {})
    out.update(t.find_spec)
    return out


def editable_source(d: Distribution) -> Optional[str]:
    """The source tree of an editable install (direct_url.json, PEP 610), or None."""
    if not d.editable or not d.direct_url or not d.direct_url.startswith("file:"):
        return None
    return unquote(urlparse(d.direct_url).path) or None


def provider_dirs(spec: Mapping[str, Any]) -> list[str]:
    """The sys.path directories a found module was loaded from (its package's parent)."""
    out = []
    origin = spec.get("origin")
    if origin and os.path.isabs(origin):
        parent = os.path.dirname(origin)
        out.append(os.path.dirname(parent) if os.path.basename(origin).startswith("__init__.") else parent)
    for loc in spec.get("locations") or []:
        out.append(os.path.dirname(loc.rstrip(os.sep)))
    return out


def owns(d: Distribution, spec: Mapping[str, Any]) -> bool:
    """True when the found module lives where distribution ``d`` put it."""
    dirs = {real(p) for p in provider_dirs(spec)}
    if real(d.location) in dirs:
        return True
    src = editable_source(d)
    files = [spec.get("origin") or ""] + list(spec.get("locations") or [])
    return src is not None and any(f and under(f, src) for f in files)


def module_file(spec: Mapping[str, Any]) -> Optional[str]:
    origin = spec.get("origin")
    if origin and os.path.isabs(origin):
        return os.path.dirname(origin) if os.path.basename(origin).startswith("__init__.") else origin
    locs = spec.get("locations") or []
    return locs[0] if locs else None
