"""Check: which interpreter is examined, whether it is the activated env, and PYTHONPATH/PYTHONHOME leaks."""

from __future__ import annotations

import os
from typing import Any, Mapping

from msdoctor.context import Context
from msdoctor.domain.stack import training_stack
from msdoctor.facts.target import TargetFacts
from msdoctor.model import Finding, Location


def _same(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return a == b


def _activation(t: TargetFacts) -> list[Finding]:
    """The shell activated one environment, the interpreter examined belongs to another."""
    out = []
    env = t.env
    conda_prefix = env.get("CONDA_PREFIX")
    if conda_prefix and not _same(conda_prefix, t.prefix) and not t.in_venv:
        name = env.get("CONDA_DEFAULT_ENV") or os.path.basename(conda_prefix)
        out.append(
            Finding.warn(
                f"conda env '{name}' is activated, but the interpreter examined belongs to {t.prefix}",
                detail=(
                    f"CONDA_PREFIX={conda_prefix} while sys.prefix={t.prefix}. Whatever you run as `python` in "
                    "this shell may not be the interpreter msdoctor examined, and packages you install with "
                    "`pip` land in the activated env."
                ),
                fix=f"examine the activated env with: msdoctor check --python {conda_prefix}",
                evidence={"CONDA_PREFIX": conda_prefix, "sys.prefix": t.prefix},
                code="conda-env-mismatch",
            )
        )
    venv = env.get("VIRTUAL_ENV")
    if venv and not _same(venv, t.prefix):
        out.append(
            Finding.warn(
                f"virtualenv {venv} is activated, but the interpreter examined is {t.executable}",
                detail=f"VIRTUAL_ENV={venv} while sys.prefix={t.prefix}: `python` in this shell is another interpreter.",
                fix=f"examine the activated env with: msdoctor check --python {venv}",
                evidence={"VIRTUAL_ENV": venv, "sys.prefix": t.prefix},
                code="venv-mismatch",
            )
        )
    return out


def _under(path: str, prefix: str) -> bool:
    real, pre = os.path.realpath(path), os.path.realpath(prefix)
    return real == pre or real.startswith(pre.rstrip(os.sep) + os.sep)


def _pythonpath(t: TargetFacts) -> list[Finding]:
    out = []
    if t.env.get("PYTHONHOME"):
        out.append(
            Finding.fail(
                "PYTHONHOME is set",
                detail=(
                    f"PYTHONHOME={t.env['PYTHONHOME']} makes every interpreter load its standard library from "
                    "there, which breaks venvs and conda envs in ways that look like missing modules."
                ),
                fix="unset PYTHONHOME (and remove it from ~/.bashrc or the job script)",
                evidence={"PYTHONHOME": t.env["PYTHONHOME"]},
                code="pythonhome",
            )
        )
    raw = t.env.get("PYTHONPATH", "")
    for entry in [e for e in raw.split(os.pathsep) if e]:
        foreign_site = ("site-packages" in entry or "dist-packages" in entry) and not _under(entry, t.prefix)
        if foreign_site:
            out.append(
                Finding.fail(
                    f"PYTHONPATH puts another environment's packages first: {entry}",
                    detail=(
                        "Entries on PYTHONPATH come before the environment's own site-packages, so packages "
                        "there (possibly another mindspore or numpy) shadow the ones installed in "
                        f"{t.prefix}."
                    ),
                    fix=f"remove {entry} from PYTHONPATH (check ~/.bashrc, the conda env's activate.d, the job script)",
                    evidence={"PYTHONPATH": raw, "entry": entry},
                    code="pythonpath-foreign-site",
                )
            )
        elif not os.path.exists(entry):
            out.append(
                Finding.warn(
                    f"PYTHONPATH names a directory that does not exist: {entry}",
                    detail="A stale entry is harmless until something is created there; it usually means an "
                    "environment script points at an old install.",
                    fix=f"remove {entry} from PYTHONPATH",
                    evidence={"PYTHONPATH": raw, "entry": entry},
                    code="pythonpath-missing",
                )
            )
    return out


def _user_site(t: TargetFacts) -> list[Finding]:
    us = t.user_site
    path = us.get("path")
    if not (us.get("enabled") and path and us.get("exists")):
        return []
    leaked = sorted({d.name for d in t.distributions if d.location == path and d.key in training_stack()})
    if not leaked:
        return []
    return [
        Finding.warn(
            f"the user site {path} holds {', '.join(leaked)}, importable from this environment too",
            detail=(
                "User-site packages (pip install --user) are on sys.path of every interpreter of this Python "
                "version, including conda envs and venvs that allow it, and can shadow or mix with the env's own."
            ),
            fix="set PYTHONNOUSERSITE=1 for runs of this env, or uninstall them: "
            + " ; ".join(f"{t.python_cmd()} -m pip uninstall -y {n}" for n in leaked),
            location=Location(path),
            evidence={"user_site": path, "packages": leaked},
            code="user-site-stack",
        )
    ]


def evaluate(t: TargetFacts) -> list[Finding]:
    problems = _activation(t) + _pythonpath(t) + _user_site(t)
    kind = t.env_kind + (f" '{t.env_name}'" if t.env_name else "")
    identity = (
        f"{t.executable} is {t.raw.get('implementation', 'python')} {t.python_version} ({kind}, sys.prefix {t.prefix})"
    )
    evidence: Mapping[str, Any] = {
        "executable": t.executable,
        "python_version": t.python_version,
        "env_kind": t.env_kind,
        "env_name": t.env_name,
        "prefix": t.prefix,
        "base_prefix": t.base_prefix,
        "user_site_enabled": bool(t.user_site.get("enabled")),
        "distributions": len(list(t.winners())),
    }
    checked = [
        "the activated conda env / virtualenv is this interpreter's",
        "PYTHONHOME unset",
        "PYTHONPATH adds no foreign site-packages or stale entries",
        "the user site holds no training-stack packages",
    ]
    if not problems:
        return [Finding.passed(identity, proved="; ".join(checked), evidence=evidence)]
    info = Finding.passed(identity, proved=f"probed {t.executable} successfully", evidence=evidence)
    return [info] + problems


class PythonEnvCheck:
    id = "python-env"
    title = "Python environment"
    description = "Which interpreter is examined, whether it is the activated env, PYTHONPATH/PYTHONHOME leaks"
    order = 10  # place in reports: environment first, then stack, devices, editors, project

    def run(self, ctx: Context) -> list[Finding]:
        return evaluate(ctx.target)
