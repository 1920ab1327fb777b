"""Helpers of the duplicate-installs check: where a copy lives, which interpreter manages it, the fix commands."""

from __future__ import annotations

import os
import re
from typing import Iterable, Optional

from msdoctor.facts.target import Distribution, TargetFacts

from msdoctor.checks.duplicate_installs.scan import q, real, under


def user_site(t: TargetFacts) -> Optional[str]:
    us = t.user_site
    return us.get("path") if us.get("enabled") else None


def pythonpath(t: TargetFacts) -> list[str]:
    return [e for e in (t.env.get("PYTHONPATH") or "").split(os.pathsep) if e]


def pth_adding(t: TargetFacts, directory: str) -> Optional[str]:
    """The .pth file that put ``directory`` on sys.path, if one did."""
    for pth in t.pth_files:
        for line in pth.get("lines") or []:
            if line.get("kind") == "path" and real(line.get("resolved", "")) == real(directory):
                return pth["path"]
    return None


def where(t: TargetFacts, location: str) -> str:
    """A few words saying which kind of place a sys.path directory is."""
    if t.raw.get("cwd") and real(location) == real(t.raw["cwd"]):
        return "the current (project) directory"
    if user_site(t) and real(location) == real(user_site(t) or ""):
        return "the user site (pip install --user)"
    if any(real(location) == real(p) for p in pythonpath(t)):
        return "a PYTHONPATH directory"
    pth = pth_adding(t, location)
    if pth:
        return f"a directory added by {pth}"
    if under(location, t.prefix):
        return "this environment"
    return "outside this environment"


def in_env(t: TargetFacts, location: str) -> bool:
    return under(location, t.prefix)


def pip_can_remove(t: TargetFacts, location: str) -> bool:
    # pip's is_local(): inside a virtualenv pip only removes files under sys.prefix and logs
    # "Not uninstalling X at P, outside environment E" otherwise (pypa/pip
    # src/pip/_internal/req/req_uninstall.py UninstallPathSet.from_dist, utils/misc.py is_local)
    return not t.in_venv or in_env(t, location)


def base_python(t: TargetFacts) -> Optional[str]:
    """The interpreter a venv was made from (it owns the user site of this Python version)."""
    major_minor = ".".join(t.python_version.split(".")[:2])
    for name in (f"python{major_minor}", "python3", "python"):
        cand = os.path.join(t.base_prefix, "bin", name)
        if os.path.isfile(cand):
            return cand
    return None


_SITE_DIR = re.compile(r"^(?P<prefix>.+)/lib(?:64)?/python(?P<ver>\d+\.\d+)/(?:site|dist)-packages/?$")


def owner_python(t: TargetFacts, location: str) -> Optional[str]:
    """The interpreter whose pip manages ``location`` (None when no interpreter does)."""
    if in_env(t, location):
        return t.python_cmd()
    us = user_site(t)
    if us and real(location) == real(us):
        return base_python(t) if t.in_venv else t.python_cmd()
    m = _SITE_DIR.match(location)
    if m:
        for name in (f"python{m['ver']}", "python3", "python"):
            cand = os.path.join(m["prefix"], "bin", name)
            if os.path.isfile(cand):
                return cand
    return None


def installed_paths(d: Distribution) -> list[str]:
    """The dist-info directory and the top-level modules of a copy that exist on disk."""
    out = [d.path]
    for name in d.top_level or []:
        for cand in (os.path.join(d.location, name), os.path.join(d.location, name + ".py")):
            if os.path.exists(cand):
                out.append(cand)
    return out


def rm_command(paths: Iterable[str]) -> str:
    """An `rm -rf` for the user to run (msdoctor never deletes anything itself)."""
    return "rm -rf " + " ".join(q(p) for p in paths)


def removal_fix(t: TargetFacts, d: Distribution, first_in_view: bool) -> str:
    """The command that removes copy ``d``, for the interpreter that manages it.

    first_in_view: ``d`` is the first copy of its project on the target's sys.path
    (pip acts on the first copy it finds; pypa/pip metadata/importlib/_envs.py).
    """
    loc = d.location
    if any(real(loc) == real(p) for p in pythonpath(t)):
        return f"remove {loc} from PYTHONPATH, or delete this copy: {rm_command(installed_paths(d))}"
    us = user_site(t)
    owner = owner_python(t, loc)
    if us and real(loc) == real(us) and owner:
        env = f"PYTHONUSERBASE={q(t.env['PYTHONUSERBASE'])} " if t.env.get("PYTHONUSERBASE") else ""
        return f"{env}{owner} -m pip uninstall -y {d.name}"
    if owner and (owner != t.python_cmd() or (first_in_view and pip_can_remove(t, loc))):
        uninstall = f"{owner} -m pip uninstall -y {d.name}"
    else:
        uninstall = rm_command(installed_paths(d))
    pth = pth_adding(t, loc)
    if pth:
        return (
            f"delete the line naming {loc} from {pth} (it adds that directory here), or remove that copy: {uninstall}"
        )
    cfg = t.raw.get("pyvenv_cfg") or {}
    if t.in_venv and under(loc, t.base_prefix) and str(cfg.get("include-system-site-packages")).lower() == "true":
        return (
            f"set include-system-site-packages = false in {os.path.join(t.prefix, 'pyvenv.cfg')} (the venv "
            f"then stops seeing the base interpreter's packages), or remove the base copy: {uninstall}"
        )
    return uninstall


def reinstall(t: TargetFacts, d: Distribution) -> str:
    py = owner_python(t, d.location) or t.python_cmd()
    pin = f"=={d.version}" if d.version else ""
    return f"{py} -m pip install --force-reinstall --no-deps {d.name}{pin}"
