"""Terminal renderer: the human view, flutter-doctor style, ending with one summary line."""

from __future__ import annotations

from typing import IO, Any

from msdoctor.model import CheckResult, Finding, Report, Status
from msdoctor.render import RenderOptions
from msdoctor.render.console import STYLES, glyph, make_console


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _finding(console: Any, f: Finding, verbose: bool, show_proved: bool = True) -> None:
    style = STYLES[f.status]
    mark = {Status.PASS: "•", Status.SKIP: "-", Status.WARN: "!", Status.FAIL: "✗", Status.ERROR: "☠"}[f.status]
    if "utf" not in (getattr(console.file, "encoding", "") or "").lower():
        mark = {"•": "*", "✗": "x", "☠": "E"}.get(mark, mark)
    title = f.title
    if f.location is not None:
        title = f"{title}  ({f.location})"
    if f.suppressed is not None:
        title = f"{title}  [suppressed: {f.suppressed}]"
    console.print(f"    {mark} {title}", style=style if f.status is not Status.PASS else None)
    if f.status is Status.PASS:
        if f.proved and show_proved and (verbose or f.proved != f.title):
            console.print(_indent(f.proved, "      "), style="dim")
    elif f.detail and (verbose or f.status is not Status.SKIP):
        console.print(_indent(f.detail, "      "))
    elif f.detail and f.status is Status.SKIP:
        console.print(_indent(f.detail, "      "), style="dim")
    if f.fix:
        first, *rest = f.fix.splitlines() or [""]
        console.print("      fix: " + first, style="cyan")
        for line in rest:
            console.print("           " + line, style="cyan")
    if f.docs:
        console.print(f"      see: {f.docs}", style="dim")
    if verbose and f.evidence:
        for key, value in f.evidence.items():
            console.print(f"      {key}: {value}", style="dim")


#: findings listed per check without -v; the rest are summarised by status (-v and --format json list all)
MAX_FINDINGS = 50


def _result(console: Any, r: CheckResult, verbose: bool) -> None:
    console.print(
        f"{glyph(r.status, console)} {r.title} ({r.id})",
        style=STYLES[r.status],
        end="",
    )
    if (
        r.status is Status.PASS
        and not verbose
        and not r.traceback
        and all(f.status is Status.PASS and f.suppressed is None for f in r.findings)
    ):
        # a passing check is one line (its proof under -v), as flutter doctor shows a healthy item; a finding
        # accepted by a suppression is still shown, with its reason
        n = len(r.findings)
        console.print(f"  {r.duration_s:.2f}s" + (f"  ({n} proofs: -v)" if n > 1 else "  (proof: -v)"), style="dim")
        return
    console.print(f"  {r.duration_s:.2f}s", style="dim")
    status = r.status  # once: it walks every finding
    # problems first; what passed is listed too, with what it proved when the check is healthy
    order = sorted(r.findings, key=lambda f: f.status, reverse=True) if status > Status.PASS else list(r.findings)
    shown = order if verbose else order[:MAX_FINDINGS]
    for f in shown:
        _finding(console, f, verbose, show_proved=verbose or status is Status.PASS)
    if len(shown) < len(order):
        rest = order[len(shown) :]
        by: dict = {}
        for f in rest:
            by[f.status] = by.get(f.status, 0) + 1
        what = ", ".join(f"{n} {st.value}" for st, n in sorted(by.items(), key=lambda kv: kv[0], reverse=True))
        console.print(
            f"      ... and {len(rest)} more findings ({what}): all of them with -v or --format json", style="dim"
        )
    if verbose and r.traceback:
        console.print(_indent(r.traceback.rstrip(), "      "), style="dim")


def summary_line(report: Report, fail_on: Status) -> str:
    counts = report.counts()
    parts = []
    for status, word in (
        (Status.PASS, "passed"),
        (Status.WARN, "warned"),
        (Status.FAIL, "failed"),
        (Status.ERROR, "errored"),
        (Status.SKIP, "skipped"),
    ):
        n = counts[status.value]
        if n:
            parts.append(f"{n} {word}")
    n_checks = len(report.results)
    verdict = {
        0: "healthy",
        1: "problems found",
        3: "no verdict: the target could not be examined",
    }.get(int(report.exit_code(fail_on)), "")
    return f"{n_checks} check{'s' if n_checks != 1 else ''}: {', '.join(parts) or 'none ran'} in {report.duration_s:.1f}s: {verdict}"


def render(report: Report, stream: IO[str], opts: RenderOptions) -> None:
    console = make_console(stream, opts.color, opts.width)
    t = report.target
    env = f", {t.env_kind} {t.env_name}" if t.env_kind and t.env_name else (f", {t.env_kind}" if t.env_kind else "")
    version = f"Python {t.python_version}" if t.python_version else "Python ?"
    console.print(f"msdoctor {report.msdoctor_version} · target {t.executable} ({version}{env})", style="bold")
    if t.probe_error:
        console.print(f"  the target could not be probed: {t.probe_error}", style="bold red")
    console.print()
    for n in report.notices:
        _finding(console, n, opts.verbose)
    for r in report.results:
        _result(console, r, opts.verbose)
    console.print()
    worst = report.status
    console.print(summary_line(report, opts.fail_on), style=STYLES[worst] if worst > Status.SKIP else "green")
