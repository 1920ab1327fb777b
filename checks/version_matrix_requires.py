"""version-matrix rule 1: every installed distribution's Requires-Dist is satisfied (pip check semantics).

Evaluated with the target's own marker environment (from the probe), extras off, pre-releases
allowed, against the winning copy of each distribution on the target's sys.path. A broken
requirement of a stack package fails; of any other package it warns.
"""

from __future__ import annotations

import functools
from typing import Any

from msdoctor.checks.version_matrix_common import STACK, pair, pip_install
from msdoctor.model import Finding


@functools.lru_cache(maxsize=4096)
def _parse(raw: str) -> Any:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(raw)
    except InvalidRequirement:
        return None


def broken_requirements(t: Any) -> tuple[list[tuple], list[tuple], int]:
    """(conflicts [(dist, req, have)], missing [(dist, req)], distributions checked)."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion

    env = dict(t.markers)
    env["extra"] = ""
    winners = list(t.winners())
    installed = {d.key: d for d in winners}
    conflicts, missing = [], []
    for d in winners:
        for raw in d.requires:
            req = _parse(raw)
            if req is None:
                continue
            try:
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except Exception:  # a marker naming an unknown variable: pip skips it too
                continue
            have = installed.get(canonicalize_name(req.name))
            if have is None:
                missing.append((d, req))
            elif req.specifier:
                try:
                    ok = req.specifier.contains(have.version or "", prereleases=True)
                except InvalidVersion:
                    ok = False
                if not ok:
                    conflicts.append((d, req, have))
    return conflicts, missing, len(winners)


def _spec(req: Any) -> str:
    return f"{req.name}{req.specifier}"


def evaluate_requirements(t: Any, reported: set) -> list[Finding]:
    """Findings for broken requirements, skipping pairs another rule already reported."""
    from packaging.utils import canonicalize_name

    conflicts, missing, count = broken_requirements(t)
    out: list[Finding] = []
    for d, req, have in conflicts:
        key = pair(d.key, canonicalize_name(req.name))
        if key in reported:
            continue
        reported.add(key)
        make = Finding.fail if d.key in STACK else Finding.warn
        out.append(make(
            f"{d.name} {d.version} requires {_spec(req)}, but {have.name} {have.version} is installed",
            detail=(f"{d.name}'s metadata (Requires-Dist) excludes the installed {have.name}; pip would report "
                    "this in `pip check`. Packages run against dependency versions they were not built or "
                    "tested with can fail at import or, worse, later during training."),
            fix=pip_install(t, _spec(req)),
            evidence={"pair": sorted(key), "requirement": str(req), "required_by": d.name,
                      "installed": have.version, "location": have.location},
            code="requirement-conflict",
        ))
    by_dist: dict[str, list] = {}
    for d, req in missing:
        by_dist.setdefault(d.key, [d]).append(req)
    for key, (d, *reqs) in by_dist.items():
        make = Finding.fail if key in STACK else Finding.warn
        names = ", ".join(r.name for r in reqs)
        out.append(make(
            f"{d.name} {d.version} requires {names}, {'which is' if len(reqs) == 1 else 'which are'} not installed",
            detail=f"{d.name}'s metadata lists them as dependencies; importing {d.name} may fail without them.",
            fix=pip_install(t, *(_spec(r) for r in reqs)),
            evidence={"required_by": d.name, "missing": [str(r) for r in reqs]},
            code="requirement-missing",
        ))
    if not (conflicts or missing):
        out.append(Finding.passed(
            f"the requirements of all {count} installed distributions are satisfied",
            proved=(f"every Requires-Dist of the {count} distributions that win on sys.path is met by the installed "
                    "versions, evaluated with this interpreter's environment markers (pip check semantics)"),
            evidence={"distributions": count},
        ))
    return out
