"""`msdoctor train` under msrun: MindSpore's INFO records stay in the workers' logs, off the terminal (#29 item 4).

The worker output here is a real worker log of a finished MindSpore 2.7.0 msrun job
(tests/data/postmortem/msrun/ok/worker_1.log, observed; see tests/data/postmortem/README.md): its last lines are
the "[INFO] PS(...) Event base dispatch success!" records every worker writes at exit whatever GLOG_v says.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from helpers import REPO
from msdoctor.supervisor import QUIET_RECORD, start
from msdoctor.training import runlock

WORKER_LOG = REPO / "tests/data/postmortem/msrun/ok/worker_1.log"


def _run(tmp_path: Path, capsys, worker_logs) -> str:
    run = tmp_path / "run"
    run.mkdir()
    lock = runlock.acquire(run, "test")
    try:
        launch = SimpleNamespace(
            argv=[sys.executable, "-c", f"print(open({str(WORKER_LOG)!r}).read(), end='')"],
            env=None,
            worker_logs=worker_logs,
        )
        assert start(launch, run, lock, None).rc == 0
    finally:
        runlock.release(lock)
    return capsys.readouterr().out


def test_info_records_of_msrun_workers_do_not_reach_the_terminal(tmp_path: Path, capsys) -> None:
    records = [ln for ln in WORKER_LOG.read_text().splitlines() if QUIET_RECORD.match(ln)]
    assert len(records) >= 2 and all("Event base dispatch success" in r for r in records)
    out = _run(tmp_path, capsys, tmp_path / "msrun_log")
    assert "[INFO] PS(" not in out
    kept = [ln for ln in WORKER_LOG.read_text().splitlines() if ln and not QUIET_RECORD.match(ln)]
    assert kept and all(ln in out for ln in kept)  # everything else is shown, in full


def test_warnings_are_still_shown() -> None:
    assert not QUIET_RECORD.match("[WARNING] DISTRIBUTED(123,7f,python):2026-12-02-12:49:47 [x.cc:1] f] Retry")
    assert not QUIET_RECORD.match("[ERROR] ME(123:139,MainProcess):2026 [x.py:363] Worker process 1 exit")
