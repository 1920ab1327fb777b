"""``msdoctor train`` on a multi-node config: the preflight through msrun on this node before the training.

The same command runs on every node (only --node-rank differs); on each, the preflight's msrun joins
the others' and every rank exits with the cluster's verdict, so a failed preflight starts nothing on
any node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .plan import MsrunArgs


def args_for(cfg: Any) -> MsrunArgs:
    rt = cfg.runtime
    return MsrunArgs(worker_num=rt.device_num, local_worker_num=rt.device_num // rt.num_nodes,
                     master_addr=rt.master_addr, master_port=rt.master_port, node_rank=rt.node_rank,
                     cluster_time_out=rt.cluster_time_out)


def needed(cfg: Any) -> bool:
    return cfg.runtime.num_nodes > 1


def run(cfg: Any, python: str, run_dir: Path, config_path: Path) -> int:
    """0 when the preflight passed on every rank; the report is in RUN/preflight/."""
    from msdoctor.commands.preflight import run_launch

    out = run_dir / "preflight"
    task_args = ["--config", str(Path(config_path).resolve()), "--device-target", cfg.runtime.device_target,
                 "--python", python]
    return run_launch(python, args_for(cfg), out, out / "msrun_log", task_args)


__all__ = ["args_for", "needed", "run"]
