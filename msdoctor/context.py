"""Context: facts about the target, computed lazily, once, shared by checks.

A fact is declared by a :class:`FactSpec` next to the code that computes it
(``msdoctor/facts/*.py``): a name and a function of the Context. A check asks
``ctx.get(SPEC)``; the first caller computes the value, every other caller
(in any thread) waits for it and gets the same object. Slow facts are started
early with :meth:`Context.prefetch`, so a MindSpore import runs while cheap
checks do their work.

Tests build a Context from fake facts without any subprocess::

    ctx = Context(Options(), facts={TARGET.name: fake_target})
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Mapping, Optional, TypeVar

T = TypeVar("T")


class FactUnavailable(Exception):
    """A fact could not be gathered; checks that need it report this as their result.

    Attributes:
        message: what could not be found out, and why.
        fix: what the user can do about it, or None.
        location: a file the problem is in, if any (path, line).
    """

    def __init__(self, message: str, fix: Optional[str] = None, location: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.location = location


def fresh(exc: BaseException) -> BaseException:
    """A copy of a stored exception, for one more caller to raise.

    A fact (or a parse) that failed is raised to every caller, often from several threads at once;
    raising one exception object in two threads makes them rewrite its ``__traceback__`` and
    ``__context__`` under each other, so one thread's report shows the other's frames. Each caller
    raises its own copy, carrying the traceback of the original failure. An exception that cannot be
    copied (a constructor that does not take its own ``args``) is raised as it is.
    """
    import copy

    try:
        new = copy.copy(exc)
    except Exception:  # noqa: BLE001 - any failure to copy: fall back to the shared object
        return exc
    if type(new) is not type(exc) or new.args != exc.args:
        return exc
    new.__cause__, new.__suppress_context__ = exc.__cause__, exc.__suppress_context__
    return new.with_traceback(exc.__traceback__)


@dataclass(frozen=True)
class FactSpec(Generic[T]):
    """A named fact and how to compute it from a Context."""

    name: str
    compute: Callable[["Context"], T]
    #: slow facts (subprocesses that import frameworks) are worth prefetching
    slow: bool = False
    description: str = ""

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FactSpec) and other.name == self.name


@dataclass(frozen=True)
class Options:
    """What the user asked for; everything a check may read about the invocation.

    Attributes:
        python: absolute path of the target interpreter (None: msdoctor's own).
        project_dir: the user's project (cwd by default); the probe runs from here.
        config_path: the training config given with --config, if any.
        device_target: requested device (Ascend/GPU/CPU), overriding the config.
        quick: skip slow, live probes (imports of MindSpore, transformers).
        verbose: show details and tracebacks.
        probe_timeout_s: the most the interpreter probe may take.
        live_timeout_s: the most a live probe that imports MindSpore may take.
        extra: options specific to one command or check (e.g. device_memory).
    """

    python: Optional[str] = None
    project_dir: Path = field(default_factory=Path.cwd)
    config_path: Optional[Path] = None
    device_target: Optional[str] = None
    quick: bool = False
    verbose: bool = False
    probe_timeout_s: float = 30.0
    live_timeout_s: float = 120.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> "Options":
        return replace(self, **changes)


class _Slot:
    __slots__ = ("event", "value", "error", "owner")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self.owner = False


class Context:
    """Facts about one target, shared by every check of one run.

    Args:
        options: the invocation options.
        facts: precomputed facts by name (tests inject fakes here).
        environ: the environment msdoctor runs in (default: os.environ). Checks read
            msdoctor's environment only through this, never os.environ.
    """

    def __init__(
        self,
        options: Optional[Options] = None,
        *,
        facts: Optional[Mapping[str, Any]] = None,
        environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.options = options or Options()
        self.environ: Mapping[str, str] = dict(os.environ if environ is None else environ)
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        for name, value in (facts or {}).items():
            slot = _Slot()
            if isinstance(value, BaseException):
                slot.error = value
            else:
                slot.value = value
            slot.event.set()
            self._slots[name] = slot

    # -- facts ----------------------------------------------------------------
    def get(self, spec: FactSpec[T]) -> T:
        """The value of a fact, computing it on first use (thread-safe, once)."""
        with self._lock:
            slot = self._slots.get(spec.name)
            if slot is None:
                slot = _Slot()
                slot.owner = True
                self._slots[spec.name] = slot
                compute = True
            else:
                compute = False
        if compute:
            try:
                slot.value = spec.compute(self)
            except BaseException as exc:  # noqa: BLE001 - stored and re-raised to every caller below
                slot.error = exc
            finally:
                slot.event.set()
        else:
            slot.event.wait()
        if slot.error is not None:
            raise fresh(slot.error)
        return slot.value

    def has(self, spec: FactSpec[Any]) -> bool:
        """True when the fact is already computed (or injected)."""
        slot = self._slots.get(spec.name)
        return slot is not None and slot.event.is_set()

    def peek(self, spec: "FactSpec[T] | str", default: Any = None) -> Any:
        """The value of fact ``spec`` (a FactSpec, or its name) if it was computed without error, else default
        (never computes)."""
        slot = self._slots.get(spec.name if isinstance(spec, FactSpec) else spec)
        if slot is None or not slot.event.is_set() or slot.error is not None:
            return default
        return slot.value

    def attempted(self, name: str) -> bool:
        """Whether fact ``name`` was computed (with or without error) in this context; never computes."""
        slot = self._slots.get(name)
        return slot is not None and slot.event.is_set()

    def prefetch(self, specs: Iterable[FactSpec[Any]]) -> None:
        """Start computing facts in background threads; get() later waits for them."""
        for spec in specs:
            if spec.name in self._slots:
                continue
            thread = threading.Thread(target=self._prefetch_one, args=(spec,), name=f"fact-{spec.name}", daemon=True)
            thread.start()

    def _prefetch_one(self, spec: FactSpec[Any]) -> None:
        try:
            self.get(spec)
        except BaseException:  # noqa: BLE001 - stored in the slot; the check that needs it reports it
            pass

    # -- conveniences -----------------------------------------------------------
    @property
    def quick(self) -> bool:
        return self.options.quick

    @property
    def project_dir(self) -> Path:
        return self.options.project_dir

    @property
    def target(self) -> Any:
        """The probe of the target interpreter (msdoctor.facts.target.TargetFacts)."""
        from msdoctor.facts.target import TARGET

        return self.get(TARGET)
