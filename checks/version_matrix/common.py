"""Helpers shared by the version-matrix check modules: fix commands, the installed MindSpore.

The training stack (whose broken requirements fail, others warn) is compat_matrix/stack.toml, read by
msdoctor.domain.stack."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts


@dataclass(frozen=True)
class Want:
    """What would make a finding right, for the stack fixer (fix.py): ``package`` at a version in ``spec``
    (PEP 440, "" for any), because of ``owner``'s requirement or matrix row. In a finding's evidence it is
    ``"wants": [[package, spec, owner], ...]`` (:func:`wants_evidence`; the JSON report keeps that shape)."""

    package: str
    spec: str
    owner: Optional[str]  # the distribution whose requirement (or matrix row) it is

    def evidence(self) -> list:
        return [self.package, self.spec, self.owner]


def wants_evidence(*wants: Want) -> list[list]:
    """The ``wants`` entry of a finding's evidence."""
    return [w.evidence() for w in wants]


def wants_of(evidence: Mapping[str, Any]) -> list[Want]:
    """The wants a finding's evidence carries, names canonical (malformed entries skipped)."""
    from packaging.utils import canonicalize_name

    out = []
    for item in (evidence or {}).get("wants") or []:
        try:
            pkg, spec, owner = item
        except (TypeError, ValueError):
            continue
        out.append(Want(canonicalize_name(str(pkg)), str(spec or ""), canonicalize_name(str(owner)) if owner else None))
    return out


def pip_install(t: "TargetFacts", *requirements: str) -> str:
    """The exact install command for the target interpreter, each requirement quoted."""
    return f"{t.python_cmd()} -m pip install " + " ".join(f'"{r}"' for r in requirements)


def pair(a: str, b: str) -> frozenset:
    """The key of a relationship: one finding per broken pair."""
    return frozenset((a, b))


def installed_versions(t: "TargetFacts") -> dict[str, Optional[str]]:
    """{canonical name: version} of the winning copy of every distribution."""
    return {d.key: d.version for d in t.winners()}


def mindspore_dir(t: "TargetFacts") -> Optional[str]:
    """The installed mindspore package directory (from find_spec, else the dist's location)."""
    spec = t.find_spec.get("mindspore") or {}
    locs = spec.get("locations") or []
    if spec.get("found") and locs:
        return locs[0]
    d = t.dist("mindspore")
    if d is not None:
        cand = os.path.join(d.location, "mindspore")
        if os.path.isdir(cand):
            return cand
    return None


def read_text(path: str, limit: int = 200_000) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])
