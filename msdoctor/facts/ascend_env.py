"""What CANN's set_env.sh sets, compared with the environment of the TARGET interpreter's process.

``ASCEND_ENV`` -> :class:`AscendEnv`: the variables set_env.sh exports, as the target process saw
them (``ctx.target.env``), with every gap listed and the set_env.sh scripts found on this host.
Fixed system paths go through ``host_path`` so tests can point MSDOCTOR_SYSROOT at a fixture tree.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Mapping, Optional

from msdoctor.context import FactSpec
from msdoctor.facts.sysroot import host_path

#: where CANN puts set_env.sh: toolkit, nnae, CANN >= 8.5 layout, non-root install
SET_ENV_CANDIDATES = (
    "/usr/local/Ascend/ascend-toolkit/set_env.sh",
    "/usr/local/Ascend/cann/set_env.sh",
    "/usr/local/Ascend/nnae/set_env.sh",
)
DRIVER_DIR = "/usr/local/Ascend/driver"
TBE_IMPL = "opp/built-in/op_impl/ai_core/tbe"


@dataclass
class EnvGap:
    """One thing set_env.sh would have set that the target's environment lacks."""

    variable: str
    problem: str  # what is wrong, one line
    why: str  # what breaks because of it
    severity: str = "fail"  # "fail": MindSpore cannot use Ascend; "warn": a feature or check degrades


@dataclass
class AscendEnv:
    """The Ascend environment of the target process.

    Attributes:
        home: ASCEND_HOME_PATH (else ASCEND_TOOLKIT_HOME), None when neither is set.
        variables: the set_env.sh variables and their values (unset ones absent).
        gaps: what is missing or wrong, most important first.
        ge_runner: host path of libge_runner.so found through LD_LIBRARY_PATH, or None.
        set_env_scripts: set_env.sh files that exist on the host (the fix sources one).
        driver_dir: the driver directory on the host, or None when absent.
        toolkit_dirs: CANN installs found on the host (ascend-toolkit/latest, nnae/latest, cann-*).
    """

    home: Optional[str]
    variables: dict[str, str]
    gaps: list[EnvGap]
    ge_runner: Optional[str]
    set_env_scripts: list[str]
    driver_dir: Optional[str]
    toolkit_dirs: list[str]

    @property
    def sourced(self) -> bool:
        """set_env.sh (or an equivalent) ran in the shell the target was started from."""
        return self.home is not None

    @property
    def installed(self) -> bool:
        """Some CANN is installed on the host (whether or not its environment is set)."""
        return bool(self.set_env_scripts or self.toolkit_dirs)

    def source_command(self) -> str:
        script = self.set_env_scripts[0] if self.set_env_scripts else SET_ENV_CANDIDATES[0]
        return f"source {script}"


SET_ENV_VARIABLES = (
    "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME",
    "ASCEND_OPP_PATH",
    "ASCEND_AICPU_PATH",
    "TOOLCHAIN_HOME",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PATH",
)


def _entries(value: Optional[str]) -> list[str]:
    return [e for e in (value or "").split(os.pathsep) if e]


def _norm(p: str) -> str:
    return os.path.normpath(p)


def _find_on(dirs: list[str], name: str, environ: Mapping[str, str]) -> Optional[str]:
    for d in dirs:
        cand = host_path(environ, os.path.join(d, name)) if os.path.isabs(d) else None
        if cand is not None and cand.exists():
            return os.path.join(d, name)
    return None


def _host_scripts(environ: Mapping[str, str]) -> list[str]:
    out = [p for p in SET_ENV_CANDIDATES if host_path(environ, p).is_file()]
    for found in sorted(glob.glob(str(host_path(environ, "/usr/local/Ascend/cann-*/set_env.sh")))):
        root = str(host_path(environ, "/"))
        out.append("/" + os.path.relpath(found, root) if root != "/" else found)
    home = environ.get("HOME")
    if home:
        user = os.path.join(home, "Ascend", "ascend-toolkit", "set_env.sh")
        if os.path.isfile(user):
            out.append(user)
    return out


def _host_toolkits(environ: Mapping[str, str]) -> list[str]:
    out = []
    for p in ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/nnae/latest", "/usr/local/Ascend/cann"):
        if host_path(environ, p).is_dir():
            out.append(p)
    root = host_path(environ, "/")
    for found in sorted(glob.glob(str(host_path(environ, "/usr/local/Ascend/cann-*")))):
        if os.path.isdir(found):
            out.append("/" + os.path.relpath(found, root) if str(root) != "/" else found)
    return out


def ascend_env(env: Mapping[str, str], environ: Mapping[str, str]) -> AscendEnv:
    """Compare the target's environment ``env`` with what set_env.sh sets, and what mindspore/run_check/_check_version.py reads.

    ``environ`` is msdoctor's own environment, used only to locate host paths
    (MSDOCTOR_SYSROOT in tests) and HOME.
    """
    variables = {k: env[k] for k in SET_ENV_VARIABLES if env.get(k)}
    home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME") or None
    ld = _entries(env.get("LD_LIBRARY_PATH"))
    gaps = (
        _home_gaps(home, environ)
        + _opp_gaps(env.get("ASCEND_OPP_PATH"))
        + _library_path_gaps(home, ld)
        + (_toolkit_path_gaps(home, env) if home is not None else [])
    )
    driver = host_path(environ, DRIVER_DIR)
    return AscendEnv(
        home=home,
        variables=variables,
        gaps=gaps,
        ge_runner=_find_on(ld, "libge_runner.so", environ),
        set_env_scripts=_host_scripts(environ),
        driver_dir=DRIVER_DIR if driver.is_dir() else None,
        toolkit_dirs=_host_toolkits(environ),
    )


def _home_gaps(home: Optional[str], environ: Mapping[str, str]) -> list[EnvGap]:
    """ASCEND_HOME_PATH (or ASCEND_TOOLKIT_HOME) is set and names a directory on the host."""
    if home is None:
        return [
            EnvGap(
                "ASCEND_HOME_PATH",
                "ASCEND_HOME_PATH is not set: CANN's set_env.sh was not sourced",
                "MindSpore (>= 2.7.2) finds CANN and checks its version through ASCEND_HOME_PATH; without the "
                "variables set_env.sh exports, the Ascend plugin cannot load and MindSpore runs on CPU",
            )
        ]
    if not host_path(environ, home).is_dir():
        return [
            EnvGap(
                "ASCEND_HOME_PATH",
                f"ASCEND_HOME_PATH={home} does not exist",
                "the CANN toolkit it names is gone (uninstalled, or a container without the mount)",
            )
        ]
    return []


def _opp_gaps(opp: Optional[str]) -> list[EnvGap]:
    """ASCEND_OPP_PATH is set, to an opp directory."""
    if not opp:
        return [
            EnvGap(
                "ASCEND_OPP_PATH",
                "ASCEND_OPP_PATH is not set",
                "operators are loaded from ASCEND_OPP_PATH; MindSpore 2.7.0-2.7.1 also locate CANN's "
                "version file through it (mindspore/run_check/_check_version.py)",
            )
        ]
    if "/opp" not in opp:
        return [
            EnvGap(
                "ASCEND_OPP_PATH",
                f"ASCEND_OPP_PATH={opp} does not point at an opp directory",
                "MindSpore's environment check expects .../opp here (mindspore/run_check/_check_version.py)",
                severity="warn",
            )
        ]
    return []


def _library_path_gaps(home: Optional[str], ld: list[str]) -> list[EnvGap]:
    """LD_LIBRARY_PATH has the toolkit's lib64 (when a toolkit is named) and the driver's lib64."""
    gaps: list[EnvGap] = []
    if home is not None:
        lib64 = _norm(os.path.join(home, "lib64"))
        if lib64 not in {_norm(e) for e in ld}:
            gaps.append(
                EnvGap(
                    "LD_LIBRARY_PATH",
                    f"LD_LIBRARY_PATH lacks the toolkit's {lib64}",
                    'libmindspore_ascend.so needs libge_runner.so from there: "libge_runner.so: cannot open '
                    'shared object file" and MindSpore falls back to CPU (https://github.com/mindspore-lab/mindyolo/issues/273)',
                )
            )
    if not any(_norm(e).endswith("/driver/lib64") or "/driver/lib64/" in _norm(e) + "/" for e in ld):
        gaps.append(
            EnvGap(
                "LD_LIBRARY_PATH",
                f"LD_LIBRARY_PATH lacks the driver's {DRIVER_DIR}/lib64",
                "the runtime loads the driver's libraries (libascend_hal.so) from there",
            )
        )
    return gaps


def _toolkit_path_gaps(home: str, env: Mapping[str, str]) -> list[EnvGap]:
    """PYTHONPATH has the TBE operator implementations and PATH the ccec compiler (warnings)."""
    gaps: list[EnvGap] = []
    if not any(e.rstrip("/").endswith(TBE_IMPL) for e in _entries(env.get("PYTHONPATH"))):
        gaps.append(
            EnvGap(
                "PYTHONPATH",
                f"PYTHONPATH lacks {os.path.join(home, TBE_IMPL)}",
                "operator compilation imports the TBE implementations from there; MindSpore warns about it "
                "(mindspore/run_check/_check_version.py)",
                severity="warn",
            )
        )
    if not any("ccec_compiler/bin" in e for e in _entries(env.get("PATH"))):
        gaps.append(
            EnvGap(
                "PATH",
                "PATH lacks the toolkit's compiler/ccec_compiler/bin",
                "kernel compilation runs ccec from PATH (set_env.sh adds it)",
                severity="warn",
            )
        )
    return gaps


ASCEND_ENV: FactSpec[AscendEnv] = FactSpec(
    "ascend-env",
    lambda ctx: ascend_env(ctx.target.env, ctx.environ),
    description="CANN environment of the target process",
)
