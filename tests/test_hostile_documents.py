"""Hostile user documents: msdoctor.toml through the bounded reader and the depth/entry caps (exit 2 with the file),
and the TOML document loader's depth cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import env_with, run_msdoctor
from msdoctor import docfile, suppress
from msdoctor.errors import UserError


@pytest.mark.parametrize(
    "text", ["a = " + "[" * 5000 + "]" * 5000 + "\n", "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"]
)
def test_deep_msdoctor_toml_is_exit_2(tmp_path, text):
    (tmp_path / "msdoctor.toml").write_text(text)
    with pytest.raises(UserError, match="nested more than"):
        suppress.load(tmp_path)
    with pytest.raises(UserError, match="nested more than"):
        docfile.load(tmp_path / "msdoctor.toml")


def test_very_many_ignore_entries_are_refused(tmp_path):
    entries = "".join('[[ignore]]\nid = "python-env"\nreason = "r"\n' for _ in range(suppress.MAX_ENTRIES + 1))
    (tmp_path / "msdoctor.toml").write_text(entries)
    with pytest.raises(UserError, match="ignore entries"):
        suppress.load(tmp_path)


def test_a_fifo_msdoctor_toml_does_not_hang_check(tmp_path):
    os.mkfifo(tmp_path / "msdoctor.toml")
    res = run_msdoctor(
        "check", "--quick", "--only", "python-env", "--project", str(tmp_path), env=env_with(), timeout=120
    )
    assert res.returncode in (0, 2), (res.returncode, res.stderr)  # skipped or refused; a guard: never a hang


def test_deep_toml_in_the_check_command_is_exit_2(tmp_path: Path):
    (tmp_path / "msdoctor.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--project", str(tmp_path), env=env_with())
    assert res.returncode == 2 and "internal error" not in res.stderr, res.stderr


# -- a plan or baseline of the wrong shape: exit 2 naming the file, the line and the field ----------------
def _plan(**args: object) -> dict:
    base: dict = {
        "worker_num": 4,
        "local_worker_num": 2,
        "master_addr": "10.0.0.1",
        "master_port": 8118,
        "node_rank": 0,
        "cluster_time_out": 600,
    }
    base.update(args)
    return {"args": base, "status": "pass", "findings": []}


@pytest.mark.parametrize(
    "plan, line, why",
    [
        (_plan(worker_num="eight"), 3, "args.worker_num is a string ('eight'), expected an integer"),
        (_plan(master_port=70000), 6, "args.master_port is 70000, outside 0..65535"),
        (_plan(node_rank=True), 7, "args.node_rank is a boolean (True), expected an integer"),
        ({"status": "fail"}, 1, "args is missing"),
        (dict(_plan(), status="fail", findings="x"), 11, "findings is a string ('x'), expected a list"),
        (
            dict(_plan(), status="fail", findings=[{"title": 3, "status": "fail"}]),
            13,
            "findings[0].title is an integer (3), expected a string",
        ),
    ],
)
def test_compare_plans_of_the_wrong_shape_is_exit_2_with_file_line_and_field(tmp_path, plan, line, why):
    import json

    good, bad = tmp_path / "node0.json", tmp_path / "node1.json"
    good.write_text(json.dumps(_plan(), indent=1))
    bad.write_text(json.dumps(plan, indent=1))
    res = run_msdoctor("preflight", "--compare-plans", str(good), "--compare-plans", str(bad), env=env_with())
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert f"node1.json:{line}: not the output of `msdoctor preflight plan --format json`: {why}" in res.stderr, (
        res.stderr
    )
    assert "fix: write it on each node with" in res.stderr


@pytest.mark.parametrize(
    "doc, line, why",
    [
        (
            {"busbw_gbs": {"world/AllReduce/4096": "fast"}},
            3,
            "busbw_gbs.world/AllReduce/4096 is a string ('fast'), expected a number",
        ),
        ({"warn_below": 5, "busbw_gbs": {}}, 2, "warn_below is 5, outside 0..1"),
        ({"busbw_gbs": []}, 2, "busbw_gbs is a list, expected an object"),
        (
            {"bandwidth": [{"group": "world", "op": "AllReduce", "size_bytes": "4k", "busbw_gbs": 1.0}]},
            6,
            "bandwidth[0].size_bytes is a string ('4k'), expected an integer",
        ),
        ({"bandwidth": [{"group": "world"}]}, 3, "bandwidth[0].op is missing"),
    ],
)
def test_a_baseline_of_the_wrong_shape_names_the_line_and_the_field(tmp_path, doc, line, why):
    import json

    from msdoctor.preflight import bandwidth as bw

    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc, indent=1))
    with pytest.raises(bw.BaselineError) as err:
        bw.load_baseline(path)
    assert f"baseline.json:{line}: " in str(err.value) and why in str(err.value), str(err.value)


def test_the_shape_checker_walks_deep_lists_without_recursion():
    from msdoctor.schema import Shape, problem

    deep: object = 1
    for _ in range(50_000):
        deep = [deep]
    nested = Shape(("list", "integer"))
    object.__setattr__(nested, "items", nested)  # a list of lists of ... of integers
    assert problem(deep, nested) is None
    assert problem([[["s"]]], nested) == ((0, 0, 0), "[0][0][0] is a string ('s'), expected a list or an integer")


@pytest.fixture(scope="module")
def real_report(tmp_path_factory) -> dict:
    """A real ``msdoctor check --quick --format json`` report of the test interpreter."""
    import json

    path = tmp_path_factory.mktemp("report") / "node-a.json"
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env,duplicate-installs",
        "--format",
        "json",
        "--output",
        str(path),
        env=env_with(),
    )
    assert res.returncode in (0, 1), res.stderr
    return json.loads(path.read_text())


def _edit(report: dict, how: str) -> dict:
    import copy

    doc = copy.deepcopy(report)
    first = doc["checks"][0]
    if how == "findings-string":
        first["findings"] = "x"
    elif how == "evidence-list":
        first["findings"][0]["evidence"] = [1, 2]
    elif how == "status-number":
        first["status"] = 7
    elif how == "title-null":
        first["findings"][0]["title"] = None
    elif how == "facts-section-list":
        doc["facts"]["packages"] = ["mindspore==2.7.0"]
    elif how == "target-string":
        doc["target"] = "/usr/bin/python3"
    elif how == "check-string":
        doc["checks"][0] = "python-env"
    elif how == "schema-bool":
        doc["schema_version"] = True
    return doc


@pytest.mark.parametrize(
    "how, why",
    [
        ("findings-string", "checks[0].findings is a string ('x'), expected a list or null"),
        ("evidence-list", "checks[0].findings[0].evidence is a list, expected an object or null"),
        ("status-number", "checks[0].status is an integer (7), expected a string"),
        ("title-null", "checks[0].findings[0].title is null, expected a string"),
        ("facts-section-list", "facts.packages is a list, expected an object or null"),
        ("target-string", "target is a string ('/usr/bin/python3'), expected an object or null"),
        ("check-string", "checks[0] is a string ('python-env'), expected an object"),
        ("schema-bool", "schema_version is a boolean (True), expected an integer"),
    ],
)
def test_diff_of_a_report_with_wrong_field_types_is_exit_2_naming_line_and_field(tmp_path, real_report, how, why):
    """A hand-edited report (node B's, pasted into a ticket): each wrong field type is exit 2 with file:line and
    the field, never a TypeError / AttributeError inside the comparison (exit 3)."""
    import json
    import re

    good, bad = tmp_path / "node-a.json", tmp_path / "node-b.json"
    good.write_text(json.dumps(real_report, indent=1))
    bad.write_text(json.dumps(_edit(real_report, how), indent=1))
    res = run_msdoctor("diff", str(good), str(bad), env=env_with())
    assert res.returncode == 2, (res.returncode, res.stdout[-1000:], res.stderr)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert re.search(r"node-b\.json:\d+: not an msdoctor JSON report: " + re.escape(why), res.stderr), res.stderr
