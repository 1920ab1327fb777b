"""Facts for the registry-collisions check: built-in registry names of the target, and registrations found statically.

* ``REGISTRY_BUILTINS``: what the target's transformers / MindNLP / MindFormers already own, read
  from the installed files (the copy the target imports, per the probe's find_spec).
* ``PROJECT_REGISTRATIONS``: registrations in the user's project (``--project``, plus the folder of
  ``--config`` when it holds code), by ast.
* ``INSTALLED_REGISTRATIONS``: registrations made by installed distributions that depend on
  transformers / MindNLP / MindFormers (their files from RECORD, prefiltered by a byte search).

Nothing is imported or executed; every parse goes through one cache keyed by file identity.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from msdoctor.context import Context, FactSpec

if TYPE_CHECKING:  # pragma: no cover - the readers load when a fact is computed, not when the check registers
    from msdoctor.facts.target import Distribution, TargetFacts
    from msdoctor.registry_scan.builtins import Builtins
    from msdoctor.registry_scan.sources import ScanResult, SourceFile


def _package_dir(t: "TargetFacts", library: str) -> Optional[str]:
    origin = t.module_origin(library)
    if not origin:
        return None
    if os.path.basename(origin).startswith("__init__."):
        return os.path.dirname(origin)
    return origin if os.path.isdir(origin) else None


def builtins_of(t: "TargetFacts") -> Builtins:
    """The built-in registries of every library the target can import."""
    from msdoctor.registry_scan.builtins import LIBRARIES, Builtins, read_library

    out = Builtins()
    for library in LIBRARIES:
        pkg = _package_dir(t, library)
        if pkg is None:
            continue
        parent = os.path.realpath(os.path.dirname(pkg))
        dist = next((d for d in t.all_named(library) if os.path.realpath(d.location) == parent), None)
        dist = dist or t.dist(library)
        out.libraries[library] = read_library(
            library, pkg, dist.name if dist else library, dist.version if dist else None
        )
    mindnlp = out.libraries.get("mindnlp")
    if mindnlp is not None and not mindnlp.has_registry:
        out.notes.append(
            f"{mindnlp.label} has no auto registry of its own (mindnlp/transformers/models/auto is absent): "
            "its AutoConfig is transformers', so registrations through it are checked against transformers"
        )
    return out


def _builtins(ctx: Context) -> Builtins:
    return builtins_of(ctx.target)


@dataclass
class ProjectScan:
    """The project's scan and the roots it covered."""

    result: ScanResult
    roots: list[str]

    @classmethod
    def empty(cls, root: str) -> "ProjectScan":
        from msdoctor.registry_scan.sources import ScanResult

        return cls(ScanResult("project", root), [root])


def scan_project(project_dir: str, config_path: Optional[str] = None) -> ProjectScan:
    from msdoctor.registry_scan.sources import SourceSet, config_dir_files, project_files, project_prefilter

    root = os.path.abspath(project_dir)
    files, truncated = project_files(root)
    extra = config_dir_files(config_path, root)
    roots = [root] + ([os.path.dirname(extra[0].path)] if extra else [])
    sources = SourceSet("project", root, files + extra)
    result = sources.scan(project_prefilter)
    result.truncated = truncated
    return ProjectScan(result, roots)


def _project(ctx: Context) -> ProjectScan:
    config = ctx.options.config_path
    return scan_project(str(ctx.project_dir), str(config) if config else None)


def _under(path: str, root: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def scan_installed(t: "TargetFacts", builtins: Builtins, project_dir: Optional[str] = None) -> list[ScanResult]:
    """Registrations made by installed distributions that depend on a registry library.

    The libraries with their own registry are read as built-ins, not here; an editable install
    of the project itself is left to the project scan.
    """
    from msdoctor.registry_scan.builtins import LIBRARIES
    from msdoctor.registry_scan.sources import (
        SourceSet,
        editable_source,
        may_register,
        project_files,
        record_files,
        requires_any,
    )

    own = {lib for lib, reg in builtins.libraries.items() if reg.has_registry}
    out: list[ScanResult] = []
    for dist in t.winners():
        if dist.key in own or dist.key in ("transformers", "msdoctor"):
            continue  # built-ins are read above; msdoctor registers nothing (its tests only write fixtures)
        if not requires_any(dist.requires, LIBRARIES):
            continue
        origin = f"{dist.name} {dist.version}" if dist.version else dist.name
        source = editable_source(dist.direct_url) if dist.editable else None
        if source is not None:
            if project_dir and (_under(source, project_dir) or _under(project_dir, source)):
                continue
            files, _ = project_files(source)
            sources = SourceSet(origin, source, files)
        else:
            listed = record_files(dist.path, dist.location)
            if listed is None:
                listed = _top_level_files(dist)
            if project_dir:
                listed = [f for f in listed if not _under(f.path, project_dir)]
            sources = SourceSet(origin, dist.location, listed, script_style=False)
        result = sources.scan(may_register)
        if result.registrations or result.unparsable:
            out.append(result)
    return out


def _top_level_files(dist: "Distribution") -> list[SourceFile]:
    from msdoctor.registry_scan.sources import SourceFile, module_name

    out = []
    for top in dist.top_level or []:
        base = os.path.join(dist.location, top)
        if os.path.isfile(base + ".py"):
            out.append(SourceFile(base + ".py", top))
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fname in filenames:
                if fname.endswith(".py"):
                    path = os.path.join(dirpath, fname)
                    mod, is_pkg = module_name(os.path.relpath(path, dist.location))
                    out.append(SourceFile(path, mod, is_pkg))
    return out


def _installed(ctx: Context) -> list[ScanResult]:
    return scan_installed(ctx.target, ctx.get(REGISTRY_BUILTINS), str(ctx.project_dir))


def added_versions() -> tuple[dict[str, str], str]:
    """model_type -> first transformers release that ships it, and the table's baseline.

    Source: compat_matrix/transformers_model_types.toml (observed in the transformers wheels it lists).
    """
    from msdoctor.shipped import read_text
    from msdoctor.tomlcompat import tomllib

    text = read_text("compat_matrix/transformers_model_types.toml")
    data = tomllib.loads(text)
    return dict(data.get("added", {})), str(data.get("meta", {}).get("baseline", ""))


REGISTRY_BUILTINS: FactSpec[Builtins] = FactSpec(
    "registry_builtins", _builtins, description="built-in model registry names of transformers/MindNLP/MindFormers"
)
PROJECT_REGISTRATIONS: FactSpec[ProjectScan] = FactSpec(
    "registry_project", _project, description="model registrations in the user's project (ast)"
)
INSTALLED_REGISTRATIONS: FactSpec[list] = FactSpec(
    "registry_installed", _installed, description="model registrations made by installed distributions (ast)"
)
