"""JUnit XML renderer: one <testcase> per check, for CI test reports (GitLab artifacts:reports:junit, Jenkins).

Mapping (JUnit has no warning state; docs/ci.md): fail -> <failure>, error -> <error>,
skip -> <skipped message=...>, pass -> an empty testcase with what it proved in
<system-out>. JUnit has no warning state: a warning passes with its findings in
<system-out>, unless the threshold is warn (--fail-on warn / --strict), where it
is a <failure>. Suppressed findings stay visible in <system-out>, marked.
Report-level notices (e.g. an expired suppression) form one more testcase.

The output validates against the JUnit schema of Jenkins' xunit plugin
(junit-10.xsd, vendored in tests/data/junit/ with its source); characters XML 1.0
forbids (ANSI escapes and other control characters from captured logs) are
written as visible ``\\xNN`` escapes instead of breaking the document.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import IO, Optional, Sequence

from msdoctor.model import CheckResult, Finding, Report, Status
from msdoctor.render import RenderOptions
from msdoctor.render.findings import NOTICE_ID

# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: Optional[str]) -> str:
    """Text with every character XML 1.0 cannot carry replaced by a visible escape."""
    return _BAD_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text or "")


def _finding_text(f: Finding) -> str:
    mark = {Status.PASS: "ok", Status.SKIP: "skip", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.ERROR: "ERROR"}
    lines = [f"[{mark[f.status]}] {f.title}"]
    if f.suppressed is not None:
        lines.append(f"  suppressed: {f.suppressed}")
    if f.location is not None:
        lines.append(f"  at: {f.location}")
    if f.status is Status.PASS and f.proved and f.proved != f.title:
        lines.append(f"  proved: {f.proved}")
    if f.detail:
        lines.extend("  " + line for line in f.detail.splitlines())
    if f.fix:
        lines.append(f"  fix: {f.fix}")
    if f.docs:
        lines.append(f"  see: {f.docs}")
    if f.code:
        lines.append(f"  code: {f.code}")
    return "\n".join(lines)


def _counts_as(status: Status, fail_on: Status) -> Optional[str]:
    """'failure', 'error', 'skipped' or None (passes) for a check's effective status."""
    if status is Status.ERROR:
        return "error"
    if status is Status.FAIL or (status is Status.WARN and fail_on <= Status.WARN):
        return "failure"
    if status is Status.SKIP:
        return "skipped"
    return None


def _testcase(
    name: str,
    classname: str,
    findings: Sequence[Finding],
    status: Status,
    time_s: float,
    fail_on: Status,
    traceback: Optional[str] = None,
) -> tuple[ET.Element, Optional[str]]:
    case = ET.Element("testcase", {"name": xml_safe(name), "classname": xml_safe(classname), "time": f"{time_s:.3f}"})
    kind = _counts_as(status, fail_on)
    if kind == "skipped":
        reasons = "; ".join(f.detail or f.title for f in findings if f.status is Status.SKIP)
        ET.SubElement(case, "skipped", {"message": xml_safe(reasons or "skipped")})
    elif kind is not None:
        bad = [f for f in findings if f.effective_status is status]
        head = bad[0].title if bad else f"{name}: {status.value}"
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        el = ET.SubElement(case, kind, {"message": xml_safe(head + more), "type": status.value})
        body = "\n\n".join(_finding_text(f) for f in bad)
        if traceback and kind == "error":
            body += "\n\n" + traceback
        el.text = xml_safe(body)
    out = ET.SubElement(case, "system-out")
    out.text = xml_safe("\n".join(_finding_text(f) for f in findings))
    return case, kind


def _result_case(r: CheckResult, fail_on: Status) -> tuple[ET.Element, Optional[str]]:
    return _testcase(
        r.id,
        f"msdoctor.{r.provider}" if r.provider != "msdoctor" else "msdoctor",
        r.findings,
        r.status,
        r.duration_s,
        fail_on,
        r.traceback,
    )


def build(report: Report, opts: RenderOptions = RenderOptions()) -> ET.Element:
    fail_on = opts.fail_on
    cases: list[tuple[ET.Element, Optional[str]]] = []
    if report.notices:
        worst = max((n.effective_status for n in report.notices), default=Status.PASS)
        cases.append(_testcase("notices", NOTICE_ID, report.notices, worst, 0.0, fail_on))
    cases.extend(_result_case(r, fail_on) for r in report.results)
    counts = {k: sum(1 for _, kind in cases if kind == k) for k in ("failure", "error", "skipped")}
    total = f"{report.duration_s:.3f}"
    root = ET.Element(
        "testsuites",
        {
            "name": "msdoctor",
            "tests": str(len(cases)),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "time": total,
        },
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "msdoctor check",
            "tests": str(len(cases)),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": total,
            "timestamp": report.started_at,
        },
    )
    props = ET.SubElement(suite, "properties")
    t = report.target
    for name, value in (
        ("msdoctor.version", report.msdoctor_version),
        ("target.executable", t.executable),
        ("target.python_version", t.python_version),
        ("target.env", f"{t.env_kind} {t.env_name}" if t.env_name else t.env_kind),
        ("target.probe_error", t.probe_error),
        ("fail_on", fail_on.value),
        ("verdict", report.status.value),
        ("exit_code", str(int(report.exit_code(fail_on)))),
    ):
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": xml_safe(str(value))})
    for case, _ in cases:
        suite.append(case)
    return root


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    root = build(report, opts)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")
