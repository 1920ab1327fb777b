"""duplicate-installs, part 5: console scripts (msrun, python, pip) that belong to another environment."""

from __future__ import annotations

import os
import re
from typing import Optional

from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Finding, Location, Status

from msdoctor.checks.duplicate_installs.fixes import reinstall
from msdoctor.checks.duplicate_installs.scan import Groups, real, status_for, under

#: Interpreter and installer names a shell resolves through PATH.
BASE_SCRIPTS = ("python", "python3", "pip", "pip3")
#: Projects whose console scripts start training (msrun launches the workers with its own interpreter).
LAUNCHER_PROJECTS = ("mindspore", "mindformers", "mindnlp")
#: pip/distlib's launcher for interpreter paths too long for a shebang: `'''exec' "/path/python" "$0" "$@"`.
_SH_EXEC = re.compile(r"'''exec' +\"?([^\"\s]+)")


def scripts_dir(t: TargetFacts) -> str:
    return (t.raw.get("scheme") or {}).get("scripts") or os.path.dirname(t.executable)


def console_scripts(d: Distribution) -> list[str]:
    """Names under [console_scripts] in a dist-info's entry_points.txt (packaging spec, entry points)."""
    try:
        with open(os.path.join(d.path, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    out, section = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif section == "console_scripts" and "=" in line and not line.startswith(("#", ";")):
            out.append(line.split("=", 1)[0].strip())
    return out


def launcher_scripts(groups: Groups) -> dict[str, Distribution]:
    out: dict[str, Distribution] = {}
    for name in LAUNCHER_PROJECTS:
        for d in groups.get(name, [])[:1]:
            for script in console_scripts(d):
                out.setdefault(script, d)
    return out


def which(name: str, dirs: list[str]) -> Optional[str]:
    for d in dirs:
        cand = os.path.join(d, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def foreign_on_path(t: TargetFacts, groups: Groups) -> list[Finding]:
    """python/pip/msrun on the target's PATH that resolve outside the target environment."""
    dirs = [d for d in (t.env.get("PATH") or "").split(os.pathsep) if d]
    bindir = scripts_dir(t)
    activated = any(real(d) == real(bindir) for d in dirs)
    launchers = launcher_scripts(groups)
    out = []
    for name in list(BASE_SCRIPTS) + sorted(launchers):
        found = which(name, dirs)
        if found is None or under(os.path.dirname(found), t.prefix):
            continue
        own = os.path.join(bindir, name)
        launcher = name in launchers
        if not activated and not launcher:
            continue  # environment not on PATH: the shell's python is another one by design (see python-env)
        if activated:
            status = status_for(launchers[name].name) if launcher else Status.WARN
            why = f"{bindir} is on PATH, but an earlier directory provides `{name}`"
        else:
            status = Status.WARN
            why = f"this environment is not on PATH, and `{name}` there belongs to another installation"
        use = f"{t.python_cmd()} -m pip" if name.startswith("pip") else own if os.path.exists(own) else None
        fix = f"put {bindir} first on PATH (export PATH={bindir}:$PATH)"
        if use:
            fix += f", or call it by its path: {use}"
        elif launcher:
            fix += f"; {bindir} has no {name}: {reinstall(t, launchers[name])}"
        out.append(
            Finding(
                status,
                f"`{name}` on PATH is {found}, not this environment's",
                detail=(
                    f"{why}, so typing `{name}` runs another environment"
                    + (
                        " and starts the training workers with its interpreter and its MindSpore."
                        if launcher
                        else "; packages installed with it land in that environment."
                    )
                ),
                fix=fix,
                location=Location(found),
                evidence={"command": name, "resolves_to": found, "expected_dir": bindir, "env_on_path": activated},
                code="foreign-console-script",
            )
        )
    return out


def shebang_interpreter(path: str) -> Optional[str]:
    """The interpreter a script's first line names (None for binaries and `/usr/bin/env` scripts)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024).decode("utf-8", "replace")
    except OSError:
        return None
    if not head.startswith("#!"):
        return None
    first = head[2:].splitlines()[0].strip() if head[2:] else ""
    if first.startswith("/bin/sh"):
        m = _SH_EXEC.search(head)
        return m.group(1) if m else None
    prog = first.split()[0] if first.split() else ""
    return None if not prog or os.path.basename(prog) == "env" else prog


def foreign_shebangs(t: TargetFacts, groups: Groups) -> list[Finding]:
    """Scripts in the environment's bin whose shebang names another interpreter (env copied or moved)."""
    bindir = scripts_dir(t)
    launchers = launcher_scripts(groups)
    out = []
    for name in ["pip", "pip3"] + sorted(launchers):
        path = os.path.join(bindir, name)
        interp = shebang_interpreter(path) if os.path.isfile(path) else None
        if interp is None or interp == t.executable or real(os.path.dirname(interp)) == real(bindir):
            continue
        exists = os.path.exists(interp)
        d = launchers.get(name) or next(iter(groups.get("pip", [])), None)
        fix = reinstall(t, d) if d is not None else f"{t.python_cmd()} -m pip install --force-reinstall pip"
        out.append(
            Finding(
                status_for(d.name) if d is not None and name in launchers else Status.WARN,
                f"{path} runs {interp}"
                + (", which does not exist" if not exists else ", another environment's python"),
                detail=(
                    "Console scripts hard-code the interpreter that installed them. This environment was copied, "
                    f"moved or renamed, so `{name}` "
                    + (
                        "fails with 'bad interpreter'."
                        if not exists
                        else f"runs {interp} and that environment's packages."
                    )
                ),
                fix=fix + " (reinstalling rewrites the script for this interpreter)",
                location=Location(path),
                evidence={"script": path, "interpreter": interp, "interpreter_exists": exists},
                code="foreign-shebang",
            )
        )
    return out
