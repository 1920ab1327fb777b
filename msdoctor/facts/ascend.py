"""Ascend facts: device nodes, the environment CANN's set_env.sh sets, and `npu-smi info`.

Public API (other checks read these):

* ``NPU_SMI`` -> :class:`NpuSmiInfo` or None (npu-smi not installed). Raises
  :class:`NpuSmiFailed` (a ``FactUnavailable``) when npu-smi exists but fails: a
  dcmi error inside a container (-8005 / -8020: https://github.com/vllm-project/vllm-ascend/issues/2698), a hang
  (stopped after ``NPU_SMI_TIMEOUT_S``), or output that is not the table. Callers
  to whom npu-smi is optional catch it.
* :func:`parse_npu_smi_info` (pure): the text of ``npu-smi info`` -> NpuSmiInfo.
  ``NpuChip.device_memory_total_mb`` is the memory a training job can use (HBM,
  or the DDR of cards without HBM such as the 310P).
* ``DEVICE_NODES`` -> :class:`DeviceNodes` (``/dev/davinci*`` and the control nodes).
* ``ASCEND_ENV`` -> :class:`AscendEnv`: what set_env.sh sets, as the TARGET
  interpreter's process saw it (``ctx.target.env``), with every gap listed.

Formats and facts: docs/sources.md (set_env.sh, npu-smi, what MindSpore's own checker reads, the
libge_runner.so fallback to CPU, npu-smi in containers); test fixtures under
tests/data/npu_smi/ are real outputs (sources in tests/data/npu_smi/SOURCES.md).
Fixed system paths go through ``host_path`` so tests can point MSDOCTOR_SYSROOT
at a fixture tree.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from msdoctor import proc
from msdoctor.context import Context, FactSpec, FactUnavailable
from msdoctor.facts.sysroot import host_path

#: npu-smi info normally answers in about a second; a stuck driver makes it hang.
NPU_SMI_TIMEOUT_S = 15.0


# -- npu-smi info ---------------------------------------------------------------
@dataclass
class NpuChip:
    """One chip row pair of the `npu-smi info` table (a 910B NPU has one chip, an A3 or 310P Duo two).

    Attributes:
        npu_id: the NPU id (the id `npu-smi info -i` takes).
        chip_id: the chip within the NPU.
        phy_id: A3's "Phy-ID" column, the 310P's "Device" column (the logical device id), else None.
        name: chip name as printed ("910B3", "Ascend910", "910ProB", "310P3").
        health: "OK", or the state npu-smi prints instead ("Warning", "Alarm", "Critical", ...).
        power_w: None where npu-smi prints "-" or "NA".
        temp_c, aicore_pct: as printed.
        memory_used_mb, memory_total_mb: "Memory-Usage(MB)" (DDR; 0 / 0 on 910B cards).
        hbm_used_mb, hbm_total_mb: "HBM-Usage(MB)", None on cards without that column (310P).
        bus_id: PCI bus id, e.g. "0000:C1:00.0".
    """

    npu_id: int
    chip_id: int
    phy_id: Optional[int]
    name: str
    health: str
    power_w: Optional[float]
    temp_c: Optional[int]
    aicore_pct: Optional[int]
    memory_used_mb: Optional[int]
    memory_total_mb: Optional[int]
    hbm_used_mb: Optional[int]
    hbm_total_mb: Optional[int]
    bus_id: str

    @property
    def healthy(self) -> bool:
        return self.health.upper() == "OK"

    @property
    def device_memory_total_mb(self) -> Optional[int]:
        """Memory a job can allocate on this chip: HBM where the card has it, else its DDR (310P)."""
        if self.hbm_total_mb:
            return self.hbm_total_mb
        return self.memory_total_mb or None

    @property
    def device_memory_used_mb(self) -> Optional[int]:
        if self.hbm_total_mb:
            return self.hbm_used_mb
        return self.memory_used_mb if self.memory_total_mb else None

    @property
    def label(self) -> str:
        return f"NPU {self.npu_id} chip {self.chip_id} ({self.name})"


@dataclass
class NpuProcess:
    """One row of the process table: a process holding memory on a chip."""

    npu_id: int
    chip_id: Optional[int]
    pid: int
    name: str
    memory_mb: Optional[int]


@dataclass
class NpuSmiInfo:
    """`npu-smi info`, parsed.

    Attributes:
        tool_version: the npu-smi version (header's "npu-smi X").
        driver_version: the driver version (header's "Version: X"); may differ from the tool's.
        chips: every chip, in table order.
        processes: every process row.
        idle_npus: NPU ids with a "No running processes found in NPU N" row.
        has_process_table: whether the output included the process table at all.
    """

    tool_version: Optional[str]
    driver_version: Optional[str]
    chips: list[NpuChip] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)
    idle_npus: list[int] = field(default_factory=list)
    has_process_table: bool = False

    def npu_ids(self) -> list[int]:
        return sorted({c.npu_id for c in self.chips})

    def processes_on(self, chip: NpuChip) -> list[NpuProcess]:
        """Processes on one chip (rows without a chip column count for every chip of their NPU)."""
        return [
            p for p in self.processes
            if p.npu_id == chip.npu_id and (p.chip_id is None or p.chip_id == chip.chip_id)
        ]

    def busy_chips(self) -> list[NpuChip]:
        return [c for c in self.chips if self.processes_on(c)]

    def unhealthy_chips(self) -> list[NpuChip]:
        return [c for c in self.chips if not c.healthy]


class NpuSmiParseError(ValueError):
    """The text is not `npu-smi info` output."""


_SEP_RE = re.compile(r"^\s*\+[-=+]*\+\s*$")
_HEADER_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_PAIR_RE = re.compile(r"(\d+)\s*/\s*(\d+)")
_IDLE_RE = re.compile(r"No running processes found in NPU\s+(\d+)", re.I)


def _cells(line: str) -> list[str]:
    """The cells of a `| a | b | c |` row (outer bars dropped, each stripped)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in body.split("|")]


def _int(text: str) -> Optional[int]:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _float(text: str) -> Optional[float]:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None  # "-" (second chip of an A3 NPU), "NA" (310P)


def _chip(row1: list[str], row2: list[str], has_hbm: bool) -> Optional[NpuChip]:
    """Build a chip from its two rows; None when the rows are not a chip entry."""
    if len(row1) < 3 or len(row2) < 3:
        return None
    head1 = row1[0].split()
    head2 = row2[0].split()
    if len(head1) < 2 or not head2 or _int(head1[0]) is None or _int(head2[0]) is None:
        return None
    # row 1, third cell: power temp  hugepages-used / hugepages-total
    stats1 = row1[2].split()
    power = _float(stats1[0]) if stats1 else None
    temp = _int(stats1[1]) if len(stats1) > 1 else None
    # row 2, third cell: aicore  mem-used / mem-total  [hbm-used/ hbm-total]
    # numbers may touch the slash ("37705/ 65536"), so pairs are found by regex
    stats2 = row2[2]
    aicore = _int(stats2.split()[0]) if stats2.split() else None
    pairs = [(int(a), int(b)) for a, b in _PAIR_RE.findall(stats2)]
    mem = pairs[0] if pairs else (None, None)
    hbm = pairs[1] if len(pairs) > 1 else (None, None)
    if has_hbm and len(pairs) == 1:
        # a header with an HBM column and a single pair: the pair's column is unknown;
        # keep it as DDR (the first column), as printed left to right
        hbm = (None, None)
    return NpuChip(
        npu_id=int(head1[0]),
        chip_id=int(head2[0]),
        phy_id=_int(head2[1]) if len(head2) > 1 else None,
        name=" ".join(head1[1:]),
        health=row1[1],
        power_w=power,
        temp_c=temp,
        aicore_pct=aicore,
        memory_used_mb=mem[0],
        memory_total_mb=mem[1],
        hbm_used_mb=hbm[0],
        hbm_total_mb=hbm[1],
        bus_id=row2[1],
    )


def _process(cells: list[str]) -> Optional[NpuProcess]:
    if len(cells) < 4:
        return None
    ids = cells[0].split()
    pid = _int(cells[1])
    if not ids or _int(ids[0]) is None or pid is None:
        return None
    return NpuProcess(
        npu_id=int(ids[0]),
        chip_id=_int(ids[1]) if len(ids) > 1 else None,
        pid=pid,
        name=cells[2],
        memory_mb=_int(cells[3].split()[0]) if cells[3].split() else None,
    )


def parse_npu_smi_info(text: str) -> NpuSmiInfo:
    """Parse the output of `npu-smi info` (the formats of tests/data/npu_smi, sources in its SOURCES.md).

    Handles 910B (one chip per NPU), A3 (Phy-ID column, two chips per NPU separated
    by a `+----+` line), 910ProB (DDR and HBM columns), 310P (no HBM column, power
    "NA"), the process table, and "No running processes found in NPU N" rows.

    Raises:
        NpuSmiParseError: neither the header nor any chip row was found.
    """
    info = NpuSmiInfo(tool_version=None, driver_version=None)
    section = "none"  # "chips" after the chip header, "procs" after the process header
    has_hbm = False
    pending: Optional[list[str]] = None  # first row of a chip entry
    for line in text.splitlines():
        if not line.strip():
            continue
        if _SEP_RE.match(line):
            pending = None
            continue
        header = _HEADER_RE.search(line)
        if header:
            info.tool_version, info.driver_version = header.group(1), header.group(2)
            continue
        if not line.lstrip().startswith("|"):
            continue
        cells = _cells(line)
        joined = " ".join(cells)
        if "Health" in joined and "Name" in joined:
            section = "chips"
            continue
        if "Bus-Id" in joined and "AICore" in joined:
            has_hbm = "HBM-Usage" in joined
            continue
        if "Process id" in joined:
            section = "procs"
            info.has_process_table = True
            continue
        if section == "chips":
            if pending is None:
                pending = cells
            else:
                chip = _chip(pending, cells, has_hbm)
                pending = None
                if chip is not None:
                    info.chips.append(chip)
        elif section == "procs":
            idle = _IDLE_RE.search(line)
            if idle:
                info.idle_npus.append(int(idle.group(1)))
                continue
            p = _process(cells)
            if p is not None:
                info.processes.append(p)
    if info.driver_version is None and not info.chips:
        raise NpuSmiParseError("no npu-smi header and no chip rows found")
    return info


# -- running npu-smi ------------------------------------------------------------
_DCMI_RE = re.compile(r"dcmi\s+mod\w*\s+initiali[sz]ed?\s+failed.*?ret is\s*(-?\d+)", re.I)


def dcmi_error(text: str) -> Optional[int]:
    """The dcmi return code when npu-smi could not initialise (-8005, -8020), else None."""
    m = _DCMI_RE.search(text)
    return int(m.group(1)) if m else None


class NpuSmiFailed(FactUnavailable):
    """npu-smi is installed but gave no table.

    Attributes:
        kind: "dcmi" (driver management init failed, code in ``code``), "timeout",
            "exit" (non-zero status), or "unparseable".
        code: the dcmi return code for kind "dcmi".
        path: the npu-smi that was run.
        output: what it printed (stdout + stderr, trimmed).
    """

    def __init__(self, message: str, fix: Optional[str], *, kind: str, path: str, output: str = "",
                 code: Optional[int] = None) -> None:
        super().__init__(message, fix)
        self.kind = kind
        self.code = code
        self.path = path
        self.output = output


def find_npu_smi(environ: Mapping[str, str]) -> Optional[str]:
    """npu-smi on the PATH msdoctor was given, else where the driver installs it (host paths)."""
    found = shutil.which("npu-smi", path=environ.get("PATH", ""))
    if found:
        return found
    for fixed in ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi", "/usr/bin/npu-smi"):
        cand = host_path(environ, fixed)
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


_DCMI_FIX = (
    "npu-smi could not open the devices. -8005/-8020 usually mean another container or process "
    "holds them (https://github.com/vllm-project/vllm-ascend/issues/2698): stop that container, or start this one with the "
    "devices passed through (--device=/dev/davinciN --device=/dev/davinci_manager "
    "--device=/dev/devmm_svm --device=/dev/hisi_hdc) or --privileged"
)


def run_npu_smi(path: str, environ: Mapping[str, str], timeout: float = NPU_SMI_TIMEOUT_S) -> NpuSmiInfo:
    """Run `<path> info` and parse it; NpuSmiFailed when it fails, hangs or prints no table."""
    res = proc.run([path, "info"], timeout=timeout, env=environ)
    output = (res.stdout + ("\n" + res.stderr if res.stderr else "")).strip()
    short = "\n".join(output.splitlines()[-5:])
    if res.start_error:
        raise NpuSmiFailed(f"could not run {path}: {res.start_error}",
                           f"check the permissions of {path} (run msdoctor as the user who trains)",
                           kind="exit", path=path, output=short)
    if res.timed_out:
        raise NpuSmiFailed(
            f"`{path} info` did not answer within {timeout:.0f} s and was stopped",
            "the driver is not answering: check `dmesg` for davinci errors, and whether another job "
            "hangs on the devices; a reboot of the node (or reloading the driver) clears a stuck driver",
            kind="timeout", path=path, output=short,
        )
    code = dcmi_error(output)
    if code is not None:
        raise NpuSmiFailed(
            f"`npu-smi info` failed: dcmi initialisation returned {code}",
            _DCMI_FIX, kind="dcmi", path=path, output=short, code=code,
        )
    try:
        info = parse_npu_smi_info(res.stdout)
    except NpuSmiParseError:
        if not res.ok:
            raise NpuSmiFailed(f"`npu-smi info` {res.describe_failure().split(': ', 1)[-1]}",
                               "run `npu-smi info` by hand to see the driver's message",
                               kind="exit", path=path, output=short) from None
        raise NpuSmiFailed(
            "`npu-smi info` printed no device table msdoctor recognises",
            "run `npu-smi info` by hand; if it shows a table, report it to msdoctor with that output",
            kind="unparseable", path=path, output=short,
        ) from None
    return info


def _compute_npu_smi(ctx: Context) -> Optional[NpuSmiInfo]:
    path = find_npu_smi(ctx.environ)
    if path is None:
        return None
    timeout = float(ctx.options.extra.get("npu_smi_timeout_s", NPU_SMI_TIMEOUT_S))
    return run_npu_smi(path, ctx.environ, timeout)


#: `npu-smi info` parsed; None when npu-smi is not installed; raises NpuSmiFailed when it fails.
NPU_SMI: FactSpec[Optional[NpuSmiInfo]] = FactSpec("npu-smi", _compute_npu_smi, description="npu-smi info")


# -- device nodes ---------------------------------------------------------------
CONTROL_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
_DAVINCI_RE = re.compile(r"^davinci(\d+)$")


@dataclass
class DeviceNodes:
    """Ascend device nodes under /dev (a container needs all of them: https://github.com/Ascend/cann-container-image/issues/46).

    Attributes:
        dev_dir: the directory read (host /dev, or the fixture tree's).
        davinci: ids N of /dev/davinciN, sorted.
        control: each of davinci_manager, devmm_svm, hisi_hdc -> present.
    """

    dev_dir: str
    davinci: list[int]
    control: dict[str, bool]

    @property
    def any(self) -> bool:
        return bool(self.davinci) or any(self.control.values())

    @property
    def missing_control(self) -> list[str]:
        return [n for n, ok in self.control.items() if not ok]


def read_device_nodes(dev_dir: Path) -> DeviceNodes:
    try:
        names = os.listdir(dev_dir)
    except OSError:
        names = []
    ids = sorted(int(m.group(1)) for m in (_DAVINCI_RE.match(n) for n in names) if m)
    return DeviceNodes(str(dev_dir), ids, {n: n in names for n in CONTROL_NODES})


DEVICE_NODES: FactSpec[DeviceNodes] = FactSpec(
    "ascend-device-nodes", lambda ctx: read_device_nodes(host_path(ctx.environ, "/dev")),
    description="Ascend device nodes",
)


# -- the environment set_env.sh sets -------------------------------------------
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


SET_ENV_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
                     "TOOLCHAIN_HOME", "LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


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
    gaps: list[EnvGap] = []
    if home is None:
        gaps.append(EnvGap(
            "ASCEND_HOME_PATH", "ASCEND_HOME_PATH is not set: CANN's set_env.sh was not sourced",
            "MindSpore (>= 2.7.2) finds CANN and checks its version through ASCEND_HOME_PATH; without the "
            "variables set_env.sh exports, the Ascend plugin cannot load and MindSpore runs on CPU",
        ))
    elif not host_path(environ, home).is_dir():
        gaps.append(EnvGap(
            "ASCEND_HOME_PATH", f"ASCEND_HOME_PATH={home} does not exist",
            "the CANN toolkit it names is gone (uninstalled, or a container without the mount)",
        ))
    opp = env.get("ASCEND_OPP_PATH")
    if not opp:
        gaps.append(EnvGap(
            "ASCEND_OPP_PATH", "ASCEND_OPP_PATH is not set",
            "operators are loaded from ASCEND_OPP_PATH; MindSpore 2.7.0-2.7.1 also locate CANN's "
            "version file through it (mindspore/run_check/_check_version.py)",
        ))
    elif "/opp" not in opp:
        gaps.append(EnvGap(
            "ASCEND_OPP_PATH", f"ASCEND_OPP_PATH={opp} does not point at an opp directory",
            "MindSpore's environment check expects .../opp here (mindspore/run_check/_check_version.py)", severity="warn",
        ))
    if home is not None:
        lib64 = _norm(os.path.join(home, "lib64"))
        if lib64 not in {_norm(e) for e in ld}:
            gaps.append(EnvGap(
                "LD_LIBRARY_PATH", f"LD_LIBRARY_PATH lacks the toolkit's {lib64}",
                "libmindspore_ascend.so needs libge_runner.so from there: \"libge_runner.so: cannot open "
                "shared object file\" and MindSpore falls back to CPU (https://github.com/mindspore-lab/mindyolo/issues/273)",
            ))
    if not any(_norm(e).endswith("/driver/lib64") or "/driver/lib64/" in _norm(e) + "/" for e in ld):
        gaps.append(EnvGap(
            "LD_LIBRARY_PATH", f"LD_LIBRARY_PATH lacks the driver's {DRIVER_DIR}/lib64",
            "the runtime loads the driver's libraries (libascend_hal.so) from there",
        ))
    if home is not None and not any(e.rstrip("/").endswith(TBE_IMPL) for e in _entries(env.get("PYTHONPATH"))):
        gaps.append(EnvGap(
            "PYTHONPATH", f"PYTHONPATH lacks {os.path.join(home, TBE_IMPL)}",
            "operator compilation imports the TBE implementations from there; MindSpore warns about it "
            "(mindspore/run_check/_check_version.py)", severity="warn",
        ))
    if home is not None and not any("ccec_compiler/bin" in e for e in _entries(env.get("PATH"))):
        gaps.append(EnvGap(
            "PATH", "PATH lacks the toolkit's compiler/ccec_compiler/bin",
            "kernel compilation runs ccec from PATH (set_env.sh adds it)", severity="warn",
        ))
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


ASCEND_ENV: FactSpec[AscendEnv] = FactSpec(
    "ascend-env", lambda ctx: ascend_env(ctx.target.env, ctx.environ),
    description="CANN environment of the target process",
)
