"""Runs the selected checks concurrently, each with a timeout; a crash is a result.

Each check runs in its own daemon thread: a check stuck past its deadline is
reported as an ``error`` result and abandoned, the process groups it started are
killed (all of them at the run's deadline: msdoctor.proc), and it can never keep
msdoctor from exiting.
"""

from __future__ import annotations

import datetime as _dt
import queue
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from msdoctor import __version__, proc
from msdoctor.context import Context, FactUnavailable
from msdoctor.model import CheckResult, Finding, Location, Report, Status, Target
from msdoctor.plugins import LoadedCheck, LoadFailure, check_prefetch, check_timeout, load_failure_finding

DEFAULT_CHECK_TIMEOUT_S = 180.0
DEFAULT_DEADLINE_S = 600.0


@dataclass
class RunSettings:
    check_timeout_s: float = DEFAULT_CHECK_TIMEOUT_S
    deadline_s: float = DEFAULT_DEADLINE_S
    max_parallel: int = 8


def _contract_error(check_id: str, what: str) -> list[Finding]:
    return [
        Finding.error(
            f"check {check_id} {what}", detail="a check must return list[Finding]; this is a bug in the check"
        )
    ]


def _normalise(check_id: str, raw: Any) -> list[Finding]:
    """Validate what run() returned; a broken contract becomes an error finding."""
    if isinstance(raw, Finding):
        raw = [raw]
    if raw is None or not isinstance(raw, (list, tuple)):
        return _contract_error(check_id, f"returned {type(raw).__name__}, not a list of findings")
    bad = [x for x in raw if not isinstance(x, Finding)]
    if bad:
        return _contract_error(check_id, f"returned a {type(bad[0]).__name__} among its findings")
    if not raw:
        return [
            Finding.error(
                f"check {check_id} returned no findings",
                detail="a check must say what it proved (pass) or why it did not apply (skip)",
            )
        ]
    out = []
    for x in raw:
        problem = _broken_finding(x)
        if problem is not None:
            return _contract_error(check_id, f"returned a finding with {problem}")
        out.append(x)
    return out


#: The types of a Finding's fields, as renderers and the exit code rely on them (a subclass or
#: ``object.__setattr__`` can bypass Finding.__post_init__).
_FIELD_TYPES: dict[str, tuple] = {
    "title": (str,),
    "detail": (str,),
    "fix": (str, type(None)),
    "location": (Location, type(None)),
    "docs": (str, type(None)),
    "evidence": (Mapping,),
    "proved": (str, type(None)),
    "code": (str, type(None)),
    "suppressed": (str, type(None)),
}


def _broken_finding(f: Finding) -> Optional[str]:
    """Why ``f`` is not a finding a renderer can show, or None."""
    try:
        if type(f.status) is not Status:
            return f"status {f.status!r} (not one of {', '.join(s.value for s in Status)})"
        for name, types in _FIELD_TYPES.items():
            value = getattr(f, name)
            if not isinstance(value, types):
                return f"{name} of type {type(value).__name__}"
        if not f.title.strip():
            return "an empty title"
    except Exception as exc:  # noqa: BLE001 - a field that raises when read
        return f"a field that raises {type(exc).__name__}"
    return None


def _skip_without_config(loaded: LoadedCheck) -> CheckResult:
    info = loaded.info
    return CheckResult(
        id=info.id,
        title=info.title,
        description=info.description,
        provider=loaded.provider,
        findings=[Finding.skipped("no training config", reason=f"pass --config FILE to run {info.id}")],
    )


def run_one(loaded: LoadedCheck, ctx: Context) -> CheckResult:
    """Run one check in the calling thread; never raises (except a Ctrl-C in the main thread).

    Whatever ``run`` raises is that check's error result, ``SystemExit`` included (a ``sys.exit`` in a
    check thread would otherwise end only the thread, and the run would wait for its timeout); so is a
    ``KeyboardInterrupt`` raised in a check thread, which cannot be a Ctrl-C (signals reach the main thread).
    """
    info = loaded.info
    if info.needs_config and ctx.options.config_path is None:
        return _skip_without_config(loaded)
    started = time.monotonic()
    tb = None
    try:
        findings = _normalise(info.id, loaded.check.run(ctx))
    except FactUnavailable as exc:
        loc = exc.location if isinstance(exc.location, Location) else None
        findings = [Finding.error(exc.message, fix=exc.fix, location=loc)]
    except BaseException as exc:  # noqa: BLE001 - a crash is a result, not a crash of msdoctor
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise
        if type(exc).__module__ == "msdoctor.cli":  # SIGTERM / SIGHUP of msdoctor itself
            raise
        tb = traceback.format_exc()
        what = (
            f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"crashed: {type(exc).__name__}: {exc}"
        )
        findings = [
            Finding.error(
                f"check {info.id} {what}",
                detail="this is a bug in the check; run with -v for the traceback",
                evidence={"exception": type(exc).__name__},
            )
        ]
    return CheckResult(
        id=info.id,
        title=info.title,
        description=info.description,
        findings=findings,
        duration_s=time.monotonic() - started,
        provider=loaded.provider,
        traceback=tb,
    )


def _timeout_result(loaded: LoadedCheck, waited: float, reason: str) -> CheckResult:
    info = loaded.info
    return CheckResult(
        id=info.id,
        title=info.title,
        description=info.description,
        findings=[
            Finding.error(
                f"check {info.id} did not finish: {reason}",
                detail=f"stopped waiting after {waited:.1f} s",
                fix="run it alone with `msdoctor check --only " + info.id + " -v` to see where it stalls",
            )
        ],
        duration_s=waited,
        provider=loaded.provider,
    )


def failure_result(failure: LoadFailure) -> CheckResult:
    return CheckResult(
        id=failure.id,
        title=f"plugin {failure.provider}",
        description=f"load the checks of {failure.provider}",
        findings=[load_failure_finding(failure)],
        provider=failure.provider,
        traceback=failure.traceback or None,
    )


def run_checks(
    checks: Sequence[LoadedCheck],
    ctx: Context,
    settings: Optional[RunSettings] = None,
    on_done: Optional[Callable[[CheckResult], None]] = None,
) -> list[CheckResult]:
    """Run checks concurrently; results come back in the order of ``checks``."""
    settings = settings or RunSettings()
    prefetch: list[Any] = []
    for loaded in checks:
        if not (loaded.info.needs_config and ctx.options.config_path is None):
            prefetch.extend(check_prefetch(loaded))
    ctx.prefetch(prefetch)
    return _Run(checks, ctx, settings, on_done).run()


class _Run:
    """One run_checks call: the checks waiting to start, those running (each in its daemon thread), and the
    results so far; a check past its own timeout, or every unfinished one at the run's deadline, is given up on."""

    def __init__(
        self,
        checks: Sequence[LoadedCheck],
        ctx: Context,
        settings: RunSettings,
        on_done: Optional[Callable[[CheckResult], None]],
    ) -> None:
        self.checks = checks
        self.ctx = ctx
        self.settings = settings
        self.on_done = on_done
        self.done: "queue.Queue[tuple[int, CheckResult]]" = queue.Queue()
        self.results: dict[int, CheckResult] = {}
        self.started_at: dict[int, float] = {}
        self.threads: dict[int, threading.Thread] = {}
        self.pending = list(range(len(checks)))
        self.running: set[int] = set()
        self.t0 = time.monotonic()

    def run(self) -> list[CheckResult]:
        while self.pending or self.running:
            while self.pending and len(self.running) < self.settings.max_parallel:
                self._start(self.pending.pop(0))
            try:
                i, res = self.done.get(timeout=self._wait_s())
            except queue.Empty:
                now = time.monotonic()
                self._expire_timed_out(now)
                if now - self.t0 >= self.settings.deadline_s:
                    self._expire_all(now)
                continue
            if i in self.running:  # not already given up on
                self.running.discard(i)
                self.results[i] = res
                if self.on_done:
                    self.on_done(res)
        return [self.results[i] for i in range(len(self.checks))]

    def _worker(self, i: int) -> None:
        self.done.put((i, run_one(self.checks[i], self.ctx)))  # run_one returns whatever the check raises

    def _start(self, i: int) -> None:
        self.started_at[i] = time.monotonic()
        self.running.add(i)
        self.threads[i] = threading.Thread(
            target=self._worker, args=(i,), name=f"check-{self.checks[i].id}", daemon=True
        )
        self.threads[i].start()

    def _limit(self, i: int) -> float:
        return check_timeout(self.checks[i], self.settings.check_timeout_s)

    def _wait_s(self) -> float:
        """How long to wait for a result: until the next moment some running check reaches its own limit or the
        run reaches its deadline (at most 0.5 s, at least 0.01 s)."""
        now = time.monotonic()
        limits = [self.started_at[i] + self._limit(i) for i in self.running]
        wake = min(limits + [self.t0 + self.settings.deadline_s])
        return max(0.01, min(wake - now, 0.5))

    def _expire_timed_out(self, now: float) -> None:
        """Give up on each running check past its own limit and kill what it started."""
        for j in sorted(self.running):
            limit = self._limit(j)
            if now - self.started_at[j] >= limit:
                self.results[j] = _timeout_result(
                    self.checks[j], now - self.started_at[j], f"timed out after {limit:.0f} s"
                )
                self.running.discard(j)
                proc.kill_owned(self.threads[j].ident)  # what it started must not keep running
                if self.on_done:
                    self.on_done(self.results[j])

    def _expire_all(self, now: float) -> None:
        """The run's deadline passed: every check not finished, running or not started, is given up on."""
        for j in sorted(self.running) + self.pending:
            self.results[j] = _timeout_result(
                self.checks[j],
                now - self.started_at.get(j, now),
                f"the run's deadline of {self.settings.deadline_s:.0f} s passed",
            )
            if self.on_done:
                self.on_done(self.results[j])
        self.running.clear()
        self.pending.clear()
        proc.kill_all()


def build_report(
    results: list[CheckResult],
    target: Target,
    started: float,
    started_wall: _dt.datetime,
    facts: Optional[dict[str, Any]] = None,
    notices: Optional[list[Finding]] = None,
) -> Report:
    return Report(
        msdoctor_version=__version__,
        target=target,
        results=results,
        started_at=started_wall.astimezone(_dt.timezone.utc).isoformat(timespec="seconds"),
        duration_s=time.monotonic() - started,
        facts=facts or {},
        notices=notices or [],
    )


def statuses(results: Sequence[CheckResult]) -> list[Status]:
    return [r.status for r in results]
