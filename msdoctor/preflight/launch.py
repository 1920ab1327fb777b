"""Run the preflight through msrun on this node, bounded, and read what it left behind.

The msrun line is the one a user would type on each node (only --node_rank differs)::

    msrun --worker_num 4 --local_worker_num 2 --master_addr A --master_port P --node_rank R --join True \\
          --cluster_time_out T --log_dir LOGS python -c "$SAFE_MAIN" preflight --out OUT [--config train.yaml]

where ``SAFE_MAIN`` (below) runs ``python -m msdoctor`` with the working directory off sys.path, and msrun is
started from an empty scratch directory: no project module runs in any rank.

msrun runs in its own process group, killed with everything it started when the bound passes or
msdoctor is interrupted (msdoctor.proc). When the cluster does not form, the scheduler's log
(LOGS/scheduler.log, on node_rank 0) names the nodes that never registered.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from .plan import MsrunArgs

#: seconds allowed on top of --cluster_time_out for msrun to start its processes, for the cluster to
#: form and for msrun to give up when it does not (imports of MindSpore on a loaded 2-core host: 10-30 s;
#: msrun returned 50 s after a 30 s --cluster_time_out there). Past it, with no worker of this node through
#: init(), msrun is stopped and the scheduler log is read.
FORM_MARGIN_S = 90


@dataclass
class LaunchResult:
    returncode: Optional[int]
    timed_out: bool
    seconds: float
    report: Optional[dict]
    summary: str
    msrun_output: str
    log_dir: Path
    #: msrun exited nonzero, but only after every rank of this node had logged the cluster's verdict (a process that
    #: crashed in MindSpore's own teardown, at exit): the verdict stands
    ended_after_verdict: bool = False


#: how each rank starts msdoctor: ``python -m msdoctor`` would put the working directory first on sys.path, so a
#: project's ``typing.py`` or ``json.py`` would run in every rank. ``-c`` puts "" there too, but only when the command
#: starts (after site), so the command drops it before importing anything (``-P`` does the same from Python 3.11:
#: https://docs.python.org/3/using/cmdline.html#cmdoption-P; targets may be older). msrun runs ``python ARGS`` as
#: given (mindspore/parallel/cluster/process_entity/_api.py in MindSpore 2.7.0).
SAFE_MAIN = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "import runpy; runpy.run_module('msdoctor', run_name='__main__', alter_sys=True)"
)


def rank_command(task_args: list[str]) -> list[str]:
    """The task msrun starts on every rank: msdoctor's preflight, with the working directory kept off sys.path."""
    return ["python", "-c", SAFE_MAIN, "preflight", *task_args]


def msrun_argv(python: str, args: MsrunArgs, log_dir: Path, task_args: list[str]) -> list[str]:
    from msdoctor.training.launch import msrun_command

    return [
        *msrun_command(python),
        f"--worker_num={args.worker_num}",
        f"--local_worker_num={args.local_worker_num}",
        f"--master_addr={args.master_addr}",
        f"--master_port={args.master_port}",
        f"--node_rank={args.node_rank}",
        f"--log_dir={log_dir}",
        "--join=True",
        f"--cluster_time_out={args.cluster_time_out}",
        *rank_command(task_args),
    ]


def environment(python: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The target's bin first on PATH (msrun starts `python` from PATH); ranks die with msrun (the trainer's parent
    watch, msdoctor.training.lifecycle: msrun starts each worker in its own session, so killing msrun's group alone
    would leave them running)."""
    from msdoctor.training.lifecycle import DIE_ENV

    env = dict(environ)
    env[DIE_ENV] = "1"
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    # WARNING level (MindSpore's default): the scheduler's "is registered successfully" lines, which name the
    # nodes that came, are warnings; GLOG_v=3 would leave nothing to name the missing ones with
    env.setdefault("GLOG_v", "2")
    return env


def _console(path: Path) -> int:
    from msdoctor.fsutil import WriteError, open_log

    try:
        return open_log(path)
    except OSError as exc:
        raise WriteError(path, exc) from None


def run(
    python: str,
    args: MsrunArgs,
    log_dir: Path,
    out: Path,
    task_args: list[str],
    environ: Mapping[str, str],
    work_timeout: float = 600.0,
) -> LaunchResult:
    from msdoctor import proc

    from .schedlog import read

    from msdoctor.fsutil import make_dirs

    make_dirs(out, "--out")
    make_dirs(log_dir, "--log-dir")
    report_path = out / "preflight-report.json"
    if report_path.exists():
        report_path.unlink()  # a stale report from an earlier run must not pass for this one
    sched_log = log_dir / "scheduler.log"
    if sched_log.exists():
        sched_log.unlink()
    argv = msrun_argv(python, args, log_dir, ["--out", str(out), *task_args])
    bound = args.cluster_time_out + FORM_MARGIN_S + work_timeout
    started = time.monotonic()
    console = log_dir / "msrun.out"
    timed_out = False
    scratch = tempfile.mkdtemp(prefix="msdoctor-preflight-")  # msrun and the ranks run outside the project
    try:
        with os.fdopen(_console(console), "wb") as sink:  # never through a planted link
            child = proc.spawn(
                argv, env=environment(python, environ), stdout=sink, stderr=subprocess.STDOUT, cwd=scratch
            )
            try:
                formed = False
                form_by = started + args.cluster_time_out + FORM_MARGIN_S
                while child.wait(1.0) is None:
                    formed = formed or joined(log_dir)
                    now = time.monotonic()
                    if (not formed and now > form_by) or now > started + bound:
                        timed_out = True  # the bound: msrun and its workers are stopped, the logs still read
                        break
            finally:
                child.close()  # msrun and every worker it started, on every exit path
    except proc.StartError as exc:
        return LaunchResult(None, False, 0.0, None, f"could not start msrun: {exc}", "", log_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rc = None if timed_out else child.returncode
    seconds = time.monotonic() - started
    report = None
    if report_path.is_file():
        try:
            report = json.loads(report_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            report = None
    summary = ""
    if report is None or report.get("cluster_formed") is False:
        if sched_log.is_file():
            summary = read(sched_log).summary(args.local_worker_num, args.worker_num)
        elif args.node_rank != 0:
            summary = (
                "the cluster did not form or this node's ranks failed; node_rank 0's "
                f"{log_dir.name}/scheduler.log names the nodes that never registered"
            )
        else:
            summary = "msrun ended without a preflight report"
        if timed_out:
            summary += f"; msrun was stopped after {bound:.0f} s"
    output = console.read_text(encoding="utf-8", errors="replace") if console.is_file() else ""
    after = False
    if (
        rc not in (0, None)
        and report is not None
        and report.get("exit_code") == 0
        and verdicts(log_dir) >= args.local_worker_num
    ):
        after = True
        crashed = sorted(set(_EXITED.findall(output)))
        summary = (
            f"msrun exited {rc} after every rank on this node had logged the cluster's verdict"
            + (f" (msrun.out: worker process exit code {', '.join(crashed)})" if crashed else "")
            + ": a process ended abnormally in MindSpore's teardown, after the preflight; the verdict stands"
        )
    return LaunchResult(rc, timed_out, seconds, report, summary, output, log_dir, after)


#: what a rank prints into its worker log once init() returned (ranktask.run_worker)
JOINED = "[msdoctor preflight] rank "


#: what a worker prints once every rank has the cluster's verdict, the preflight's last act (ranktask.run_worker)
VERDICT = "[msdoctor preflight] verdict shared: exit "
#: msrun's line for a worker that exited nonzero (mindspore/parallel/cluster/process_entity/_api.py, MindSpore 2.7.0)
_EXITED = re.compile(r"Worker process \d+ exit with exception\. Error code: (-?\d+)")


def _worker_logs_with(log_dir: Path, test: Any) -> int:
    """How many of this node's worker logs have a line that passes ``test``."""
    n = 0
    for p in log_dir.glob("worker_*.log"):
        try:
            with open(p, "r", encoding="utf-8", errors="replace") as fh:
                n += any(test(line) for line in fh)
        except OSError:
            continue
    return n


def verdicts(log_dir: Path) -> int:
    """How many of this node's worker logs end the preflight with the shared verdict."""
    return _worker_logs_with(log_dir, lambda line: line.startswith(VERDICT))


def joined(log_dir: Path) -> bool:
    """Whether any of this node's workers got through init() (their logs say so)."""
    return _worker_logs_with(log_dir, lambda line: line.startswith(JOINED) and " joined in " in line) > 0


def describe(result: LaunchResult) -> dict[str, Any]:
    return {
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "seconds": round(result.seconds, 1),
        "summary": result.summary,
        "log_dir": str(result.log_dir),
    }
