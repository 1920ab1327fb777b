"""The trainer's supervision for ``msdoctor train``: start it under proc's parent-death supervisor, pass on
Ctrl-C and SIGTERM so it can save a checkpoint, keep its stderr (redacted) and pick out its one-message
errors; after a failure, the end of its logs and a likely cause."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from msdoctor.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.redact import Redactor

LOG_TAIL_LINES = 40
#: a MindSpore log record below WARNING: ``[INFO] PS(9312,7f72...,python):2026-12-02-13:28:12.222.073 [file:line] ...``
#: (level, submodule, pid). A worker's communicator threads write two "[INFO] PS(...) ... Event base dispatch
#: success!" records at exit whatever GLOG_v says (observed: MindSpore 2.7.0, msrun, CPU, after the last step; the
#: same with MS_SUBMODULE_LOG_v={PS:3} and after mindspore.communication.release()). msrun copies each worker's
#: log to its stdout; those records stay in the worker's log (msrun_log/worker_N.log), not on the terminal.
QUIET_RECORD = re.compile(r"^\[(INFO|DEBUG)\] [A-Z_]+\(\d+,")


@dataclass
class Outcome:
    rc: int
    #: the signal msdoctor passed on to the trainer (SIGINT, SIGTERM), if any
    forwarded: Optional[int] = None
    #: the trainer's one-message errors (training/errors.py MARK lines on its stderr)
    messages: list = field(default_factory=list)


def start(launch: Any, run_dir: Path, lock: Any, red: "Optional[Redactor]", cwd: Optional[Path] = None) -> Outcome:
    """Run the trainer; stdout stays the terminal's (progress bar), stderr is also kept in stderr.log.

    Not proc.run: training has no natural timeout and its output must stream. The trainer runs in
    its own session under proc's parent-death supervisor (it dies with msdoctor, even by SIGKILL),
    holding the run directory's lock with msdoctor (the descriptor is passed on). SIGTERM and
    SIGINT are passed on to its group so the trainer can save a checkpoint. It runs in cwd (--project),
    where the gate read the config's relative paths.
    """
    import io

    from msdoctor import proc
    from msdoctor.fsutil import WriteError, open_log
    from msdoctor.training.errors import MARK

    try:  # opened before the trainer starts, never through a link (a planted stderr.log -> elsewhere)
        keep = os.fdopen(open_log(run_dir / "stderr.log", append=True), "ab")
    except OSError as exc:
        raise WriteError(run_dir / "stderr.log", exc, "open") from None
    try:
        # under msrun stdout is msrun's copy of the workers' logs (not a terminal's progress bar): filtered
        many = getattr(launch, "worker_logs", None) is not None
        child = proc.spawn(
            launch.argv,
            env=launch.env,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if many else None,
            pass_fds=(lock.fd,),
            cwd=cwd,
        )
    except proc.StartError as exc:
        keep.close()
        raise UserError(
            f"could not start the trainer ({launch.argv[0]}): {exc.reason}",
            "check the interpreter given with --python / --conda-env",
        ) from None
    outcome = Outcome(rc=1)

    def forward(signum: int, _frame: Any) -> None:
        outcome.forwarded = outcome.forwarded or signum
        child.signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}

    def tee() -> None:
        assert child.stderr is not None  # started with stderr=PIPE
        stream = io.BufferedReader(child.stderr)  # type: ignore[arg-type,type-var]
        with keep:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace")
                if red is not None:
                    line = red.text(line)
                keep.write(line.encode())
                keep.flush()
                if line.startswith(MARK):
                    outcome.messages.append(line[len(MARK) :].rstrip("\n"))
                elif outcome.messages and line.startswith("  "):  # its continuation lines
                    outcome.messages[-1] += "\n" + line.rstrip("\n")
                else:
                    sys.stderr.write(line)
                    sys.stderr.flush()

    def workers_out() -> None:
        assert child.stdout is not None
        for raw in iter(io.BufferedReader(child.stdout).readline, b""):  # type: ignore[arg-type,type-var]
            line = raw.decode("utf-8", "replace")
            if not QUIET_RECORD.match(line):
                sys.stdout.write(red.text(line) if red is not None else line)
                sys.stdout.flush()

    copier = threading.Thread(target=tee, daemon=True)
    copier.start()
    shown = threading.Thread(target=workers_out, daemon=True) if many else None
    if shown is not None:
        shown.start()
    try:
        rc = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child.returncode is None:  # an exception on the way (SIGHUP, a second Ctrl-C): the group goes too
            child.kill()
    copier.join(timeout=5)
    if shown is not None:
        shown.join(timeout=5)
    child.close()
    outcome.rc = rc if rc is not None else 1
    return outcome


def log_files(run_dir: Path, worker_logs: Optional[Path]) -> list[Path]:
    """What the trainer wrote: train.log, stderr.log, msrun's worker and scheduler logs."""
    files = [run_dir / "train.log", run_dir / "stderr.log"]
    if worker_logs is not None and worker_logs.is_dir():
        files += sorted(worker_logs.glob("*.log"))
    return [f for f in files if f.is_file()]


def log_tail(files: list[Path]) -> str:
    parts = []
    for f in files:
        lines = f.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        if lines:
            parts.append(f"==> {f} <==\n" + "\n".join(lines))
    return "\n".join(parts)


def explain_failure(files: list[Path], python: str, config: Optional[Path] = None) -> list[str]:
    """Known causes anywhere in the logs (a MindSpore error often sits above a long traceback),
    through msdoctor.explain when it is installed."""
    try:
        from msdoctor.explain import describe, explain_file
    except ImportError:
        return []
    seen, out = set(), []
    for f in files:
        for m in explain_file(f):
            if m.entry_id not in seen:
                seen.add(m.entry_id)
                out.append(describe(m, python, str(config) if config else None))
    return out
