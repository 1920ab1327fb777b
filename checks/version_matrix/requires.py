"""version-matrix rule 1: every installed distribution's Requires-Dist is satisfied (pip check semantics).

Evaluated with the target's own marker environment (from the probe), extras off, pre-releases
allowed, against the winning copy of each distribution on the target's sys.path. A broken
requirement of a stack package fails; of any other package it warns.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple, Optional

from msdoctor.checks.version_matrix.common import Want, pair, pip_install, wants_evidence
from msdoctor.domain.stack import training_stack
from msdoctor.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts


class Req(NamedTuple):
    name: str  # as written
    key: str  # canonical
    spec: str  # "" when unconstrained
    raw: str


_REQ_RE = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*\(?([^()@]*?)\)?\s*$")


@functools.lru_cache(maxsize=8192)
def _parse(raw: str) -> Optional[tuple[Req, Optional[str]]]:
    """(requirement, marker) of a Requires-Dist line; a regex fast path, packaging for the rest.

    Requires-Dist lists are long (transformers alone has hundreds of extras lines) and packaging's
    full parser costs ~0.1 ms a line; most lines are `name` or `name<spec>` with a simple marker.
    """
    from packaging.utils import canonicalize_name

    body, _, marker = raw.partition(";")
    m = _REQ_RE.match(body)
    if m:
        name = m.group(1)
        return Req(name, canonicalize_name(name), m.group(2).replace(" ", ""), raw.strip()), marker.strip() or None
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        r = Requirement(raw)
    except InvalidRequirement:
        return None
    return Req(r.name, canonicalize_name(r.name), str(r.specifier), raw.strip()), (str(r.marker) if r.marker else None)


@functools.lru_cache(maxsize=1024)
def _marker_holds(marker: str, env: tuple) -> bool:
    # extras are off in pip check: `extra == "x"` is false, and with it any marker that needs it
    if "extra" in marker and " or " not in marker:
        return False
    from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName

    try:
        return Marker(marker).evaluate(dict(env))
    except (InvalidMarker, UndefinedEnvironmentName, ValueError):
        return False  # a marker naming an unknown variable: pip skips it too


@functools.lru_cache(maxsize=8192)
def _satisfies(spec: str, version: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion

    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return (
            False  # a non-PEP 440 version breaks pip's resolver too (https://github.com/candle-org/MindAct/issues/1869)
        )


def broken_requirements(t: "TargetFacts") -> tuple[list[tuple], list[tuple], int]:
    """(conflicts [(dist, req, have)], missing [(dist, req)], distributions checked)."""
    env = tuple(sorted(dict(t.markers, extra="").items()))
    winners = list(t.winners())
    installed = {d.key: d for d in winners}
    conflicts, missing = [], []
    for d in winners:
        for raw in d.requires:
            parsed = _parse(raw)
            if parsed is None:
                continue
            req, marker = parsed
            if marker is not None and not _marker_holds(marker, env):
                continue
            have = installed.get(req.key)
            if have is None:
                missing.append((d, req))
            elif req.spec and not _satisfies(req.spec, have.version or ""):
                conflicts.append((d, req, have))
    return conflicts, missing, len(winners)


def _spec(req: Req) -> str:
    return f"{req.name}{req.spec}"


def evaluate_requirements(t: "TargetFacts", reported: set) -> list[Finding]:
    """Findings for broken requirements, skipping pairs another rule already reported."""
    conflicts, missing, count = broken_requirements(t)
    out: list[Finding] = []
    for d, req, have in conflicts:
        key = pair(d.key, req.key)
        if key in reported:
            continue
        reported.add(key)
        make = Finding.fail if d.key in training_stack() else Finding.warn
        out.append(
            make(
                f"{d.name} {d.version} requires {_spec(req)}, but {have.name} {have.version} is installed",
                detail=(
                    f"{d.name}'s metadata (Requires-Dist) excludes the installed {have.name}; pip would report "
                    "this in `pip check`. Packages run against dependency versions they were not built or "
                    "tested with can fail at import or, worse, later during training."
                ),
                fix=pip_install(t, _spec(req)),
                evidence={
                    "pair": sorted(key),
                    "requirement": req.raw,
                    "required_by": d.name,
                    "installed": have.version,
                    "location": have.location,
                    "wants": wants_evidence(Want(req.key, req.spec, d.key)),
                },
                code="requirement-conflict",
            )
        )
    by_dist: dict[str, list] = {}
    for d, req in missing:
        by_dist.setdefault(d.key, [d]).append(req)
    for dist_key, (d, *reqs) in by_dist.items():
        make = Finding.fail if dist_key in training_stack() else Finding.warn
        names = ", ".join(r.name for r in reqs)
        out.append(
            make(
                f"{d.name} {d.version} requires {names}, {'which is' if len(reqs) == 1 else 'which are'} not installed",
                detail=f"{d.name}'s metadata lists them as dependencies; importing {d.name} may fail without them.",
                fix=pip_install(t, *(_spec(r) for r in reqs)),
                evidence={
                    "required_by": d.name,
                    "missing": [r.raw for r in reqs],
                    "wants": wants_evidence(*(Want(r.key, r.spec, d.key) for r in reqs)),
                },
                code="requirement-missing",
            )
        )
    if not (conflicts or missing):
        out.append(
            Finding.passed(
                f"the requirements of all {count} installed distributions are satisfied",
                proved=(
                    f"every Requires-Dist of the {count} distributions that win on sys.path is met by the installed "
                    "versions, evaluated with this interpreter's environment markers (pip check semantics)"
                ),
                evidence={"distributions": count},
            )
        )
    return out
