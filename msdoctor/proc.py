"""Subprocesses that cannot hang msdoctor and never take a shell string.

Every external command msdoctor runs goes through :func:`run`: an argument
list, a timeout after which the whole process group is killed, captured
output, and a result object instead of an exception for the usual failures
(missing executable, not executable, timeout).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class ProcResult:
    argv: list[str]
    returncode: Optional[int]  # None when it could not start or timed out
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    #: why it could not start ("not found", "permission denied", ...), else None
    start_error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.start_error is None

    def describe_failure(self) -> str:
        """One line saying what went wrong, for findings."""
        cmd = " ".join(self.argv[:3]) + (" ..." if len(self.argv) > 3 else "")
        if self.start_error:
            return f"could not run {cmd}: {self.start_error}"
        if self.timed_out:
            return f"{cmd} did not finish within {self.duration_s:.0f} s and was stopped"
        tail = (self.stderr or self.stdout).strip().splitlines()[-1:] or [""]
        return f"{cmd} exited with status {self.returncode}: {tail[0]}".rstrip(": ")


def run(
    argv: Sequence[PathLike],
    *,
    timeout: float,
    input: Optional[str] = None,
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
) -> ProcResult:
    """Run argv, wait at most timeout seconds, and return what happened.

    The child gets its own process group so that a timeout kills everything it
    started (a Python that spawns helpers, an npu-smi stuck in the driver).
    """
    args = [os.fspath(a) for a in argv]
    started = time.monotonic()
    proc = _start(args, cwd, env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                  stderr=subprocess.PIPE)
    if isinstance(proc, ProcResult):
        return proc
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable child
            out, err = "", ""
        return ProcResult(args, None, out or "", err or "", time.monotonic() - started, timed_out=True)
    except BaseException:
        _kill_group(proc)
        raise
    return ProcResult(args, proc.returncode, out, err, time.monotonic() - started)


def _start(args: list[str], cwd: Optional[PathLike], env: Optional[Mapping[str, str]], *, stdin: int,
           stderr: int) -> "Union[subprocess.Popen[str], ProcResult]":
    """Start args in its own process group (so a timeout can kill all it started), or say why it could not."""
    try:
        return subprocess.Popen(
            args, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr,
            cwd=os.fspath(cwd) if cwd is not None else None, env=dict(env) if env is not None else None,
            text=True, encoding="utf-8", errors="replace", start_new_session=True,
        )
    except FileNotFoundError:
        return ProcResult(args, None, "", "", 0.0, start_error="no such file")
    except PermissionError:
        return ProcResult(args, None, "", "", 0.0, start_error="permission denied (not executable)")
    except OSError as exc:
        return ProcResult(args, None, "", "", 0.0, start_error=f"{exc.strerror or exc}")


def _kill_group(proc: "subprocess.Popen[str]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def run_live(
    argv: Sequence[PathLike],
    *,
    timeout: float,
    on_line: "Callable[[str], None]",
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
) -> ProcResult:
    """Like :func:`run`, but hands every output line to ``on_line`` as it comes (pip's progress).

    stdout and stderr are merged (in ``ProcResult.stdout``); a timeout kills the
    whole process group, exactly as in :func:`run`.
    """
    import threading

    args = [os.fspath(a) for a in argv]
    started = time.monotonic()
    proc = _start(args, cwd, env, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    if isinstance(proc, ProcResult):
        return proc
    lines: list = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            on_line(line.rstrip("\n"))

    reader = threading.Thread(target=pump, name="proc-live", daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        reader.join(5)
        return ProcResult(args, None, "".join(lines), "", time.monotonic() - started, timed_out=True)
    except BaseException:
        _kill_group(proc)
        raise
    reader.join(5)
    return ProcResult(args, proc.returncode, "".join(lines), "", time.monotonic() - started)
