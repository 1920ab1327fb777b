"""duplicate-installs, part 4: broken or partial installs (missing files, bad dist-info, pip leftovers)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Finding, Location, Status

from msdoctor.checks.duplicate_installs.fixes import owner_python, reinstall, rm_command
from msdoctor.checks.duplicate_installs.record import Records, file_hash
from msdoctor.checks.duplicate_installs.scan import Groups, is_leftover, is_stack, real, status_for
from msdoctor.domain.stack import training_stack

#: pip renames what it replaces to "~" + these + the name's tail (pypa/pip src/pip/_internal/utils/temp_dir.py,
#: AdjacentTempDirectory.LEADING_CHARS) and deletes it when the run ends; a killed run leaves it behind.
_PIP_LEADING = "-~.=%0123456789"


@dataclass
class RecordStats:
    """What the RECORD sampling looked at, for the pass finding."""

    dists: int = 0
    files: int = 0


def _version_key(d: Distribution) -> tuple[int, object]:
    try:
        return (1, Version(d.version or ""))
    except InvalidVersion:
        return (0, d.version or "")


def _matches_disk(records: Records, d: Distribution) -> Optional[bool]:
    """Whether the files on disk are the ones this dist-info's RECORD describes (sha256 of a few)."""
    top = records.top_files(d)
    # a few top-level files, Python sources first (a native module can be hundreds of MB)
    rows = sorted(((p, h) for p, h in records.rows(d) if h and p in top), key=lambda r: not r[0].endswith(".py"))[:3]
    if not rows:
        return None
    return all(file_hash(os.path.join(d.location, p)) == h for p, h in rows)


def two_dist_infos(t: TargetFacts, projects: Groups, records: Records) -> tuple[list[Finding], set[str]]:
    """One project with several dist-info directories in one directory; returns the stale ones too."""
    groups: dict[tuple[str, str], list[Distribution]] = {}
    for key, copies in projects.items():
        for d in copies:
            if d.kind == "dist-info":
                groups.setdefault((key, real(d.location)), []).append(d)
    out: list[Finding] = []
    stale_paths: set[str] = set()
    for (key, _loc), ds in sorted(groups.items()):
        if len(ds) < 2:
            continue
        verdict = {d.path: _matches_disk(records, d) for d in ds}
        current = [d for d in ds if verdict[d.path]]
        if len(current) != 1:
            current = [max(ds, key=_version_key)]
        keep = current[0]
        stale = [d for d in ds if d is not keep]
        stale_paths.update(d.path for d in stale)
        proof = (
            "the files on disk match its RECORD (sha256 compared)"
            if verdict[keep.path]
            else "the newest version is kept: no RECORD hash could tell which files are installed"
        )
        out.append(
            Finding(
                status_for(keep.name),
                f"{keep.name} has {len(ds)} dist-info directories in {keep.location}: "
                + ", ".join(d.version or "?" for d in ds),
                detail=(
                    "importlib.metadata and pip each pick one of them, depending on directory order, so "
                    "`pip show`, `pip check` and version checks can report a version whose files are not "
                    f"installed. This happens after `pip install --ignore-installed` or a killed upgrade. "
                    f"Keep {keep.version}: {proof}."
                ),
                fix=f"{rm_command(d.path for d in stale)} ; {reinstall(t, keep)}",
                location=Location(keep.path),
                evidence={
                    "project": key,
                    "dist_infos": [d.path for d in ds],
                    "matches_disk": {os.path.basename(p): v for p, v in verdict.items()},
                    "keep": keep.path,
                },
                code="two-dist-infos",
            )
        )
    return out, stale_paths


def missing_files(t: TargetFacts, records: Records, skip: set[str], stats: RecordStats) -> list[Finding]:
    """Dist-infos whose RECORD lists files that are gone, or that lack METADATA / RECORD."""
    out = []
    for d in t.distributions:
        if is_leftover(d) or d.path in skip or d.kind != "dist-info":
            continue
        if "METADATA" not in d.files or ("RECORD" not in d.files and d.installer in ("pip", "uv")):
            out.append(_incomplete(t, d))
            continue
        gone, sampled = records.missing(d)
        stats.dists += 1 if sampled else 0
        stats.files += sampled
        if gone:
            out.append(
                Finding(
                    status_for(d.name),
                    f"{d.name} {d.version or ''} is partly deleted: {len(gone)} of {sampled} files checked are missing",
                    detail=(
                        f"Its RECORD ({d.path}/RECORD) lists files that are not on disk, e.g. "
                        f"{', '.join(gone[:4])}. Imports of {d.name} fail or load a mix of versions."
                        + (
                            " Checked: every __init__.py, native library and console script."
                            if is_stack(d.name)
                            else " Checked: its top-level modules and packages."
                        )
                    ),
                    fix=reinstall(t, d),
                    location=Location(d.path),
                    evidence={"dist": d.name, "version": d.version, "missing": gone[:20], "checked": sampled},
                    code="record-missing-files",
                )
            )
    return out


def _incomplete(t: TargetFacts, d: Distribution) -> Finding:
    lacks = [f for f in ("METADATA", "RECORD") if f not in d.files]
    why = (
        "Without METADATA, importlib.metadata.version() returns None and pip cannot read the project; "
        if "METADATA" in lacks
        else ""
    )
    why += (
        "Without RECORD, pip cannot uninstall or upgrade it (PEP 627 lets only non-pip installers omit it)."
        if "RECORD" in lacks
        else ""
    )
    py = owner_python(t, d.location) or t.python_cmd()
    pin = f"=={d.version}" if d.version else ""
    return Finding(
        status_for(d.name),
        f"{d.path} has no {' and no '.join(lacks)}",
        detail=why + " An interrupted install or a manual copy usually leaves this.",
        fix=f"{rm_command([d.path])} ; {py} -m pip install --no-deps --force-reinstall {d.name}{pin}",
        location=Location(d.path),
        evidence={"dist_info": d.path, "missing": lacks, "installer": d.installer},
        code="dist-info-incomplete",
    )


def _stem(name: str) -> str:
    """The project or module part of a site-packages entry: six-1.17.0.dist-info, six.py, six -> six."""
    if name.endswith((".dist-info", ".egg-info")):
        return name.rsplit(".", 1)[0].rsplit("-", 1)[0] if "-" in name else name.rsplit(".", 1)[0]
    return name.split(".", 1)[0] if not name.startswith("~") else "~" + name[1:].split(".", 1)[0]


def _original(leftover: str, names: list[str]) -> Optional[str]:
    """The name pip renamed to ``leftover``: "~" + filler + the name's tail, same length."""
    stem = _stem(leftover)
    tail = stem[1:].lstrip(_PIP_LEADING)
    for n in names:
        if not n.startswith("~") and len(n) == len(stem) and n.endswith(tail):
            return n
    return None


def _project(stem: str, here: list[Distribution]) -> str:
    """The project that installs import name / project stem ``stem`` (yaml -> pyyaml)."""
    for d in here:
        if d.key == canonicalize_name(stem) or stem in (d.top_level or []):
            return d.key
    return canonicalize_name(stem)


def leftovers(t: TargetFacts) -> list[Finding]:
    out, seen = [], set()
    for entry in t.sys_path:
        names = entry.get("leftovers") or []
        where = entry.get("abspath", "")
        if not names or real(where) in seen:
            continue
        seen.add(real(where))
        try:
            listing = os.listdir(where)
        except OSError:
            listing = []
        here = [d for d in t.distributions if real(d.location) == real(where) and not is_leftover(d)]
        stems = sorted({_stem(x) for x in listing}) + sorted(training_stack())
        guesses = [_original(n, stems) for n in names]
        projects = sorted({_project(g, here) for g in guesses if g})
        by_key = {d.key: d for d in here}
        redo = [reinstall(t, by_key[p]) for p in projects if p in by_key]
        paths = [os.path.join(where, n) for n in names]
        out.append(
            Finding(
                Status.FAIL if is_stack(*projects) else Status.WARN,
                f"{len(names)} leftover(s) of an interrupted pip run in {where}: {', '.join(names)}",
                detail=(
                    "pip moves what it replaces to a '~'-prefixed name and deletes it when the run ends; these "
                    "survived a killed or failed run. pip warns 'Ignoring invalid distribution ~...' on every call"
                    + (f", and {', '.join(projects)} may be half-replaced" if projects else "")
                    + "."
                ),
                fix=" ; ".join([rm_command(paths)] + redo),
                location=Location(where),
                evidence={"directory": where, "leftovers": names, "projects": projects},
                code="pip-leftover",
            )
        )
    return out
