"""CANN, Ascend driver and firmware facts, read from the files an Ascend install leaves on disk.

Nothing is executed (``npu-smi`` fails inside many containers:
https://github.com/vllm-project/vllm-ascend/issues/2698): every fact comes from the files an install
leaves, in the formats the fixtures under tests/data/ reproduce (docs/sources.md):
``driver/version.info`` and ``firmware/version.info``, ``/etc/ascend_install.info``,
``<toolkit>/<arch>-linux/ascend_toolkit_install.info``, ``<toolkit>/version.cfg`` and the
per-component ``compiler|opp|runtime|toolkit/version.info``.

Where installs are looked for: the variables CANN's ``set_env.sh`` exports (``ASCEND_HOME_PATH``,
``ASCEND_TOOLKIT_HOME``, ``ASCEND_OPP_PATH``), then the default layout under
``host_path(environ, "/usr/local/Ascend")``: ``ascend-toolkit/latest``, ``nnae/latest``, the CANN >= 8.5
``cann`` link and ``cann-<ver>`` directories. Symlinked paths to one directory are one install.

API (other checks may read it)::

    CANN = FactSpec("cann", ...)  -> CannFacts
    CannFacts.installs   tuple[CannInstall, ...]  every install found, env-selected first
    CannFacts.active     CannInstall | None       the install the environment selects
                                                  (ASCEND_HOME_PATH > ASCEND_TOOLKIT_HOME > ASCEND_OPP_PATH)
    CannFacts.default    CannInstall | None       what sourcing the default set_env.sh would select
    CannFacts.driver     DriverInfo | None        driver/version.info (version, innerversion C-number, ...)
    CannFacts.firmware   FirmwareInfo | None      firmware/version.info
    CannFacts.compiler_reads  {"ASCEND_HOME_PATH"|"ASCEND_OPP_PATH": CompilerRead}: the compiler/version.info
                         MindSpore >= 2.7.2 / 2.7.0-2.7.1 would read, and the Version= it finds there
    CannFacts.env        the ASCEND_* variables as msdoctor saw them
    CannFacts.env_problems   variables that point at nothing
    CannFacts.present    any Ascend software at all
    CannInstall: root, real_root, found_via, flavour ("toolkit"|"nnae"|"nnrt"|"unknown"), commercial
                 ("8.2.RC1"), internal ("8.2.0.0.201"), internal_prefix ("8.2"), innerversion,
                 compatible (C-number ranges), arch, opp_kernel, files (fact -> file it came from)
    read_cann(environ, machine=None) -> CannFacts   (pure function of the environment and the files)
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from msdoctor.context import Context, FactSpec
from msdoctor.facts.sysroot import host_path

ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME")
#: default entry points under /usr/local/Ascend, in the order set_env.sh users meet them
DEFAULT_ENTRIES = ("ascend-toolkit/latest", "cann", "nnae/latest", "nnrt/latest")


# -- file formats -------------------------------------------------------------------------------
def parse_kv(text: str) -> dict[str, str]:
    """``key=value`` lines (version.info, *_install.info); quotes around values dropped, first key wins."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        out.setdefault(key.strip(), value.strip().strip('"').strip("'"))
    return out


def first_version_line(text: str) -> Optional[str]:
    """The value of the first line starting with ``Version=``, read exactly as mindspore/run_check/_check_version.py does."""
    for line in text.splitlines():
        if line.startswith("Version="):
            return line.split("=", 1)[1].strip()
    return None


def parse_version_cfg(text: str) -> dict[str, list[tuple[str, str]]]:
    """version.cfg: ``<component>_<state>_version=[internal:commercial][...]`` -> {key: [(internal, commercial)]}."""
    out: dict[str, list[tuple[str, str]]] = {}
    for key, value in parse_kv(text).items():
        pairs = re.findall(r"\[([^:\]]+):([^\]]+)\]", value)
        if pairs:
            out[key] = [(a.strip(), b.strip()) for a, b in pairs]
    return out


def c_number(innerversion: Optional[str]) -> Optional[int]:
    """V100R001C21SPC002B220 -> 21."""
    m = re.search(r"R\d+C(\d+)", innerversion or "")
    return int(m.group(1)) if m else None


def parse_c_ranges(text: Optional[str]) -> tuple[tuple[int, int], ...]:
    """``[V100R001C15],[V100R001C18]`` or ``[V100R001C13,V100R001C19],[V100R001C30]`` -> ((15,15),(18,18)) / ((13,19),(30,30))."""
    out = []
    for group in re.findall(r"\[([^\]]*)\]", text or ""):
        nums = [n for n in (c_number(x.strip()) for x in group.split(",")) if n is not None]
        if nums:
            out.append((nums[0], nums[-1]))
    return tuple(out)


def _ints(v: str) -> tuple[int, ...]:
    out = []
    for part in v.strip().split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
    return tuple(out)


def parse_ranges(text: Optional[str]) -> tuple[tuple[str, str], ...]:
    """``[7.0.0,7.7.99]`` or ``[23.0.0,23.0.0.],[24.0,24.0.]`` -> (("7.0.0","7.7.99"),) / ..."""
    out = []
    for group in re.findall(r"\[([^\]]*)\]", text or ""):
        parts = [p.strip() for p in group.split(",")]
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
    return tuple(out)


def in_range(version: str, lo: str, hi: str) -> bool:
    """version within [lo, hi]; a hi of ``24.0.`` means every 24.0.x (firmware's compatible_version_drv)."""
    v = version.strip().casefold()
    if hi.endswith("."):
        return (v + ".").startswith(hi.casefold()) or v == hi[:-1].casefold()
    vi, li, hi_i = _ints(v), _ints(lo), _ints(hi)
    return li <= vi[: len(li)] and vi[: len(hi_i)] <= hi_i


# -- data -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CannInstall:
    """One CANN install directory (a toolkit, nnae or nnrt version dir)."""

    root: str
    real_root: str
    found_via: tuple[str, ...]
    flavour: str
    commercial: Optional[str] = None
    internal: Optional[str] = None
    innerversion: Optional[str] = None
    compatible: tuple[tuple[int, int], ...] = ()
    arch: Optional[str] = None
    opp_kernel: bool = False
    package_name: Optional[str] = None
    #: fact -> the file it was read from ("commercial" -> ".../ascend_toolkit_install.info")
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def internal_prefix(self) -> Optional[str]:
        if not self.internal:
            return None
        parts = self.internal.split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else None

    @property
    def label(self) -> str:
        name = self.commercial or self.internal or "unknown version"
        return f"CANN {name} ({self.flavour}, {self.root})"

    def compatible_with(self, c: Optional[int]) -> Optional[bool]:
        """Whether this CANN's install file lists driver C-number c; None when either is unknown."""
        if c is None or not self.compatible:
            return None
        return any(lo <= c <= hi for lo, hi in self.compatible)


@dataclass(frozen=True)
class DriverInfo:
    path: str
    version: Optional[str]
    package_version: Optional[str]
    innerversion: Optional[str]
    compatible: tuple[tuple[int, int], ...]
    compatible_fw: tuple[tuple[str, str], ...]

    @property
    def c_number(self) -> Optional[int]:
        return c_number(self.innerversion)


@dataclass(frozen=True)
class FirmwareInfo:
    path: str
    version: Optional[str]
    package_version: Optional[str]
    compatible_drv: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CompilerRead:
    """The compiler/version.info a MindSpore version derives from one variable, and what it finds."""

    variable: str
    path: Optional[str]
    exists: bool
    version: Optional[str]

    @property
    def prefix(self) -> Optional[str]:
        if not self.version:
            return None
        parts = self.version.split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else None


@dataclass(frozen=True)
class CannFacts:
    installs: tuple[CannInstall, ...] = ()
    active: Optional[CannInstall] = None
    default: Optional[CannInstall] = None
    driver: Optional[DriverInfo] = None
    firmware: Optional[FirmwareInfo] = None
    install_info: Mapping[str, str] = field(default_factory=dict)
    compiler_reads: Mapping[str, CompilerRead] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    env_problems: tuple[str, ...] = ()
    ascend_root: str = "/usr/local/Ascend"

    @property
    def present(self) -> bool:
        return bool(self.installs or self.driver or self.firmware or self.env)

    def by_flavour(self, flavour: str) -> list[CannInstall]:
        return [i for i in self.installs if i.flavour == flavour]


# -- reading ------------------------------------------------------------------------------------
def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _flavour(root: Path, package_name: Optional[str]) -> str:
    name = (package_name or "").lower()
    for flav in ("toolkit", "nnae", "nnrt"):
        if flav in name:
            return flav
    parts = [p.lower() for p in root.parts]
    if "nnae" in parts:
        return "nnae"
    if "nnrt" in parts:
        return "nnrt"
    if "ascend-toolkit" in parts or any(p == "cann" or p.startswith("cann-") for p in parts):
        return "toolkit"
    return "unknown"


_VERSION_DIR_RE = re.compile(r"^(?:cann-)?(\d+\.\d+\.[0-9A-Za-z.-]+)$")


def _info_file(root: Path, machine: str) -> Optional[Path]:
    """<arch>-linux/ascend_*_install.info: this machine's arch first, the toolkit's file first."""
    found = sorted(root.glob("*-linux/ascend_*_install.info"))
    found = [p for p in found if p.name != "ascend_ops_install.info"]  # CANN >= 8.5 separate ops package
    found.sort(key=lambda p: (not p.parent.name.startswith(machine), "toolkit" not in p.name))
    return found[0] if found else None


def looks_like_cann(root: Path) -> bool:
    markers = (
        "version.cfg",
        "compiler/version.info",
        "opp/version.info",
        "runtime/version.info",
        "toolkit/version.info",
    )
    return root.is_dir() and (
        any((root / m).is_file() for m in markers) or bool(list(root.glob("*-linux/ascend_*_install.info")))
    )


def read_install(root: Path, found_via: tuple[str, ...], machine: str) -> CannInstall:
    """Read one install's version files; missing files leave fields None."""
    files: dict[str, str] = {}
    commercial = internal = innerversion = arch = package_name = None
    compatible: tuple[tuple[int, int], ...] = ()
    info_path = _info_file(root, machine)
    if info_path is not None:
        info = parse_kv(_read(info_path) or "")
        package_name = info.get("package_name")
        arch = info.get("arch")
        innerversion = info.get("innerversion")
        compatible = parse_c_ranges(info.get("compatible_version"))
        if info.get("version"):
            commercial = info["version"]
            files["commercial"] = str(info_path)
    compiler = root / "compiler" / "version.info"
    text = _read(compiler)
    if text is not None and first_version_line(text):
        internal = first_version_line(text)
        files["internal"] = str(compiler)
        if commercial is None and parse_kv(text).get("version_dir"):
            commercial, files["commercial"] = parse_kv(text)["version_dir"], str(compiler)
    cfg_path = root / "version.cfg"
    cfg = parse_version_cfg(_read(cfg_path) or "")
    for key in (
        "compiler_running_version",
        "toolkit_running_version",
        "runtime_running_version",
        "opp_running_version",
    ):
        if key in cfg:
            ver_internal, ver_commercial = cfg[key][-1]
            if internal is None:
                internal, files["internal"] = ver_internal, f"{cfg_path} ({key})"
            if commercial is None:
                commercial, files["commercial"] = ver_commercial, f"{cfg_path} ({key})"
            break
    for comp in ("toolkit", "opp", "runtime", "opp_kernel"):
        if internal is not None and commercial is not None:
            break
        path = root / comp / "version.info"
        t = _read(path)
        if t is None:
            continue
        kv = parse_kv(t)
        if internal is None and first_version_line(t):
            internal, files["internal"] = first_version_line(t), str(path)
        if commercial is None and kv.get("version_dir"):
            commercial, files["commercial"] = kv["version_dir"], str(path)
    if commercial is None:
        # last resort: the directory name of a versioned install (ascend-toolkit/8.2.RC1, cann-8.5.0)
        m = _VERSION_DIR_RE.match(Path(os.path.realpath(root)).name)
        if m:
            commercial, files["commercial"] = m.group(1), f"{os.path.realpath(root)} (directory name)"
    return CannInstall(
        root=str(root),
        real_root=os.path.realpath(root),
        found_via=found_via,
        flavour=_flavour(root, package_name),
        commercial=commercial,
        internal=internal,
        innerversion=innerversion,
        compatible=compatible,
        arch=arch,
        opp_kernel=(root / "opp_kernel").is_dir(),
        package_name=package_name,
        files=files,
    )


def _opp_root(opp: str) -> Path:
    p = Path(opp.rstrip("/"))
    return p.parent if p.name == "opp" else Path(opp.split("opp")[0] or "/")


def _compiler_read(variable: str, environ: Mapping[str, str]) -> CompilerRead:
    """Derive compiler/version.info exactly as mindspore/run_check/_check_version.py does, then read its Version= line."""
    value = environ.get(variable)
    if not value:
        return CompilerRead(variable, None, False, None)
    if variable == "ASCEND_OPP_PATH":
        path = value.split("opp")[0] + "compiler/version.info"  # 2.7.0-2.7.1: cut at the first "opp"
    else:
        path = value + "/compiler/version.info"  # >= 2.7.2
    text = _read(Path(path))
    return CompilerRead(variable, path, text is not None, first_version_line(text) if text else None)


def _driver(path: Path) -> Optional[DriverInfo]:
    text = _read(path)
    if text is None:
        return None
    kv = parse_kv(text)
    return DriverInfo(
        str(path),
        kv.get("Version"),
        kv.get("package_version"),
        kv.get("Innerversion"),
        parse_c_ranges(kv.get("compatible_version")),
        parse_ranges(kv.get("compatible_version_fw")),
    )


def _firmware(path: Path) -> Optional[FirmwareInfo]:
    text = _read(path)
    if text is None:
        return None
    kv = parse_kv(text)
    return FirmwareInfo(
        str(path), kv.get("Version"), kv.get("package_version"), parse_ranges(kv.get("compatible_version_drv"))
    )


def read_cann(environ: Mapping[str, str], machine: Optional[str] = None) -> CannFacts:
    """Every CANN install, the driver and the firmware visible from this environment."""
    machine = machine or platform.machine()
    env = {k: environ[k] for k in ENV_VARS if environ.get(k)}
    problems = []
    candidates: list[tuple[Path, str]] = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"):
        if var in env:
            path = _opp_root(env[var]) if var == "ASCEND_OPP_PATH" else Path(env[var])
            if not Path(env[var]).exists():
                problems.append(f"{var}={env[var]} does not exist")
            candidates.append((path, var))
    ascend = host_path(environ, "/usr/local/Ascend")
    for rel in DEFAULT_ENTRIES:
        candidates.append((ascend / rel, f"default layout {rel}"))
    if ascend.is_dir():
        for d in sorted(ascend.glob("cann-*")):
            candidates.append((d, f"default layout {d.name}"))
    by_real: dict[str, tuple[Path, list[str]]] = {}
    for path, via in candidates:
        if not looks_like_cann(path):
            continue
        real = os.path.realpath(path)
        by_real.setdefault(real, (path, []))[1].append(via)
    installs = tuple(read_install(path, tuple(vias), machine) for path, vias in by_real.values())
    active = next((i for i in installs if any(v in env for v in i.found_via)), None)
    default = next(
        (
            i
            for i in installs
            if any(v.startswith("default layout") and v.split()[-1] in DEFAULT_ENTRIES for v in i.found_via)
        ),
        None,
    )
    info = parse_kv(_read(host_path(environ, "/etc/ascend_install.info")) or "")
    drv_root = info.get("Driver_Install_Path_Param") or "/usr/local/Ascend"
    fw_root = info.get("Firmware_Install_Path_Param") or "/usr/local/Ascend"
    driver = _driver(host_path(environ, drv_root) / "driver" / "version.info")
    firmware = _firmware(host_path(environ, fw_root) / "firmware" / "version.info")
    reads = {v: _compiler_read(v, environ) for v in ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH") if environ.get(v)}
    return CannFacts(
        installs=installs,
        active=active,
        default=default,
        driver=driver,
        firmware=firmware,
        install_info=info,
        compiler_reads=reads,
        env=env,
        env_problems=tuple(problems),
        ascend_root=str(ascend),
    )


def _compute(ctx: Context) -> CannFacts:
    return read_cann(ctx.environ)


#: CANN installs, Ascend driver and firmware (files only; no subprocess). Fast.
CANN: FactSpec[CannFacts] = FactSpec("cann", _compute, description="CANN installs, Ascend driver and firmware")
