"""Suppressions (msdoctor.toml / [tool.msdoctor]): parsing, expiry, reasons, and marking in every output format.

Unit tests use tiny reports; the integration tests run the real `msdoctor check`
with a stale PYTHONPATH entry, which makes the real python-env check warn with
the code `pythonpath-missing`.
"""

from __future__ import annotations

import datetime as dt
import json
import textwrap
from pathlib import Path

import pytest

from helpers import env_with, run_msdoctor
from msdoctor import suppress
from msdoctor.errors import UserError
from msdoctor.model import CheckResult, Finding, Report, Status, Target

TODAY = dt.date(2026, 6, 1)


def report_with(*findings: Finding, cid: str = "python-env") -> Report:
    return Report(
        "0.1.0",
        Target("/env/bin/python"),
        [CheckResult(cid, "t", "d", list(findings))],
        "2026-01-01T00:00:00+00:00",
        0.1,
    )


def rules(text: str, path: Path = Path("msdoctor.toml")) -> list[suppress.Suppression]:
    return suppress.parse(textwrap.dedent(text), path)


def test_inline_and_table_forms_with_lines() -> None:
    got = rules("""\
        # accepted on the CI image
        ignore = [
          { id = "python-env/pythonpath-missing", reason = "CI image", until = "2026-12-31" },
          { id = "kernel-mismatch", reason = "no notebooks here", until = 2026-07-01 },
        ]
        """)
    assert [(s.check_id, s.code, s.reason, s.until, s.line) for s in got] == [
        ("python-env", "pythonpath-missing", "CI image", dt.date(2026, 12, 31), 3),
        ("kernel-mismatch", None, "no notebooks here", dt.date(2026, 7, 1), 4),
    ]
    tables = rules("""\
        [[ignore]]
        id = "memory-fit"
        reason = "planning only"
        """)
    assert tables[0].check_id == "memory-fit" and tables[0].line == 2


def test_pyproject_tool_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "x"

        [tool.msdoctor]
        ignore = [{ id = "device-target", reason = "CPU runner" }]
        """)
    )
    got = suppress.load(tmp_path)
    assert [(s.check_id, s.reason, s.line, s.path.name) for s in got] == [
        ("device-target", "CPU runner", 5, "pyproject.toml")
    ]


def test_a_pyproject_without_msdoctor_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("this is [ not toml\n")
    assert suppress.load(tmp_path) == []


@pytest.mark.parametrize(
    "text, where, words",
    [
        ('ignore = [{ id = "x", reason = "r" ', ":1:", "malformed TOML"),
        ('ignore = "python-env"\n', ":1", "must be a list of tables"),
        ('ignore = [{ id = "python-env", reson = "typo" }]\n', ":1", "did you mean 'reason'"),
        ('\n\nignore = [{ id = "python-env", reason = "r", until = "next week" }]\n', ":3", "is not a date"),
        ('ignore = [{ reason = "no id" }]\n', ":1", "needs id"),
    ],
)
def test_malformed_files_name_file_and_line(text: str, where: str, words: str) -> None:
    with pytest.raises(UserError) as err:
        suppress.parse(text, Path("proj/msdoctor.toml"))
    assert f"proj/msdoctor.toml{where}" in err.value.message and words in err.value.message


def test_apply_marks_counts_and_warns() -> None:
    rep = report_with(
        Finding.passed("fine", proved="p"),
        Finding.warn("stale entry", code="pythonpath-missing"),
        Finding.fail("pythonhome set", code="pythonhome"),
    )
    got = suppress.apply(
        rep,
        rules("""\
        ignore = [
          { id = "python-env/pythonpath-missing" },
          { id = "python-env/pythonhome", reason = "old", until = "2026-01-01" },
          { id = "pyhton-env", reason = "typo" },
        ]
        """),
        known_ids=["python-env", "device-target"],
        today=TODAY,
    )
    findings = got.results[0].findings
    assert findings[1].suppressed == suppress.NO_REASON  # applied, but ...
    assert findings[2].suppressed is None  # expired: counts again
    assert got.results[0].status is Status.FAIL
    codes = sorted(n.code for n in got.notices)
    assert codes == ["suppression-expired", "suppression-no-reason", "suppression-unknown-check"]
    assert all(n.status is Status.WARN and n.location is not None for n in got.notices)
    assert "did you mean 'python-env'" in next(n.title for n in got.notices if n.code == "suppression-unknown-check")
    assert rep.results[0].findings[1].suppressed is None  # the input report is not changed


def test_whole_check_suppression_makes_it_pass_but_keeps_findings() -> None:
    rep = report_with(Finding.fail("a", code="x"), Finding.error("b"), Finding.skipped("c", reason="n/a"))
    got = suppress.apply(
        rep, rules('ignore = [{ id = "python-env", reason = "known", until = "2027-01-01" }]\n'), today=TODAY
    )
    f = got.results[0].findings
    assert [x.suppressed for x in f] == ["known", "known", None]  # a skip is no problem to suppress
    assert got.results[0].status is Status.SKIP and got.exit_code() == 0 and not got.notices


# -- real msdoctor ------------------------------------------------------------------------------------
def project(tmp_path: Path, toml: str) -> tuple[Path, dict]:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "msdoctor.toml").write_text(textwrap.dedent(toml))
    return proj, env_with({"PYTHONPATH": str(tmp_path / "gone")}, drop=["GITHUB_STEP_SUMMARY"])


def test_malformed_file_exits_2_before_any_check(tmp_path: Path) -> None:
    proj, env = project(tmp_path, 'ignore = [\n  { id = "python-env" reason = "x" },\n]\n')
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--project", str(proj), env=env)
    assert res.returncode == 2
    assert f"{proj / 'msdoctor.toml'}:2:" in res.stderr and "malformed TOML" in res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


@pytest.mark.parametrize("fmt", ["terminal", "json", "junit", "github", "markdown", "vscode"])
def test_suppressed_finding_is_marked_in_every_format(fmt: str, tmp_path: Path) -> None:
    proj, env = project(
        tmp_path,
        """\
        ignore = [{ id = "python-env/pythonpath-missing", reason = "stale path baked into the CI image", until = "2099-01-01" }]
        """,
    )
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env",
        "--project",
        str(proj),
        "--format",
        fmt,
        "--fail-on",
        "warn",
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr  # suppressed: not even a warning counts
    assert "PYTHONPATH names a directory that does not exist" in res.stdout  # still shown ...
    assert "stale path baked into the CI image" in res.stdout  # ... with its reason
    if fmt == "json":
        data = json.loads(res.stdout)
        f = [x for x in data["checks"][0]["findings"] if x["code"] == "pythonpath-missing"][0]
        assert f["status"] == "warn" and f["suppressed"] == "stale path baked into the CI image"


def test_expired_suppression_is_a_warning_and_no_longer_applies(tmp_path: Path) -> None:
    proj, env = project(
        tmp_path,
        """\
        ignore = [
          { id = "python-env/pythonpath-missing", reason = "was fine", until = "2020-01-01" },
        ]
        """,
    )
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--project", str(proj), "--format", "json", env=env)
    data = json.loads(res.stdout)
    assert [n["code"] for n in data["notices"]] == ["suppression-expired"]
    assert data["notices"][0]["location"]["line"] == 2
    assert data["checks"][0]["status"] == "warn"
    assert all(f["suppressed"] is None for f in data["checks"][0]["findings"])
