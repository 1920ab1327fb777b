"""The result model: ordering, invariants, verdict and exit codes."""

from __future__ import annotations

import pytest

from msdoctor.model import CheckResult, ExitCode, Finding, Location, Report, Status, Target, worst


def result(*findings: Finding, id: str = "c") -> CheckResult:
    return CheckResult(id=id, title=id, description=id, findings=list(findings))


def report(*results: CheckResult, probe_error: str | None = None) -> Report:
    return Report("0", Target("/py", probe_error=probe_error), list(results), "2026-01-01T00:00:00+00:00", 0.1)


def test_status_order() -> None:
    assert Status.PASS < Status.SKIP < Status.WARN < Status.FAIL < Status.ERROR
    assert sorted([Status.ERROR, Status.PASS, Status.WARN]) == [Status.PASS, Status.WARN, Status.ERROR]
    assert worst([Status.SKIP, Status.FAIL, Status.WARN]) is Status.FAIL
    assert worst([]) is Status.PASS
    assert Status.WARN <= Status.WARN <= Status.FAIL and Status.ERROR >= Status.FAIL > Status.SKIP
    assert not Status.FAIL <= Status.WARN and not Status.PASS >= Status.SKIP
    with pytest.raises(TypeError):
        _ = Status.FAIL < "warn"  # type: ignore[operator]


def test_a_pass_must_say_what_it_proved() -> None:
    with pytest.raises(ValueError, match="what it proved"):
        Finding(Status.PASS, "fine")
    assert Finding.passed("fine", proved="ran 64x64 matmul").proved == "ran 64x64 matmul"


def test_a_finding_needs_a_title() -> None:
    with pytest.raises(ValueError):
        Finding.warn("  ")
    with pytest.raises(TypeError):
        Finding("warn", "x")  # type: ignore[arg-type]


def test_check_status_is_its_worst_finding_and_empty_is_error() -> None:
    ok = Finding.passed("a", proved="p")
    assert result(ok).status is Status.PASS
    assert result(ok, Finding.warn("w")).status is Status.WARN
    assert result(Finding.skipped("n/a", reason="no config")).status is Status.SKIP
    # nothing returned proves nothing: never a silent pass
    assert result().status is Status.ERROR


def test_suppressed_problem_counts_as_pass_but_stays_visible() -> None:
    f = Finding(Status.FAIL, "x", suppressed="accepted until upgrade")
    r = result(f)
    assert r.status is Status.PASS
    assert r.findings[0].status is Status.FAIL


@pytest.mark.parametrize(
    "findings, fail_on, code",
    [
        ([Finding.passed("a", proved="p")], Status.FAIL, ExitCode.OK),
        ([Finding.warn("w")], Status.FAIL, ExitCode.OK),
        ([Finding.warn("w")], Status.WARN, ExitCode.PROBLEMS),
        ([Finding.skipped("s", reason="r")], Status.WARN, ExitCode.OK),
        ([Finding.fail("f")], Status.FAIL, ExitCode.PROBLEMS),
        ([Finding.error("e")], Status.FAIL, ExitCode.PROBLEMS),
        ([Finding.error("e")], Status.ERROR, ExitCode.PROBLEMS),
    ],
)
def test_exit_codes(findings: list, fail_on: Status, code: ExitCode) -> None:
    assert report(result(*findings)).exit_code(fail_on) is code


def test_unprobeable_target_means_no_verdict() -> None:
    rep = report(result(Finding.error("could not probe")), probe_error="timed out")
    assert rep.exit_code() is ExitCode.NO_VERDICT


def test_location_str() -> None:
    assert str(Location("a.py")) == "a.py"
    assert str(Location("a.py", 3)) == "a.py:3"
    assert str(Location("a.py", 3, 7)) == "a.py:3:7"


def test_counts() -> None:
    rep = report(result(Finding.warn("w"), id="a"), result(Finding.passed("p", proved="x"), id="b"))
    assert rep.counts() == {"pass": 1, "skip": 0, "warn": 1, "fail": 0, "error": 0}
    assert rep.status is Status.WARN
