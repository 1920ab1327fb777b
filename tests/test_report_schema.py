"""The JSON report matches its documented schema (docs/report.schema.json)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from helpers import REPO, run_json
from msdoctor.model import CheckResult, Finding, Location, Report, Status, Target
from msdoctor.render import RenderOptions, render

SCHEMA = json.loads((REPO / "docs" / "report.schema.json").read_text())


def validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def sample_report() -> Report:
    findings = [
        Finding.passed("ok", proved="ran 64x64 matmul on CPU, max abs error 0.0", evidence={"device": "CPU"}),
        Finding.warn(
            "tight", detail="9% headroom", fix="set recompute: full", location=Location("t.yaml", 3, 1), code="tight"
        ),
        Finding.fail("dup", fix="/env/bin/python -m pip uninstall -y numpy", evidence={"copies": ["/a", "/b"]}),
        Finding.skipped("no config", reason="pass --config"),
        Finding(Status.FAIL, "accepted", suppressed="known, until 2027-01-01"),
    ]
    results = [
        CheckResult("demo", "Demo", "demo check", findings, 0.5),
        CheckResult(
            "crashy",
            "Crashy",
            "crashes",
            [Finding.error("crashed: KeyError: 'x'")],
            0.01,
            traceback="Traceback ...\nKeyError: 'x'\n",
        ),
    ]
    target = Target("/env/bin/python", "3.11.7", "cpython", "/env", "conda", "ms", "Linux-x86_64")
    return Report(
        "0.1.0",
        target,
        results,
        "2026-11-29T00:00:00+00:00",
        1.2,
        facts={"packages": {"mindspore": "2.7.0"}},
        notices=[Finding.warn("suppression expired")],
    )


@pytest.mark.parametrize("verbose", [False, True])
def test_rendered_sample_validates(verbose: bool) -> None:
    buf = io.StringIO()
    render("json", sample_report(), buf, RenderOptions(verbose=verbose))
    doc = json.loads(buf.getvalue())
    validate(doc)
    assert list(doc)[0] == "schema_version"
    assert doc["summary"]["counts"] == {"pass": 0, "skip": 0, "warn": 0, "fail": 1, "error": 1}
    assert ("traceback" in doc["checks"][1]) is verbose


def test_the_schema_rejects_what_it_should() -> None:
    buf = io.StringIO()
    render("json", sample_report(), buf, RenderOptions())
    doc = json.loads(buf.getvalue())
    bad = json.loads(json.dumps(doc))
    bad["checks"][0]["findings"][0]["status"] = "ok"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
    bad = json.loads(json.dumps(doc))
    bad["checks"][0]["findings"] = []
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_real_report_validates(tmp_path: Path) -> None:
    res, doc = run_json("check", "--quick", cwd=tmp_path)
    assert res.returncode in (0, 1), res.stderr
    validate(doc)
    assert doc["facts"]["packages"]["mindspore"] == "2.7.0"
