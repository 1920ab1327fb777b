"""One writer per run directory: ``<run>/.msdoctor.lock``, held with flock(2), naming its holders.

``msdoctor train`` takes the lock before its checks and hands the open descriptor to the trainer
(``MSDOCTOR_RUN_LOCK_FD``), so the lock is held for as long as either process lives; a trainer
started directly takes it itself. The file holds a line of JSON with the PIDs of the holders.
flock is released by the kernel when the last holder dies, however it dies, so a lock is never
left held by a dead process; a holder that ended without releasing (SIGKILL, power loss) leaves
its PIDs in the file, and the next run takes the lock over and says so.

Stdlib only: the trainer runs in the target interpreter, which need not have msdoctor installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .safeopen import open_fd

LOCK_NAME = ".msdoctor.lock"
FD_ENV = "MSDOCTOR_RUN_LOCK_FD"


class RunDirLocked(Exception):
    """Another live process holds the run directory."""

    def __init__(self, path: Path, holders: dict) -> None:
        self.path = path
        self.holders = holders
        pids = alive_pids(holders)
        who = ", ".join(f"PID {pid} ({name})" for pid, name in pids) or "a process that did not record its PID"
        since = holders.get("since")
        super().__init__(f"{path.parent} is in use by {who}" + (f" since {since}" if since else ""))

    @property
    def pids(self) -> list[int]:
        return [pid for pid, _ in alive_pids(self.holders)]


@dataclass
class RunLock:
    path: Path
    fd: int
    #: a sentence when a stale lock (holders dead, never released) was taken over
    took_over: Optional[str] = None


def _read(fd: int) -> dict:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 65536).decode("utf-8", "replace").strip()
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {"holders": [], "unreadable": raw[:200]}
    return data if isinstance(data, dict) else {}


def _write(fd: int, data: dict) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, (json.dumps(data) + "\n").encode())
    os.fsync(fd)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def alive_pids(data: dict) -> list[tuple[int, str]]:
    out = []
    for h in data.get("holders", []):
        if isinstance(h, dict) and isinstance(h.get("pid"), int) and pid_alive(h["pid"]):
            out.append((h["pid"], str(h.get("what", "?"))))
    return out


#: written into a run directory when msdoctor train first uses it: what makes a directory recognisable as a run's
RUN_MANIFEST = ".msdoctor-run.json"


def is_run_directory(run_dir: Path) -> bool:
    """Whether msdoctor may write its run files (config.yaml, metrics.csv, check-report.json, ...) in ``run_dir``:
    it does not exist, is empty, or is a run directory (its manifest, or the lock file every earlier run
    left, as a regular file and not a link)."""
    try:
        entries = os.listdir(run_dir)
    except FileNotFoundError:
        return True
    if not entries:
        return True
    for name in (RUN_MANIFEST, LOCK_NAME):
        try:
            if os.lstat(run_dir / name).st_mode & 0o170000 == 0o100000:
                return True
        except OSError:
            continue
    ckpts = run_dir / "checkpoints"  # a run's checkpoints (their own MANIFEST.json: training/checkpoint.py)
    try:
        return not ckpts.is_symlink() and any(p.name.startswith("step_") for p in ckpts.iterdir())
    except OSError:
        return False


def write_manifest(run_dir: Path, name: str) -> None:
    """Mark ``run_dir`` as a run directory (kept if it is there already; never written through a link)."""
    try:
        fd = open_fd(run_dir / RUN_MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            f.write(
                json.dumps(
                    {
                        "run_directory_of": "msdoctor train",
                        "name": name,
                        "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                    }
                )
                + "\n"
            )
    except BaseException:  # a full disk: no empty manifest left to mark the directory as a run's
        try:
            os.unlink(run_dir / RUN_MANIFEST)
        except OSError:
            pass
        raise


def acquire(run_dir: Path, what: str) -> RunLock:
    """Take the run directory's lock for this process, or raise RunDirLocked naming who holds it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_NAME
    fd = open_fd(path, os.O_RDWR | os.O_CREAT)  # never a link: flock and truncate would reach its target
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holders = _read(fd)
        os.close(fd)
        raise RunDirLocked(path, holders) from None
    left = _read(fd)
    took_over = None
    if left.get("holders"):  # never released: its holders died (SIGKILL, a crash, a reboot)
        who = ", ".join(f"PID {h.get('pid')} ({h.get('what', '?')})" for h in left["holders"] if isinstance(h, dict))
        took_over = (
            f"took over the lock of {run_dir}: its holder{'s' if len(left['holders']) > 1 else ''} "
            f"{who} ended without releasing it" + (f" (held since {left['since']})" if left.get("since") else "")
        )
    _write(
        fd,
        {
            "holders": [{"pid": os.getpid(), "what": what}],
            "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        },
    )
    return RunLock(path, fd, took_over)


def join(fd: int, what: str) -> None:
    """Add this process to the holders of a lock whose descriptor it inherited."""
    data = _read(fd)
    data.setdefault("holders", []).append({"pid": os.getpid(), "what": what})
    _write(fd, data)


def inherited(run_dir: Path) -> Optional[int]:
    """The descriptor of run_dir's lock that msdoctor train handed down, if this process has it open.

    msrun's workers inherit the variable but not the descriptor (msrun closes it); the number may
    then be another file, so the descriptor must be the lock file itself.
    """
    raw = os.environ.get(FD_ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        st, want = os.fstat(fd), os.stat(run_dir / LOCK_NAME)
    except OSError:
        return None
    return fd if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino) else None


def release(lock: RunLock) -> None:
    """Empty the file (a clean end, nothing to take over) and drop the lock."""
    try:
        os.lseek(lock.fd, 0, os.SEEK_SET)
        os.ftruncate(lock.fd, 0)
    except OSError:
        pass
    try:
        os.close(lock.fd)
    except OSError:
        pass
