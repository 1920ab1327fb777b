"""duplicate-installs, parts 1-2: one project twice on sys.path; two projects owning one import package."""

from __future__ import annotations

from typing import AbstractSet, Any, Mapping, Optional

from packaging.utils import canonicalize_name

from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Finding, Location

from msdoctor.checks.duplicate_installs.fixes import pip_can_remove, reinstall, removal_fix, where
from msdoctor.checks.duplicate_installs.record import Records
from msdoctor.checks.duplicate_installs.scan import (
    Groups,
    editable_source,
    importable,
    is_leftover,
    owns,
    real,
    specs,
    status_for,
    under,
)

_WHY_TWICE = (
    "Python imports the first copy on sys.path; importlib.metadata (the version checks of transformers, "
    "mindformers and MindSpore itself) and pip read the first dist-info they find, and pip's finder "
    "deliberately hides every later copy (pypa/pip src/pip/_internal/metadata/importlib/_envs.py), so "
    "`pip list` shows one version while another may be imported, and an upgrade can change a copy "
    "that is not used."
)

#: MindSpore's per-device wheels, replaced by the unified `mindspore` wheel (since 2.3.0: mindspore-ai/docs resource/release/release_list_en.md).
LEGACY_MINDSPORE = ("mindspore-ascend", "mindspore-gpu", "mindspore-cpu")


def projects(t: TargetFacts) -> Groups:
    """Every copy of every project by canonical name, in sys.path order, without pip's '~' leftovers.
    Computed once per evaluation: canonicalising 300 names on every lookup costs milliseconds."""
    out: Groups = {}
    for d in t.distributions:
        if not is_leftover(d):
            out.setdefault(d.key, []).append(d)
    return out


def _distinct_installs(copies: list[Distribution], stale: AbstractSet[str]) -> list[Distribution]:
    """One copy per directory (not a stale second dist-info), without the egg-info setuptools
    leaves in an editable install's source tree."""
    sources = [s for s in (editable_source(c) for c in copies) if s]
    firsts: dict[str, Distribution] = {}
    for c in copies:
        if c.path in stale or (c.kind == "egg-info" and any(under(c.location, s) for s in sources)):
            continue  # stale: reported by two-dist-infos; egg-info: the editable install seen from its source
        firsts.setdefault(real(c.location), c)
    return list(firsts.values())


def env_site_dirs(t: TargetFacts) -> set[str]:
    scheme = t.raw.get("scheme") or {}
    dirs = [scheme.get("purelib"), scheme.get("platlib")] + list(t.raw.get("site_packages") or [])
    return {real(d) for d in dirs if d and under(d, t.prefix)}


def import_source(copies: list[Distribution], sp: Mapping[str, Mapping[str, Any]]) -> Optional[Distribution]:
    """The copy whose files `import` loads, from the probe's find_spec (None when unknown)."""
    for c in copies:
        for name in c.top_level or []:
            spec = sp.get(name)
            if spec and spec.get("found"):
                for cand in copies:
                    if owns(cand, spec):
                        return cand
    return None


def _copy_row(c: Distribution, t: TargetFacts) -> dict[str, Any]:
    return {"version": c.version, "location": c.location, "where": where(t, c.location), "dist_info": c.path}


def same_project_twice(t: TargetFacts, groups: Groups, stale: AbstractSet[str] = frozenset()) -> list[Finding]:
    """One project in several sys.path directories; ``stale``: dist-infos known not to match the files."""
    out = []
    sp = specs(t)
    for _key, copies in sorted(groups.items()):
        placed = _distinct_installs(copies, stale)
        if len(placed) > 1:
            out.append(_twice(t, placed, sp))
    return out


def _twice(t: TargetFacts, placed: list[Distribution], sp: Mapping[str, Mapping[str, Any]]) -> Finding:
    first = placed[0]
    imported = import_source(placed, sp)
    own = [c for c in placed if real(c.location) in env_site_dirs(t)]
    keep = own[0] if own else (imported or first)
    rows = []
    for i, c in enumerate(placed, 1):
        tags = ["imported"] if c is imported else []
        tags += ["pip and importlib.metadata read this one"] if c is first else []
        rows.append(
            f"  {i}. {c.version or '?'} in {c.location} ({where(t, c.location)})"
            + (f"  <- {', '.join(tags)}" if tags else "")
        )
    pip_note = ""
    if not pip_can_remove(t, first.location):
        pip_note = (
            f" `{t.python_cmd()} -m pip` cannot remove the first copy: it is outside the environment "
            f"{t.prefix} (pip logs 'Not uninstalling ..., outside environment'), and `pip install -U "
            f"{first.name}` installs into the environment while the outside copy stays first."
        )
    elif imported is None:
        pip_note = " The probe could not tell which copy the import loads; sys.path order says the first."
    versions = ", ".join(c.version or "?" for c in placed)
    winner = imported or first
    return Finding(
        status_for(first.name),
        f"{first.name} is installed {len(placed)} times on sys.path ({versions}); "
        f"the import uses {winner.version} from {where(t, winner.location)}",
        detail="\n".join(
            [_WHY_TWICE + pip_note, "Copies, in sys.path order:"]
            + rows
            + [f"Keep {keep.version} in {keep.location}; remove the others."]
        ),
        fix=" ; ".join(removal_fix(t, c, c is first) for c in placed if c is not keep),
        location=Location(winner.path),
        evidence={
            "project": first.key,
            "copies": [_copy_row(c, t) for c in placed],
            "imported_from": imported.location if imported else None,
            "pip_acts_on": first.location,
            "pip_can_uninstall_it": pip_can_remove(t, first.location),
            "keep": keep.location,
        },
        code="same-project-twice",
    )


def rival_distributions(t: TargetFacts, groups: Groups, records: Records) -> list[Finding]:
    """Different projects whose files are the same import package (RECORD / top_level.txt)."""
    sp = specs(t)
    claims: dict[str, list[Distribution]] = {}
    for copies in groups.values():
        first = copies[0]
        for name in first.top_level or []:
            if importable(name):
                claims.setdefault(name, []).append(first)
    out = []
    for name, owners in sorted(claims.items()):
        spec = sp.get(name) or {}
        if len(owners) < 2 or spec.get("namespace"):
            continue  # one owner, or a PEP 420 namespace shared on purpose (google.protobuf + google.api)
        finding = _rival(t, name, owners, spec, records)
        if finding is not None:
            out.append(finding)
    return out


def _rival(
    t: TargetFacts, name: str, owners: list[Distribution], spec: Mapping[str, Any], records: Records
) -> Optional[Finding]:
    by_dir: dict[str, list[Distribution]] = {}
    for d in owners:
        by_dir.setdefault(real(d.location), []).append(d)
    shared: list[str] = []
    for group in by_dir.values():
        if len(group) > 1:
            common = set.intersection(*(records.owned(d, name) for d in group))
            shared.extend(sorted(common))
    imported = next((d for d in owners if spec.get("found") and owns(d, spec)), None)
    crossed = len(by_dir) > 1 and bool(spec.get("found"))
    if not shared and not crossed:
        return None  # side by side without common files: a namespace made of plain directories
    keep = next((d for d in owners if d.key == canonicalize_name(name)), imported or owners[0])
    listing = ", ".join(f"{d.name} {d.version or '?'} ({d.location})" for d in owners)
    parts = [f"`import {name}` has {len(owners)} providers: {listing}."]
    if shared:
        parts.append(
            f"Their RECORD files list the same {len(shared)} file(s) (e.g. {', '.join(shared[:3])}): "
            "the one installed last overwrote the other's files, and uninstalling either deletes "
            "files the other needs."
        )
    if crossed and imported:
        parts.append(
            f"The import loads {imported.name}'s copy from {imported.location}; the others are "
            "shadowed but still answer to pip and importlib.metadata."
        )
    if any(d.key in LEGACY_MINDSPORE for d in owners):
        parts.append(
            "mindspore-ascend/-gpu/-cpu are the legacy per-device wheels; current releases ship one "
            "`mindspore` wheel since 2.3.0, so keep `mindspore` only."
        )
    others = [d for d in owners if d is not keep]
    fix = [removal_fix(t, d, True) for d in others] + [reinstall(t, keep)]
    return Finding(
        status_for(name, *(d.name for d in owners)),
        f"import package {name} is installed by {len(owners)} projects: "
        + ", ".join(f"{d.name} {d.version or '?'}" for d in owners),
        detail=" ".join(parts),
        fix=" ; ".join(fix),
        location=Location(owners[0].path),
        evidence={
            "import_package": name,
            "projects": [{"name": d.name, **_copy_row(d, t)} for d in owners],
            "shared_files": len(shared),
            "shared_examples": shared[:10],
            "imported_from": imported.location if imported else None,
            "keep": keep.name,
        },
        code="rival-distributions",
    )
