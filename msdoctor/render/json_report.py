"""JSON renderer: the machine-readable report (schema: docs/report.schema.json).

``schema_version`` is the first key; values stay typed (None, never "N/A").
"""

from __future__ import annotations

import json
from typing import IO, Any

from msdoctor.model import SCHEMA_VERSION, CheckResult, Finding, Report
from msdoctor.render import RenderOptions


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "status": f.status.value,
        "title": f.title,
        "detail": f.detail or None,
        "fix": f.fix,
        "location": None
        if f.location is None
        else {"path": f.location.path, "line": f.location.line, "column": f.location.column},
        "docs": f.docs,
        "evidence": dict(f.evidence),
        "proved": f.proved,
        "code": f.code,
        "suppressed": f.suppressed,
    }


def result_dict(r: CheckResult, verbose: bool = False) -> dict[str, Any]:
    out = {
        "id": r.id,
        "title": r.title,
        "description": r.description,
        "status": r.status.value,
        "duration_s": round(r.duration_s, 4),
        "provider": r.provider,
        "proved": r.proved,
        "findings": [finding_dict(f) for f in r.findings],
    }
    if verbose and r.traceback:
        out["traceback"] = r.traceback
    return out


def report_dict(report: Report, opts: RenderOptions = RenderOptions()) -> dict[str, Any]:
    t = report.target
    return {
        "schema_version": SCHEMA_VERSION,
        "msdoctor_version": report.msdoctor_version,
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 4),
        "target": {
            "executable": t.executable,
            "python_version": t.python_version,
            "implementation": t.implementation,
            "prefix": t.prefix,
            "env_kind": t.env_kind,
            "env_name": t.env_name,
            "platform": t.platform,
            "probe_error": t.probe_error,
        },
        "summary": {
            "status": report.status.value,
            "counts": report.counts(),
            "exit_code": int(report.exit_code(opts.fail_on)),
        },
        "checks": [result_dict(r, opts.verbose) for r in report.results],
        "notices": [finding_dict(n) for n in report.notices],
        "facts": report.facts,
    }


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    json.dump(report_dict(report, opts), stream, indent=2, default=str, ensure_ascii=False)
    stream.write("\n")
