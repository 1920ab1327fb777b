"""How ``msdoctor train`` starts the trainer: argument lists and environment, no MindSpore import.

One device: ``<target python> training/run.py --config <run>/config.json --run-dir <run>``.
More: MindSpore's own launcher, so multi-node jobs use the existing engine::

    <target env>/bin/msrun --worker_num=8 --local_worker_num=8 --master_addr=10.0.0.1 \\
        --master_port=18118 --node_rank=0 --log_dir=<run>/msrun_log --join=True \\
        --cluster_time_out=300 training/run.py --config ... --run-dir ...

msrun starts every worker as ``python <script>`` resolved through PATH, not with its own
interpreter (observed with msrun of MindSpore 2.7.0), so the target env's bin goes first on PATH.
``--join=True`` makes msrun wait and return the job's real status (the default returns at once),
and the master port comes from the config: msrun's default 8118 is also taken by its workers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from .config import RunConfig

ENTRY = Path(__file__).resolve().parent / "run.py"


@dataclass
class Launch:
    argv: list
    env: dict
    #: where the workers' output goes (msrun) besides the run directory's train.log
    worker_logs: Optional[Path] = None


def trainer_args(run_dir: Path, resume: bool) -> list[str]:
    args = [str(ENTRY), "--config", str(run_dir / "config.json"), "--run-dir", str(run_dir)]
    return args + (["--resume"] if resume else [])


def msrun_command(python: str) -> list[str]:
    """msrun next to the target interpreter, else the module it wraps."""
    msrun = Path(python).parent / "msrun"
    if msrun.exists():
        return [str(msrun)]
    return [python, "-m", "mindspore.parallel.cluster.run"]


def environment(python: str, environ: Mapping[str, str]) -> dict:
    """The environment the trainer (and msrun's workers) run with.

    ``msdoctor train`` runs its checks with exactly this environment too, so the gate examines
    what it launches: the target env's bin first on PATH, no PYTHONPATH.
    """
    env = dict(environ)
    env.setdefault(
        "GLOG_v", "3"
    )  # MindSpore C++ log level ERROR (GLOG_v, mindspore.cn env_var_list); set GLOG_v to see warnings
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)  # the trainer must see the target env, not msdoctor's
    return env


def build(cfg: RunConfig, python: str, run_dir: Path, resume: bool, environ: Mapping[str, str]) -> Launch:
    """The command and environment that start training for this config (environ: the caller's)."""
    env = environment(python, environ)
    rt = cfg.runtime
    if rt.device_num == 1:
        return Launch([python, *trainer_args(run_dir, resume)], env)
    logs = run_dir / "msrun_log"
    argv = [
        *msrun_command(python),
        f"--worker_num={rt.device_num}",
        f"--local_worker_num={rt.device_num // rt.num_nodes}",
        f"--master_addr={rt.master_addr}",
        f"--master_port={rt.master_port}",
        f"--node_rank={rt.node_rank}",
        f"--log_dir={logs}",
        "--join=True",
        f"--cluster_time_out={rt.cluster_time_out}",
        *trainer_args(run_dir, resume),
    ]
    return Launch(argv, env, logs)
