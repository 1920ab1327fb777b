"""The post-mortem of a failed msrun job (msdoctor/preflight/postmortem.py) on logs real runs wrote.

tests/data/postmortem/msrun/: the logs of real msrun runs (MindSpore 2.7.0, CPU, mccl), written by
tests/test_postmortem_msrun.py's scenarios (README.md there). tests/data/postmortem/published/: excerpts of
published Ascend logs of the ranks that survived a failure (HCCL timeouts), each with its source in README.md.
No MindSpore is started here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from msdoctor.preflight import postmortem as pm

DATA = Path(__file__).resolve().parent / "data" / "postmortem"
MSRUN = DATA / "msrun"
PUBLISHED = DATA / "published"


def _cli(*args: str):
    r = subprocess.run(
        [sys.executable, "-m", "msdoctor", "explain", *args], capture_output=True, text=True, timeout=120
    )
    return r.returncode, r.stdout, r.stderr


def _kinds(result: pm.PostMortem) -> dict:
    out: dict = {}
    for c in result.consequences:
        out.setdefault(c.kind, set()).add(c.rank)
    return out


# -- the real msrun runs ------------------------------------------------------------------------------------------


def test_a_rank_that_raised_is_the_first_failure_and_the_others_were_killed_by_msrun():
    r = pm.analyse([MSRUN / "raise"])
    ff = r.first_failure
    assert (ff.rank, ff.node_rank, ff.how) == (2, 0, "traceback")
    assert ff.error.startswith("FileNotFoundError:") and ff.log.endswith("worker_2.log")
    assert any("task.py:" in d for d in ff.detail)  # the innermost frame
    # the time is the worker's own (the last stamp before its traceback), before msrun noticed the exit
    msrun_exit = next(e for s in [pm.scan_file(MSRUN / "raise" / "msrun.log")] for _, _, e in s.worker_exits)
    assert ff.time is not None and ff.time <= msrun_exit.time
    kinds = _kinds(r)
    assert kinds["killed-by-msrun"] == {0, 1, 3}
    assert kinds["scheduler-timeout"] == {2}
    assert r.world == 4 and r.per_node == 4


def test_sigkill_without_a_traceback_is_named_with_what_sends_it():
    r = pm.analyse([MSRUN / "kill"])
    ff = r.first_failure
    assert (ff.rank, ff.how) == (1, "signal")
    assert ff.error == "killed by SIGKILL (signal 9) with no traceback"
    assert "OOM" in ff.cause and "scheduler" in ff.cause and "kill -9" in ff.cause
    assert "dmesg" in ff.fix
    assert any("exit code -9" in d for d in ff.detail)
    kinds = _kinds(r)
    assert kinds["killed-by-msrun"] == {0, 2, 3}
    # the scheduler timed out the workers msrun killed and says "worker 0 is the first one timed out": its
    # timeouts are consequences, and its first is not the first failure
    assert kinds["scheduler-timeout"] == {0, 1, 3}
    assert "worker 0 is the first one timed out" in (MSRUN / "kill" / "scheduler.log").read_text()


def test_a_hang_is_the_rank_the_others_waited_for():
    r = pm.analyse([MSRUN / "hang"])
    ff = r.first_failure
    assert (ff.rank, ff.how) == (2, "hang")
    # the survivors' errors came first in time, and msrun reported rank 3's exit: neither is the first failure
    waits = [c for c in r.consequences if c.kind == "collective-timeout"]
    assert {c.rank for c in waits} == {0, 1, 3}
    assert ff.time is not None and all(ff.time < c.time for c in waits)
    assert any("name rank 2" in d for d in ff.detail)


def test_a_node_that_never_started_from_a_directory_of_node_directories():
    r = pm.analyse([MSRUN / "never"])
    ff = r.first_failure
    assert (ff.how, ff.rank, ff.node_rank, ff.ranks) == ("never-started", 2, 1, [2, 3])
    assert ff.explained_by == "msrun-nodes-not-registered"  # explain's catalogue gives the cause and fix
    assert "ranks 2, 3" in ff.fix
    assert len(r.lines()) <= 25


# two lines a worker's heartbeat thread printed once the scheduler had given up and exited (observed on this machine,
# 2026-12-04, the never scenario of tests/test_postmortem_msrun.py under load): they came after the main thread's
# "Building networking ... failed" in that run; in a CI run on 2 loaded cores they came before it, and rank 0 was read
# as a later error of its own instead of the cluster that never formed
_HEARTBEAT_LOST = (
    "[ERROR] DISTRIBUTED(12857,7f4343ffe6c0,python):2026-12-02-12:48:21.726.049 [mindspore/ccsrc/distributed/cluster/"
    "topology/compute_graph_node.cc:286] Heartbeat] Failed to send heartbeat message to meta server node and try to "
    "reconnect to the meta server.\n"
    "[ERROR] DISTRIBUTED(12857,7f4343ffe6c0,python):2026-12-02-12:48:22.728.942 [mindspore/ccsrc/distributed/cluster/"
    "topology/compute_graph_node.cc:297] Heartbeat] Failed to connect to the meta server. Maybe it has exited. Please "
    "check scheduler's log.\n"
)


def test_a_heartbeat_that_lost_the_scheduler_before_the_main_thread_failed_is_not_the_ranks_own_error(tmp_path):
    shutil.copytree(MSRUN / "never", tmp_path / "never")
    log = tmp_path / "never" / "node0" / "worker_0.log"
    lines = log.read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if "Building networking for MS_WORKER failed" in x)
    log.write_text("".join(lines[: at - 30] + [_HEARTBEAT_LOST] + lines[at - 30 :]))
    r = pm.analyse([tmp_path / "never"])
    assert r.first_failure.ranks == [2, 3]
    assert 0 in _kinds(r)["cluster-not-formed"], r.consequences
    assert _kinds(r) == _kinds(pm.analyse([MSRUN / "never"]))  # the planted lines change nothing
    # a rank whose only errors are the lost scheduler keeps them as its own: nothing else explains it
    log.write_text("".join(lines[:at] + [_HEARTBEAT_LOST]))
    rank0 = pm.analyse([tmp_path / "never"]).ranks[0]
    assert rank0.first()[0] == "own" and "heartbeat" in rank0.first()[1].text


def test_the_same_node_given_as_several_log_dirs():
    r = pm.analyse([MSRUN / "never" / "node0", MSRUN / "never" / "node1"])  # node 1 wrote nothing
    assert r.first_failure.ranks == [2, 3]
    assert any("node1: no log file" in n for n in r.notes)


def test_a_run_that_did_not_fail_names_no_failure_and_exits_1():
    r = pm.analyse([MSRUN / "ok"])
    assert r.first_failure is None and not r.failed and r.consequences == []
    code, out, _ = _cli("--log-dir", str(MSRUN / "ok"))
    assert code == 1 and "No failure found" in out


def test_msrun_output_alone_is_still_read(tmp_path):
    """Only msrun's terminal output kept: it holds the workers' lines (msrun tails them) with their pids."""
    shutil.copy(MSRUN / "kill" / "msrun.log", tmp_path / "msrun.log")
    r = pm.analyse([tmp_path])
    assert r.first_failure is not None and (r.first_failure.rank, r.first_failure.how) == (1, "signal")


# -- the command ---------------------------------------------------------------------------------------------------


def test_cli_json_has_the_first_failure_and_the_consequences():
    code, out, err = _cli("--log-dir", str(MSRUN / "raise"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    ff = doc["first_failure"]
    assert set(ff) >= {"rank", "node_rank", "time", "log", "line", "error", "cause", "fix"}
    text = (MSRUN / "raise" / "worker_2.log").read_text().splitlines()
    assert (ff["rank"], ff["node_rank"]) == (2, 0) and text[ff["line"] - 1].startswith("FileNotFoundError")
    assert datetime.fromisoformat(ff["time"])
    assert {c["kind"] for c in doc["consequences"]} == {"killed-by-msrun", "scheduler-timeout"}
    assert all(set(c) >= {"kind", "rank", "node_rank", "time", "log", "line", "text"} for c in doc["consequences"])


@pytest.mark.parametrize("scenario", ["raise", "kill", "hang", "never"])
def test_terminal_view_fits_one_screen(scenario):
    code, out, _ = _cli("--log-dir", str(MSRUN / scenario))
    lines = out.splitlines()
    assert code == 0 and lines[2].startswith("First failure:")
    assert len(lines) <= 25 and max(map(len, lines)) <= 110


def test_unreadable_input_exits_2_with_path_and_reason(tmp_path):
    code, _, err = _cli("--log-dir", str(tmp_path / "missing"))
    assert code == 2 and "missing: no such file or directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _cli("--log-dir", str(empty))
    assert code == 2 and "no log file in it" in err
    fifo = tmp_path / "worker_0.log"
    os.mkfifo(fifo)
    code, _, err = _cli("--log-dir", str(fifo))
    assert code == 2 and "regular file" in err
    code, _, err = _cli("some text", "--log-dir", str(MSRUN / "raise"))
    assert code == 2 and "--log-dir is used alone" in err


def test_a_fifo_inside_the_log_directory_is_skipped(tmp_path):
    for f in (MSRUN / "raise").iterdir():
        shutil.copy(f, tmp_path / f.name)
    os.mkfifo(tmp_path / "worker_9.log")  # would block a reader forever
    r = pm.analyse([tmp_path])
    assert r.first_failure.rank == 2


# -- clocks ----------------------------------------------------------------------------------------------------------


def _shift_file(path: Path, seconds: int) -> None:
    """Move every MindSpore timestamp in a log by ``seconds`` (a node whose clock is off)."""

    def move(m: re.Match) -> str:
        t = datetime.strptime(m.group(0)[:19], "%Y-%m-%d-%H:%M:%S") + timedelta(seconds=seconds)
        return t.strftime("%Y-%m-%d-%H:%M:%S") + m.group(0)[19:]

    path.write_text(re.sub(r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}", move, path.read_text()))


def test_clocks_that_disagree_are_said_and_corrected(tmp_path):
    for f in (MSRUN / "raise").iterdir():
        shutil.copy(f, tmp_path / f.name)
    base = pm.analyse([tmp_path]).first_failure.time
    for name in ("worker_0.log", "worker_1.log", "worker_2.log", "worker_3.log", "msrun.log"):
        _shift_file(tmp_path / name, 300)  # node 0's clock 5 minutes ahead of the scheduler's
    r = pm.analyse([tmp_path])
    assert r.clock_notes and "node_rank 0" in r.clock_notes[0] and "ahead" in r.clock_notes[0]
    assert r.first_failure.rank == 2
    assert abs((r.first_failure.time - base).total_seconds()) < 300 - 200  # moved back towards the scheduler's
    assert any("clocks disagree" in line for line in r.lines())


def test_agreeing_clocks_say_nothing():
    for scenario in ("raise", "kill", "hang", "never"):
        assert pm.analyse([MSRUN / scenario]).clock_notes == []


# -- bounded reading ---------------------------------------------------------------------------------------------------


def test_a_large_log_is_read_in_bounded_memory(tmp_path):
    """A worker log of 40 MB: its first errors, its traceback and its tail are kept, nothing else."""
    lines = (MSRUN / "raise" / "worker_2.log").read_text().splitlines()
    tb_at = next(i for i, line in enumerate(lines) if line.startswith("Traceback"))
    warning = "\n".join(line for line in lines[:tb_at] if line.startswith("[WARNING]")) + "\n"
    error = lines[0].replace("[WARNING]", "[ERROR]", 1) + "\n"
    big = tmp_path / "worker_2.log"
    with open(big, "w") as fh:
        while fh.tell() < 20 << 20:
            fh.write(warning)
            fh.write(error)
        before = sum(1 for _ in open(big)) if False else None
        fh.write("\n".join(lines[tb_at:]) + "\n")
        while fh.tell() < 40 << 20:
            fh.write(warning)
    del before
    tracemalloc.start()
    scan = pm.scan_file(big)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak >> 20} MiB"
    assert len(scan.errors) == pm.MAX_ERRORS and len(scan.tail) == pm.TAIL
    assert scan.traceback is not None and scan.traceback.exception.startswith("FileNotFoundError")
    with open(big) as fh:
        no = next(i for i, line in enumerate(fh, 1) if line.startswith("Traceback"))
    assert scan.traceback.line == no


def test_a_log_without_newlines_is_cut_not_held(tmp_path):
    blob = tmp_path / "worker_0.log"
    blob.write_bytes(b"x" * (8 << 20))
    scan = pm.scan_file(blob)
    assert scan.lines == 1 and len(scan.tail[0][1]) == pm.MAX_LINE


# -- published Ascend logs of the ranks that survived ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, when, entry, peer",
    [
        ("vllm-ascend-3413-ei0002.log", "2025-10-11 15:09:34.713335", "hccl-exec-timeout", 24),
        ("ascend-pytorch-hccl-timeout-ei0002.log", "2024-11-28 11:59:30.645648", "hccl-exec-timeout", None),
        ("vllm-ascend-486-ei0006.log", "2025-04-08 18:07:20.444436", "hccl-connect-timeout", None),
        ("llamafactory-5071-ei0006.log", "2024-08-05 18:15:21.270506", "hccl-connect-timeout", None),
        ("mindspore-forum-1156-event-wait-timeout.log", "2025-03-18 20:50:24.716326", None, None),
    ],
)
def test_published_survivor_logs_are_waits_for_another_rank(name, when, entry, peer):
    scan = pm.scan_file(PUBLISHED / name)
    rank = pm.Rank(0, 0, scan, scan.pid, errors=list(scan.errors), traceback=scan.traceback)
    kind, ev = rank.first()
    assert kind == "wait", [e.text for e in scan.errors]
    assert min(e.time for e in scan.errors if e.time) == datetime.fromisoformat(when)
    if entry:
        assert pm._explain(ev.text, None)[2] == entry
    m = pm._PEER.search(ev.text)
    assert (int(next(g for g in m.groups() if g)) if m else None) == peer


def test_survivors_with_published_ascend_timeouts_point_at_the_quiet_rank(tmp_path):
    """Two survivors (MindSpore's own Ascend log from the forum, an HCCL EI0002) and a rank whose log just stops."""
    shutil.copy(PUBLISHED / "mindspore-forum-1156-event-wait-timeout.log", tmp_path / "worker_0.log")
    shutil.copy(PUBLISHED / "ascend-pytorch-hccl-timeout-ei0002.log", tmp_path / "worker_1.log")
    shutil.copy(MSRUN / "hang" / "worker_2.log", tmp_path / "worker_2.log")  # the real hung rank's log
    r = pm.analyse([tmp_path])
    assert (r.first_failure.rank, r.first_failure.how) == (2, "hang")
    assert _kinds(r)["collective-timeout"] == {0, 1}


# -- msdoctor train --------------------------------------------------------------------------------------------------


def test_train_prints_the_post_mortem_of_its_msrun_logs(tmp_path, capsys):
    from msdoctor.commands.train import postmortem

    logs = tmp_path / "msrun_log"
    logs.mkdir()
    for f in (MSRUN / "kill").iterdir():
        if f.name != "msrun.log":
            shutil.copy(f, logs / f.name)
    shutil.copy(MSRUN / "kill" / "msrun.log", tmp_path / "stderr.log")  # msrun's messages go to the trainer's stderr
    postmortem(logs, tmp_path, sys.executable)
    err = capsys.readouterr().err
    assert "First failure: rank 1 (node_rank 0)" in err and "SIGKILL" in err
    assert "ranks 0, 2-3: killed by msrun" in err
    postmortem(tmp_path / "nothing", tmp_path / "nothing", sys.executable)  # no logs: nothing, no error
    assert capsys.readouterr().err == ""


# -- plogs ------------------------------------------------------------------------------------------------------------

#: a CANN plog line as published in https://github.com/gpustack/gpustack/issues/2021 (pid and time replaced below)
PLOG_LINE = (
    "[ERROR] HCCL(36035,mindie_llm_backend_connector):2025-05-13-02:25:58.068.817 [op_base.cc:974][36818]"
    "[Init][CommRootInfoConfig]errNo[0x0000000005000002]HcclCommInitRootInfo failed."
)


def _with_plogs(tmp_path: Path) -> tuple[Path, Path]:
    job = tmp_path / "job"
    job.mkdir()
    for f in (MSRUN / "raise").iterdir():
        shutil.copy(f, job / f.name)
    pid0 = pm.scan_file(job / "worker_0.log").pid
    plogs = tmp_path / "ascend" / "log" / "debug" / "plog"
    plogs.mkdir(parents=True)
    # rank 0's process wrote a plog 6 s after rank 2's failure; another process's plog is not the job's
    line = PLOG_LINE.replace("36035", str(pid0)).replace("2025-05-13-02:25:58", "2026-12-02-12:48:20")
    (plogs / f"plog-{pid0}_20261202124800000.log").write_text(line + "\n")
    (plogs / "plog-1_20261202124800000.log").write_text(PLOG_LINE.replace("36035", "1") + "\n")
    return job, plogs


def test_plog_files_given_as_a_log_dir_belong_to_the_rank_of_their_pid(tmp_path):
    job, plogs = _with_plogs(tmp_path)
    r = pm.analyse([job, plogs])
    assert r.first_failure.rank == 2
    later = [c for c in r.consequences if c.kind == "later-error"]
    assert [c.rank for c in later] == [0] and "HcclCommInitRootInfo" in later[0].text
    assert any("plog-1_" in n and "no rank's process" in n for n in r.notes)


def test_plog_directory_named_in_a_log_is_read(tmp_path):
    job, plogs = _with_plogs(tmp_path)
    with open(job / "worker_0.log", "a") as fh:  # mutation: the log names where CANN wrote its plogs
        fh.write(f"[WARNING] DEVICE(1,1,python):2026-12-02-12:48:20.000.000 [x.cc:1] F] see the plog under {plogs}\n")
    r = pm.analyse([job])
    assert any(c.rank == 0 and "HcclCommInitRootInfo" in c.text for c in r.consequences)
    assert not any("plog-1_" in n for n in r.notes)  # only the job's processes' plogs are read


# -- the same runs on a loaded machine --------------------------------------------------------------------------------

LOADED = DATA / "msrun-loaded"


def test_loaded_raise_survivors_timed_out_before_msrun_killed_them():
    r = pm.analyse([LOADED / "raise"])
    assert (r.first_failure.rank, r.first_failure.how) == (2, "traceback")
    assert _kinds(r)["collective-timeout"] == {0, 1, 3}


def test_loaded_hang_the_rank_msrun_saw_exit_by_sigterm_after_the_timeouts_is_still_the_hang():
    r = pm.analyse([LOADED / "hang"])
    ff = r.first_failure
    assert (ff.rank, ff.how) == (2, "hang")
    exits = [code for _, code, _ in pm.scan_file(LOADED / "hang" / "msrun.log").worker_exits]
    assert exits == [-15]  # msrun's only report names the hung rank's later SIGTERM


def test_loaded_never_no_worker_registered_the_cluster_never_formed():
    r = pm.analyse([LOADED / "never"])
    ff = r.first_failure
    assert ff.how == "never-started" and ff.rank is None and "no worker registered" in ff.error
    assert r.lines()[2].startswith("First failure: the cluster at ")


def test_loaded_raise_a_survivor_ended_by_its_runtime_is_what_msrun_reported_first():
    """Rank 2 raised; before its process had exited, rank 3's runtime ended rank 3 with SIGTERM (the scheduler had
    reported node 2 timed out), so msrun's only report is rank 3's Error code: -15. Still rank 2 first."""
    r = pm.analyse([LOADED / "raise-sigterm"])
    assert (r.first_failure.rank, r.first_failure.how) == (2, "traceback")
    exits = [code for _, code, _ in pm.scan_file(LOADED / "raise-sigterm" / "msrun.log").worker_exits]
    assert exits == [-15]
    kinds = _kinds(r)
    assert kinds["ended-by-runtime"] == {3} and kinds["collective-timeout"] == {0, 1}
