"""Other interpreters (kernels, `python` on PATH, editor settings): can each one import mindspore?

Each interpreter runs the stdlib probe ``msdoctor/probe/interp_probe.py`` (find_spec,
never an import of the framework), with a timeout; several run concurrently.
Results are cached per interpreter for the whole run (the ``INTERPRETERS`` fact).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

from msdoctor.context import Context, FactSpec
from msdoctor.probe import ProbeError, default_env, is_python_like, run_script

#: at most this many interpreter probes run at once
MAX_WORKERS = 8


@dataclass(frozen=True)
class ModuleAt:
    """Where ``import NAME`` would load NAME from, as find_spec saw it."""

    found: bool
    origin: Optional[str] = None
    locations: tuple = ()
    namespace: bool = False
    error: Optional[str] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ModuleAt":
        return cls(
            found=bool(data.get("found")),
            origin=data.get("origin"),
            locations=tuple(data.get("locations") or ()),
            namespace=bool(data.get("namespace")),
            error=data.get("error"),
        )

    @property
    def home(self) -> Optional[str]:
        """The real path of the package directory (what "the same copy" compares)."""
        if not self.found:
            return None
        if self.locations:
            return os.path.realpath(self.locations[0])
        if self.origin:
            return os.path.realpath(os.path.dirname(self.origin))
        return None

    @property
    def importable(self) -> bool:
        # a namespace package named mindspore is an empty or broken directory, not the framework
        return self.found and not self.namespace


@dataclass
class InterpInfo:
    """What the interpreter probe found (or why it could not run)."""

    path: str
    ok: bool
    error: Optional[str] = None
    executable: Optional[str] = None
    prefix: Optional[str] = None
    base_prefix: Optional[str] = None
    version: tuple = ()
    modules: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    jupyter: Optional[dict] = None
    #: how ``path`` was followed when it is not what was probed (a pyenv shim read by pyenv's rules)
    via: Optional[str] = None

    @classmethod
    def from_json(cls, path: str, data: Mapping[str, Any]) -> "InterpInfo":
        return cls(
            path=path,
            ok=True,
            executable=data.get("executable"),
            prefix=data.get("prefix"),
            base_prefix=data.get("base_prefix"),
            version=tuple(data.get("version") or ()),
            modules={k: ModuleAt.from_json(v) for k, v in (data.get("modules") or {}).items()},
            versions=dict(data.get("versions") or {}),
            jupyter=data.get("jupyter"),
        )

    def module(self, name: str) -> ModuleAt:
        return self.modules.get(name) or ModuleAt(False)

    @property
    def mindspore(self) -> ModuleAt:
        return self.module("mindspore")

    @property
    def has_ipykernel(self) -> bool:
        return self.module("ipykernel").importable

    @property
    def python_version(self) -> str:
        return ".".join(str(x) for x in self.version)

    def same_env(self, other: "InterpInfo") -> bool:
        """One environment (sys.prefix), e.g. /env/bin/python and /env/bin/python3."""
        return bool(self.ok and other.ok and self.prefix and other.prefix) and _real(self.prefix) == _real(other.prefix)


def _real(path: Optional[str]) -> str:
    return os.path.realpath(path) if path else ""


def same_bin_dir(a: str, b: str) -> bool:
    """Two interpreter paths of one environment, compared WITHOUT resolving symlinks.

    A venv's bin/python is a symlink to the base interpreter: realpath would call a venv
    and its base "the same", which is exactly the confusion this check exists to catch.
    """
    return os.path.normpath(os.path.dirname(os.path.abspath(a))) == os.path.normpath(
        os.path.dirname(os.path.abspath(b))
    )


def which(name: str, environ: Mapping[str, str]) -> Optional[str]:
    """``name`` looked up on the PATH of ``environ`` (not msdoctor's own PATH)."""
    found = shutil.which(name, path=environ.get("PATH", os.defpath))
    return os.path.abspath(found) if found else None


def python_in(env_dir: str) -> Optional[str]:
    """The interpreter of an environment directory (venv or conda)."""
    for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        cand = os.path.join(env_dir, rel)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


class InterpreterProbes:
    """Runs the interpreter probe at most once per interpreter, several at a time."""

    def __init__(self, environ: Mapping[str, str], timeout: float) -> None:
        self.env = default_env(environ)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._events: dict[tuple, threading.Event] = {}
        self._results: dict[tuple, InterpInfo] = {}
        self._followed: dict[str, str] = {}
        self._reserved: set[tuple] = set()

    def get(self, path: str, *, jupyter: bool = False) -> InterpInfo:
        run_path = self._follow(path)
        key = (_identity(run_path), jupyter)
        with self._lock:
            if not jupyter and (key[0], True) in self._events:
                key = (key[0], True)  # a probe with the Jupyter paths answers this one too
            event = self._events.get(key)
            owner = event is None or key in self._reserved  # the first request for a reserved probe runs it
            if owner:
                self._reserved.discard(key)
                if event is None:
                    event = self._events[key] = threading.Event()
        assert event is not None
        if owner:
            try:
                self._results[key] = self._run_safely(run_path, key[1])
            finally:
                event.set()
        else:
            event.wait()
        found = self._results[key]
        if run_path != path:
            return replace(
                found, path=path, via=f"pyenv shim for {run_path} (pyenv's version files read, the shim not run)"
            )
        # the same interpreter under another name of its own bin dir (python vs python3): one probe
        return found if found.path == path else replace(found, path=path)

    def claim(self, path: str, *, jupyter: bool = False) -> bool:
        """Take the probe of ``path`` on for a caller that gets its result elsewhere (the target probe runs this
        probe in the same start); requests wait until :meth:`fulfil`. False when it is already under way."""
        key = (_identity(self._follow(path)), jupyter)
        with self._lock:
            if key in self._events:
                return False
            self._events[key] = threading.Event()
            return True

    def fulfil(self, path: str, info: Optional[InterpInfo], *, jupyter: bool = False) -> None:
        """Complete a :meth:`claim` with its result; None runs the probe now, in the calling thread."""
        key = (_identity(self._follow(path)), jupyter)
        self._results[key] = info if info is not None else self._run_safely(path, jupyter)
        self._events[key].set()

    def same(self, a: Optional[str], b: Optional[str]) -> bool:
        """Whether two paths run one interpreter (a pyenv shim followed to what it runs)."""
        return bool(a and b) and _identity(self._follow(a or "")) == _identity(self._follow(b or ""))

    def reserve(self, path: str, *, jupyter: bool = False) -> None:
        """Announce a probe with the Jupyter paths: a plain request for that interpreter, coming first,
        runs that one instead, so one probe answers both."""
        key = (_identity(self._follow(path)), jupyter)
        with self._lock:
            if key not in self._events:
                self._events[key] = threading.Event()
                self._reserved.add(key)

    def _follow(self, path: str) -> str:
        """The interpreter a pyenv shim runs (read, not run: a shim starts ~30 bash processes); else path."""
        with self._lock:
            if path in self._followed:
                return self._followed[path]
        from msdoctor.facts.pyenv import resolve_shim

        real = resolve_shim(path, self.env) or path  # pyenv reads .python-version from the user's cwd, not the probe's
        with self._lock:
            self._followed[path] = real
        return real

    def many(self, paths: Iterable[str]) -> dict[str, InterpInfo]:
        """Probe every path (duplicates once), concurrently; path -> result."""
        unique = list(dict.fromkeys(p for p in paths if p))
        if not unique:
            return {}
        # plain threads, MAX_WORKERS at a time: concurrent.futures would import logging on every check --quick
        results: dict[str, InterpInfo] = {}

        def probe(batch: list[str]) -> None:
            for p in batch:
                results[p] = self.get(p)

        batches = [unique[i::MAX_WORKERS] for i in range(min(MAX_WORKERS, len(unique)))]
        threads = [
            threading.Thread(target=probe, args=(b,), name=f"interp_{i}", daemon=True) for i, b in enumerate(batches)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {p: results[p] for p in unique}

    def _run_safely(self, path: str, jupyter: bool) -> InterpInfo:
        try:
            return self._run(path, jupyter)
        except Exception as exc:  # noqa: BLE001 - one odd interpreter must not take the whole check down
            return InterpInfo(path, ok=False, error=f"probe failed: {type(exc).__name__}: {exc}")

    def _run(self, path: str, jupyter: bool) -> InterpInfo:
        if not os.path.exists(path):
            return InterpInfo(path, ok=False, error=f"{path} does not exist")
        if not os.access(path, os.X_OK):
            return InterpInfo(path, ok=False, error=f"{path} is not executable")
        try:
            data, _ = run_script(
                path,
                "interp_probe.py",
                timeout=self.timeout,
                env=self.env,
                args={"jupyter": True} if jupyter else None,
            )
        except ProbeError as exc:
            return InterpInfo(path, ok=False, error=exc.message)
        try:
            return InterpInfo.from_json(path, data)
        except (TypeError, ValueError, AttributeError) as exc:
            return InterpInfo(path, ok=False, error=f"unexpected probe output ({exc})")


def _identity(path: str) -> tuple:
    """Two paths name one interpreter when they sit in one bin dir and are the same file.

    (Not realpath alone: a venv's python links to its base, yet runs with the venv's prefix.)
    """
    try:
        return (os.path.dirname(os.path.abspath(path)), os.path.realpath(path))
    except (OSError, ValueError):
        return (path,)


def _compute(ctx: Context) -> InterpreterProbes:
    timeout = min(float(ctx.options.probe_timeout_s), 20.0)
    return InterpreterProbes(ctx.environ, timeout)


#: The probe cache shared by the kernel-mismatch check and fix-kernel.
INTERPRETERS: FactSpec[InterpreterProbes] = FactSpec(
    "interpreters", _compute, description="probes of other interpreters (kernels, PATH, editor settings)"
)


def target_python(ctx: Context) -> str:
    """The target interpreter's path as given (not resolved through symlinks)."""
    return ctx.options.python or sys.executable


__all__ = [
    "INTERPRETERS",
    "InterpInfo",
    "InterpreterProbes",
    "ModuleAt",
    "is_python_like",
    "python_in",
    "same_bin_dir",
    "target_python",
    "which",
]
