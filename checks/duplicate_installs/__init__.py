"""Check: duplicate distributions, rival packages, shadowed modules, broken installs and foreign scripts."""

from __future__ import annotations

import os
from typing import Optional, Sequence

from msdoctor.context import Context
from msdoctor.facts.target import TargetFacts
from msdoctor.model import Finding

from msdoctor.checks.duplicate_installs.broken import RecordStats, leftovers, missing_files, two_dist_infos
from msdoctor.checks.duplicate_installs.dups import projects, rival_distributions, same_project_twice
from msdoctor.checks.duplicate_installs.record import Records
from msdoctor.checks.duplicate_installs.scan import Groups, specs, with_paths_memo
from msdoctor.checks.duplicate_installs.scripts import foreign_on_path, foreign_shebangs, scripts_dir
from msdoctor.checks.duplicate_installs.shadowing import script_dir_shadows, shadowed_modules, stale_paths


@with_paths_memo
def evaluate(
    t: TargetFacts, *, script_dirs: Sequence[str] = (), records: Optional[Records] = None, project: Optional[str] = None
) -> list[Finding]:
    """Every finding of the check for one target.

    Args:
        t: the probe of the target interpreter (sys.path walk, find_spec answers, .pth files).
        script_dirs: directories a training script may run from, which the probe never has on
            sys.path (the project directory, the --config file's directory).
        records: RECORD reader (one per run; tests pass their own).
        project: the project directory (among script_dirs): its shadows are reported as shadowed-module.
    """
    records = records or Records()
    stats = RecordStats()
    groups = projects(t)
    dup_infos, stale = two_dist_infos(t, groups, records)
    problems = (
        same_project_twice(t, groups, stale)
        + rival_distributions(t, groups, records)
        + shadowed_modules(t)
        + script_dir_shadows(t, groups, script_dirs, project)
        + stale_paths(t, records)
        + dup_infos
        + missing_files(t, records, stale, stats)
        + leftovers(t)
        + foreign_on_path(t, groups)
        + foreign_shebangs(t, groups)
    )
    if problems:
        # worst first, then grouped by kind: deterministic output for diffs and CI logs
        return sorted(problems, key=lambda f: (-f.status.rank, f.code or "", f.title))
    return [_healthy(t, groups, stats)]


def _healthy(t: TargetFacts, groups: Groups, stats: RecordStats) -> Finding:
    dirs = {e.get("abspath") for e in t.sys_path if e.get("is_dir")}
    n_projects = len(groups)
    checked = [
        f"{n_projects} projects in {len(dirs)} sys.path directories are each installed once",
        "no import package is owned by two projects",
        f"{sum(1 for s in specs(t).values() if s.get('found'))} probed modules load from their own distribution",
        f"no installed file is missing ({stats.files} files of {stats.dists} distributions checked: the "
        "training stack's __init__.py, native libraries and scripts from RECORD, every other package's "
        "top-level __init__.py or module)",
        "no dist-info lacks METADATA/RECORD, no '~' pip leftovers, no stale .pth or editable paths",
        f"python/pip/launchers on PATH do not resolve into another environment ({scripts_dir(t)})",
    ]
    return Finding.passed(
        f"one copy of each of the {n_projects} installed projects, none shadowed or broken",
        proved="; ".join(checked),
        evidence={
            "projects": n_projects,
            "sys_path_dirs": len(dirs),
            "record_files_checked": stats.files,
            "distributions_sampled": stats.dists,
        },
    )


class DuplicateInstallsCheck:
    id = "duplicate-installs"
    title = "Duplicate and broken installs"
    description = (
        "A package installed twice, rival distributions, shadowed modules, broken installs, "
        "console scripts of another environment"
    )
    order = 30  # place in reports: environment first, then stack, devices, editors, project

    def run(self, ctx: Context) -> list[Finding]:
        dirs = [str(ctx.project_dir)]
        if ctx.options.config_path is not None:
            dirs.append(os.path.dirname(os.path.abspath(ctx.options.config_path)))
        return evaluate(ctx.target, script_dirs=dirs, project=str(ctx.project_dir))
