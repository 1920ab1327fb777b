"""CI renderers (junit, github, markdown, vscode), --fail-on and --output, on built reports and on real msdoctor runs.

The JUnit output is validated with the real `xmlschema` validator against Jenkins'
junit-10.xsd (vendored in tests/data/junit/ with its source). The integration
tests run the installed `msdoctor` against the test interpreter; a stale
PYTHONPATH entry produces a real warning from the python-env check.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from helpers import env_with, run_msdoctor
from msdoctor.model import CheckResult, Finding, Location, Report, Status, Target
from msdoctor.render import FORMATS, RenderOptions, render
from msdoctor.render import github, junit, vscode

XSD = Path(__file__).parent / "data" / "junit" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def result(cid: str, *findings: Finding, provider: str = "msdoctor") -> CheckResult:
    return CheckResult(cid, cid.replace("-", " ").title(), f"the {cid} check", list(findings), 0.25, provider)


def report(*results: CheckResult, notices: tuple[Finding, ...] = ()) -> Report:
    return Report(
        "0.1.0",
        Target("/env/bin/python", "3.11.7", "cpython", "/env", "venv", "env"),
        list(results),
        "2026-01-01T00:00:00+00:00",
        1.5,
        facts={},
        notices=list(notices),
    )


def mixed_report() -> Report:
    """One check of each outcome, a suppressed failure, control characters and GitHub's special characters."""
    return report(
        result("ok-check", Finding.passed("all good", proved="ran a 64x64 matmul")),
        result(
            "warn-check",
            Finding.warn(
                "numpy 1.26 is old: consider 2,0",
                detail="line1\nline2",
                location=Location("cfg/train.yaml", 12, 3),
                code="old-numpy",
            ),
        ),
        result(
            "fail-check",
            Finding.fail(
                "CANN 8.0 vs MindSpore 2.7: 100% broken, see \x1b[31mred\x1b[0m",
                fix="/env/bin/python -m pip install mindspore==2.5.0",
                location=Location("/abs/requirements.txt"),
            ),
        ),
        result("error-check", Finding.error("check crashed: KeyError\x00")),
        result("skip-check", Finding.skipped("no config", reason="no --config given")),
        result("supp-check", Finding(Status.FAIL, "accepted failure", suppressed="known CI limitation")),
    )


# -- JUnit ----------------------------------------------------------------------------------------
def junit_text(rep: Report, fail_on: Status = Status.FAIL) -> str:
    buf = io.StringIO()
    junit.render(rep, buf, RenderOptions(fail_on=fail_on))
    return buf.getvalue()


def test_junit_validates_and_maps_each_status(schema: xmlschema.XMLSchema) -> None:
    text = junit_text(mixed_report())
    schema.validate(text)  # raises with the reason when invalid
    root = ET.fromstring(text)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"ok-check", "warn-check", "fail-check", "error-check", "skip-check", "supp-check"}
    assert cases["fail-check"].find("failure") is not None
    assert "pip install mindspore==2.5.0" in cases["fail-check"].find("failure").text
    assert cases["error-check"].find("error") is not None
    assert cases["skip-check"].find("skipped").get("message") == "no --config given"
    # a warning passes, with its findings in system-out
    assert cases["warn-check"].find("failure") is None and cases["warn-check"].find("error") is None
    assert "numpy 1.26 is old" in cases["warn-check"].find("system-out").text
    # a suppressed failure passes and is shown, marked, with its reason
    assert cases["supp-check"].find("failure") is None
    assert "suppressed: known CI limitation" in cases["supp-check"].find("system-out").text
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "6",
        "1",
        "1",
        "1",
    )
    # control characters are escaped visibly, not dropped and not left raw
    assert "\\x1b[31mred" in text and "\x1b" not in text and "\x00" not in text


def test_junit_strict_turns_warnings_into_failures(schema: xmlschema.XMLSchema) -> None:
    text = junit_text(mixed_report(), fail_on=Status.WARN)
    schema.validate(text)
    cases = {c.get("name"): c for c in ET.fromstring(text).iter("testcase")}
    failure = cases["warn-check"].find("failure")
    assert failure is not None and failure.get("type") == "warn"
    assert cases["supp-check"].find("failure") is None  # suppressed stays a pass under strict too


def test_junit_notices_are_a_testcase(schema: xmlschema.XMLSchema) -> None:
    notice = Finding.warn(
        "suppression of x expired on 2020-01-01", location=Location("msdoctor.toml", 3), code="suppression-expired"
    )
    text = junit_text(report(result("a", Finding.passed("fine", proved="p")), notices=(notice,)), Status.WARN)
    schema.validate(text)
    cases = {c.get("name"): c for c in ET.fromstring(text).iter("testcase")}
    assert cases["notices"].find("failure") is not None


# -- GitHub ---------------------------------------------------------------------------------------
def test_github_escaping_follows_the_runner_rules() -> None:
    assert github.escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    # the runner unescapes %0A etc.; a ':' or ',' left raw in a property would cut the property list
    line = github.command(github.Item("warn-check", mixed_report().results[1].findings[0]), Status.FAIL)
    head, _, message = line.partition("::")[2].partition("::")
    level, _, props = head.partition(" ")
    assert level == "warning"
    pairs = dict(p.split("=", 1) for p in props.split(","))
    assert pairs["file"] == "cfg/train.yaml" and pairs["line"] == "12" and pairs["col"] == "3"
    assert pairs["title"].startswith("msdoctor warn-check/old-numpy%3A numpy 1.26 is old%3A consider 2%2C0")
    assert "\n" not in message and "line1%0Aline2" in message


def test_github_levels_limits_and_step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    # the renderer reads no environment and writes no file: these must change nothing
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", "/elsewhere")
    many = [Finding.fail(f"problem {i}") for i in range(13)]
    rep = mixed_report()
    rep.results.append(result("many", *many))
    buf = io.StringIO()
    github.render(rep, buf, RenderOptions(workspace="/abs"))
    out = buf.getvalue().splitlines()
    errors = [line for line in out if line.startswith("::error ")]
    assert len(errors) == github.PER_LEVEL  # GitHub shows 10 per level: the rest are counted, not lost
    assert any("more finding(s) not annotated" in line for line in out)
    assert any(line.startswith("::warning file=cfg/train.yaml,line=12,col=3,") for line in out)
    assert any(line.startswith("::notice ") and "suppressed: known CI limitation" in line for line in out)
    # a path inside the workspace is made relative so the annotation attaches to the file
    assert any("file=requirements.txt," in line for line in out)
    assert summary.read_text() == "# earlier step\n"
    text = github.step_summary(rep, RenderOptions())
    assert "problem 12" in text and "accepted failure" in text


def test_check_appends_the_job_summary(tmp_path: Path) -> None:
    """`msdoctor check --format github` writes the annotations to stdout and appends the summary file."""
    from helpers import env_with, run_msdoctor

    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    env = env_with({"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(tmp_path)})
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--format", "github", env=env, cwd=tmp_path)
    assert res.returncode in (0, 1), res.stderr
    assert "msdoctor: 1 check" in res.stdout
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and "`python-env`" in text  # appended, never overwritten
    unwritable = tmp_path / "no-such-dir" / "summary.md"
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env",
        "--format",
        "github",
        env=env_with({"GITHUB_STEP_SUMMARY": str(unwritable)}),
        cwd=tmp_path,
    )
    assert "::warning title=msdoctor::could not append the job summary" in res.stdout


# -- Markdown and VS Code ---------------------------------------------------------------------------
def test_markdown_shows_every_check_and_escapes_tables() -> None:
    rep = mixed_report()
    rep.results.append(result("pipe", Finding.warn("a | b")))
    buf = io.StringIO()
    render("markdown", rep, buf, RenderOptions())
    text = buf.getvalue()
    for r in rep.results:
        assert f"`{r.id}`" in text
    assert "a \\| b" in text
    assert "(suppressed)" in text and "known CI limitation" in text
    assert "`/env/bin/python -m pip install mindspore==2.5.0`" in text


def test_vscode_line_forms_match_their_patterns() -> None:
    lines = vscode.lines(mixed_report())
    located = re.compile(vscode.LOCATED_REGEXP)
    whole = re.compile(vscode.FILE_REGEXP)
    for line in lines:
        assert bool(located.match(line)) != bool(whole.match(line)), line  # exactly one form matches
    warn = located.match(next(line for line in lines if "numpy 1.26" in line))
    assert warn.group(1, 2, 3, 4, 6) == ("cfg/train.yaml", "12", "3", "warning", "warn-check/old-numpy")
    fail = whole.match(next(line for line in lines if "CANN 8.0" in line))
    assert fail.group(1, 2, 4) == ("/abs/requirements.txt", "error", "fail-check")
    nowhere = whole.match(next(line for line in lines if "check crashed" in line))
    assert nowhere.group(1) == "/env/bin/python"  # no location: the target interpreter
    supp = whole.match(next(line for line in lines if "accepted failure" in line))
    assert supp.group(2) == "info" and "(suppressed: known CI limitation)" in supp.group(3)
    assert not any("all good" in line or "no config" in line for line in lines)  # passes and skips are no problems


def test_every_format_is_registered() -> None:
    assert {"terminal", "json", "junit", "github", "markdown", "vscode"} <= set(FORMATS)


# -- real msdoctor ------------------------------------------------------------------------------------
def stale_env(tmp_path: Path, **extra: str) -> dict:
    return env_with({"PYTHONPATH": str(tmp_path / "gone"), **extra}, drop=["GITHUB_STEP_SUMMARY"])


def test_fail_on_threshold_and_strict_alias(tmp_path: Path) -> None:
    base = ("check", "--quick", "--only", "python-env", "--format", "json")
    env = stale_env(tmp_path)
    default = run_msdoctor(*base, env=env, cwd=tmp_path)
    warn = run_msdoctor(*base, "--fail-on", "warn", env=env, cwd=tmp_path)
    strict = run_msdoctor(*base, "--strict", env=env, cwd=tmp_path)
    explicit = run_msdoctor(*base, "--fail-on", "fail", env=env, cwd=tmp_path)
    assert json.loads(default.stdout)["summary"]["status"] == "warn"
    assert (default.returncode, warn.returncode, strict.returncode, explicit.returncode) == (0, 1, 1, 0)
    assert json.loads(warn.stdout)["summary"]["exit_code"] == 1
    clash = run_msdoctor(*base, "--strict", "--fail-on", "fail", env=env, cwd=tmp_path)
    assert clash.returncode == 2 and "--strict means --fail-on warn" in clash.stderr


def test_output_file_gets_the_format_and_terminal_the_human_view(tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    out = tmp_path / "msdoctor-junit.xml"
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env",
        "--format",
        "junit",
        "--output",
        str(out),
        env=stale_env(tmp_path),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    schema.validate(str(out))
    assert "Python environment (python-env)" in res.stdout and "<testsuite" not in res.stdout
    assert f"report written to {out}" in res.stderr


@pytest.mark.parametrize("fmt", ["junit", "github", "markdown", "vscode"])
def test_real_run_in_each_format(fmt: str, tmp_path: Path, schema: xmlschema.XMLSchema) -> None:
    res = run_msdoctor(
        "check", "--quick", "--only", "python-env", "--format", fmt, env=stale_env(tmp_path), cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert "PYTHONPATH names a directory that does not exist" in res.stdout
    if fmt == "junit":
        schema.validate(res.stdout)
    elif fmt == "github":
        assert re.search(r"^::warning title=msdoctor python-env/pythonpath-missing%3A ", res.stdout, re.M)
    elif fmt == "vscode":
        assert re.search(vscode.FILE_REGEXP, res.stdout.splitlines()[0])
