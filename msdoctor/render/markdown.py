"""Markdown renderer: the report as a GitHub-flavoured Markdown page (job summaries, bug reports, MR comments).

A table of checks first, then every check's findings (problems first, with
their fix), then the environment facts in a collapsed section. Suppressed
findings are shown with their reason. ``msdoctor report`` uses
:func:`render_markdown` with the facts open and complete.
"""

from __future__ import annotations

import re
from typing import IO, Any, Iterable, Mapping

from msdoctor.model import CheckResult, Finding, Report, Status
from msdoctor.render import RenderOptions
from msdoctor.render.findings import verdict_word

ICON = {Status.PASS: "✅", Status.SKIP: "➖", Status.WARN: "⚠️", Status.FAIL: "❌", Status.ERROR: "💥"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cell(text: Any) -> str:
    """Text safe inside a table cell: one line, pipes escaped."""
    return " ".join(str(text if text is not None else "").split()).replace("|", "\\|")


def code(text: Any) -> str:
    """An inline code span that survives backticks inside the text."""
    s = " ".join(str(text).split())
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def _finding(f: Finding) -> str:
    status = f.effective_status if f.suppressed is None else f.status
    label = f"**{f.status.value}**" + (" (suppressed)" if f.suppressed is not None else "")
    head = f"- {ICON[status]} {label} {cell(f.title)}"
    if f.location is not None:
        head += f" ({code(f.location)})"
    out = [head]
    if f.suppressed is not None:
        out.append(f"  - suppressed: {cell(f.suppressed)}")
    if f.status is Status.PASS and f.proved and f.proved != f.title:
        out.append(f"  - proved: {cell(f.proved)}")
    if f.detail:
        out.append(_indent(f.detail.strip()))
    if f.fix:
        if "\n" in f.fix.strip():
            out.append("  - fix:\n\n    ```bash\n" + _indent(f.fix.strip(), "    ") + "\n    ```")
        else:
            out.append(f"  - fix: {code(f.fix)}")
    if f.docs:
        out.append(f"  - see: {f.docs}")
    if f.code:
        out.append(f"  - code: {code(f.code)}")
    return "\n".join(out)


def _summary_of(r: CheckResult) -> str:
    bad = [f for f in r.findings if f.effective_status is r.status and f.status > Status.PASS]
    if r.status is Status.PASS:
        suppressed = sum(1 for f in r.findings if f.suppressed is not None)
        proved = "; ".join(r.proved) or "passed"
        return proved + (f" ({suppressed} suppressed)" if suppressed else "")
    if r.status is Status.SKIP:
        return "; ".join(f.detail or f.title for f in r.findings)
    return bad[0].title + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "") if bad else r.status.value


def _facts_section(facts: Mapping[str, Any], full: bool, stack: Iterable[str]) -> list[str]:
    out: list[str] = []
    py = facts.get("python") or {}
    plat = facts.get("platform") or {}
    if py or plat:
        out += ["| fact | value |", "|---|---|"]
        for k in ("version", "executable", "prefix", "env_kind", "env_name"):
            if py.get(k) is not None:
                out.append(f"| python.{k} | {code(py[k])} |")
        if isinstance(plat, Mapping):
            for k, v in plat.items():
                if v is not None:
                    out.append(
                        f"| platform.{k} | {code(v if not isinstance(v, (list, tuple)) else ' '.join(map(str, v)))} |"
                    )
        out.append("")
    packages = facts.get("packages") or {}
    if packages:
        names = {_canonical(n) for n in stack}
        first = [(n, v) for n, v in packages.items() if _canonical(n) in names]
        rest = [(n, v) for n, v in packages.items() if (n, v) not in first]
        out += ["**Training stack**", "", "| package | version |", "|---|---|"]
        out += [f"| {cell(n)} | {code(v)} |" for n, v in first] or ["| (none installed) | |"]
        out.append("")
        if full and rest:
            out += [
                f"<details><summary>All other packages ({len(rest)})</summary>",
                "",
                "| package | version |",
                "|---|---|",
            ]
            out += [f"| {cell(n)} | {code(v)} |" for n, v in rest]
            out += ["", "</details>", ""]
    env = facts.get("env") or {}
    if env:
        out += ["**Environment variables** (those msdoctor reads)", "", "| variable | value |", "|---|---|"]
        out += [f"| {cell(k)} | {code(v) if v != '' else '(empty)'} |" for k, v in env.items()]
        out.append("")
    others = {k: v for k, v in facts.items() if k not in ("python", "platform", "packages", "env")}
    for key, value in others.items():
        out += [f"**{cell(key)}**", "", "```json", _json(value), "```", ""]
    return out


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def render_markdown(
    report: Report,
    opts: RenderOptions = RenderOptions(),
    *,
    title: str = "msdoctor check",
    facts_open: bool = False,
    full_facts: bool = False,
) -> str:
    fail_on = opts.fail_on
    worst = report.status
    verdict = verdict_word(report, fail_on)
    icon = {0: "⚠️" if worst is Status.WARN else "✅", 1: "❌"}.get(int(report.exit_code(fail_on)), "💥")
    t = report.target
    env = f" · {t.env_kind} {code(t.env_name)}" if t.env_name else (f" · {t.env_kind}" if t.env_kind else "")
    lines = [
        f"## {icon} {title}: {verdict}",
        "",
        f"**Target** {code(t.executable)} · Python {t.python_version or '?'}{env} · msdoctor "
        f"{report.msdoctor_version} · {report.started_at} · {report.duration_s:.1f} s · fails on: {fail_on.value}",
        "",
    ]
    if t.probe_error:
        lines += [f"> **The target could not be probed:** {cell(t.probe_error)}", ""]
    counts = report.counts()
    lines += [", ".join(f"{ICON[Status(s)]} {n} {s}" for s, n in counts.items() if n) or "no checks ran", ""]
    if report.notices:
        lines += ["### Notices", ""]
        lines += [_finding(n) for n in report.notices]
        lines.append("")
    if report.results:
        lines += ["| | check | result | time |", "|---|---|---|---|"]
        for r in report.results:
            lines.append(
                f"| {ICON[r.status]} | {code(r.id)} {cell(r.title)} | {cell(_summary_of(r))} | {r.duration_s:.2f} s |"
            )
        lines.append("")
    for r in _ordered(report.results):
        lines += [f"### {ICON[r.status]} {cell(r.title)} ({code(r.id)}): {r.status.value}", ""]
        findings = sorted(r.findings, key=lambda f: f.status, reverse=True)
        lines += [_finding(f) for f in findings]
        lines.append("")
    if report.facts:
        if facts_open:
            lines += ["### Environment", ""] + _facts_section(report.facts, full_facts, opts.stack)
        else:
            lines += ["<details><summary>Environment facts</summary>", ""]
            lines += _facts_section(report.facts, full_facts, opts.stack) + ["</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def _ordered(results: Iterable[CheckResult]) -> list[CheckResult]:
    """Problems first (most severe first), then the rest in run order."""
    results = list(results)
    return sorted(results, key=lambda r: -r.status.rank)


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    stream.write(render_markdown(report, opts))


__all__ = ["render", "render_markdown", "cell", "code"]
