"""`msdoctor report` (shareable Markdown) and `msdoctor diff` (two JSON reports, node A vs node B).

The diff tests compare real reports written by `msdoctor check --format json`:
the same interpreter under two environments (CANN paths set differently, rank
variables differing as they do between nodes), and the test interpreter against
a fresh real venv that lacks MindSpore.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from helpers import env_with, make_venv, run_msdoctor
from msdoctor.commands.diff import compare
from msdoctor.report_diff import MISSING


def write_report(path: Path, env: dict, *extra: str) -> dict:
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env",
        "--format",
        "json",
        "--output",
        str(path),
        *extra,
        env=env,
        cwd=path.parent,
    )
    assert res.returncode in (0, 1), res.stderr
    return json.loads(path.read_text())


def node_env(**extra: str) -> dict:
    return env_with(extra, drop=["ASCEND_HOME_PATH", "RANK_ID", "MS_NODE_ID", "GITHUB_STEP_SUMMARY"])


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real report, shared by the tests that only need a valid one."""
    path = tmp_path_factory.mktemp("good") / "good.json"
    write_report(path, node_env())
    return path


def test_report_markdown_has_facts_and_checks(tmp_path: Path) -> None:
    out = tmp_path / "msdoctor-report.md"
    res = run_msdoctor(
        "report",
        "--quick",
        "--only",
        "python-env",
        "--output",
        str(out),
        cwd=tmp_path,
        env=env_with({"MS_WORKER_NUM": "2"}),
    )
    assert res.returncode == 0 and f"report written to {out}" in res.stderr
    text = out.read_text()
    assert text.startswith("## ") and "msdoctor report" in text.splitlines()[0]
    for part in (
        "### Environment",
        "**Training stack**",
        "| mindspore | `2.7.0` |",
        "| MS_WORKER_NUM | `2` |",
        "`python-env`",
        "All other packages",
        "masked; check before sharing",
    ):
        assert part in text, part
    stdout = run_msdoctor("report", "--quick", "--only", "python-env", cwd=tmp_path)
    assert stdout.returncode == 0 and "### Environment" in stdout.stdout


def test_diff_same_environment_but_rank_is_clean(tmp_path: Path) -> None:
    a = write_report(tmp_path / "node1.json", node_env(RANK_ID="0", MS_NODE_ID="0"))
    b = write_report(tmp_path / "node2.json", node_env(RANK_ID="1", MS_NODE_ID="1"))
    assert a["facts"]["env"]["RANK_ID"] == "0" and b["facts"]["env"]["RANK_ID"] == "1"
    res = run_msdoctor("diff", str(tmp_path / "node1.json"), str(tmp_path / "node2.json"))
    assert res.returncode == 0, res.stdout
    assert "RANK_ID" in res.stdout and "0 differences that matter" in res.stdout


def test_diff_cann_path_differs(tmp_path: Path) -> None:
    write_report(tmp_path / "a.json", node_env(ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/8.2.RC1"))
    write_report(tmp_path / "b.json", node_env(ASCEND_HOME_PATH="/usr/local/Ascend/ascend-toolkit/8.0.RC3"))
    res = run_msdoctor("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json")
    assert res.returncode == 1
    diffs = json.loads(res.stdout)["differences"]
    (d,) = [d for d in diffs if d["key"] == "ASCEND_HOME_PATH"]
    assert d["matters"] and d["a"].endswith("8.2.RC1") and d["b"].endswith("8.0.RC3")


@pytest.mark.slow
def test_diff_against_an_env_without_mindspore(tmp_path: Path, good: Path) -> None:
    venv = make_venv(tmp_path / "bare")
    write_report(tmp_path / "bare.json", node_env(), "--python", venv.python)
    res = run_msdoctor("diff", str(good), str(tmp_path / "bare.json"))
    assert res.returncode == 1
    line = next(line for line in res.stdout.splitlines() if line.strip().startswith("mindspore "))
    assert "A: 2.7.0" in line and "B: (absent)" in line
    assert "Differences that matter" in res.stdout


def test_compare_device_counts_versions_and_verdicts(good: Path) -> None:
    base = json.loads(good.read_text())
    other = copy.deepcopy(base)
    base["facts"]["ascend"] = {"cann_version": "8.2.RC1", "driver_version": "24.1.0", "device_count": 8}
    other["facts"]["ascend"] = {"cann_version": "8.2.RC1", "driver_version": "24.1.0", "device_count": 7}
    other["checks"][0]["status"] = "fail"
    other["checks"][0]["findings"][0]["evidence"]["python_version"] = "3.10.14"
    other["started_at"], other["duration_s"] = "2030-01-01T00:00:00+00:00", 99.0
    diffs = {(d.section, d.key): d for d in compare(base, other)}
    assert diffs[("ascend", "ascend.device_count")].matters
    assert diffs[("checks", "python-env")].matters and diffs[("checks", "python-env")].b == "fail"
    assert any(k[1].startswith("python-env: ") and "python_version" in k[1] for k in diffs)
    assert not any("started_at" in k[1] or "duration" in k[1] for k in diffs)


def test_a_quick_report_against_a_full_one_says_not_run(good: Path, tmp_path: Path) -> None:
    """What --quick skips is "not run", not a difference that matters; a real verdict change still matters."""
    quick = json.loads(good.read_text())
    assert quick["facts"]["invocation"]["quick"] is True  # written by check --quick
    full = copy.deepcopy(quick)
    full["facts"]["invocation"]["quick"] = False
    full["checks"].append(
        {
            "id": "device-target",
            "title": "Device",
            "description": "d",
            "status": "pass",
            "duration_s": 1.0,
            "findings": [
                {"status": "pass", "title": "matmul ran", "code": "live", "evidence": {"device_target": "CPU"}}
            ],
        }
    )
    full["checks"].append(
        {"id": "version-matrix", "title": "V", "description": "v", "status": "fail", "duration_s": 1.0, "findings": []}
    )
    quick["checks"].append(
        {"id": "version-matrix", "title": "V", "description": "v", "status": "skip", "duration_s": 0.0, "findings": []}
    )
    diffs = {d.key: d for d in compare(full, quick)}
    assert diffs["device-target"].not_run and not diffs["device-target"].matters
    assert diffs["version-matrix"].not_run  # skipped on the --quick side
    quick["checks"][0]["status"] = "fail"  # python-env ran in both and changed: that matters
    diffs = {d.key: d for d in compare(full, quick)}
    assert diffs["python-env"].matters and not diffs["python-env"].not_run
    a, b = tmp_path / "full.json", tmp_path / "quick.json"
    a.write_text(json.dumps(full))
    b.write_text(json.dumps(quick))
    res = run_msdoctor("diff", str(a), str(b), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Not compared: one report is from `check --quick`" in res.stdout
    assert "1 difference that matters," in res.stdout and "2 not run in the --quick report." in res.stdout


def test_quick_report_says_what_it_collected(good: Path) -> None:
    """A --quick report says it holds only the static parts; diff compares only what both collected."""
    assert json.loads(good.read_text())["facts"]["invocation"]["collected"] == ["static"]


def _with_live(report: dict) -> dict:
    """The same report as a full `check` writes it: the live probe ran and recorded facts.mindspore_runtime."""
    full = copy.deepcopy(report)
    full["facts"]["invocation"].update(quick=False, collected=["static", "live"])
    full["facts"]["mindspore_runtime"] = {"version": "2.7.0", "device_target": "CPU", "device_count": 1}
    return full


def test_live_probe_facts_are_not_compared_against_a_quick_report(good: Path, tmp_path: Path) -> None:
    """Issue 29: full vs --quick of one interpreter reported the live-probe facts as 4 differences that matter,
    one of them backwards (`A: (absent)  B: {}`)."""
    quick = json.loads(good.read_text())
    full = _with_live(quick)
    diffs = [d for d in compare(full, quick) if d.section == "mindspore_runtime"]
    assert {d.key for d in diffs} == {f"mindspore_runtime.{k}" for k in ("version", "device_target", "device_count")}
    assert all(d.not_run and not d.matters for d in diffs)
    assert all(d.a is not MISSING and d.b is MISSING for d in diffs)  # the full side has them, the quick side not
    a, b = tmp_path / "full.json", tmp_path / "quick.json"
    a.write_text(json.dumps(full))
    b.write_text(json.dumps(quick))
    res = run_msdoctor("diff", str(a), str(b), cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 differences that matter" in res.stdout
    assert "B did not collect live" in res.stdout and "not compared" in res.stdout
    assert "B: {}" not in res.stdout and "A: (absent)" not in res.stdout
    out = json.loads(run_msdoctor("diff", str(a), str(b), "--format", "json", cwd=tmp_path).stdout)
    assert out["not_compared"] == ["live"] and out["differ"] is False
    # both collected the live part and it differs: that matters
    other = _with_live(quick)
    other["facts"]["mindspore_runtime"]["device_count"] = 8
    diffs = {d.key: d for d in compare(full, other)}
    assert diffs["mindspore_runtime.device_count"].matters and not diffs["mindspore_runtime.device_count"].not_run


def test_a_section_only_one_report_has_is_shown_on_its_own_side(good: Path) -> None:
    a = json.loads(good.read_text())
    b = copy.deepcopy(a)
    b["facts"]["ascend"] = {"cann": "8.2.RC1"}
    rows = [d for d in compare(a, b) if d.section == "ascend"]
    assert [(d.key, d.a, d.b) for d in rows] == [("ascend.cann", MISSING, "8.2.RC1")]
    assert rows[0].matters


@pytest.mark.slow
def test_full_and_quick_reports_of_one_interpreter_do_not_differ(tmp_path: Path) -> None:
    """Real reports: `check` (live probe: MindSpore imported) and `check --quick` of the same interpreter."""
    env = node_env()
    reports = {}
    for name, extra in (("full", ()), ("quick", ("--quick",))):
        path = tmp_path / f"{name}.json"
        res = run_msdoctor(
            "check", *extra, "--only", "device-target", "--format", "json", "--output", str(path), env=env, cwd=tmp_path
        )
        assert res.returncode in (0, 1), res.stderr
        reports[name] = json.loads(path.read_text())
    full, quick = reports["full"], reports["quick"]
    assert full["facts"]["invocation"]["collected"] == ["static", "live"]
    assert "mindspore_runtime" in full["facts"] and "mindspore_runtime" not in quick["facts"]
    res = run_msdoctor("diff", str(tmp_path / "full.json"), str(tmp_path / "quick.json"), cwd=tmp_path)
    assert "0 differences that matter" in res.stdout, res.stdout
    assert res.returncode == 0


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "no such file"),
        ('{"schema_version": 1,\n  "checks": [}', ":2:"),
        ('{"hello": 1}', "not an msdoctor JSON report"),
        ('{"schema_version": 99, "checks": []}', "newer than this msdoctor reads"),
    ],
)
def test_diff_unreadable_input_exits_2(content: "str | None", words: str, tmp_path: Path, good: Path) -> None:
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    res = run_msdoctor("diff", str(good), str(bad))
    assert res.returncode == 2 and str(bad) in res.stderr and words in res.stderr and "Traceback" not in res.stderr
