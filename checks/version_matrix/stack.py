"""version-matrix rules 2 and 6, and the known breakages: Python and numpy/protobuf vs MindSpore, "not in the matrix".

Pure functions of the probe's TargetFacts and the Matrix. Each adds the pairs it reports to
``reported`` so that the generic requirement rule does not report them a second time.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Optional

from msdoctor.checks.version_matrix.common import Want, mindspore_dir, minor, pair, pip_install, wants_evidence
from msdoctor.matrix import Matrix, MindSporeRelease, spec_contains
from msdoctor.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts

_ABI_RE = re.compile(r"^_c_expression\.cpython-(\d)(\d+)")


def abi_of_mindspore(msdir: Optional[str]) -> Optional[str]:
    """Python version the installed build is compiled for, from _c_expression.cpython-311-*.so.

    The wheel's WHEEL file says py3-none-any for every build (the WHEEL files of the 2.7.0-2.10.0 wheels), so the
    extension module's file name is the only reliable tag (observed: ls site-packages/mindspore).
    """
    try:
        names = os.listdir(msdir) if msdir else []
    except OSError:
        return None
    for name in names:
        m = _ABI_RE.match(name)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return None


def not_in_matrix(m: Matrix, kind: str, name: str, version: str) -> Finding:
    newer = m.is_newer(kind, version)
    why = (
        f"it is newer than the newest {name} the matrix knows ({m.newest(kind)})"
        if newer
        else f"the matrix has no row for it (rows: {', '.join(r.version for r in getattr(m, kind + '_rows'))})"
    )
    return Finding.warn(
        f"{name} {version} is not in the matrix (dated {m.date})",
        detail=f"msdoctor cannot say what {name} {version} goes with: {why}. Nothing was passed or failed on "
        "guesswork; the requirement and import checks still apply.",
        fix="upgrade msdoctor for a newer matrix, or check the release notes of this version",
        evidence={"package": name, "version": version, "matrix_date": m.date},
        code="not-in-matrix",
    )


def _newest_for_python(m: Matrix, py: str) -> Optional[str]:
    rows = [r for r in m.mindspore_rows if py in r.python and r.on_pypi]
    return rows[-1].version if rows else None


def evaluate_mindspore(t: "TargetFacts", m: Matrix, reported: set) -> list[Finding]:
    """MindSpore vs Python (wheel tags and the installed build's ABI), numpy and protobuf."""
    py = minor(t.python_version)
    version = t.version_of("mindspore")
    if not version:
        newest = _newest_for_python(m, py)
        return [
            Finding.fail(
                f"MindSpore is not installed in {t.executable}",
                detail="No device can be used and no version compared without it (the version matrix starts from the "
                "installed MindSpore). "
                + (
                    f"The newest MindSpore the matrix knows with wheels for Python {py} is {newest}."
                    if newest
                    else f"The matrix knows no MindSpore with wheels for Python {py}."
                ),
                fix=pip_install(t, f"mindspore=={newest}") if newest else "use a Python with MindSpore wheels",
                code="mindspore-missing",
            )
        ]
    row = m.mindspore(version)
    out: list[Finding] = []
    abi = abi_of_mindspore(mindspore_dir(t))
    if abi and abi != py:
        reported.add(pair("mindspore", "python"))
        out.append(
            Finding.fail(
                f"MindSpore {version} is built for Python {abi}, but this interpreter is Python {py}",
                detail=f"Its compiled module _c_expression is a CPython {abi} extension: `import mindspore` fails "
                f"in Python {py}.",
                fix=pip_install(t, f"mindspore=={version}") + " --force-reinstall --no-deps",
                evidence={"pair": ["mindspore", "python"], "abi": abi, "python": py},
                code="mindspore-abi",
            )
        )
    if row is None:
        return out + [not_in_matrix(m, "mindspore", "MindSpore", version)]
    if py not in row.python and pair("mindspore", "python") not in reported:
        reported.add(pair("mindspore", "python"))
        newest = _newest_for_python(m, py)
        out.append(
            Finding.fail(
                f"MindSpore {version} has no wheel for Python {py} (wheels: {', '.join(row.python)})",
                detail="MindSpore is only built for the Python versions it has wheels for; Requires-Python says more "
                "than the wheels deliver (>=3.7 for 2.7.x).",
                fix=(pip_install(t, f"mindspore=={newest}") + f"  (or use Python {' / '.join(row.python)})")
                if newest
                else f"create the environment with Python {' / '.join(row.python)}",
                evidence={
                    "pair": ["mindspore", "python"],
                    "python": py,
                    "wheels": list(row.python),
                    "source": row.source,
                },
                code="mindspore-python",
            )
        )
    out += _mindspore_deps(t, version, row, reported)
    if not out:
        deps = ", ".join(f"{d} {t.version_of(d)}" for d in ("numpy", "protobuf") if t.version_of(d))
        out.append(
            Finding.passed(
                f"MindSpore {version} fits Python {py}" + (f" and {deps}" if deps else ""),
                proved=(
                    f"Python {py} is among MindSpore {version}'s wheels ({', '.join(row.python)})"
                    + (f", the installed build is compiled for {abi}" if abi else "")
                    + (f"; numpy{row.numpy}" if row.numpy else "")
                    + (f", protobuf{row.protobuf}" if row.protobuf else "")
                    + " hold"
                ),
                evidence={"mindspore": version, "python": py, "abi": abi, "source": row.source},
            )
        )
    return out


def _mindspore_deps(t: "TargetFacts", version: str, row: MindSporeRelease, reported: set) -> list[Finding]:
    """numpy and protobuf against the specifiers of MindSpore's matrix row."""
    out: list[Finding] = []
    for dep, spec in (("numpy", row.numpy), ("protobuf", row.protobuf)):
        have = t.version_of(dep)
        if spec and have and not spec_contains(spec, have):
            reported.add(pair("mindspore", dep))
            out.append(
                Finding.fail(
                    f"{dep} {have} is installed, but MindSpore {version} needs {dep}{spec}",
                    detail=_DEP_WHY[dep],
                    fix=pip_install(t, f"{dep}{spec}"),
                    evidence={
                        "pair": ["mindspore", dep],
                        dep: have,
                        "required": spec,
                        "source": row.source,
                        "wants": wants_evidence(Want(dep, spec, "mindspore")),
                    },
                    code=f"mindspore-{dep}",
                )
            )
    return out


_DEP_WHY = {
    "numpy": "MindSpore up to 2.9.0 is built against numpy 1.x and its metadata requires numpy<2 (2.10.0 is the first "
    "release without the cap). On CPU 2.7.0 was seen to import and compute with numpy 2.2.6 (observed: "
    "`pip install --no-deps numpy==2.2.6` over mindspore 2.7.0, then `msdoctor check`), but CANN's TBE Python "
    "stack is installed with numpy<2 and numpy 2 there is untested.",
    "protobuf": "MindSpore's checkpoint and graph code is generated for the protobuf it declares "
    "(2.10.0 requires protobuf>=7.34.1); other versions give descriptor errors (observed).",
}


def evaluate_breakages(t: "TargetFacts", m: Matrix, installed: dict, reported: set) -> list[Finding]:
    """Combinations the metadata allows but that break at import (matrix [[breakage]] rows)."""
    out = []
    for b in m.breakages(installed):
        owner = next(iter(b.when))
        reported.add(pair(owner, b.package))
        out.append(
            Finding.fail(
                f"{b.package} {installed[b.package]} breaks {owner} {installed[owner]} at import, although the metadata allows it",
                detail=f"{b.symptom}." + (f" Use {b.package}{b.good}." if b.good else ""),
                fix=pip_install(t, f"{b.package}{b.good}") if b.good else None,
                evidence={
                    "pair": [owner, b.package],
                    b.package: installed[b.package],
                    owner: installed[owner],
                    "bad": b.bad,
                    "good": b.good,
                    "source": b.source,
                    "wants": wants_evidence(Want(b.package, b.good, owner)) if b.good else [],
                },
                code="known-breakage",
            )
        )
    return out
