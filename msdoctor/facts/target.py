"""The target interpreter: resolving --python / --conda-env, and the probe's facts."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from msdoctor.context import Context, FactSpec, FactUnavailable
from msdoctor.model import Target
from msdoctor.probe import ProbeError, default_env, run_scripts

PROBE_SCHEMA = 1


class TargetError(Exception):
    """--python / --conda-env does not lead to an interpreter (a usage error)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


_CANDIDATES = ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe")


def resolve_python(value: Optional[str]) -> str:
    """Turn --python's value into the absolute path of an interpreter.

    Accepts an interpreter path, a command on PATH (``python3.11``), or a
    venv / conda env directory (its ``bin/python`` is used).

    Raises:
        TargetError: the path does not exist, or is a directory without an interpreter.
    """
    if value is None:
        return sys.executable
    path = Path(value).expanduser()
    if not path.exists() and os.sep not in value:
        found = shutil.which(value)
        if found:
            return os.path.abspath(found)
    if not path.exists():
        raise TargetError(
            f"--python {value}: no such file or directory",
            "pass the path of a Python interpreter, e.g. --python ~/miniconda3/envs/ms/bin/python, "
            "or a venv / conda env directory",
        )
    if path.is_dir():
        for rel in _CANDIDATES:
            cand = path / rel
            if cand.is_file() and os.access(cand, os.X_OK):
                return os.path.abspath(cand)
        raise TargetError(
            f"--python {value}: the directory holds no Python interpreter (looked for " + ", ".join(_CANDIDATES) + ")",
            "pass the environment's root directory (the one with bin/python) or the interpreter itself",
        )
    if not os.access(path, os.X_OK):
        raise TargetError(
            f"--python {value}: the file is not executable",
            f"pass an interpreter; if this is one, make it executable: chmod +x {path}",
        )
    return os.path.abspath(path)


def conda_env_python(name: str, environ: Mapping[str, str]) -> str:
    """The interpreter of conda environment ``name`` (searched without running conda)."""
    roots: list[Path] = []
    for key in ("CONDA_EXE", "CONDA_PYTHON_EXE"):
        exe = environ.get(key)
        if exe:
            roots.append(Path(exe).resolve().parent.parent)
    prefix = environ.get("CONDA_PREFIX")
    if prefix:
        p = Path(prefix)
        roots.append(p.parent.parent if p.parent.name == "envs" else p)
    home = Path(environ.get("HOME", str(Path.home())))
    for d in ("miniconda3", "anaconda3", "miniforge3", "mambaforge", ".conda", "opt/conda"):
        roots.append(home / d)
    roots.append(Path("/opt/conda"))
    seen: set[Path] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        env_dir = root if name == "base" else root / "envs" / name
        python = env_dir / "bin" / "python"
        if python.is_file():
            return str(python)
    raise TargetError(
        f"--conda-env {name}: no conda environment of that name was found "
        f"(looked under {', '.join(str(r) for r in list(seen)[:4])} ...)",
        "run `conda env list` to see the names, or pass --python /path/to/env/bin/python",
    )


@dataclass
class Distribution:
    """One installed distribution as the probe saw it (one dist-info on one sys.path entry)."""

    name: str
    version: Optional[str]
    path: str  # the .dist-info / .egg-info directory
    location: str  # the sys.path entry it was found under
    kind: str
    files: list[str]
    requires: list[str]
    requires_python: Optional[str]
    top_level: Optional[list[str]]
    installer: Optional[str]
    direct_url: Optional[str]
    editable: bool

    @property
    def key(self) -> str:
        from packaging.utils import canonicalize_name

        return canonicalize_name(self.name)


@dataclass
class TargetFacts:
    """What the probe found about the target interpreter (schema: PROBE_SCHEMA)."""

    raw: dict[str, Any]
    distributions: list[Distribution] = field(default_factory=list)

    @classmethod
    def from_probe(cls, data: Mapping[str, Any]) -> "TargetFacts":
        if data.get("probe_schema") != PROBE_SCHEMA:
            raise ValueError(f"probe schema {data.get('probe_schema')!r}, expected {PROBE_SCHEMA}")
        dists = []
        for d in data.get("distributions", []):
            if not d.get("name"):
                continue
            dists.append(
                Distribution(
                    name=d["name"],
                    version=d.get("version"),
                    path=d["path"],
                    location=d["location"],
                    kind=d.get("kind", "dist-info"),
                    files=list(d.get("files") or []),
                    requires=list(d.get("requires") or []),
                    requires_python=d.get("requires_python"),
                    top_level=d.get("top_level"),
                    installer=d.get("installer"),
                    direct_url=d.get("direct_url"),
                    editable=bool(d.get("editable")),
                )
            )
        return cls(raw=dict(data), distributions=dists)

    # -- identity ---------------------------------------------------------------
    @property
    def executable(self) -> str:
        return self.raw["executable"]

    @property
    def python_version(self) -> str:
        return ".".join(str(x) for x in self.raw["version"])

    @property
    def version_info(self) -> tuple[int, ...]:
        return tuple(self.raw["version"])

    @property
    def prefix(self) -> str:
        return self.raw["prefix"]

    @property
    def base_prefix(self) -> str:
        return self.raw["base_prefix"]

    @property
    def in_venv(self) -> bool:
        return bool(self.raw.get("in_venv"))

    @property
    def conda(self) -> Optional[Mapping[str, Any]]:
        return self.raw.get("conda")

    @property
    def env_kind(self) -> str:
        if self.conda:
            return "conda"
        if self.in_venv:
            return "venv"
        return "system"

    @property
    def env_name(self) -> Optional[str]:
        if self.conda:
            return self.conda.get("name")
        if self.in_venv:
            return os.path.basename(self.prefix.rstrip(os.sep))
        return None

    @property
    def env(self) -> Mapping[str, str]:
        """Relevant environment variables as the target process saw them."""
        return self.raw.get("env", {})

    @property
    def markers(self) -> Mapping[str, str]:
        return self.raw.get("markers", {})

    @property
    def sys_path(self) -> list[Mapping[str, Any]]:
        return self.raw.get("sys_path", [])

    @property
    def find_spec(self) -> Mapping[str, Mapping[str, Any]]:
        return self.raw.get("find_spec", {})

    @property
    def user_site(self) -> Mapping[str, Any]:
        return self.raw.get("user_site", {})

    @property
    def pth_files(self) -> list[Mapping[str, Any]]:
        return self.raw.get("pth_files", [])

    # -- distributions ------------------------------------------------------------
    def all_named(self, name: str) -> list[Distribution]:
        """Every copy of a distribution on sys.path, in import-precedence order."""
        from packaging.utils import canonicalize_name

        key = canonicalize_name(name)
        return [d for d in self.distributions if d.key == key]

    def dist(self, name: str) -> Optional[Distribution]:
        """The copy that wins (first on sys.path), as importlib.metadata would pick it."""
        found = self.all_named(name)
        return found[0] if found else None

    def version_of(self, name: str) -> Optional[str]:
        d = self.dist(name)
        return d.version if d else None

    def winners(self) -> Iterator[Distribution]:
        """One distribution per project: the first on sys.path."""
        seen: set[str] = set()
        for d in self.distributions:
            if d.key not in seen:
                seen.add(d.key)
                yield d

    def module_origin(self, module: str) -> Optional[str]:
        spec = self.find_spec.get(module) or {}
        if not spec.get("found"):
            return None
        locs = spec.get("locations") or []
        return spec.get("origin") or (locs[0] if locs else None)

    def python_cmd(self) -> str:
        """How fixes should spell the target interpreter."""
        return self.executable

    def to_target(self) -> Target:
        return Target(
            executable=self.executable,
            python_version=self.python_version,
            implementation=self.raw.get("implementation"),
            prefix=self.prefix,
            env_kind=self.env_kind,
            env_name=self.env_name,
            platform="{system}-{machine}".format(**self.raw.get("platform", {"system": "?", "machine": "?"})),
        )


class UnsupportedTarget(FactUnavailable):
    """The target is older than Python 3.7: msdoctor says so once (exit 2) instead of in every check."""


def _compute_target(ctx: Context) -> TargetFacts:
    from msdoctor.facts.interpreters import INTERPRETERS

    python = ctx.options.python or sys.executable
    # the interpreter probe of the target (with its Jupyter paths, for kernel-mismatch and fix-kernel) runs in
    # the same start: a second start of an interpreter with a big site-packages costs 50-100 ms of CPU
    probes = ctx.get(INTERPRETERS)
    claimed = probes.claim(python, jupyter=True)
    interp: Any = "the target probe did not finish"
    try:
        (data, interp), _ = run_scripts(
            python,
            ("target_probe.py", "interp_probe.py"),
            timeout=ctx.options.probe_timeout_s,
            env=default_env(ctx.environ),
            args={"jupyter": True},
        )
        return TargetFacts.from_probe(data)
    except ProbeError as exc:
        interp = exc.message
        if exc.unsupported:
            raise UnsupportedTarget(f"{python}: {exc.message}", exc.fix) from None
        raise FactUnavailable(f"could not probe the target interpreter: {exc.message}", exc.fix) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise FactUnavailable(
            f"the probe of {python} returned data msdoctor does not understand ({exc})",
            "report this with `msdoctor report` attached",
        ) from None
    finally:
        if claimed:
            probes.fulfil(python, _interp_info(python, interp), jupyter=True)


def _interp_info(python: str, interp: Any) -> Any:
    """The InterpInfo of the target from its part of the combined probe: a failed one when the whole probe
    failed (``interp`` says why); None when only that part failed (then it runs on its own)."""
    from msdoctor.facts.interpreters import InterpInfo

    if isinstance(interp, str):
        return InterpInfo(python, ok=False, error=interp)
    if not isinstance(interp, dict):
        return None
    try:
        return InterpInfo.from_json(python, interp)
    except (TypeError, ValueError, AttributeError):
        return None


#: The probe of the target interpreter. Every check that asks about the target uses it.
TARGET: FactSpec[TargetFacts] = FactSpec("target", _compute_target, description="target interpreter probe")
