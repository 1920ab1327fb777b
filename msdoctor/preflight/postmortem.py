"""Post-mortem of a failed msrun job: which rank failed first, why, and which failures were only consequences.

When one rank of a multi-rank job dies, every other log ends in an error too: msrun kills the surviving workers
(SIGKILL, so their logs simply stop), the collectives of the others time out waiting for the dead rank, and
the scheduler reports heartbeats lost. This module reads every log of the job (msrun's ``--log_dir`` with
``scheduler.log`` and ``worker_N.log``, msrun's terminal output saved as ``msrun.log``, per-node directories of a
multi-node job, CANN plog files the logs name), puts their events on one timeline and names the first failure.

What msrun and MindSpore 2.7.0 write, as observed (tests/data/postmortem/README.md reproduces each case):

- every C++ log line starts ``[LEVEL] MODULE(PID,TID,process):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line] ...`` and
  every Python one ``[LEVEL] ME(PID:TID,process):...`` (mindspore/log.py ``_get_formatter``);
- a worker logs ``This node N rank id: R`` once the cluster is built (cluster_context.cc PostProcess);
- msrun logs ``Worker process PID exit with exception. Error code: C.`` for the first worker it sees fail
  (C is ``Popen.returncode``: negative for a signal), then ``There's worker exits with exception, kill all other
  workers.`` and kills the process group of every worker still running with SIGKILL
  (mindspore/parallel/cluster/process_entity/_api.py ``join_processes``, ``kill_worker_processes``);
- the scheduler logs ``The node: N is timed out`` for each node whose heartbeat stopped (meta_server_node.cc
  UpdateTopoState), read here through :mod:`msdoctor.cluster_logs`.

Reading is bounded: a file is streamed in blocks, only lines that hold one of a few literals are looked at, and
each log keeps its first errors, its first traceback and its last lines; a log of gigabytes costs one pass of
substring searches and constant memory. Only regular files are read.

Usage::

    from msdoctor.preflight.postmortem import analyse
    pm = analyse([Path("msrun_log")])
    pm.first_failure          # FirstFailure(rank=2, node_rank=0, ...) or None
    pm.to_json(); pm.lines()  # the json view and the terminal view
"""

from __future__ import annotations

import collections
import itertools
import os
import re
import stat
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from msdoctor.cluster_logs import SchedulerLogParser, SchedulerSummary, workers_per_node
from msdoctor.errors import UserError

from .schedlog import SCHED_FAILED, TCP_SERVER, TOPO_TIMEOUT

BLOCK = 1 << 20
#: a line longer than this is cut (binary data, progress bars without newlines)
MAX_LINE = 16 * 1024
TAIL = 30
MAX_ERRORS = 12
MAX_TRACEBACK = 80
#: files read per directory level, and the most files of one job (a 4096-rank job has 4097 msrun logs)
MAX_FILES = 20000
#: plog files read per directory a log names (the newest ones)
MAX_PLOGS = 8
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
#: lines after a rank's first error line that still belong to the same error (CANN prints its reason below)
BLOCK_LINES = 12
#: two events on different nodes closer than this are not ordered (clock resolution, log buffering)
SKEW_TOLERANCE = 2.0

# [LEVEL] MODULE(PID,TID,proc):2026-12-02-12:37:54.433.629  (C++)   [LEVEL] ME(PID:TID,proc):...  (Python)
# CANN's plog: [LEVEL] MODULE(PID,process):2025-05-13-02:25:58.068.817 (https://github.com/gpustack/gpustack/issues/2021)
_PREFIX = re.compile(
    r"^\[(?P<level>[A-Z]+)\] (?P<mod>[A-Z_]+)\((?P<pid>\d+)(?:[,:](?P<tid>\w+))?,(?P<proc>[^)]*)\):"
    r"(?P<ts>\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3})"
)
# any of: 2026-12-02-12:37:54.433.629 (MindSpore, CANN), 2025-01-01 12:00:00,123 (Python logging), ISO 8601
_TIME = re.compile(r"(?P<d>\d{4}-\d\d-\d\d)[- T](?P<t>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{1,6})(?:\.(?P<us>\d{3}))?)?")
_RANK_ID = re.compile(r"This node (?P<node>\S+) rank id: (?P<rank>\d+)")
# a process that says which rank it is (msdoctor's trainer: "rank 1 of 2, pid 4242", training/train.py)
_SELF = re.compile(r"\brank (?P<rank>\d+) of \d+, pid (?P<pid>\d+)\b")
_WORKER_EXIT = re.compile(r"Worker process (?P<pid>\d+) exit with exception\. Error code: (?P<code>-?\d+)")
_KILL_ALL = "There's worker exits with exception, kill all other workers"
_SCHED_EXIT = re.compile(r"Scheduler process (?P<pid>\d+) exit with exception")
_TIMEOUT_NODES = re.compile(r"Time out nodes are \[(?P<nodes>[^\]]*)\]")
_START_WORKER = re.compile(r"Start worker process with rank id:(?P<rank>\d+), log file:(?P<log>.+?)\. Environment")
# CANN names a process's plog file plog-PID_TIMESTAMP.log (~/ascend/log/debug/plog by default)
_PLOG_NAME = re.compile(r"^plog-(?P<pid>\d+)_")
_WORKER_NAME = re.compile(r"(?:^|_)(?P<rank>\d+)\.log$")
# msrun's own end-of-job `grep -rn -E 'ERROR|...' -C 5 LOG_DIR` prints "path:NN:" / "path-NN-" before each line
_GREP_COPY = re.compile(r"^\S+?\.log[:-]\d+[:-]")
_EXCEPTION = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault))(?::\s*(?P<msg>.*))?$"
)
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
_PLOG = re.compile(r"(?P<path>(?:~|/)[\w./\-]*?/(?:plog|ascend/log)(?:/[\w.\-]+)*)")
#: the literals a line must hold to be looked at (the rest only feed the tail and the clock); searched with
#: str.find, which is far faster than one regex of alternatives
_LITERALS = (
    "[ERROR]",
    "[CRITICAL]",
    "Traceback (most recent call last)",
    "rank id: ",
    "Error code: ",
    "is timed out",
    "registered successfully",
    "Topology build timed out",
    "Building networking for MS_",
    "Failed to init the tcp",
    "There's worker exits",
    "exit with exception",
    "Time out nodes are",
    "Start worker process",
    "times out",
    "timeout",
    "Fatal Python error",
    "Segmentation fault",
    "terminate called",
    "plog",
    ", pid ",
    "Kill this process with SIGTERM",
)
#: MindSpore's runtime ends a worker whose cluster reported a failure (distributed/init.cc, observed on 2.7.0:
#: "Callback on exception is called." then "Kill this process with SIGTERM.")
_RUNTIME_SIGTERM = "Kill this process with SIGTERM"
#: CANN error codes (EI0002:, EE9999:), the one hit that needs a regex
_CANN_CODE = re.compile(r"E[A-Z0-9]\d{4}:")


def _hit_offsets(text: str) -> list[int]:
    """Offsets in ``text`` of every occurrence of a literal that makes a line worth reading (unsorted)."""
    out: list[int] = []
    for lit in _LITERALS:
        at = text.find(lit)
        while at >= 0:
            out.append(at)
            nl = text.find("\n", at)  # one hit per line and literal is enough
            at = text.find(lit, nl) if nl >= 0 else -1
    out.extend(m.start() for m in _CANN_CODE.finditer(text))
    return out


# Errors that a rank reports because another rank failed, with their kind. Each is the text the runtime prints:
# HCCL's EI0002 / EI0006 and their message texts (CANN error code reference, EI0002 "Communication Operation
# Timeout": https://www.hiascend.com/document/detail/zh/canncommercial/80RC3/developmentguide/maintenref/troubleshooting/atlaserrorcode_15_0242.html),
# the CANN runtime's event wait timeout (discuss.mindspore.cn/t/topic/1156), the CPU backend's ring AllReduce
# (observed: tests/data/postmortem/README.md, hang), and the cluster that never formed (msrun, observed).
COLLECTIVE_TIMEOUT = re.compile(
    r"\bEI0002\b|\bEI0006\b|Notify register times out|Getting socket times out|event wait timeout|"
    r"hccl fftsplus task timeout|wait receiving \[\d+|Watchdog caught collective operation timeout|"
    r"socket establish timeout|Launch kernel failed, name:[\w/]*(?:AllReduce|AllGather|Broadcast|ReduceScatter|Send|Receive)",
    re.I,
)
CLUSTER_NOT_FORMED = re.compile(
    r"Failed to initialize distributed job cluster because some processes|"
    r"Building networking for MS_\w+ failed"
)
# the scheduler's own summary, raised by the scheduler process (which runs the same script, so its traceback can land
# in a rank's log): "The total number of timed out node is 2. ..., worker 0 is the first one timed out" (observed)
SCHEDULER_TIMEOUT = re.compile(r"The total number of timed out node is \d+|The node: \S+ is timed out")
# a worker's heartbeat thread that no longer reaches the scheduler (the meta server): "Failed to send heartbeat
# message to meta server node and try to reconnect to the meta server.", "Failed to connect to the meta server. Maybe
# it has exited." (observed: tests/data/postmortem/msrun/never, after the scheduler gave up and exited). It runs beside
# the main thread, so on a loaded machine it can print before the main thread's own error: never a first error.
SCHEDULER_LOST = re.compile(r"heartbeat message to meta server|connect to the meta server|reconnect to the meta server")
# the rank a waiting rank names as the one it waits for: HCCL "remote rank: [N]" (a rank of the communication
# group, the global rank only in the world group), the CPU ring "wait receiving [N,k]" (observed: each rank waits on
# its ring predecessor)
_PEER = re.compile(r"remote rank:? \[(?P<a>\d+)\]|wait receiving \[(?P<b>\d+),")

KINDS = {
    "killed-by-msrun": "killed by msrun after another worker failed (SIGKILL: its log simply stops)",
    "collective-timeout": "a collective timed out waiting for the failed rank",
    "scheduler-timeout": "the scheduler's heartbeat timeout for a process that had stopped",
    "cluster-not-formed": "the cluster could not form without the missing ranks",
    "ended-by-runtime": "ended by MindSpore's runtime (SIGTERM) after the cluster reported the failure",
    "later-error": "an error after the first failure",
}


@dataclass
class Event:
    """One line of one log that says something about the job."""

    log: str
    line: int
    text: str
    time: Optional[datetime] = None
    pid: Optional[int] = None
    level: Optional[str] = None


@dataclass
class Traceback:
    log: str
    line: int  # of "Traceback (most recent call last):"
    lines: list[str]
    exception: str  # the last line: "FileNotFoundError: [Errno 2] ..."
    exception_line: int
    time: Optional[datetime] = None  # the last timestamp before it in the same log

    @property
    def where(self) -> Optional[str]:
        """The innermost frame: file:line in function."""
        for text in reversed(self.lines):
            m = _FRAME.match(text)
            if m:
                return f"{m.group('file')}:{m.group('line')} in {m.group('func')}"
        return None


@dataclass
class Scan:
    """What one log file holds, read in one bounded pass."""

    path: str
    node_key: str
    kind: str = "other"  # worker | scheduler | msrun | plog | other
    rank: Optional[int] = None
    pids: collections.Counter = field(default_factory=collections.Counter)
    first_time: Optional[datetime] = None
    last_time: Optional[datetime] = None
    lines: int = 0
    errors: list[Event] = field(default_factory=list)
    traceback: Optional[Traceback] = None
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TAIL))
    timed_lines: list[tuple[int, datetime]] = field(default_factory=list)  # (line, time) of the tail's lines
    # msrun's own lines
    worker_exits: list[tuple[int, int, Event]] = field(default_factory=list)  # (pid, code, event)
    kill_all: Optional[Event] = None
    sched_exit: Optional[Event] = None
    start_worker: dict[int, str] = field(default_factory=dict)  # rank -> log file
    # lines of other processes in a mixed log (msrun tails every worker's log into its own output)
    pid_rank: dict[int, int] = field(default_factory=dict)
    pid_events: dict[int, list[Event]] = field(default_factory=dict)
    # scheduler
    scheduler: Optional[SchedulerLogParser] = None
    registrations: list[str] = field(default_factory=list)
    registration_times: dict[int, datetime] = field(default_factory=dict)
    node_timeouts: list[tuple[str, Event]] = field(default_factory=list)
    sched_failed: Optional[Event] = None
    topology_timeouts: int = 0
    tcp_server_failed: bool = False
    plogs: list[str] = field(default_factory=list)
    runtime_sigterm: Optional[Event] = None
    cut: int = 0  # lines cut at MAX_LINE

    @property
    def pid(self) -> Optional[int]:
        """The process that wrote most of the log's prefixed lines."""
        return self.pids.most_common(1)[0][0] if self.pids else None

    def last_before(self, when: datetime) -> Optional[tuple[int, datetime]]:
        """The last timed line of the tail at or before ``when``."""
        best = None
        for no, t in self.timed_lines:
            if t <= when:
                best = (no, t)
        return best


def parse_time(text: str) -> Optional[datetime]:
    """The first timestamp in ``text`` (MindSpore / CANN ``2026-12-02-12:37:54.433.629``, Python logging's
    ``2026-12-02 12:37:54,433``, ISO 8601), or None."""
    m = _TIME.search(text)
    if m is None:
        return None
    d, t = m.group("d"), m.group("t")
    frac = m.group("ms") or ""
    micro = int(frac.ljust(6, "0")[:6]) if len(frac) > 3 or not m.group("us") else int(frac) * 1000 + int(m.group("us"))
    try:
        return datetime(int(d[:4]), int(d[5:7]), int(d[8:10]), int(t[:2]), int(t[3:5]), int(t[6:8]), micro)
    except ValueError:
        return None


def _line_time(line: str) -> Optional[datetime]:
    """The time a line was written, when it carries one near its start."""
    p = _PREFIX.match(line)
    if p:
        return parse_time(p.group("ts"))
    return parse_time(line[:120])


# -- reading ---------------------------------------------------------------------------------------------------


def _blocks(path: Path) -> Iterator[list[str]]:
    """The file's lines, a block at a time (only a regular file; undecodable bytes replaced; long lines cut)."""
    from msdoctor.inputs import open_regular

    def lines(data: bytes) -> list[str]:
        out = data.decode("utf-8", "replace").split("\n")
        if b"\r" in data:
            out = [x.rstrip("\r") for x in out]
        if len(data) > MAX_LINE and max(map(len, out)) > MAX_LINE:
            out = [x[:MAX_LINE] for x in out]
        return out

    with open_regular(path) as fh:
        rest = b""
        while True:
            chunk = fh.read(BLOCK)
            if not chunk:
                break
            data = rest + chunk
            cut = data.rfind(b"\n")
            if cut < 0:  # no newline for a whole block: keep the line's start only
                rest = data[:MAX_LINE]
                continue
            rest = data[cut + 1 :]
            if len(rest) > MAX_LINE:
                rest = rest[:MAX_LINE]
            yield lines(data[:cut])
        if rest:
            yield lines(rest)


def _classify(path: Path) -> str:
    name = path.name
    if name == "scheduler.log":
        return "scheduler"
    if name.startswith("plog-"):
        return "plog"
    if _WORKER_NAME.search(name) and not name.startswith("scheduler"):
        return "worker"
    return "other"


def scan_file(path: Path, node_key: str = "") -> Scan:
    """Read one log in one pass; see :class:`Scan`."""
    s = Scan(str(path), node_key, kind=_classify(path))
    if s.kind == "worker":
        m = _WORKER_NAME.search(path.name)
        s.rank = int(m.group("rank")) if m else None
    s.scheduler = SchedulerLogParser() if s.kind in ("scheduler", "other") else None
    no = 0
    last_ts: Optional[datetime] = None
    pending_tb: Optional[list[Any]] = None  # [start line, lines, time] of a traceback still open
    for block in _blocks(path):
        n = len(block)
        text = "\n".join(block)
        hits: list[int] = []
        pos = idx = 0
        for at in sorted(_hit_offsets(text)):
            idx += text.count("\n", pos, at)
            pos = at
            if not hits or hits[-1] != idx:
                hits.append(idx)
        k = 0  # the next line no traceback consumed
        while pending_tb is not None and k < n:
            pending_tb = _traceback_line(s, pending_tb, block[k], no + k + 1)
            k += 1
        for i in hits:
            if i < k:
                continue
            line = block[i]
            ln = no + i + 1
            if _GREP_COPY.match(line):
                continue
            t = _line_time(line) or _time_before(block, i) or last_ts
            if line.startswith("Traceback (most recent call last)") and s.traceback is None:
                pending_tb = [ln, [line.strip()], t]
                k = i + 1
                while pending_tb is not None and k < n:
                    pending_tb = _traceback_line(s, pending_tb, block[k], no + k + 1)
                    k += 1
                continue
            _event_line(s, line, ln, t)
        if s.first_time is None:
            s.first_time = next((t for t in map(_line_time, block[:50]) if t is not None), None)
        for line in block[:200]:
            p = _PREFIX.match(line)
            if p:
                s.pids[int(p.group("pid"))] += 1
        for k in range(max(0, n - TAIL), n):
            s.tail.append((no + k + 1, block[k]))
        last_ts = _time_before(block, n) or last_ts
        no += n
    s.lines = no
    if pending_tb is not None:  # the file ended inside a traceback
        _finish_traceback(s, pending_tb, pending_tb[1][-1], no)
    s.last_time = last_ts
    s.timed_lines = [(k, t) for k, line in s.tail if (t := _line_time(line)) is not None]
    if s.kind == "other":
        if s.worker_exits or s.start_worker or s.kill_all:
            s.kind = "msrun"
        elif s.scheduler is not None and (s.scheduler.summary.registered or s.node_timeouts):
            s.kind = "scheduler"
    if s.kind == "other" and len(s.pid_rank) == 1:  # one process's log that names its rank (a run directory)
        pid, s.rank = next(iter(s.pid_rank.items()))
        s.kind = "worker"
        s.errors = sorted(s.pid_events.pop(pid, []) + s.errors, key=lambda e: e.line)[:MAX_ERRORS]
    return s


def _offset_line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset)


def _time_before(block: list[str], i: int, reach: int = 50) -> Optional[datetime]:
    for k in range(i - 1, max(-1, i - 1 - reach), -1):
        t = _line_time(block[k])
        if t is not None:
            return t
    return None


def _traceback_line(s: Scan, tb: list[Any], line: str, ln: int) -> Optional[list[Any]]:
    """Add a line to an open traceback; None once it ended (the exception line)."""
    stripped = line.rstrip()
    if (
        stripped.startswith((" ", "\t"))
        or not stripped
        or stripped.startswith(("During handling", "The above"))
        or stripped.startswith("Traceback (most recent call last)")
    ):
        if len(tb[1]) < MAX_TRACEBACK:
            tb[1].append(stripped)
        return tb
    _finish_traceback(s, tb, stripped, ln)
    return None


def _finish_traceback(s: Scan, tb: list[Any], last: str, ln: int) -> None:
    s.traceback = Traceback(s.path, tb[0], tb[1], last.strip()[:2000], ln, tb[2])


def _event_line(s: Scan, line: str, ln: int, t: Optional[datetime]) -> None:
    p = _PREFIX.match(line)
    pid = int(p.group("pid")) if p else None
    level = p.group("level") if p else None
    ev = Event(s.path, ln, line.strip()[:2000], t, pid, level)
    if pid is not None and "rank id: " in line and (m := _RANK_ID.search(line)):
        s.pid_rank[pid] = int(m.group("rank"))
    if _RUNTIME_SIGTERM in line:
        s.runtime_sigterm = s.runtime_sigterm or ev
        return
    if ", pid " in line and (m := _SELF.search(line)):
        s.pid_rank[int(m.group("pid"))] = int(m.group("rank"))
        s.pids[int(m.group("pid"))] += 1
        return
    if "exit with exception" in line and (m := _WORKER_EXIT.search(line)):
        s.worker_exits.append((int(m.group("pid")), int(m.group("code")), ev))
        return
    if _KILL_ALL in line:
        s.kill_all = s.kill_all or ev
        return
    if "Scheduler process" in line and _SCHED_EXIT.search(line):
        s.sched_exit = s.sched_exit or ev
        return
    if "Time out nodes are" in line:
        return
    if "Start worker process" in line and (m := _START_WORKER.search(line)):
        s.start_worker[int(m.group("rank"))] = m.group("log").strip()
        return
    if (
        s.scheduler is not None
        and ("registered successfully" in line or "is timed out" in line)
        and _scheduler_line(s, s.scheduler, line, ln, t, ev)
    ):
        return
    if "Topology build timed out" in line and TOPO_TIMEOUT.search(line):
        s.topology_timeouts += 1
        return
    if SCHED_FAILED in line and s.sched_failed is None:
        s.sched_failed = ev
    if TCP_SERVER in line:
        s.tcp_server_failed = True
    if len(s.plogs) < 4 and "plog" in line and (m := _PLOG.search(line)):
        s.plogs.append(m.group("path"))
    if level in ("ERROR", "CRITICAL") or _is_error_text(line):
        if pid is not None and s.kind == "other" and "process_entity" not in line:
            bucket = s.pid_events.setdefault(pid, [])
            if len(bucket) < MAX_ERRORS:
                bucket.append(ev)
            return
        if len(s.errors) < MAX_ERRORS:
            s.errors.append(ev)


def _scheduler_line(s: Scan, sched: SchedulerLogParser, line: str, ln: int, t: Optional[datetime], ev: Event) -> bool:
    """A scheduler's registration or node-timeout line fed to its summary (``sched``, s.scheduler); False when the
    summary did not take it (the line goes on to the generic rules)."""
    before = len(sched.summary.timed_out)
    if not sched.feed(line, ln):
        return False
    if "registered successfully" in line:
        if len(s.registrations) < 65536:
            s.registrations.append(line.strip())
        node = list(sched.summary.registered.values())[-1]
        if t is not None and node.rank is not None:
            s.registration_times[node.rank] = t
    elif len(sched.summary.timed_out) > before:
        s.node_timeouts.append((sched.summary.timed_out[-1], ev))
    return True


def _is_error_text(line: str) -> bool:
    return bool(
        COLLECTIVE_TIMEOUT.search(line)
        or CLUSTER_NOT_FORMED.search(line)
        or re.search(r"\bE[A-Z0-9]\d{4}:|Fatal Python error|Segmentation fault|terminate called", line)
    )


# -- collecting the job's files ----------------------------------------------------------------------------------


def _refuse(
    path: Path, why: str, fix: str = "pass msrun's --log_dir (or a directory of node directories)"
) -> UserError:
    return UserError(f"--log-dir {path}: {why}", fix)


def collect(paths: Sequence[Path], notes: Optional[list[str]] = None) -> list[tuple[Path, str]]:
    """(file, node key) for every log of the job: each directory's regular log files, and those of its
    sub-directories (one per node). UserError (exit 2) for a path that cannot be read, and when no path holds a
    log; a directory without logs among others that have some is a note (that node wrote nothing)."""
    out: list[tuple[Path, str]] = []
    empty: list[Path] = []
    for given in paths:
        path = Path(given).expanduser()
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise _refuse(path, "no such file or directory") from None
        except PermissionError:
            raise _refuse(path, "permission denied", "make it readable") from None
        except OSError as exc:
            raise _refuse(path, f"cannot read: {exc.strerror or exc}") from None
        if stat.S_ISREG(st.st_mode):
            out.append((path, str(path.parent)))
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(path, "not a regular file or a directory: msdoctor reads only regular files")
        found = _dir_logs(path, str(path))
        for sub in _subdirs(path):
            found += _dir_logs(sub, str(sub))
        if not found:
            empty.append(path)
        out += found
        if len(out) > MAX_FILES:
            raise _refuse(path, f"more than {MAX_FILES} log files", "pass the job's log directories only")
    looked = f"no log file in it (looked for *{', *'.join(LOG_SUFFIXES)} here and one level down)"
    if empty and not out:
        raise _refuse(empty[0], looked)
    for path in empty:
        if notes is not None:
            notes.append(f"{path}: {looked}: that node wrote nothing")
    seen: set[str] = set()
    unique = []
    for f, key in out:
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            unique.append((f, key))
    return unique


def _entries(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return sorted(itertools.islice(it, MAX_FILES + 1), key=lambda e: e.name)
    except PermissionError:
        raise _refuse(path, "permission denied (cannot list it)", "make it readable") from None
    except OSError as exc:
        raise _refuse(path, f"cannot list it: {exc.strerror or exc}") from None


def _dir_logs(path: Path, key: str) -> list[tuple[Path, str]]:
    out = []
    for e in _entries(path):
        try:
            if e.is_file() and e.name.endswith(LOG_SUFFIXES):  # follows links; open_regular checks again
                out.append((Path(e.path), key))
        except OSError:
            continue
    return out


def _subdirs(path: Path) -> list[Path]:
    out = []
    for e in _entries(path):
        try:
            if e.is_dir():
                out.append(Path(e.path))
        except OSError:
            continue
    return out


def _plog_files(named: str, pids: set[int]) -> list[Path]:
    """The regular plog files a log names: the file itself, or under the directory the plogs of the job's
    processes (plog-PID_*.log), at most MAX_PLOGS per process."""
    path = Path(named).expanduser()
    try:
        if path.is_file():
            return [path]
        if not path.is_dir():
            return []
        mine: dict[int, list[Path]] = {}
        for p in itertools.islice(path.rglob("plog-*.log"), 100000):
            m = _PLOG_NAME.match(p.name)
            if m and int(m.group("pid")) in pids and p.is_file():
                mine.setdefault(int(m.group("pid")), []).append(p)
    except OSError:
        return []
    return [p for files in mine.values() for p in sorted(files)[-MAX_PLOGS:]]


# -- the analysis ------------------------------------------------------------------------------------------------


@dataclass
class Rank:
    rank: int
    node_rank: Optional[int]
    log: Optional[Scan]
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    exit_event: Optional[Event] = None
    errors: list[Event] = field(default_factory=list)
    traceback: Optional[Traceback] = None

    def events(self) -> list[Event]:
        """Its error lines and its traceback's exception, in the order of its log."""
        evs = list(self.errors) + ([_tb_event(self.traceback)] if self.traceback else [])
        return sorted(evs, key=lambda e: (e.log != (self.log.path if self.log else e.log), e.line))

    def first(self) -> tuple[Optional[str], Optional[Event]]:
        """What its first error is: "own" (it failed by itself), "wait" (a collective timed out waiting for
        another rank) or "not-formed" (the cluster never formed); whatever follows in its log is downstream."""
        evs = self.events()
        lost = [e for e in evs if not SCHEDULER_LOST.search(e.text)]
        evs = lost or evs  # a rank that only lost the scheduler keeps those lines as its own
        if not evs:
            return None, None
        # an error is often a block: "Call runtime ... error." with the reason on the lines below it
        head = evs[0]
        block = [e for e in evs if e.log == head.log and head.line <= e.line <= head.line + BLOCK_LINES]
        for e in block:
            if COLLECTIVE_TIMEOUT.search(e.text):
                return "wait", e
        for e in block:
            if CLUSTER_NOT_FORMED.search(e.text):
                return "not-formed", e
        if SCHEDULER_TIMEOUT.search(head.text):
            return "scheduler", head
        return "own", head

    @property
    def waiting(self) -> Optional[Event]:
        kind, e = self.first()
        return e if kind == "wait" else None

    @property
    def not_formed(self) -> Optional[Event]:
        kind, e = self.first()
        return e if kind == "not-formed" else None


def _tb_event(tb: Traceback) -> Event:
    return Event(tb.log, tb.exception_line, tb.exception, tb.time)


@dataclass
class FirstFailure:
    rank: Optional[int]
    node_rank: Optional[int]
    time: Optional[datetime]
    log: Optional[str]
    line: Optional[int]
    error: str
    how: str  # traceback | signal | exit | hang | never-started | error
    detail: list[str] = field(default_factory=list)
    cause: Optional[str] = None
    fix: Optional[str] = None
    explained_by: Optional[str] = None  # the catalogue entry
    ranks: list[int] = field(default_factory=list)


@dataclass
class Consequence:
    kind: str
    rank: Optional[int]
    node_rank: Optional[int]
    time: Optional[datetime]
    log: Optional[str]
    line: Optional[int]
    text: str


@dataclass
class PostMortem:
    sources: list[str]
    world: Optional[int]
    per_node: Optional[int]
    ranks: dict[int, Rank]
    first_failure: Optional[FirstFailure]
    consequences: list[Consequence]
    clock_notes: list[str]
    notes: list[str]
    failed: bool

    def to_json(self) -> dict[str, Any]:
        ff = self.first_failure

        def t(x: Optional[datetime]) -> Optional[str]:
            return x.isoformat(timespec="milliseconds") if x else None

        return {
            "kind": "msdoctor-postmortem",
            "logs": self.sources,
            "world_size": self.world,
            "workers_per_node": self.per_node,
            "failed": self.failed,
            "first_failure": None
            if ff is None
            else {
                "rank": ff.rank,
                "node_rank": ff.node_rank,
                "time": t(ff.time),
                "log": ff.log,
                "line": ff.line,
                "error": ff.error,
                "how": ff.how,
                "detail": ff.detail,
                "cause": ff.cause,
                "fix": ff.fix,
                "catalogue_entry": ff.explained_by,
                "ranks": ff.ranks,
            },
            "consequences": [
                {
                    "kind": c.kind,
                    "rank": c.rank,
                    "node_rank": c.node_rank,
                    "time": t(c.time),
                    "log": c.log,
                    "line": c.line,
                    "text": c.text,
                }
                for c in self.consequences
            ],
            "clocks": self.clock_notes,
            "notes": self.notes,
        }

    def lines(self, width: int = 110) -> list[str]:
        """The terminal view: one screen (about 25 lines) whatever the number of ranks."""
        from .cluster import ranks_text

        def clip(s: str, n: int = width) -> str:
            lead = s[: len(s) - len(s.lstrip())]
            s = lead + " ".join(s.split())
            return s if len(s) <= n else s[: n - 1] + "…"

        def when(x: Optional[datetime]) -> str:
            return x.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if x else "time unknown"

        nodes = {r.node_rank for r in self.ranks.values() if r.node_rank is not None}
        if self.world and self.per_node:
            nodes |= set(range(-(-self.world // self.per_node)))
        head = f"Post-mortem of the msrun job in {', '.join(self.sources[:3])}" + (
            " ..." if len(self.sources) > 3 else ""
        )
        size = (f"{self.world} ranks" if self.world else f"{len(self.ranks)} rank logs") + (
            f" on {len(nodes)} node{'s' if len(nodes) != 1 else ''}" if nodes else ""
        )
        out = [clip(head), f"  {size}"]
        ff = self.first_failure
        if ff is None:
            out.append("No failure found: " + ("; ".join(self.notes) if self.notes else "no rank failed"))
            return out
        who = (
            f"rank {ff.rank}"
            if ff.rank is not None and not ff.ranks[1:]
            else f"ranks {ranks_text(ff.ranks)}"
            if ff.ranks
            else "the cluster"
        )
        where = f" (node_rank {ff.node_rank})" if ff.node_rank is not None else ""
        out.append(clip(f"First failure: {who}{where} at {when(ff.time)}"))
        out.append("  " + clip(ff.error, width - 2))
        if ff.log:
            out.append("    " + clip(f"log: {ff.log}" + (f":{ff.line}" if ff.line else ""), width - 4))
        for d in ff.detail[:3]:
            out.append("    " + clip(d, width - 4))
        for label, value in (("cause: ", ff.cause), ("fix:   ", ff.fix)):
            if value:
                wrapped = textwrap.wrap(" ".join(value.split()), width - 9, max_lines=3, placeholder=" …")
                out += [("  " + label if k == 0 else " " * 9) + w for k, w in enumerate(wrapped)]
        if not ff.cause and not ff.fix:
            out.append(
                "  cause: not in msdoctor's error catalogue; read the traceback from its innermost frame"
                if ff.how == "traceback"
                else "  cause: not in msdoctor's error catalogue"
            )
        if self.consequences:
            out.append(f"Consequences ({len(self.consequences)}):")
            groups: dict[str, list[Consequence]] = {}
            for c in self.consequences:
                groups.setdefault(c.kind, []).append(c)
            for kind, cs in groups.items():
                rs = sorted({c.rank for c in cs if c.rank is not None})
                first = min((c.time for c in cs if c.time), default=None)
                who = f"rank {rs[0]}" if len(rs) == 1 else f"ranks {ranks_text(rs)}" if rs else "the scheduler"
                out.append(clip(f"  {who}: {KINDS[kind]}" + (f", from {when(first)[11:]}" if first else "")))
                sample = cs[0]
                out.append(
                    "    e.g. "
                    + clip(
                        f"{Path(sample.log).name if sample.log else ''}:{sample.line}: {_strip_prefix(sample.text)}",
                        width - 9,
                    )
                )
        for note in (self.clock_notes + self.notes)[:3]:
            out.append(clip(note))
        return out


_SOURCE = re.compile(r"^\s*\[[^\]]*\]\s*(?:\w+\]\s*)?")


def _strip_prefix(text: str) -> str:
    """A log line without MindSpore's prefix and source location: what it says."""
    p = _PREFIX.match(text)
    return _SOURCE.sub("", text[p.end() :], count=1) if p else text


def analyse(paths: Sequence[Path], python: Optional[str] = None) -> PostMortem:
    """Read every log of the job under ``paths`` and name the first failure (see the module's docstring)."""
    notes: list[str] = []
    files = collect(paths, notes)
    scans = [scan_file(f, key) for f, key in files]
    named = {p for s in scans for p in s.plogs}
    seen = {os.path.realpath(s.path) for s in scans}
    pids = {pid for s in scans for pid in ([s.pid] if s.kind == "worker" and s.pid else []) + list(s.pid_rank)}
    for p in sorted(named):
        for f in _plog_files(p, pids):
            if os.path.realpath(f) not in seen:
                seen.add(os.path.realpath(f))
                scans.append(scan_file(f, str(f.parent)))
    return build(scans, [str(Path(p)) for p in paths], python, notes)


def build(
    scans: list[Scan], sources: list[str], python: Optional[str] = None, notes: Optional[list[str]] = None
) -> PostMortem:
    """The post-mortem of scanned logs (:func:`analyse` reads them)."""
    scheds = [s for s in scans if s.kind == "scheduler"]
    msruns = [s for s in scans if s.kind == "msrun"]
    workers = [s for s in scans if s.kind == "worker"]
    plogs = [s for s in scans if s.kind == "plog"]
    notes = list(notes or [])

    _name_worker_ranks(workers, msruns)
    sched = scheds[0] if scheds else None
    summary = sched.scheduler.summary if sched and sched.scheduler else None
    world = summary.expected if summary and summary.expected else None
    per_node = _per_node(summary, world, workers)

    def node_of(rank: Optional[int]) -> Optional[int]:
        return rank // per_node if rank is not None and per_node else None

    ranks, pid_to_rank = _ranks(workers, msruns, plogs, node_of, notes)
    killed_at = _exits(msruns, ranks, pid_to_rank, notes)
    if world is None and ranks:
        world = max(ranks) + 1 if set(ranks) == set(range(max(ranks) + 1)) else None

    clock_notes, offsets = _clocks(ranks, sched, node_of)
    for one in ranks.values():
        _shift(one, offsets.get(one.node_rank, 0.0))

    ff = _first_failure(ranks, summary, sched, per_node, node_of, python)
    failed = ff is not None or _failed_anyway(ranks, msruns, sched)
    if ff is None and failed:
        notes.append(
            "the logs show errors but none that names a failed rank; `msdoctor explain --log FILE` on each "
            "worker log explains its own errors"
        )
    consequences = _consequences(ranks, ff, sched, msruns, node_of, killed_at) if ff else []
    if not ranks and not sched:
        notes.append("no msrun worker or scheduler log among the files read")
    return PostMortem(sources, world, per_node, ranks, ff, consequences, clock_notes, notes, failed)


def _name_worker_ranks(workers: list[Scan], msruns: list[Scan]) -> None:
    """The rank of each worker log: its file name (msrun names them worker_<rank>.log with --node_rank), else its
    own "This node N rank id: R" line, else msrun's "Start worker process with rank id:R, log file:PATH"."""
    by_log = {os.path.basename(p): r for m in msruns for r, p in m.start_worker.items()}
    for w in workers:
        if w.pid_rank and w.pid in w.pid_rank:
            w.rank = w.pid_rank[w.pid]
        elif w.rank is None and os.path.basename(w.path) in by_log:
            w.rank = by_log[os.path.basename(w.path)]


def _per_node(summary: Optional[SchedulerSummary], world: Optional[int], workers: list[Scan]) -> Optional[int]:
    """Workers per node: from the scheduler's registrations, else from equal counts of ranked logs per node."""
    per_node = workers_per_node(summary.registered.values(), world) if summary else None
    if per_node is None:
        counts = collections.Counter(w.node_key for w in workers if w.rank is not None)
        sizes = set(counts.values())
        if len(counts) > 1 and len(sizes) == 1:
            per_node = sizes.pop()
        elif len(counts) == 1 and world is None:
            per_node = next(iter(counts.values()))
    return per_node


def _ranks(
    workers: list[Scan],
    msruns: list[Scan],
    plogs: list[Scan],
    node_of: Callable[[Optional[int]], Optional[int]],
    notes: list[str],
) -> tuple[dict[int, Rank], dict[int, int]]:
    """Every rank the logs show (its worker logs merged, msrun's copy of its output, its plogs) and pid -> rank."""
    ranks: dict[int, Rank] = {}
    for w in workers:
        if w.rank is None:
            notes.append(f"{w.path}: no rank id in its name or lines; left out")
            continue
        if w.rank in ranks:  # msrun's capture of the process's output and the process's own log: one rank
            _merge(ranks[w.rank], w)
            continue
        ranks[w.rank] = Rank(w.rank, node_of(w.rank), w, w.pid, errors=list(w.errors), traceback=w.traceback)
    pid_to_rank = {r.pid: r.rank for r in ranks.values() if r.pid is not None}
    # msrun's copy of the workers' output: ranks without a log of their own, and pids named by "rank id" lines
    for m in msruns:
        for pid, rank in m.pid_rank.items():
            pid_to_rank.setdefault(pid, rank)
            if rank not in ranks:
                ranks[rank] = Rank(rank, node_of(rank), None, pid, errors=list(m.pid_events.get(pid, [])))
    for p in plogs:  # a plog belongs to the rank whose process wrote it (its name and its lines carry the pid)
        named_pid = _PLOG_NAME.match(os.path.basename(p.path))
        plog_pid = int(named_pid.group("pid")) if named_pid else p.pid
        owner = pid_to_rank.get(plog_pid) if plog_pid is not None else None
        if owner is not None and owner in ranks:
            ranks[owner].errors += p.errors[:MAX_ERRORS]
        else:
            notes.append(f"{p.path}: a plog of pid {plog_pid}, which is no rank's process here")
    return ranks, pid_to_rank


def _exits(
    msruns: list[Scan], ranks: dict[int, Rank], pid_to_rank: dict[int, int], notes: list[str]
) -> dict[str, Event]:
    """Each rank's exit code as msrun reports it; returns, per node, msrun's "kill all" event."""
    killed_at: dict[str, Event] = {}
    for m in msruns:
        for pid, code, ev in m.worker_exits:
            r = pid_to_rank.get(pid)
            if r is None:
                notes.append(f"{m.path}:{ev.line}: msrun names worker pid {pid}, which no log here belongs to")
                continue
            ranks[r].exit_code, ranks[r].exit_event = code, ev
        if m.kill_all:
            killed_at[m.node_key] = m.kill_all
    return killed_at


def _failed_anyway(ranks: dict[int, Rank], msruns: list[Scan], sched: Optional[Scan]) -> bool:
    """The logs show a failure even where none names the first failed rank."""
    return (
        any(r.errors or r.traceback or (r.exit_code not in (None, 0)) for r in ranks.values())
        or any(m.worker_exits or m.sched_exit for m in msruns)
        or bool(sched and (sched.node_timeouts or sched.sched_failed))
    )


def _merge(r: Rank, other: Scan) -> None:
    """A second log of the same rank: its pid, errors and traceback count too; the log with the traceback leads."""
    r.pid = r.pid or other.pid
    r.errors = sorted(r.errors + other.errors, key=lambda e: (e.log, e.line))[: 2 * MAX_ERRORS]
    if r.traceback is None and other.traceback is not None:
        r.traceback, r.log = other.traceback, other
    elif r.log is not None and r.log.last_time is None and other.last_time is not None and r.traceback is None:
        r.log = other


def _shift(r: Rank, seconds: float) -> None:
    if not seconds:
        return
    d = timedelta(seconds=seconds)
    for e in r.errors:
        e.time = e.time - d if e.time else None
    if r.traceback and r.traceback.time:
        r.traceback.time -= d


def _clocks(ranks: dict[int, Rank], sched: Optional[Scan], node_of: Any) -> tuple[list[str], dict[Any, float]]:
    """Whether each node's clock agrees with the scheduler's: a worker cannot register before its log begins, and
    the scheduler reports a node timed out only after the node's last line. Returns notes and, per node_rank,
    the seconds by which its clock runs ahead (its events are moved back by that much)."""
    if sched is None:
        return [], {}
    ahead: dict[Any, float] = {}
    for r in ranks.values():
        if r.log is None or r.log.first_time is None:
            continue
        reg = sched.registration_times.get(r.rank)
        if reg is not None:
            lead = (r.log.first_time - reg).total_seconds()  # > 0: the worker's clock is ahead
            if lead > SKEW_TOLERANCE:
                ahead[r.node_rank] = max(ahead.get(r.node_rank, 0.0), lead)
    for node_id, ev in sched.node_timeouts:
        dead = ranks.get(int(node_id)) if node_id.isdigit() else None
        if dead is None or dead.log is None or ev.time is None or dead.log.last_time is None:
            continue
        lag = (ev.time - dead.log.last_time).total_seconds()  # < 0: the worker wrote after it was declared dead
        if lag < -SKEW_TOLERANCE:
            ahead[dead.node_rank] = max(ahead.get(dead.node_rank, 0.0), -lag)
    notes = [
        f"clocks disagree: node_rank {n}'s clock runs at least {s:.0f} s ahead of the scheduler's (its log starts "
        f"after the scheduler registered it, or goes on after the scheduler declared it dead); its times are "
        f"moved back by {s:.0f} s to order the events"
        for n, s in sorted(ahead.items(), key=lambda kv: str(kv[0]))
    ]
    return notes, ahead


def _explain(text: str, python: Optional[str]) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """explain's cause and fix for an error text (msdoctor.explain, the offline catalogue)."""
    from msdoctor.explain import explain_text

    matches = explain_text(text)
    if not matches:
        return None, None, None
    specific = [m for m in matches if m.category != "msrun"] or matches
    m = specific[0]
    return m.cause, m.fix_for(python), m.entry_id


def _first_failure(
    ranks: dict[int, Rank],
    summary: Any,
    sched: Optional[Scan],
    per_node: Optional[int],
    node_of: Any,
    python: Optional[str],
) -> Optional[FirstFailure]:
    from .cluster import ranks_text

    # 1. ranks that never registered: the cluster never formed, nothing else could run
    missing = summary.missing_ranks if summary is not None else None
    if missing and sched is not None and (sched.sched_failed or sched.topology_timeouts or not summary.complete):
        nodes = summary.missing_nodes(per_node)
        node = min(nodes) if nodes else None
        cause, fix, entry = _explain("\n".join(sched.registrations), python)
        first_reg = min(sched.registration_times.values(), default=None)
        where = (
            ", ".join(f"node_rank {n} (ranks {ranks_text(rs)})" for n, rs in sorted(nodes.items()))
            if nodes
            else f"ranks {ranks_text(missing)}"
        )
        return FirstFailure(
            missing[0],
            node,
            first_reg,
            sched.path,
            sched.sched_failed.line if sched.sched_failed else None,
            f"{where} never registered with the scheduler ({len(summary.registered)} of {summary.expected} did): "
            "that node's msrun never started, or its workers could not reach the scheduler",
            "never-started",
            [f"the scheduler gave up at {_hms(sched.sched_failed.time)}: {_strip_prefix(sched.sched_failed.text)}"]
            if sched.sched_failed
            else [],
            cause,
            fix,
            entry,
            list(missing),
        )
    # 2. a rank with an error of its own, or one that died without one (a signal), earliest first
    candidates: list[tuple[datetime, int, FirstFailure]] = []
    for r in ranks.values():
        f = _own_failure(r, python)
        if f is not None:
            candidates.append((f.time or datetime.max, r.rank, f))
    waiting = [r for r in ranks.values() if r.waiting]
    first_wait = min((r.waiting.time for r in waiting if r.waiting and r.waiting.time), default=None)
    if candidates:
        best = min(candidates, key=lambda c: (c[0], c[1]))
        # a rank that died after the others had already timed out waiting died of it (the runtime ends a process
        # whose cluster failed, e.g. "Kill this process with SIGTERM"): the wait came first
        if first_wait is None or best[0] <= first_wait + timedelta(seconds=SKEW_TOLERANCE):
            return best[2]
    late = {c[1] for c in candidates}
    # 3. every first error is a wait for another rank: the rank that stopped without an error is the one waited for
    if waiting:
        peers = collections.Counter(
            int(next(g for g in m.groups() if g is not None))
            for r in waiting
            for e in [r.waiting]
            if e
            for m in [_PEER.search(e.text)]
            if m
        )
        quiet = [
            r for r in ranks.values() if not r.waiting and not r.not_formed and (r.first()[0] is None or r.rank in late)
        ]
        named = [r for r in quiet if peers.get(r.rank)] or quiet
        if named:
            r = min(named, key=lambda x: (-peers.get(x.rank, 0), x.rank))
            last = r.log.last_before(first_wait) if r.log and first_wait else None
            line, t = last if last else (None, None)
            detail = []
            if peers.get(r.rank):
                detail.append(f"{peers[r.rank]} waiting rank(s) name rank {r.rank} as the peer they wait for")
            text = (
                f"rank {r.rank} stopped making progress without an error (a hang): the other ranks' collectives "
                f"timed out waiting for it"
            )
            if r.log and r.log.tail:
                detail.append(f"its last line before the others timed out: {_strip_prefix(_last_line(r.log, line))}")
            return FirstFailure(
                r.rank,
                r.node_rank,
                t,
                r.log.path if r.log else None,
                line,
                text,
                "hang",
                detail,
                "the rank was blocked (a dataloader or file-system stall, a deadlock, a long host-side "
                "step such as checkpoint saving or evaluation, or a collective the others never "
                "issued), so every collective that needs it waited until its timeout",
                "find what rank's process was doing at that time: py-spy dump --pid PID on a live "
                "hang, or its own log lines just before; make every rank issue the same collectives "
                "in the same order; raise HCCL_EXEC_TIMEOUT only for steps that are legitimately long",
                None,
                [r.rank],
            )
        w = min(waiting, key=lambda x: (x.waiting.time or datetime.max, x.rank))  # type: ignore[union-attr]
        e = w.waiting
        assert e is not None
        cause, fix, entry = _explain(e.text, python)
        return FirstFailure(
            w.rank,
            w.node_rank,
            e.time,
            e.log,
            e.line,
            _strip_prefix(e.text),
            "error",
            ["every rank reports a collective timeout: the rank that stopped first is not in these logs"],
            cause,
            fix,
            entry,
            [w.rank],
        )
    # 4. the cluster never formed and no rank even registered (the scheduler cannot say who was missing)
    formed = [r for r in ranks.values() if r.not_formed]
    if sched is not None and sched.sched_failed is not None and (formed or not ranks) and not summary.registered:
        e = formed[0].not_formed if formed else sched.sched_failed
        assert e is not None
        cause, fix, entry = _explain(e.text, python)
        return FirstFailure(
            None,
            None,
            sched.sched_failed.time,
            sched.path,
            sched.sched_failed.line,
            "the cluster never formed: no worker registered with the scheduler before --cluster_time_out "
            "(the workers started too late or could not reach the scheduler's address and port)",
            "never-started",
            [f"the scheduler gave up at {_hms(sched.sched_failed.time)}: {_strip_prefix(sched.sched_failed.text)}"],
            cause,
            fix,
            entry,
            [],
        )
    return None


def _hms(t: Optional[datetime]) -> str:
    return t.strftime("%H:%M:%S") if t else "an unknown time"


def _last_line(scan: Scan, line: Optional[int]) -> str:
    for no, text in scan.tail:
        if line is not None and no == line:
            return text
    return scan.tail[-1][1] if scan.tail else ""


def _own_failure(r: Rank, python: Optional[str]) -> Optional[FirstFailure]:
    kind, first = r.first()
    if kind == "own" and first is not None:
        tb = r.traceback
        if tb is not None:  # the traceback says more than an error line above it
            cause, fix, entry = _explain("\n".join(tb.lines + [tb.exception]), python)
            detail = [f"at {tb.where}"] if tb.where else []
            if r.exit_code is not None:
                detail.append(f"msrun: worker pid {r.pid} exited with code {r.exit_code}")
            times = [x for x in (tb.time, first.time) if x is not None]
            return FirstFailure(
                r.rank,
                r.node_rank,
                min(times) if times else None,
                tb.log,
                tb.exception_line,
                tb.exception,
                "traceback",
                detail,
                cause,
                fix,
                entry,
                [r.rank],
            )
        cause, fix, entry = _explain(first.text, python)
        return FirstFailure(
            r.rank,
            r.node_rank,
            first.time,
            first.log,
            first.line,
            _strip_prefix(first.text),
            "error",
            [],
            cause,
            fix,
            entry,
            [r.rank],
        )
    if kind is not None:
        return None
    if r.exit_code == -15 and r.log is not None and r.log.runtime_sigterm is not None:
        return None  # its runtime ended it because the cluster failed: a consequence (see _consequences)
    if r.exit_code is not None and r.exit_code != 0 and r.exit_event is not None:
        last = r.log.tail[-1] if r.log and r.log.tail else None
        t = r.log.last_time if r.log and r.log.last_time else r.exit_event.time
        detail = [f"msrun: worker pid {r.pid} exit code {r.exit_code} ({r.exit_event.log}:{r.exit_event.line})"]
        if last:
            detail.append(f"its log ends with no traceback; last line {last[0]}: {_strip_prefix(last[1])}")
        sig = -r.exit_code if r.exit_code < 0 else r.exit_code - 128 if r.exit_code > 128 else None
        if sig is not None:
            import signal as _signal

            try:
                name = _signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            error = f"killed by {name} (signal {sig}) with no traceback"
            cause, fix, entry = _explain(r.exit_event.text, python)
            if sig == 9:
                cause = (
                    "SIGKILL cannot be caught, so the process printed nothing. What usually sends it: the kernel's "
                    "OOM killer when the host ran out of memory, the cluster scheduler (a time limit, preemption, "
                    "a cgroup memory limit), or someone's kill -9"
                )
                node = f"node_rank {r.node_rank}" if r.node_rank is not None else "that node"
                fix = (
                    f"on {node}: `dmesg -T | grep -i -E 'killed process|out of memory'` (or `journalctl -k`) around "
                    f"{t.strftime('%H:%M:%S') if t else 'that time'} names an OOM kill and the process; ask the "
                    "scheduler for the job's end reason (e.g. `sacct -j JOB -o State,ExitCode`); if it was memory, "
                    "lower the per-rank host memory (dataset workers, prefetch) or give the job more"
                )
                entry = None
            return FirstFailure(
                r.rank,
                r.node_rank,
                t,
                r.log.path if r.log else r.exit_event.log,
                last[0] if last else r.exit_event.line,
                error,
                "signal",
                detail,
                cause,
                fix,
                entry,
                [r.rank],
            )
        return FirstFailure(
            r.rank,
            r.node_rank,
            t,
            r.log.path if r.log else r.exit_event.log,
            last[0] if last else r.exit_event.line,
            f"exited with code {r.exit_code} and no traceback or error line",
            "exit",
            detail,
            None,
            None,
            None,
            [r.rank],
        )
    return None


def _consequences(
    ranks: dict[int, Rank],
    ff: FirstFailure,
    sched: Optional[Scan],
    msruns: list[Scan],
    node_of: Any,
    killed_at: dict[str, Event],
) -> list[Consequence]:
    out: list[Consequence] = []
    first = set(ff.ranks)
    one_dir = len({r.log.node_key for r in ranks.values() if r.log}) <= 1
    for r in sorted(ranks.values(), key=lambda x: x.rank):
        if r.rank in first:
            continue
        log = r.log.path if r.log else None
        e = r.waiting
        if e is not None:
            out.append(Consequence("collective-timeout", r.rank, r.node_rank, e.time, e.log, e.line, e.text))
            continue
        e = r.not_formed
        if e is not None:
            out.append(Consequence("cluster-not-formed", r.rank, r.node_rank, e.time, e.log, e.line, e.text))
            continue
        kind, e = r.first()
        if kind == "scheduler" and e is not None:
            out.append(Consequence("scheduler-timeout", r.rank, r.node_rank, e.time, e.log, e.line, e.text))
            continue
        ended = r.log.runtime_sigterm if r.log else None
        if ended is not None and r.first()[0] is None:
            out.append(
                Consequence("ended-by-runtime", r.rank, r.node_rank, ended.time, ended.log, ended.line, ended.text)
            )
            continue
        f = _own_failure(r, None)
        if f is not None:
            out.append(Consequence("later-error", r.rank, r.node_rank, f.time, f.log, f.line, f.error))
            continue
        kill = killed_at.get(r.log.node_key) if r.log else None
        if kill is None and len(killed_at) == 1 and one_dir:  # msrun's output kept apart from its --log_dir
            kill = next(iter(killed_at.values()))
        if kill is not None and r.exit_code is None:
            last = r.log.tail[-1] if r.log and r.log.tail else (None, "")
            out.append(
                Consequence(
                    "killed-by-msrun",
                    r.rank,
                    r.node_rank,
                    kill.time,
                    log,
                    last[0],
                    f"log ends without an error (last line {last[0]}); {kill.log}:{kill.line}: "
                    f"{_strip_prefix(kill.text)}",
                )
            )
    if sched is not None:
        for node_id, ev in sched.node_timeouts:
            rank = int(node_id) if node_id.isdigit() else None
            out.append(Consequence("scheduler-timeout", rank, node_of(rank), ev.time, ev.log, ev.line, ev.text))
        if sched.sched_failed is not None:
            ev = sched.sched_failed
            out.append(Consequence("cluster-not-formed", None, None, ev.time, ev.log, ev.line, ev.text))
    out.sort(key=lambda c: (c.time or datetime.max, c.rank if c.rank is not None else -1))
    return out
