"""duplicate-installs, part 3: modules shadowed by stray trees, .pth files and editable installs pointing nowhere."""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, Sequence

from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Finding, Location, Status

from msdoctor.checks.duplicate_installs.fixes import owner_python, pth_adding, pythonpath, where
from msdoctor.checks.duplicate_installs.record import Records
from msdoctor.checks.duplicate_installs.scan import (
    Groups,
    editable_source,
    importable,
    is_leftover,
    module_file,
    owns,
    provider_dirs,
    q,
    real,
    specs,
    status_for,
    under,
)


def _claims(dists: Iterable[Distribution]) -> dict[str, list[Distribution]]:
    out: dict[str, list[Distribution]] = {}
    for d in dists:
        if not is_leftover(d):
            for name in d.top_level or []:
                if importable(name):
                    out.setdefault(name, []).append(d)
    return out


def _stdlib_dirs(t: TargetFacts) -> set[str]:
    scheme = t.raw.get("scheme") or {}
    dirs = [scheme.get("stdlib"), scheme.get("platstdlib")]
    dirs += [os.path.join(d, "lib-dynload") for d in list(dirs) if d]
    return {real(d) for d in dirs if d}


def _fix_for(t: TargetFacts, path: str, directory: str) -> str:
    rename = f"mv {q(path)} {q(path.rstrip(os.sep) + '_local')}"
    if t.raw.get("cwd") and real(directory) == real(t.raw["cwd"]):
        return f"rename it ({rename}) and update your imports, or start Python from another directory"
    if any(real(directory) == real(p) for p in pythonpath(t)):
        return f"remove {directory} from PYTHONPATH (shell profile, job script), or rename it: {rename}"
    pth = pth_adding(t, directory)
    if pth:
        return f"delete the line naming {directory} from {pth}, or rename it: {rename}"
    return f"rename or remove it: {rename}"


def shadowed_modules(t: TargetFacts) -> list[Finding]:
    """A find_spec origin outside every distribution that claims the module."""
    claims = _claims(t.distributions)
    stdlib = _stdlib_dirs(t)
    out = []
    for name, spec in sorted(specs(t).items()):
        owners = claims.get(name)
        if not owners or not spec.get("found") or any(owns(d, spec) for d in owners):
            continue
        path = module_file(spec)
        dirs = provider_dirs(spec)
        if not path or not dirs or real(dirs[0]) in stdlib:
            continue  # built-in, or the standard library winning over an installed backport: harmless
        d = owners[0]
        out.append(
            Finding(
                status_for(name, d.name),
                f"{path} shadows the installed {d.name} {d.version or ''}".rstrip(),
                detail=(
                    f"`import {name}` loads {path}, found in {where(t, dirs[0])} before {d.location} on sys.path, "
                    f"not the {d.name} {d.version or ''} that pip installed. Code then runs another {name} "
                    "than the one pip, `pip list` and importlib.metadata report."
                ),
                fix=_fix_for(t, path, dirs[0]),
                location=Location(path),
                evidence={"module": name, "origin": spec.get("origin"), "found_in": dirs[0], **_shadowed(d)},
                code="shadowed-module",
            )
        )
    return out


def _module_entry(directory: str, entry: str, names: Mapping[str, object]) -> Optional[str]:
    """The installed name that directory/entry would be imported as, if it is a real module."""
    stem = entry.split(".", 1)[0]
    if stem not in names:
        return None
    full = os.path.join(directory, entry)
    if entry == stem and os.path.isfile(os.path.join(full, "__init__.py")):
        return stem  # a plain directory (no __init__.py) is a namespace portion and loses to the package
    if entry in (stem + ".py", stem + ".pyc") or (entry.endswith((".so", ".pyd")) and os.path.isfile(full)):
        return stem
    return None


def stdlib_names(t: TargetFacts) -> set[str]:
    """Top-level modules of the target's standard library, read from its directories (nothing imported),
    less those already imported when Python starts (a file of that name cannot replace them)."""
    scheme = t.raw.get("scheme") or {}
    names: set[str] = set()
    for d in {str(s) for s in (scheme.get("stdlib"), scheme.get("platstdlib")) if s}:
        for sub in (d, os.path.join(d, "lib-dynload")):
            try:
                entries = os.listdir(sub)
            except OSError:
                continue
            for e in entries:
                stem = e.split(".", 1)[0]
                if e.endswith((".py", ".so")) or os.path.isfile(os.path.join(sub, e, "__init__.py")):
                    names.add(stem)
    names -= {"site-packages", "dist-packages", "__pycache__", "test", "tests", "idlelib", "turtledemo"}
    names -= set(t.raw.get("startup_modules") or [])
    return {n for n in names if n.isidentifier() and not n.startswith("_")}


def script_dir_shadows(
    t: TargetFacts, groups: Groups, directories: Sequence[str], project: Optional[str] = None
) -> list[Finding]:
    """Modules in the project directory and the training script's / config's directory: `python train.py`
    puts the script's directory first on sys.path, so what is found there wins over the installed module.

    Decided from the file system as find_spec would (a module file or a package with __init__.py in the
    first sys.path entry wins; a plain directory is a namespace portion and loses): nothing is imported.
    """
    on_path = {real(e.get("abspath", "")) for e in t.sys_path}
    names: dict[str, Distribution] = {}
    for copies in groups.values():
        for n in copies[0].top_level or []:
            if importable(n):
                names.setdefault(n, copies[0])
    stdlib = dict.fromkeys(stdlib_names(t) - set(names))
    out = []
    for directory in dict.fromkeys(real(d) for d in directories):
        if directory in on_path:
            continue  # the probe ran with it on sys.path: shadowed_modules saw the real answer
        try:
            entries = sorted(os.listdir(directory))
        except OSError:
            continue
        in_project = project is not None and directory == real(project)
        for entry in entries:
            full = os.path.join(directory, entry)
            lib = _module_entry(directory, entry, stdlib)
            if lib is not None:
                out.append(_shadows_stdlib(full, lib, directory))
                continue
            stem = _module_entry(directory, entry, names)
            d = names.get(stem or "")
            src = editable_source(d) if d else None
            if stem is None or d is None or (src and under(full, src)):
                continue
            out.append(_shadows_dist(full, stem, d, directory, in_project))
    return out


def _shadows_stdlib(full: str, lib: str, directory: str) -> Finding:
    return Finding(
        Status.WARN,
        f"{full} would shadow the standard library's {lib} for scripts in {directory}",
        detail=(
            f"`python {directory}/<script>.py` puts {directory} first on sys.path (Python docs, "
            f"sys.path[0]), so `import {lib}` there, and in every library that imports it, would "
            f"load {full} instead of the standard {lib} module. Found on disk; nothing was imported."
        ),
        fix=f"rename it: mv {q(full)} {q(full + '_local')} (and update your imports)",
        location=Location(full),
        evidence={"module": lib, "path": full, "directory": directory, "shadowed": "stdlib"},
        code="shadowed-stdlib-script-dir",
    )


def _shadows_dist(full: str, stem: str, d: Distribution, directory: str, in_project: bool) -> Finding:
    """``full`` in ``directory`` wins over the installed ``d``: now (the project directory, where
    `python train.py` / `python -m` / Jupyter start) or for scripts kept in that directory."""
    evidence = {"module": stem, "path": full, "directory": directory, **_shadowed(d)}
    if in_project:
        return Finding(
            status_for(stem, d.name),
            f"{full} shadows the installed {d.name} {d.version or ''}".rstrip(),
            detail=(
                f"`import {stem}` in a script, `python -m` or a notebook started in the current (project) "
                f"directory {directory} loads {full}: that directory comes first on sys.path (Python "
                f"docs, sys.path[0]), before {d.location} where pip installed {d.name} "
                f"{d.version or ''}. Found on disk, as find_spec would; nothing was imported."
            ),
            fix=(
                f"rename it (mv {q(full)} {q(full + '_local')}) and update your imports, or start Python "
                "from another directory"
            ),
            location=Location(full),
            evidence=evidence,
            code="shadowed-module",
        )
    return Finding(
        status_for(stem, d.name),
        f"{full} would shadow the installed {d.name} {d.version or ''} for scripts in {directory}".rstrip(),
        detail=(
            f"`python {directory}/<script>.py` puts {directory} first on sys.path (Python docs, "
            f"sys.path[0]), so `import {stem}` would load {full} instead of {d.name} from {d.location}. "
            "Found on disk; nothing was imported."
        ),
        fix=f"rename it: mv {q(full)} {q(full + '_local')} (and update your imports)",
        location=Location(full),
        evidence=evidence,
        code="shadowed-module-script-dir",
    )


def _shadowed(d: Distribution) -> dict[str, Any]:
    """The evidence naming the installed distribution a module file shadows."""
    return {"shadowed_dist": d.name, "shadowed_version": d.version, "dist_location": d.location}


def stale_paths(t: TargetFacts, records: Records) -> list[Finding]:
    """Editable installs whose source tree is gone, and .pth lines naming missing directories."""
    out, gone = [], []
    for d in t.distributions:
        src = editable_source(d)
        if src and not is_leftover(d) and not os.path.exists(src):
            gone.append(src)
            py = owner_python(t, d.location) or t.python_cmd()
            out.append(
                Finding(
                    status_for(d.name),
                    f"the editable install of {d.name} {d.version or ''} points at {src}, which no longer exists",
                    detail=(
                        f"{d.name} was installed with `pip install -e {src}`; that tree was moved or deleted, so "
                        f"`import` of its modules fails while pip still lists {d.name} as installed."
                    ),
                    fix=(
                        f"{py} -m pip uninstall -y {d.name} ; then {py} -m pip install -e /new/path/of/{d.name} "
                        f"(or {py} -m pip install {d.name}{'==' + d.version if d.version else ''})"
                    ),
                    location=Location(d.path),
                    evidence={"dist": d.name, "source": src, "direct_url": d.direct_url},
                    code="editable-missing-source",
                )
            )
    for pth in t.pth_files:
        for line in pth.get("lines") or []:
            target = line.get("resolved") or ""
            if line.get("kind") != "path" or line.get("exists", True) or any(under(target, g) for g in gone):
                continue
            out.append(_stale_pth(t, pth["path"], line, records))
    return out


def _stale_pth(t: TargetFacts, pth: str, line: Mapping[str, Any], records: Records) -> Finding:
    base = os.path.basename(pth)
    here = [d for d in t.distributions if real(d.location) == real(os.path.dirname(pth)) and not is_leftover(d)]
    owner = next((d for d in here if base in records.top_files(d)), None)
    if owner is not None:
        py = owner_python(t, owner.location) or t.python_cmd()
        fix = f"{py} -m pip uninstall -y {owner.name} (it installed {base}), then reinstall it from where it lives now"
    else:
        fix = f"delete the line '{line.get('line')}' from {pth}"
    return Finding(
        status_for(owner.name) if owner else Status.WARN,
        f"{pth} adds {line.get('resolved')}, which does not exist",
        detail=(
            "Python's site module adds each path line of a .pth file to sys.path at start-up. This one names "
            "a directory that was moved or deleted, so whatever was imported from it (often an editable "
            "install or a source checkout) is gone."
        ),
        fix=fix,
        location=Location(pth),
        evidence={
            "pth": pth,
            "line": line.get("line"),
            "resolved": line.get("resolved"),
            "owner": owner.name if owner else None,
        },
        code="pth-missing-path",
    )
