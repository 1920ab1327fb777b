"""`npu-smi info`: run it (bounded, never a shell), parse its table, explain its failures.

* ``NPU_SMI`` -> :class:`NpuSmiInfo` or None (npu-smi not installed). Raises
  :class:`NpuSmiFailed` (a ``FactUnavailable``) when npu-smi exists but fails: a
  dcmi error inside a container (-8005 / -8020: https://github.com/vllm-project/vllm-ascend/issues/2698),
  a hang (stopped after ``NPU_SMI_TIMEOUT_S``), or output that is not the table.
* :func:`parse_npu_smi_info` (pure): the text of ``npu-smi info`` -> NpuSmiInfo.
  ``NpuChip.device_memory_total_mb`` is the memory a training job can use (HBM,
  or the DDR of cards without HBM such as the 310P).

The formats are those of the real outputs under tests/data/npu_smi/ (sources in its SOURCES.md).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
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
            p for p in self.processes if p.npu_id == chip.npu_id and (p.chip_id is None or p.chip_id == chip.chip_id)
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

    def __init__(
        self, message: str, fix: Optional[str], *, kind: str, path: str, output: str = "", code: Optional[int] = None
    ) -> None:
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
        raise NpuSmiFailed(
            f"could not run {path}: {res.start_error}",
            f"check the permissions of {path} (run msdoctor as the user who trains)",
            kind="exit",
            path=path,
            output=short,
        )
    if res.timed_out:
        raise NpuSmiFailed(
            f"`{path} info` did not answer within {timeout:.0f} s and was stopped",
            "the driver is not answering: check `dmesg` for davinci errors, and whether another job "
            "hangs on the devices; a reboot of the node (or reloading the driver) clears a stuck driver",
            kind="timeout",
            path=path,
            output=short,
        )
    code = dcmi_error(output)
    if code is not None:
        raise NpuSmiFailed(
            f"`npu-smi info` failed: dcmi initialisation returned {code}",
            _DCMI_FIX,
            kind="dcmi",
            path=path,
            output=short,
            code=code,
        )
    try:
        info = parse_npu_smi_info(res.stdout)
    except NpuSmiParseError:
        if not res.ok:
            raise NpuSmiFailed(
                f"`npu-smi info` {res.describe_failure().split(': ', 1)[-1]}",
                "run `npu-smi info` by hand to see the driver's message",
                kind="exit",
                path=path,
                output=short,
            ) from None
        raise NpuSmiFailed(
            "`npu-smi info` printed no device table msdoctor recognises",
            "run `npu-smi info` by hand; if it shows a table, report it to msdoctor with that output",
            kind="unparseable",
            path=path,
            output=short,
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
