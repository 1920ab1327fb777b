"""msdoctor.proc: no child outlives msdoctor, no child floods it, no child hangs it.

Every test uses a target that forks (a shell script that starts a ``sleep`` of
its own and writes both pids to files), so that killing only the direct child
would leave the grandchild behind and the test would fail.
"""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import msdoctor_exe
from msdoctor import proc
from msdoctor.context import Context, Options
from msdoctor.model import Finding
from msdoctor.plugins import LoadedCheck
from msdoctor.runner import RunSettings, run_checks


def forking_target(tmp_path: Path, name: str = "hang") -> Path:
    """A 'python' that ignores its arguments, starts a child of its own, and sleeps."""
    exe = tmp_path / name
    exe.write_text(
        f"#!/bin/sh\nsleep 300 &\necho $! > '{tmp_path}/grandchild.pid'\necho $$ > '{tmp_path}/child.pid'\nsleep 300\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between the open and the read
        return False


def _pids(tmp_path: Path, wait: float = 30.0) -> list[int]:
    end = time.monotonic() + wait
    files = [tmp_path / "child.pid", tmp_path / "grandchild.pid"]
    while time.monotonic() < end:
        if all(f.is_file() and f.read_text().strip() for f in files):
            return [int(f.read_text()) for f in files]
        time.sleep(0.05)
    raise AssertionError("the forking target never started")


def _all_dead(pids: list[int], within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def _no_leftovers() -> Any:
    yield
    assert proc.live_children() == []


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    started = time.monotonic()
    res = proc.run([forking_target(tmp_path)], timeout=2.0)
    assert res.timed_out and res.returncode is None
    assert time.monotonic() - started < 2.0 + proc.KILL_GRACE_S + 3
    assert _all_dead(_pids(tmp_path))


def test_normal_exit_kills_what_the_child_left_behind(tmp_path: Path) -> None:
    res = proc.run(["sh", "-c", f"sleep 300 & echo $! > '{tmp_path}/left.pid'; echo done"], timeout=30.0)
    assert res.ok and res.stdout == "done\n"
    assert res.duration_s < 10  # the leftover holds stdout, but the child's exit ends the read
    assert _all_dead([int((tmp_path / "left.pid").read_text())])


def test_output_is_capped_and_the_flood_stopped(tmp_path: Path) -> None:
    flood = tmp_path / "flood"
    flood.write_text("#!/bin/sh\nyes '{\"a\": 1}'\n")
    flood.chmod(0o755)
    res = proc.run([flood, "-W", "ignore", "-"], timeout=30.0, input="print(1)\n", output_cap=1 << 20)
    assert res.overflow and not res.ok and res.returncode is None
    assert len(res.stdout) == 1 << 20
    assert res.duration_s < 10
    assert "wrote more than" in res.describe_failure()


def test_run_live_caps_and_streams(tmp_path: Path) -> None:
    lines: list[str] = []
    res = proc.run_live(
        ["sh", "-c", "echo one; echo two >&2; yes x"], timeout=30.0, on_line=lines.append, output_cap=4096
    )
    assert res.overflow and lines[:2] == ["one", "two"]
    assert len(res.stdout) == 4096


def test_start_errors_are_results(tmp_path: Path) -> None:
    assert proc.run([tmp_path / "missing"], timeout=5).start_error == "no such file"
    assert proc.run(["no-such-command-msdoctor"], timeout=5).start_error == "no such file"
    assert "directory" in (proc.run([tmp_path], timeout=5).start_error or "")
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert "permission denied" in (proc.run([plain], timeout=5).start_error or "")
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    assert proc.run([garbage], timeout=5).start_error == "Exec format error"


def test_exit_status_and_signals_come_through(tmp_path: Path) -> None:
    res = proc.run(["sh", "-c", "cat; echo err >&2; exit 3"], timeout=30.0, input="abc" * 100_000)
    assert (res.returncode, len(res.stdout), res.stderr) == (3, 300_000, "err\n")
    assert proc.run(["sh", "-c", "kill -TERM $$"], timeout=30.0).returncode == -signal.SIGTERM


def test_spawn_signals_the_group_and_close_reaps(tmp_path: Path) -> None:
    child = proc.spawn([forking_target(tmp_path)])
    pids = _pids(tmp_path)
    assert child.poll() is None
    child.signal(signal.SIGTERM)
    assert child.wait(10) == -signal.SIGTERM
    assert _all_dead(pids)


class _Hang:
    id = "hang"
    title = "hangs in a subprocess"
    description = "runs the forking target with a long timeout of its own"
    timeout_s = 1.5

    def __init__(self, exe: Path) -> None:
        self.exe = exe

    def run(self, ctx: Any) -> list[Finding]:
        proc.run([self.exe], timeout=300.0)
        return [Finding.passed("finished", proved="it ran")]


@pytest.mark.parametrize("which", ["check-timeout", "deadline"])
def test_check_timeout_and_deadline_kill_the_checks_children(tmp_path: Path, which: str) -> None:
    exe = forking_target(tmp_path)
    check = _Hang(exe)
    settings = RunSettings(check_timeout_s=1.5, deadline_s=300.0)
    if which == "deadline":
        check.timeout_s = 300.0
        settings = RunSettings(check_timeout_s=300.0, deadline_s=2.0)
    results = run_checks(
        [LoadedCheck(check, "test", "hang = test:hang")], Context(Options(project_dir=tmp_path)), settings
    )
    assert results[0].status.value == "error"
    assert _all_dead(_pids(tmp_path))
    end = time.monotonic() + 10
    while proc.live_children() and time.monotonic() < end:  # the abandoned thread reaps its child
        time.sleep(0.05)


def _start_msdoctor(tmp_path: Path) -> tuple["subprocess.Popen[bytes]", list[int]]:
    exe = forking_target(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    cmd = [
        msdoctor_exe(),
        "check",
        "--quick",
        "--python",
        str(exe),
        "--project",
        str(project),
        "--probe-timeout",
        "300",
    ]
    # SIGINT as a terminal's Ctrl-C delivers it: a suite started in the background by a non-interactive shell
    # inherits SIGINT ignored (POSIX), and Python then installs no KeyboardInterrupt handler in msdoctor
    msd = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_sigint_default
    )
    return msd, _pids(tmp_path, wait=60.0)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_to_msdoctor_kills_the_target_and_its_child(tmp_path: Path, sig: int, code: int) -> None:
    msd, pids = _start_msdoctor(tmp_path)
    msd.send_signal(sig)
    try:
        rc = msd.wait(10)
    finally:
        if msd.poll() is None:
            msd.kill()
    assert rc == code
    assert _all_dead(pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux (prctl)")
def test_sigkill_of_msdoctor_takes_the_children_down(tmp_path: Path) -> None:
    msd, pids = _start_msdoctor(tmp_path)
    msd.kill()
    msd.wait(10)
    assert _all_dead(pids, within=10.0)
