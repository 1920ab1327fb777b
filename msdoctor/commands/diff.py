"""``msdoctor diff A.json B.json``: what differs between two environments ("works on node A, not on node B").

Compares two ``msdoctor check --format json`` reports: Python and platform,
installed package versions, environment variables msdoctor reads (CANN paths,
MS_*/HCCL_*/RANK_* ...), any further facts (CANN/driver versions, device
counts, when checks record them), and the checks' verdicts and version/count
evidence. Differences in per-node identity (paths of the interpreter, RANK_ID,
DEVICE_ID, MS_NODE_ID, run time and duration) are listed but do not count.
Exit 1 when something that matters differs, 0 otherwise, 2 on unreadable input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from msdoctor import options
from msdoctor.model import ExitCode
from msdoctor.report_diff import MISSING, Difference, collected, compare, load_report, not_compared


#: what the parts a report may lack are (facts.invocation.collected)
PART_WORDS = "live: the live device probe, facts.mindspore_runtime and the checks it runs; `check --quick` skips it"


def _show(v: Any) -> str:
    if v is MISSING:
        return "(absent)"
    if v is None:
        return "(none)"
    if v == "":
        return "(empty)"
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= 70 else text[:67] + "..."


def _print(diffs: list[Difference], a_path: Path, b_path: Path, a: dict, b: dict) -> None:
    def who(r: dict) -> str:
        t = r.get("target") or {}
        return f"{t.get('executable')} (Python {t.get('python_version')}), {r.get('started_at')}"

    click.echo(f"A: {a_path}  {who(a)}")
    click.echo(f"B: {b_path}  {who(b)}")
    skipped = not_compared(a, b)
    if skipped:
        lacking = " and ".join(n for n, r in (("A", a), ("B", b)) if not set(skipped) <= collected(r))
        click.echo(
            f"Compared only what both collected: {lacking} did not collect {', '.join(skipped)} "
            f"({PART_WORDS}); those parts are not compared."
        )
    important = [d for d in diffs if d.matters]
    minor = [d for d in diffs if not d.matters and not d.not_run]
    not_run = [d for d in diffs if d.not_run]
    if not diffs:
        click.echo("\nNo differences: same versions, environment variables and check results.")
        return
    width = min(max([len(d.key) for d in diffs] + [8]), 48)
    for title, group in (
        ("Differences that matter", important),
        ("Differences that usually do not matter (per-node identity, paths, finding wording)", minor),
        ("Not compared: one report is from `check --quick`, which does not collect these", not_run),
    ):
        if not group:
            continue
        click.echo(f"\n{title}:")
        section = None
        for d in group:
            if d.section != section:
                section = d.section
                click.echo(f"  {section}")
            click.echo(f"    {d.key:<{width}}  A: {_show(d.a):<30}  B: {_show(d.b)}")
    counts = f"{len(important)} {'difference that matters' if len(important) == 1 else 'differences that matter'}, "
    counts += f"{len(minor)} other"
    counts += f", {len(not_run)} not run in the --quick report." if not_run else "."
    click.echo("\n" + counts)


@click.command("diff")
@click.argument("report_a", type=click.Path(path_type=Path), metavar="A.json")
@click.argument("report_b", type=click.Path(path_type=Path), metavar="B.json")
@options.output_format(["terminal", "json"], "json: every difference with both values and whether it matters.")
def diff(report_a: Path, report_b: Path, fmt: str) -> int:
    """Compare two JSON reports (e.g. of two nodes before a multi-node launch).

    \b
    On each node:   msdoctor check --format json --output node1.json
    Then:           msdoctor diff node1.json node2.json

    Exit codes: 0 nothing that matters differs, 1 something does (versions, CANN/driver,
    environment variables, device counts, check verdicts), 2 a report is unreadable.
    """
    a, b = load_report(report_a), load_report(report_b)
    diffs = compare(a, b)
    matters = any(d.matters for d in diffs)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "a": str(report_a),
                    "b": str(report_b),
                    "differ": matters,
                    "not_compared": not_compared(a, b),
                    "differences": [
                        {
                            "section": d.section,
                            "key": d.key,
                            "a": None if d.a is MISSING else d.a,
                            "b": None if d.b is MISSING else d.b,
                            "a_present": d.a is not MISSING,
                            "b_present": d.b is not MISSING,
                            "matters": d.matters,
                            "not_run": d.not_run,
                        }
                        for d in diffs
                    ],
                },
                indent=2,
                default=str,
                ensure_ascii=False,
            )
        )
    else:
        _print(diffs, report_a, report_b, a, b)
    return int(ExitCode.PROBLEMS if matters else ExitCode.OK)


__all__ = ["diff", "compare", "load_report", "Difference"]
