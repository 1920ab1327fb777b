"""How the trainer stops: on SIGINT / SIGTERM at a step boundary, and with the process that started it.

Signals. MindSpore 2.7 installs its own SIGINT handler while a compiled graph runs, and that
handler sends SIGTERM to the process (observed: Ctrl-C during a GRAPH-mode step ended the run as
"stopped by signal 15", exit 143). So ``training/run.py`` blocks SIGINT and SIGTERM in the main
thread before anything else starts a thread (numpy's BLAS, MindSpore), every later thread inherits
the mask, and one thread takes the signals with sigwaitinfo(2): SIGINT is then reported as signal
2 and the exit status is 128 + 2 = 130. The first signal asks for a stop at the next step boundary
(a checkpoint is saved first); during setup, or on a second signal, the trainer exits at once
(checkpoints are atomic, so that is always safe to resume from).

Parent death. Started by ``msdoctor train`` (``MSDOCTOR_DIE_WITH_PARENT=1`` in the environment,
which msrun passes on to its workers), the trainer asks the kernel for SIGKILL when its parent
dies (prctl(2) PR_SET_PDEATHSIG) and, as a fallback for parents the signal does not cover (a
parent thread that ended, a kill that raced the prctl), a thread watches ``os.getppid()`` and
kills the process when it changes. A trainer started by hand is not tied to its shell (nohup works).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
DIE_ENV = "MSDOCTOR_DIE_WITH_PARENT"
PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5


def block_stop_signals() -> None:
    """Call first thing in the entry script: threads started later inherit the blocked mask."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def _blocked() -> bool:
    if not hasattr(signal, "pthread_sigmask"):
        return False
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return all(s in mask for s in STOP_SIGNALS)


class Stopper:
    """Turns SIGINT / SIGTERM into a stop request; ``signum`` is the first signal received."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.signum: Optional[int] = None
        #: set once the training loop runs: before that a signal ends the process at once
        self.training = False
        #: gets ``stop_signal`` set (the trainer's Run, read at every step boundary)
        self.target: Any = None

    def install(self) -> None:
        if _blocked() and hasattr(signal, "sigwaitinfo"):
            threading.Thread(target=self._wait, name="msdoctor-signals", daemon=True).start()
        else:  # main() called in-process (not through run.py): plain handlers
            for s in STOP_SIGNALS:
                signal.signal(s, lambda signum, _frame: self.receive(signum))

    def _wait(self) -> None:
        while True:
            info = signal.sigwaitinfo(set(STOP_SIGNALS))
            self.receive(info.si_signo)

    def receive(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None or not self.training:
            why = "a second signal" if self.signum is not None else "before training started"
            self.log(f"stopped by signal {signum} ({name}), {why}: exiting now; resume with --resume")
            os._exit(128 + signum)
        self.signum = signum
        if self.target is not None:
            self.target.stop_signal = signum
        self.log(f"signal {signum} ({name}) received: stopping after this step (saving a checkpoint first)")


def die_with_parent(log: Callable[[str], None]) -> None:
    """When started by msdoctor train: SIGKILL when the parent dies (prctl), and a watch on getppid()."""
    if os.environ.get(DIE_ENV) != "1":
        return
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: the watch below still works
        pass

    def orphaned() -> bool:
        return parent == 1 or os.getppid() != parent

    if orphaned():  # it died before the prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)

    def watch() -> None:
        while not orphaned():
            time.sleep(WATCH_INTERVAL_S)
        log(f"the process that started training (PID {parent}) has ended: stopping")
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="msdoctor-parent-watch", daemon=True).start()
