"""Subprocesses that cannot hang msdoctor, flood it, or outlive it, and never take a shell string.

Every external command msdoctor runs goes through this module:

* :func:`run` (captured output) and :func:`run_live` (output handed over line by
  line) take an argument list and a timeout, read at most ``output_cap`` bytes
  per stream (a child that writes more is stopped), and return a result object
  instead of raising for the usual failures (missing executable, not
  executable, timeout, too much output). The time spent after a timeout or an
  overflow is bounded too (:data:`KILL_GRACE_S`).
* :func:`spawn` starts a long-lived child (the trainer, msrun) with inherited or
  piped stdio and returns a :class:`Child` whose signals go to its whole group.

Every child starts in its own session (so Ctrl-C in the terminal does not reach
it and a kill reaches all it started), is registered until it is reaped, and its
whole process group is killed on every exit path: a timeout, too much output,
:func:`kill_owned` (a check that ran past its limit), :func:`kill_all` (the
run's deadline, Ctrl-C, SIGTERM, the end of ``msdoctor``), and, after a normal
exit, whatever the child left behind in its group.

On Linux a child is started under a small supervisor (msdoctor's own Python
with ``-I -S``) that asks the kernel for a parent-death signal
(``prctl(PR_SET_PDEATHSIG)``, see prctl(2)) and then forks and execs the
command in its own process group: when msdoctor dies, even by SIGKILL, the
supervisor gets SIGHUP and kills the whole group, the command's own children
included. The signal is tied to the thread that started the child, so a thread
that calls :func:`spawn` must wait for the child before it ends (run() does).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Mapping, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]

#: The most a child may write on one stream before it is stopped (bytes).
OUTPUT_CAP = 8 * 1024 * 1024
#: After a kill, how long msdoctor still reads and waits (a grandchild that left the group may hold a pipe).
KILL_GRACE_S = 2.0

#: After msdoctor is interrupted (Ctrl-C, SIGTERM) while a child that must not stop half-way runs (pip installing:
#: killed mid-install it leaves a package without its metadata), how long the child gets after SIGINT to stop
#: cleanly before its group is killed (see :func:`run_live`'s ``finish_s``).
INTERRUPT_GRACE_S = 15.0

#: What the supervisor prints on stderr when the command cannot be executed (then exits 127).
_EXEC_ERROR = "@@msdoctor-exec-error@@"

#: Run by msdoctor's own interpreter (-I -S): parent-death signal, then fork + exec of the command in this group.
_SUPERVISOR = r"""
import os, signal, sys
def die(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGHUP, die)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGHUP))  # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    die()
pid = os.fork()
if pid == 0:
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_DFL)
    try:
        os.execv(sys.argv[2], sys.argv[3:])
    except OSError as exc:
        os.write(2, ("@@msdoctor-exec-error@@ %s\n" % (exc.strerror or exc)).encode("utf-8", "replace"))
    os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    try:
        _, status = os.waitpid(pid, 0)
        break
    except InterruptedError:
        continue
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    try:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass
    os._exit(128 + sig)
os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
"""


@dataclass
class ProcResult:
    argv: list[str]
    returncode: Optional[int]  # None when it could not start, timed out or was stopped for its output
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    #: why it could not start ("not found", "permission denied", ...), else None
    start_error: Optional[str] = None
    #: it wrote more than the output cap on a stream and was stopped (the output is cut there)
    overflow: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.start_error is None and not self.overflow

    def describe_failure(self) -> str:
        """One line saying what went wrong, for findings."""
        cmd = " ".join(self.argv[:3]) + (" ..." if len(self.argv) > 3 else "")
        if self.start_error:
            return f"could not run {cmd}: {self.start_error}"
        if self.overflow:
            return f"{cmd} wrote more than {OUTPUT_CAP // (1024 * 1024)} MiB of output and was stopped"
        if self.timed_out:
            return f"{cmd} did not finish within {self.duration_s:.0f} s and was stopped"
        tail = (self.stderr or self.stdout).strip().splitlines()[-1:] or [""]
        return f"{cmd} exited with status {self.returncode}: {tail[0]}".rstrip(": ")


class StartError(OSError):
    """A child could not be started; ``reason`` says why in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_lock = threading.RLock()
_live: "dict[int, Child]" = {}
_closing = False


class Child:
    """A started child and its process group (see :func:`spawn`)."""

    def __init__(self, popen: "subprocess.Popen[bytes]", argv: list[str]) -> None:
        self.popen = popen
        self.argv = argv
        self.pid = popen.pid
        #: the group every process it starts belongs to (it leads it: started in its own session)
        self.pgid = popen.pid
        self.owner = threading.get_ident()
        self._reaped = False

    @property
    def stdin(self) -> Optional[IO[bytes]]:
        return self.popen.stdin

    @property
    def stdout(self) -> Optional[IO[bytes]]:
        return self.popen.stdout

    @property
    def stderr(self) -> Optional[IO[bytes]]:
        return self.popen.stderr

    @property
    def returncode(self) -> Optional[int]:
        return self.popen.returncode

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole group (the command and all it started)."""
        if self._reaped:
            return
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL to the whole group."""
        self.signal(signal.SIGKILL)

    def exited(self, timeout: float = 0.0) -> bool:
        """Whether the child has exited (waiting up to ``timeout`` s), without reaping it."""
        if self._reaped or self.popen.returncode is not None:
            return True
        if not hasattr(os, "waitid"):  # pragma: no cover - a platform without waitid: poll() reaps it
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        end = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            except InterruptedError:
                continue
            if info is not None:
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.05)

    def poll(self) -> Optional[int]:
        """The exit status once it exited (the group's leftovers killed and the child reaped), else None."""
        return self.wait(0.0)

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Wait for the child; then kill what it left in its group and reap it. None if still running.

        The group leader is reaped only after the group was killed, so its id cannot be reused meanwhile.
        """
        if self._reaped:
            return self.popen.returncode
        if timeout is None:
            while not self.exited(3600.0):
                pass
        elif not self.exited(timeout):
            return None
        self.kill()
        try:
            rc = self.popen.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - not reapable
            return None
        self._reaped = True
        with _lock:
            _live.pop(self.pid, None)
        return rc

    def close(self) -> None:
        """Kill the group and reap the child (bounded by :data:`KILL_GRACE_S`); close its pipes."""
        self.kill()
        self.wait(KILL_GRACE_S)
        for f in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _resolve(arg0: str, cwd: Optional[str], env: Optional[Mapping[str, str]]) -> str:
    """The file that would be executed for ``arg0`` (as execvp would find it); StartError when none."""
    if os.sep in arg0:
        path = arg0 if os.path.isabs(arg0) or cwd is None else os.path.join(cwd, arg0)
        if not os.path.exists(path):
            raise StartError("no such file")
    else:
        search = (env if env is not None else os.environ).get("PATH", os.defpath)
        found = shutil.which(arg0, path=search)
        if found is None:
            raise StartError(
                "no such file"
                if not any(os.path.exists(os.path.join(d, arg0)) for d in search.split(os.pathsep) if d)
                else "permission denied (not executable)"
            )
        path = found
    if os.path.isdir(path):
        raise StartError("is a directory, not an executable")
    if not os.access(path, os.X_OK):
        raise StartError("permission denied (not executable)")
    return os.path.abspath(path)


def _use_supervisor() -> bool:
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isfile(sys.executable)


def spawn(
    argv: Sequence[PathLike],
    *,
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = None,
    stderr: Any = None,
    pass_fds: Sequence[int] = (),
) -> Child:
    """Start argv in its own session and process group, registered for the exit-path kills.

    stdin/stdout/stderr are as for subprocess.Popen (None: inherit; PIPE: a binary pipe);
    ``pass_fds`` stay open in the command (the train run directory's lock).
    Signals for the command go through :meth:`Child.signal` (the whole group); call
    :meth:`Child.wait` or :meth:`Child.close` from the thread that spawned it.

    Raises:
        StartError: the executable is missing or not executable, or msdoctor is exiting.
    """
    args = [os.fspath(a) for a in argv]
    if not args:
        raise StartError("empty command")
    cwd_s = os.fspath(cwd) if cwd is not None else None
    exe = _resolve(args[0], cwd_s, env)
    if _use_supervisor():
        full = [sys.executable, "-I", "-S", "-c", _SUPERVISOR, str(os.getpid()), exe] + args
        executable: Optional[str] = sys.executable
    else:
        full, executable = args, exe
    with _lock:
        if _closing:
            raise StartError("msdoctor is stopping")
        try:
            popen = subprocess.Popen(
                full,
                executable=executable,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd_s,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                bufsize=0,
                pass_fds=tuple(pass_fds),
            )
        except PermissionError:
            raise StartError("permission denied (not executable)") from None
        except OSError as exc:
            raise StartError(f"{exc.strerror or exc}") from None
        child = Child(popen, args)
        _live[child.pid] = child
    return child


def kill_all(*, final: bool = False) -> None:
    """Kill the group of every live child (the run's deadline; with ``final``, msdoctor is exiting:
    nothing new starts after this)."""
    global _closing
    with _lock:
        if final:
            _closing = True
        children = list(_live.values())
    for child in children:
        child.kill()
    if final:
        _kill_strays()


_strays_since: "Optional[set[int]]" = None


def watch_strays() -> None:
    """Third-party code (a plugin) runs in this process from now on: remember the children that exist now, so
    that :func:`kill_all` with ``final`` also kills the children it starts without this module (a raw
    ``subprocess.Popen`` left running would keep a CI job's pipe open after msdoctor exits).

    Only children and their descendants still linked to msdoctor are seen (psutil); one that daemonised away
    (double fork) is not."""
    global _strays_since
    if _strays_since is None:
        _strays_since = set(_descendants())


def _descendants() -> list[int]:
    try:
        import psutil

        return [p.pid for p in psutil.Process().children(recursive=True)]
    except Exception:  # noqa: BLE001 - best effort: no psutil, or /proc unreadable
        return []


def _kill_strays() -> None:
    global _strays_since
    before, _strays_since = _strays_since, None
    if before is None:
        return
    with _lock:
        ours = set(_live)
    for pid in _descendants():
        if pid in before or pid in ours:
            continue
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)  # it and what it started in its own group
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def kill_owned(thread_ident: Optional[int]) -> None:
    """Kill the children started by one thread (a check that ran past its limit)."""
    if thread_ident is None:
        return
    with _lock:
        children = [c for c in _live.values() if c.owner == thread_ident]
    for child in children:
        child.kill()


def live_children() -> list[int]:
    """Pids of the children not reaped yet (for tests and diagnostics)."""
    with _lock:
        return sorted(_live)


class _Pipes:
    """A child's pipes under one selector: stdin fed from ``data``, stdout and stderr read into buffers
    of at most ``cap`` bytes each (``on_chunk`` sees what is kept, as it arrives)."""

    def __init__(
        self, child: Child, data: Optional[bytes], cap: int, on_chunk: Optional[Callable[[bytes], None]]
    ) -> None:
        p = child.popen
        self.child = child
        self.cap = cap
        self.on_chunk = on_chunk
        self.sel = selectors.DefaultSelector()
        self.bufs: dict[int, bytearray] = {}
        self.view = memoryview(data or b"")
        self.pos = 0
        self.out_fd = p.stdout.fileno() if p.stdout is not None else -1
        self.err_fd = p.stderr.fileno() if p.stderr is not None else -1
        self.in_fd = p.stdin.fileno() if p.stdin is not None else -2
        #: a stream went over the cap (reading stopped there)
        self.overflow = False
        #: the child exited while the pipes were watched (its group was killed then)
        self.exited = False
        if p.stdin is not None:
            if self.view:
                os.set_blocking(p.stdin.fileno(), False)
                self.sel.register(p.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                p.stdin.close()
        for fd in (self.out_fd, self.err_fd):
            if fd >= 0:
                self.bufs[fd] = bytearray()
                self.sel.register(fd, selectors.EVENT_READ)

    def open(self) -> bool:
        """Whether a pipe is still open (stdin not fed yet, or output not at its end)."""
        return bool(self.sel.get_map())

    def move(self, until: float, watch_exit: bool) -> None:
        """Move data until every pipe closed, ``until``, or an overflow. With ``watch_exit``, once the
        child exited its group is killed (a leftover holding a pipe) and reading ends soon after."""
        while self.sel.get_map():
            left = until - time.monotonic()
            if left <= 0:
                return
            events = self.sel.select(min(left, 0.1))
            for key, _ in events:
                if key.fd == self.in_fd:
                    self._feed(key.fd)
                elif self._read(key.fd):
                    return
            if watch_exit and not events and not self.exited and self.child.exited(0.0):
                self.exited = True
                self.child.kill()
                until = min(until, time.monotonic() + KILL_GRACE_S)

    def _feed(self, fd: int) -> None:
        """Write the next piece of stdin; close it once all is written or the child stopped reading."""
        try:
            self.pos += os.write(fd, self.view[self.pos : self.pos + 65536])
        except BlockingIOError:
            return
        except OSError:  # the child stopped reading (EPIPE)
            self.pos = len(self.view)
        if self.pos >= len(self.view):
            self.sel.unregister(fd)
            stdin = self.child.popen.stdin
            assert stdin is not None
            stdin.close()

    def _read(self, fd: int) -> bool:
        """Read one chunk of output into its buffer; True when it went over the cap (``overflow`` is set)."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.sel.unregister(fd)
            return False
        buf = self.bufs[fd]
        room = self.cap - len(buf)
        buf.extend(chunk[: max(room, 0)])
        if self.on_chunk is not None and room > 0:
            self.on_chunk(chunk[:room])
        if len(chunk) > room:
            self.overflow = True
            return True
        return False

    def output(self) -> tuple[bytes, bytes]:
        """What was read from stdout and stderr."""
        return bytes(self.bufs.get(self.out_fd, b"")), bytes(self.bufs.get(self.err_fd, b""))

    def close(self) -> None:
        """Kill the child's group, close the selector and every pipe."""
        self.child.kill()
        self.sel.close()
        p = self.child.popen
        for f in (p.stdin, p.stdout, p.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass


def _pump(
    child: Child,
    data: Optional[bytes],
    deadline: float,
    cap: int,
    on_chunk: Optional[Callable[[bytes], None]] = None,
    finish_s: Union[float, Callable[[], float]] = 0.0,
    interruptible: bool = False,
) -> tuple[bytes, bytes, bool, bool]:
    """Feed stdin, read stdout/stderr (each at most ``cap`` bytes) until the child exits or the deadline.

    Returns (stdout, stderr, timed_out, overflow). The child is reaped on return. An interruption of msdoctor
    kills the group at once, unless ``finish_s`` (see :func:`_wind_down`).
    """
    pipes = _Pipes(child, data, cap, on_chunk)
    timed_out = False
    try:
        try:
            pipes.move(deadline, True)
        except BaseException:  # Ctrl-C or SIGTERM of msdoctor (KeyboardInterrupt, cli.Terminated)
            if (interruptible or (not callable(finish_s) and finish_s > 0)) and not pipes.exited:
                _wind_down(child, pipes, finish_s() if callable(finish_s) else finish_s)
                child.kill()  # the bound is over (or it ended): its group killed, it reaped
                child.wait(KILL_GRACE_S)
            raise
        if not pipes.overflow and not pipes.exited:
            if pipes.open():
                timed_out = True
            elif not child.exited(max(0.0, deadline - time.monotonic())):
                timed_out = True  # closed its output but kept running
        if timed_out or pipes.overflow:
            child.kill()
            grace = time.monotonic() + KILL_GRACE_S
            if timed_out:
                pipes.move(grace, False)  # what it wrote before the kill (the live probe's last phase)
            child.exited(max(0.0, grace - time.monotonic()))
        child.wait(KILL_GRACE_S)
    finally:
        pipes.close()
    return (*pipes.output(), timed_out, pipes.overflow)


def _drain_until_exit(child: Child, pipes: _Pipes, seconds: float) -> bool:
    """Keep reading the child's output (a full pipe would block it) until it exits or ``seconds`` pass."""
    end = time.monotonic() + seconds
    while not child.exited(0.0):
        left = end - time.monotonic()
        if left <= 0:
            return False
        if pipes.open():
            pipes.move(min(end, time.monotonic() + 0.2), False)
        else:
            child.exited(min(left, 0.2))
    return True


def _wind_down(child: Child, pipes: _Pipes, finish_s: float) -> None:
    """msdoctor was interrupted while a child that must not be cut off runs (pip installing): it gets
    ``finish_s`` seconds to finish on its own; then (or at a second Ctrl-C) SIGINT, the signal it handles,
    and :data:`INTERRUPT_GRACE_S` more to stop cleanly. Only then does the caller's SIGKILL of the group come."""
    try:
        if finish_s > 0 and _drain_until_exit(child, pipes, finish_s):
            return
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting for the end, ask it to stop
        pass
    child.signal(signal.SIGINT)
    _drain_until_exit(child, pipes, INTERRUPT_GRACE_S)


def _text(raw: bytes) -> str:
    """Decoded output, newlines as text mode would give them."""
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _exec_error(stderr: str) -> Optional[str]:
    if stderr.startswith(_EXEC_ERROR):
        return stderr[len(_EXEC_ERROR) :].strip().splitlines()[0] if stderr.strip() != _EXEC_ERROR else "cannot execute"
    return None


def run(
    argv: Sequence[PathLike],
    *,
    timeout: float,
    input: Optional[str] = None,
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
    output_cap: int = OUTPUT_CAP,
) -> ProcResult:
    """Run argv, wait at most ``timeout`` seconds, read at most ``output_cap`` bytes per stream.

    A timeout or too much output kills the whole process group; so does the
    child's exit (what it left behind). Never raises for the usual failures.
    """
    args = [os.fspath(a) for a in argv]
    started = time.monotonic()
    try:
        child = spawn(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except StartError as exc:
        return ProcResult(args, None, "", "", 0.0, start_error=exc.reason)
    try:
        out, err, timed_out, overflow = _pump(
            child, input.encode("utf-8") if input is not None else None, started + timeout, output_cap
        )
    except BaseException:
        child.kill()
        raise
    stdout, stderr = _text(out), _text(err)
    duration = time.monotonic() - started
    why = _exec_error(stderr)
    if why is not None and child.returncode == 127:
        return ProcResult(args, None, "", "", duration, start_error=why)
    rc = None if timed_out or overflow else child.returncode
    return ProcResult(args, rc, stdout, stderr, duration, timed_out=timed_out, overflow=overflow)


def run_live(
    argv: Sequence[PathLike],
    *,
    timeout: float,
    on_line: "Callable[[str], None]",
    cwd: Optional[PathLike] = None,
    env: Optional[Mapping[str, str]] = None,
    output_cap: int = OUTPUT_CAP,
    finish_s: float = 0.0,
    finish_from: Optional[str] = None,
) -> ProcResult:
    """Like :func:`run`, but hands every output line to ``on_line`` as it comes (pip's progress).

    stdout and stderr are merged (in ``ProcResult.stdout``); timeouts, the
    output cap and the group kills are exactly as in :func:`run`.

    ``finish_s`` > 0: a child that must not stop half-way (pip installing). When msdoctor is interrupted
    (Ctrl-C, SIGTERM), the child gets that long to finish (with ``finish_from``: only once it printed a line
    starting with it, e.g. pip's "Installing collected packages"; before, nothing is changed yet), then SIGINT
    and :data:`INTERRUPT_GRACE_S` to stop cleanly; SIGKILL only after that. The interruption is raised again
    once the child is gone.
    """
    args = [os.fspath(a) for a in argv]
    started = time.monotonic()
    try:
        child = spawn(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except StartError as exc:
        return ProcResult(args, None, "", "", 0.0, start_error=exc.reason)
    pending = bytearray()
    started_work = [finish_from is None]

    def window() -> float:
        return finish_s if started_work[0] else 0.0

    def chunk(data: bytes) -> None:
        pending.extend(data)
        while True:
            nl = pending.find(b"\n")
            if nl < 0:
                return
            line = bytes(pending[:nl])
            del pending[: nl + 1]
            text = _text(line).rstrip("\n")
            if finish_from is not None and text.lstrip().startswith(finish_from):
                started_work[0] = True
            on_line(text)

    try:
        out, _, timed_out, overflow = _pump(
            child, None, started + timeout, output_cap, chunk, window, interruptible=finish_s > 0
        )
    except BaseException:
        child.kill()
        raise
    if pending:
        on_line(_text(bytes(pending)))
    stdout = _text(out)
    duration = time.monotonic() - started
    why = _exec_error(stdout)
    if why is not None and child.returncode == 127:
        return ProcResult(args, None, "", "", duration, start_error=why)
    rc = None if timed_out or overflow else child.returncode
    return ProcResult(args, rc, stdout, "", duration, timed_out=timed_out, overflow=overflow)
