"""``msdoctor train`` on a multi-node config: the preflight through msrun on this node before the training.

The same command runs on every node (only --node-rank differs); on each, the preflight's msrun joins
the others' and every rank exits with the cluster's verdict, so a failed preflight starts nothing on
any node.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from msdoctor.model import ExitCode

from .plan import MsrunArgs

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.training.config import RunConfig


def args_for(cfg: "RunConfig") -> MsrunArgs:
    rt = cfg.runtime
    return MsrunArgs(
        worker_num=rt.device_num,
        local_worker_num=rt.device_num // rt.num_nodes,
        master_addr=rt.master_addr,
        master_port=rt.master_port,
        node_rank=rt.node_rank,
        cluster_time_out=rt.cluster_time_out,
    )


def needed(cfg: "RunConfig") -> bool:
    return cfg.runtime.num_nodes > 1


def run(cfg: "RunConfig", python: str, run_dir: Path, config_path: Path) -> int:
    """0 when the preflight passed on every rank; the report is in RUN/preflight/."""
    out = run_dir / "preflight"
    task_args = [
        "--config",
        str(Path(config_path).resolve()),
        "--device-target",
        cfg.runtime.device_target,
        "--python",
        python,
    ]
    return run_launch(python, args_for(cfg), out, out / "msrun_log", task_args)


def run_launch(python: str, args: Any, out: Path, log_dir: Path, task_args: list[str]) -> int:
    """Run the preflight's msrun line on this node (bounded), print the cluster table and the verdict; 0 when every
    rank passed. Used by ``msdoctor preflight --launch`` and by ``msdoctor train`` before a multi-node run."""
    from msdoctor.preflight.cluster import table
    from msdoctor.preflight.launch import run

    out = out.resolve()
    click.echo(
        f"msdoctor preflight: msrun on node_rank {args.node_rank} ({args.local_worker_num} of {args.worker_num} "
        f"workers, master {args.master_addr}:{args.master_port}, --cluster_time_out {args.cluster_time_out})"
    )
    res = run(python, args, log_dir.resolve(), out, task_args, os.environ)
    rep = res.report
    if rep is not None and rep.get("cluster_formed") is not False and "cluster" in rep:
        click.echo(table(rep))
    if res.summary:
        click.echo(f"msdoctor preflight: {res.summary}", err=True)
    ok = (res.returncode == 0 or res.ended_after_verdict) and rep is not None and rep.get("exit_code") == 0
    click.echo(
        f"msdoctor preflight: {'passed' if ok else 'FAILED'} in {res.seconds:.0f} s (msrun exit "
        f"{res.returncode if not res.timed_out else 'stopped'}; report {out / 'preflight-report.json'}; "
        f"logs {res.log_dir})",
        err=not ok,
    )
    return int(ExitCode.OK if ok else ExitCode.PROBLEMS)


__all__ = ["args_for", "needed", "run", "run_launch"]
