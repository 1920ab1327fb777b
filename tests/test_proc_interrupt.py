"""Issue 31 item 6: Ctrl-C during ``fix-stack --yes`` must not SIGKILL pip mid-install.

pip rolls an upgrade back only for an Exception (install_given_reqs in pip/_internal/req/__init__.py,
https://github.com/pypa/pip), so a SIGKILL or even a SIGINT while it writes files leaves a package without its
metadata. proc.run_live(finish_s=..., finish_from=...) lets a child that has started its work finish, sends
SIGINT before that work started or once the window is over, and SIGKILLs only after a bound.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from msdoctor import proc

FAKE_PIP = r"""
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def on_int(*_):
    (out / "sigint").write_text("1"); sys.exit(1)
signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[2] == "ignore" else on_int)
print("Collecting demo", flush=True)
if sys.argv[2] in ("install", "ignore"):
    print("Installing collected packages: demo", flush=True)
    time.sleep(float(sys.argv[3]))
    (out / "done").write_text("1")
else:
    time.sleep(60)
"""


@pytest.fixture
def ctrl_c():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def after(seconds: float) -> None:
        threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT)).start()

    yield after
    signal.signal(signal.SIGINT, previous)


def run_fake(tmp_path: Path, mode: str, work_s: float = 1.0) -> float:
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        proc.run_live(
            [sys.executable, str(script), str(tmp_path), mode, str(work_s)],
            timeout=60,
            on_line=lambda line: None,
            finish_s=20.0,
            finish_from="Installing collected packages",
        )
    return time.monotonic() - started


def test_ctrl_c_while_pip_installs_lets_it_finish(tmp_path, ctrl_c):
    ctrl_c(0.6)
    run_fake(tmp_path, "install", 1.5)
    assert (tmp_path / "done").exists(), "the install was killed half-way"
    assert not (tmp_path / "sigint").exists()
    assert proc.live_children() == []


def test_ctrl_c_before_pip_installs_sends_sigint_not_sigkill(tmp_path, ctrl_c):
    ctrl_c(0.6)
    took = run_fake(tmp_path, "download")
    assert (tmp_path / "sigint").exists(), "pip got no SIGINT (SIGKILLed at once?)"
    assert took < 10


def test_a_child_that_ignores_sigint_is_killed_after_the_bound(tmp_path, ctrl_c, monkeypatch):
    monkeypatch.setattr(proc, "INTERRUPT_GRACE_S", 0.5)
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP)
    ctrl_c(0.6)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        proc.run_live(
            [sys.executable, str(script), str(tmp_path), "ignore", "60"],
            timeout=120,
            on_line=lambda line: None,
            finish_s=1.0,
            finish_from="Installing collected packages",
        )
    assert time.monotonic() - started < 10
    assert proc.live_children() == [] and not (tmp_path / "done").exists()


def test_fix_stack_asks_for_the_finish_window():
    from msdoctor.checks.version_matrix import fix

    assert fix.PIP_FINISH_S > 0 and fix.PIP_INSTALLING == "Installing collected packages"
