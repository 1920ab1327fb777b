"""version-matrix rule 3: MindNLP and MindFormers vs MindSpore vs transformers (and Python).

Pure functions of TargetFacts and the Matrix; each adds the pairs it reports to ``reported``.
The combinations that metadata allows but that break at import are rows of compat_matrix/mindnlp.toml
``[[breakage]]``, reported by stack.evaluate_breakages before these run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msdoctor.checks.version_matrix.common import Want, minor, pair, pip_install, wants_evidence
from msdoctor.checks.version_matrix.stack import not_in_matrix
from msdoctor.matrix import Matrix, spec_contains
from msdoctor.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts


def _allowing(rows: Any, ms_version: str) -> list[str]:
    return [r.version for r in rows if r.mindspore and spec_contains(r.mindspore, ms_version)]


def _ms_fix(t: "TargetFacts", m: Matrix, spec: str) -> str:
    py = minor(t.python_version)
    fits = [r.version for r in m.mindspore_rows if r.on_pypi and py in r.python and spec_contains(spec, r.version)]
    return pip_install(t, f"mindspore=={fits[-1]}") if fits else pip_install(t, f"mindspore{spec}")


def evaluate_mindnlp(t: "TargetFacts", m: Matrix, reported: set) -> list[Finding]:
    version = t.version_of("mindnlp")
    if not version:
        return []
    row = m.mindnlp(version)
    if row is None:
        return [not_in_matrix(m, "mindnlp", "mindnlp", version)]
    out: list[Finding] = []
    ms, tf, py = t.version_of("mindspore"), t.version_of("transformers"), minor(t.python_version)
    if ms and not spec_contains(row.mindspore, ms):
        reported.add(pair("mindnlp", "mindspore"))
        others = _allowing(m.mindnlp_rows, ms)
        out.append(
            Finding.fail(
                f"mindnlp {version} requires mindspore{row.mindspore}, but MindSpore {ms} is installed",
                detail=f"mindnlp {version}'s metadata excludes MindSpore {ms}. "
                + (
                    f"MindNLP releases whose metadata allows {ms}: {', '.join(others)}."
                    if others
                    else f"No MindNLP release on PyPI allows {ms}."
                ),
                fix=_ms_fix(t, m, row.mindspore),
                evidence={
                    "pair": ["mindnlp", "mindspore"],
                    "mindspore": ms,
                    "required": row.mindspore,
                    "mindnlp_allowing": others,
                    "source": row.source,
                    "wants": wants_evidence(Want("mindspore", row.mindspore, "mindnlp")),
                },
                code="mindnlp-mindspore",
            )
        )
    elif ms and row.mindspore_documented and not spec_contains(row.mindspore_documented, ms):
        out.append(
            Finding.warn(
                f"MindSpore {ms} is outside the range mindnlp {version} documents ({row.mindspore_documented})",
                detail="The metadata allows it, but MindNLP's docs only name this range; other combinations were not tested.",
                fix=_ms_fix(t, m, row.mindspore_documented),
                evidence={"pair": ["mindnlp", "mindspore"], "source": row.source},
                code="mindnlp-mindspore-documented",
            )
        )
    if (
        tf
        and row.transformers_works
        and not spec_contains(row.transformers_works, tf)
        and pair("mindnlp", "transformers") not in reported
    ):
        out.append(
            Finding.warn(
                f"transformers {tf} with mindnlp {version} is untested (seen working: {row.transformers_works})",
                detail="mindnlp patches transformers at import; versions outside the observed range may fail.",
                fix=pip_install(t, f"transformers{row.transformers_works}"),
                evidence={"pair": ["mindnlp", "transformers"], "source": row.source},
                code="mindnlp-transformers-untested",
            )
        )
    if row.python and py not in row.python:
        out.append(
            Finding.warn(
                f"mindnlp {version} documents Python {' / '.join(row.python)}, this is {py}",
                fix=f"create the environment with Python {row.python[-1]}",
                evidence={"source": row.source},
                code="mindnlp-python",
            )
        )
    tf_ok = bool(tf and row.transformers_works and spec_contains(row.transformers_works, tf))
    if not out and pair("mindnlp", "mindspore") not in reported:
        proved = f"MindSpore {ms} is within mindnlp {version}'s mindspore{row.mindspore or ' (any)'}"
        if tf_ok:
            proved += f"; transformers {tf} is within the versions seen to work ({row.transformers_works})"
        out.append(
            Finding.passed(
                f"mindnlp {version} fits MindSpore {ms}" + (f" and transformers {tf}" if tf_ok else ""),
                proved=proved,
                evidence={"source": row.source},
            )
        )
    return out


def evaluate_mindformers(t: "TargetFacts", m: Matrix, reported: set) -> list[Finding]:
    version = t.version_of("mindformers")
    if not version:
        return []
    row = m.mindformers(version)
    if row is None:
        return [not_in_matrix(m, "mindformers", "mindformers", version)]
    out: list[Finding] = []
    ms, tf = t.version_of("mindspore"), t.version_of("transformers")
    if ms and row.mindspore and not spec_contains(row.mindspore, ms):
        reported.add(pair("mindformers", "mindspore"))
        out.append(
            Finding.fail(
                f"mindformers {version} requires mindspore{row.mindspore}, but MindSpore {ms} is installed",
                detail=f"MindFormers pins one MindSpore minor per release; {version} is built for "
                f"{', '.join(row.mindspore_prefer) or 'another MindSpore'}.",
                fix=pip_install(t, f"mindspore=={row.mindspore_prefer[-1]}")
                if row.mindspore_prefer
                else _ms_fix(t, m, row.mindspore),
                evidence={
                    "pair": ["mindformers", "mindspore"],
                    "required": row.mindspore,
                    "source": row.source,
                    "wants": wants_evidence(Want("mindspore", row.mindspore, "mindformers")),
                },
                code="mindformers-mindspore",
            )
        )
    elif ms and row.mindspore_prefer and ms not in row.mindspore_prefer:
        out.append(
            Finding.warn(
                f"mindformers {version} is built for MindSpore {', '.join(row.mindspore_prefer)}, not {ms}",
                detail="Its metadata range is wider than its VERSION_MAP.json; only the mapped versions were released together.",
                fix=pip_install(t, f"mindspore=={row.mindspore_prefer[-1]}"),
                evidence={"pair": ["mindformers", "mindspore"], "source": row.source},
                code="mindformers-version-map",
            )
        )
    if tf and row.transformers and not spec_contains(row.transformers, tf):
        reported.add(pair("mindformers", "transformers"))
        out.append(
            Finding.fail(
                f"mindformers {version} requires transformers{row.transformers}, but {tf} is installed",
                detail="MindFormers pins one transformers version per release.",
                fix=pip_install(t, f"transformers{row.transformers}"),
                evidence={
                    "pair": ["mindformers", "transformers"],
                    "required": row.transformers,
                    "source": row.source,
                    "wants": wants_evidence(Want("transformers", row.transformers, "mindformers")),
                },
                code="mindformers-transformers",
            )
        )
    if not out:
        out.append(
            Finding.passed(
                f"mindformers {version} fits MindSpore {ms}",
                proved=f"MindSpore {ms} is within mindspore{row.mindspore or ' (any)'}"
                + (", the version its VERSION_MAP.json names" if ms in row.mindspore_prefer else "")
                + (f"; transformers {tf} meets {row.transformers}" if tf and row.transformers else ""),
                evidence={"source": row.source},
            )
        )
    return out
