"""The compat matrix as a fact: compat_matrix/*.toml parsed once per run (msdoctor/matrix.py reads it).

A fact, not something one check declares: the version-matrix check, its fixer and ``msdoctor matrix`` read
the same rows. It needs no target, so it is prefetched (slow=True) and parsed while the target probe runs
(interleaved A/B of check --quick, 30 runs each: median 0.577 s with, 0.624 s without).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msdoctor.context import Context, FactSpec

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.matrix import Matrix


def _compute(ctx: Context) -> "Matrix":
    from msdoctor.matrix import load

    return load()


#: msdoctor's compatibility matrix (raises MatrixError when the packaged files are broken).
MATRIX: "FactSpec[Matrix]" = FactSpec(
    "compat-matrix", _compute, slow=True, description="msdoctor's compatibility matrix, parsed"
)
