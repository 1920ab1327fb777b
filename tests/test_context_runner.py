"""Context (lazy, once, thread-safe, injectable) and the runner (concurrency, timeouts, crashes)."""

from __future__ import annotations

import threading
import time

import pytest

from msdoctor.context import Context, FactSpec, FactUnavailable, Options
from msdoctor.model import Finding, Status
from msdoctor.plugins import LoadedCheck
from msdoctor.runner import RunSettings, run_checks


class FnCheck:
    def __init__(self, id: str, fn, **attrs) -> None:
        self.id, self.title, self.description = id, id, f"test check {id}"
        self._fn = fn
        for k, v in attrs.items():
            setattr(self, k, v)

    def run(self, ctx):
        return self._fn(ctx)


def loaded(check) -> LoadedCheck:
    return LoadedCheck(check, "msdoctor", f"{check.id} = test")


def test_fact_computed_once_across_threads() -> None:
    calls = []

    def compute(ctx):
        calls.append(1)
        time.sleep(0.05)
        return object()

    spec = FactSpec("slow", compute)
    ctx = Context(Options(), environ={})
    got = []
    threads = [threading.Thread(target=lambda: got.append(ctx.get(spec))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(g) for g in got}) == 1


def test_fact_failure_is_raised_to_every_caller() -> None:
    spec = FactSpec("broken", lambda ctx: (_ for _ in ()).throw(FactUnavailable("no npu-smi", "install it")))
    ctx = Context(Options(), environ={})
    for _ in range(2):
        with pytest.raises(FactUnavailable, match="no npu-smi"):
            ctx.get(spec)


def test_each_caller_raises_its_own_copy_of_a_stored_failure() -> None:
    """Callers in several threads must not share one exception object (its traceback would be rewritten)."""

    def compute(ctx: Context) -> None:
        time.sleep(0.2)
        raise FactUnavailable("no npu-smi", "install it", location=("x.yaml", 3))

    ctx = Context(Options(), environ={})
    spec = FactSpec("broken-threads", compute)
    caught: list[BaseException] = []

    def worker() -> None:
        try:
            ctx.get(spec)
        except FactUnavailable as exc:
            caught.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(caught) == 4 and len({id(e) for e in caught}) == 4
    for exc in caught:
        assert isinstance(exc, FactUnavailable) and (exc.message, exc.fix, exc.location) == (
            "no npu-smi",
            "install it",
            ("x.yaml", 3),
        )
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        assert "compute" in frames  # the original failure's frames are kept


def test_injected_facts_need_no_computation() -> None:
    spec = FactSpec("x", lambda ctx: pytest.fail("must not compute"))
    ctx = Context(Options(), facts={"x": 42}, environ={})
    assert ctx.get(spec) == 42
    assert ctx.has(spec)


def test_prefetch_overlaps_slow_facts() -> None:
    # each fact waits for the other: only concurrent computation lets both finish
    barrier = threading.Barrier(2, timeout=10)
    spec_a = FactSpec("a", lambda ctx: barrier.wait() is not None and "A", slow=True)
    spec_b = FactSpec("b", lambda ctx: barrier.wait() is not None and "B", slow=True)
    ctx = Context(Options(), environ={})
    ctx.prefetch([spec_a, spec_b])
    assert (ctx.get(spec_a), ctx.get(spec_b)) == ("A", "B")


def test_runner_turns_crash_and_broken_contract_into_errors() -> None:
    def crash(ctx):
        raise RuntimeError("boom")

    checks = [
        loaded(FnCheck("ok", lambda ctx: [Finding.passed("fine", proved="p")])),
        loaded(FnCheck("crash", crash)),
        loaded(FnCheck("none", lambda ctx: None)),
        loaded(FnCheck("empty", lambda ctx: [])),
        loaded(FnCheck("wrong", lambda ctx: ["a string"])),
        loaded(FnCheck("unavailable", lambda ctx: (_ for _ in ()).throw(FactUnavailable("probe failed", "fix it")))),
    ]
    results = run_checks(checks, Context(Options(), environ={}))
    by_id = {r.id: r for r in results}
    assert [r.id for r in results] == ["ok", "crash", "none", "empty", "wrong", "unavailable"]
    assert by_id["ok"].status is Status.PASS
    assert by_id["crash"].status is Status.ERROR
    assert "RuntimeError: boom" in by_id["crash"].findings[0].title
    assert "Traceback" in by_id["crash"].traceback
    for cid in ("none", "empty", "wrong"):
        assert by_id[cid].status is Status.ERROR, cid
    assert by_id["unavailable"].findings[0].title == "probe failed"
    assert by_id["unavailable"].findings[0].fix == "fix it"
    assert by_id["unavailable"].traceback is None


def test_runner_per_check_timeout_does_not_block_others() -> None:
    release = threading.Event()

    def hang(ctx):
        release.wait(30)
        return [Finding.passed("late", proved="p")]

    checks = [
        loaded(FnCheck("hang", hang, timeout_s=0.3)),
        loaded(FnCheck("quick", lambda ctx: [Finding.passed("q", proved="p")])),
    ]
    t0 = time.monotonic()
    results = run_checks(checks, Context(Options(), environ={}), RunSettings(check_timeout_s=60))
    elapsed = time.monotonic() - t0
    release.set()
    assert results[0].status is Status.ERROR and "timed out" in results[0].findings[0].title
    assert results[1].status is Status.PASS
    assert elapsed < 5


def test_runner_global_deadline() -> None:
    release = threading.Event()
    checks = [loaded(FnCheck(f"h{i}", lambda ctx: release.wait(30) and [])) for i in range(3)]
    results = run_checks(checks, Context(Options(), environ={}), RunSettings(deadline_s=0.3, max_parallel=2))
    release.set()
    assert all(r.status is Status.ERROR for r in results)
    assert all("deadline" in r.findings[0].title for r in results)


def test_runner_runs_checks_concurrently() -> None:
    # four checks that each wait for all four: a sequential runner would break the barrier
    barrier = threading.Barrier(4, timeout=10)

    def meet(ctx):
        barrier.wait()
        return [Finding.passed("met", proved="ran alongside three others")]

    checks = [loaded(FnCheck(f"s{i}", meet)) for i in range(4)]
    results = run_checks(checks, Context(Options(), environ={}), RunSettings(max_parallel=4))
    assert [r.status for r in results] == [Status.PASS] * 4
