"""``msdoctor matrix``: what goes with what, for the installed stack or for a planned one."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Optional

import click

from msdoctor import options
from msdoctor.errors import UserError
from msdoctor.model import ExitCode

_PYVER_RE = re.compile(r"^3\.\d+(\.\d+)?$")

#: section field -> label in the terminal table
LABELS = {
    "python": "Python",
    "numpy": "numpy",
    "protobuf": "protobuf",
    "cann": "CANN (docs / MindFormers)",
    "cann_internal_accepted": "CANN internal versions accepted",
    "cann_list_verified": "accepted list is MindSpore's own",
    "driver": "Ascend driver (preferred)",
    "cuda": "CUDA (GPU plugins)",
    "mindformers": "MindFormers built for it",
    "mindnlp_allowing": "MindNLP allowing it (metadata)",
    "on_pypi": "on PyPI",
    "internal_prefix": "internal version",
    "internal": "internal version seen in files",
    "innerversion": "innerversion",
    "mindspore_accepting": "MindSpore accepting it",
    "mindspore_wheels": "MindSpore with wheels",
    "mindnlp_documented": "MindNLP documenting it",
    "mindformers_requires_python": "MindFormers allowing it",
    "mindspore_metadata": "mindspore (metadata)",
    "mindspore_documented": "mindspore (docs)",
    "mindspore_in_matrix": "MindSpore releases it allows",
    "transformers_metadata": "transformers (metadata)",
    "transformers_works": "transformers seen working",
    "python_documented": "Python (docs)",
    "known_breakages": "breaks with",
    "version_attr": "__version__ says",
    "note": "note",
    "newest_known": "newest in the matrix",
    "known_cann": "CANN in the matrix",
    "source": "source",
}


def _text(value: Any) -> str:
    if value is None or value == [] or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            return "\n".join(_dict_line(v) for v in value)
        return ", ".join(str(v) for v in value)
    return str(value)


def _dict_line(d: dict) -> str:
    if "mindspore" in d:
        why = ["in its own accepted list"] if d.get("verified") else []
        if d.get("paired_by_docs"):
            why.append("paired by the docs")
        return f"{d['mindspore']} ({', '.join(why)})"
    if "package" in d:
        return f"{d['package']}{d['bad']}: {d['symptom']}" + (
            f" -> use {d['package']}{d['good']}" if d.get("good") else ""
        )
    return ", ".join(f"{k}={v}" for k, v in d.items())


def _sections(
    m: Any, mindspore: Optional[str], cann: Optional[str], python: Optional[str], mindnlp: Optional[str]
) -> list[dict[str, Any]]:
    from msdoctor import matrix

    out = []
    if mindspore:
        out.append(matrix.with_mindspore(m, mindspore))
    if cann:
        out.append(matrix.with_cann(m, cann))
    if python:
        out.append(matrix.with_python(m, python))
    if mindnlp:
        out.append(matrix.with_mindnlp(m, mindnlp))
    return out


def installed_query(python_path: str) -> dict[str, Optional[str]]:
    """The versions installed in the target (probe) and the CANN the environment selects."""
    from msdoctor.context import Context, FactUnavailable, Options
    from msdoctor.facts.cann import read_cann

    ctx = Context(Options(python=python_path))
    try:
        t = ctx.target
    except FactUnavailable as exc:
        raise UserError(exc.message, exc.fix, exit_code=ExitCode.NO_VERDICT) from None
    cann = read_cann(os.environ)
    inst = cann.active or cann.default
    return {
        "mindspore": t.version_of("mindspore"),
        "cann": inst.commercial if inst else None,
        "python": t.python_version,
        "mindnlp": t.version_of("mindnlp"),
    }


def _render(sections: list[dict[str, Any]], verdicts: list[dict[str, Any]], date: str, header: str) -> None:
    from rich.table import Table

    from msdoctor.render.console import make_rich_console

    console = make_rich_console(sys.stdout)
    console.print(header)
    for sec in sections:
        table = Table(title=f"what goes with {sec['query']}", title_justify="left", show_header=False, expand=False)
        table.add_column("fact", style="bold", no_wrap=True)
        table.add_column("value", overflow="fold")
        if sec.get("known") is False:
            table.add_row("in the matrix", f"no (matrix dated {date})")
        for key, value in sec.items():
            if key in ("query", "known", "matrix_date", "mindspore", "cann", "mindnlp", "source") and not isinstance(
                value, list
            ):
                continue  # sources are long: --format json carries them
            table.add_row(LABELS.get(key, key), _text(value))
        console.print(table)
    if verdicts:
        table = Table(title="do they fit together?", title_justify="left")
        for col in ("pair", "fits", "why"):
            table.add_column(col)
        for v in verdicts:
            table.add_row(" + ".join(v["pair"]), {True: "yes", False: "NO", None: "unknown"}[v["ok"]], v["why"])
        console.print(table)
    console.print(f"matrix dated {date}; sources: msdoctor matrix --format json")


@click.command("matrix")
@click.option(
    "--python",
    "python",
    metavar="VERSION|PATH",
    help="A Python version (3.12) to plan for, or the interpreter whose installed stack is shown.",
)
@click.option("--conda-env", "conda_env", metavar="NAME", help="Show the stack installed in conda env NAME.")
@click.option("--mindspore", metavar="VERSION", help="What goes with this MindSpore (e.g. 2.7.0).")
@click.option("--cann", metavar="VERSION", help="What goes with this CANN (e.g. 8.2.RC1).")
@click.option("--mindnlp", metavar="VERSION", help="What goes with this MindNLP (e.g. 0.5.1).")
@options.output_format(["terminal", "json"], "json: the query, the matrix rows that go with it and the verdicts.")
def matrix_cmd(
    python: Optional[str],
    conda_env: Optional[str],
    mindspore: Optional[str],
    cann: Optional[str],
    mindnlp: Optional[str],
    fmt: str,
) -> int:
    """Show the version matrix: for the installed stack, or for versions you plan to install.

    \b
    Examples:
      msdoctor matrix                          # rows for what the target has installed
      msdoctor matrix --mindspore 2.7.0        # Python, numpy, CANN, driver, MindNLP for it
      msdoctor matrix --cann 8.2.RC1 --python 3.11 --mindspore 2.7.0   # and do they fit?
    Exit status 1 when a planned pair does not fit.
    """
    from msdoctor import matrix
    from msdoctor.commands.common import resolve_target
    from msdoctor.redact import shown_value

    # the queries are echoed in every format: no terminal escapes, no credential pasted by mistake
    mindspore, cann, mindnlp = (shown_value(v) if v else v for v in (mindspore, cann, mindnlp))

    try:
        m = matrix.load()
    except matrix.MatrixError as exc:
        raise UserError(
            f"the packaged matrix is broken: {exc}", "reinstall msdoctor", exit_code=ExitCode.NO_VERDICT
        ) from None
    py_query = python if python and _PYVER_RE.match(python) else None
    planning = any((mindspore, cann, mindnlp, py_query))
    if planning:
        header = "planned: " + ", ".join(
            f"{k} {v}"
            for k, v in (("mindspore", mindspore), ("cann", cann), ("python", py_query), ("mindnlp", mindnlp))
            if v
        )
        q = {"mindspore": mindspore, "cann": cann, "python": py_query, "mindnlp": mindnlp}
    else:
        target = resolve_target(python or os.environ.get("MSDOCTOR_PYTHON"), conda_env)
        q = installed_query(target)
        header = f"installed in {target}: " + ", ".join(f"{k} {v}" for k, v in q.items() if v)
    sections = _sections(m, q["mindspore"], q["cann"], q["python"], q["mindnlp"])
    verdicts = matrix.fits(m, **q)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "matrix_date": m.date,
                    "mode": "planned" if planning else "installed",
                    "query": q,
                    "sections": sections,
                    "fits": verdicts,
                },
                indent=2,
            )
        )
    else:
        _render(sections, verdicts, m.date, header)
    return int(ExitCode.PROBLEMS if any(v["ok"] is False for v in verdicts) else ExitCode.OK)
