"""``msdoctor preflight``: check every rank of a multi-node job through msrun, before the job spends its queue time.

Three ways to run it (docs/preflight.md):

- as the msrun task, the same line on every node (only --node_rank differs)::

    msrun --worker_num 4 --local_worker_num 2 --master_addr A --master_port P --node_rank R --join True \\
          --cluster_time_out 120 --log_dir LOGS python -m msdoctor preflight --out OUT

- ``msdoctor preflight plan --worker-num 4 --local-worker-num 2 --master-addr A --master-port P --node-rank R``
  on each node before msrun: no collectives, about a second;
- ``msdoctor preflight launch ...`` (the same options): runs the msrun line above on this node, bounded,
  and prints the verdict; ``msdoctor train`` does this before a multi-node training.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

import click

from msdoctor import options
from msdoctor.options import Decorator
from msdoctor.commands.common import WholeSummaryGroup, resolve_target
from msdoctor.preflight.gate import run_launch
from msdoctor.errors import UserError
from msdoctor.model import ExitCode, Status


def _size(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    from msdoctor.memory.units import SizeError, parse_size

    try:
        return int(parse_size(text))
    except SizeError:
        raise UserError(f"not a size: {text!r}", "write it like 4KiB, 16MiB or 1GiB") from None


def msrun_args(
    cfg: Any,
    worker_num: Optional[int],
    local_worker_num: Optional[int],
    master_addr: Optional[str],
    master_port: Optional[int],
    node_rank: Optional[int],
    cluster_time_out: Optional[int],
) -> Any:
    """The msrun arguments from the options, else the training config's runtime section."""
    from msdoctor.preflight.plan import MsrunArgs

    rt = cfg.runtime if cfg is not None else None
    wn = worker_num if worker_num is not None else (rt.device_num if rt else None)
    nodes = rt.num_nodes if rt else 1
    lwn = local_worker_num if local_worker_num is not None else (wn // nodes if wn and rt else None)
    addr = master_addr or (rt.master_addr if rt else None)
    missing = [n for n, v in (("--worker-num", wn), ("--local-worker-num", lwn), ("--master-addr", addr)) if v is None]
    if missing:
        raise UserError(
            f"{', '.join(missing)} needed (or a --config whose runtime section has them)",
            "msdoctor preflight plan --worker-num 4 --local-worker-num 2 --master-addr 10.0.0.1 "
            "--master-port 18118 --node-rank 0",
        )
    from msdoctor.training.config import host_problem

    why = host_problem(str(addr))
    if why:
        raise UserError(
            f"--master-addr {str(addr)[:80]}{'…' if len(str(addr)) > 80 else ''}: {why}",
            "give node_rank 0's host name or IP address, e.g. --master-addr 10.0.0.1",
        )
    assert wn is not None and lwn is not None  # both are in `missing` otherwise
    return MsrunArgs(
        worker_num=int(wn),
        local_worker_num=int(lwn),
        master_addr=str(addr),
        master_port=master_port if master_port is not None else (rt.master_port if rt else 8118),
        node_rank=node_rank if node_rank is not None else (rt.node_rank if rt else 0),
        cluster_time_out=cluster_time_out if cluster_time_out is not None else (rt.cluster_time_out if rt else 600),
    )


def _load_cfg(config: Optional[Path]) -> Any:
    if config is None:
        return None
    from msdoctor.facts.config import load_config

    facts = load_config(config)
    return facts.run if facts.kind == "msdoctor" else None


def _stack(*decorators: Decorator) -> Decorator:
    """Several click options as one decorator (applied in the order listed, as a stack of @ lines reads)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return wrap


def _common_options(formats: list[str], format_help: str) -> Decorator:
    """--config, --device-target, --format and --python: every way of running the preflight takes them."""
    return _stack(
        click.option(
            "--config",
            type=click.Path(path_type=Path, exists=True, dir_okay=False),
            metavar="FILE",
            help="The training config: its precision and sharding decide which collectives and dtypes are "
            "needed (and, without the msrun options, its runtime section gives them).",
        ),
        options.device_target("Default: MindSpore's choice."),
        options.output_format(formats, format_help),
        click.option(
            "--python",
            "python",
            metavar="PATH",
            help="The job's interpreter: every rank must run it "
            "(and in a plan: `python` on PATH must be it). Default: this one.",
        ),
    )


#: the options of the msrun task (each rank's measurements); `preflight` itself and `preflight launch` take them
TASK_OPTIONS = _stack(
    click.option(
        "--out",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("preflight-out"),
        show_default=True,
        metavar="DIR",
        help="Where rank 0 (and the first rank of each node) writes preflight-report.json.",
    ),
    click.option("--min-bytes", metavar="SIZE", help="Smallest size of the bandwidth sweep (CPU 4KiB, devices 1MiB)."),
    click.option("--max-bytes", metavar="SIZE", help="Largest size of the sweep (CPU 4MiB, devices 1GiB)."),
    click.option(
        "--iters", type=click.IntRange(1, 1000), default=3, show_default=True, help="Timed iterations per size."
    ),
    click.option(
        "--warmup", type=click.IntRange(0, 100), default=1, show_default=True, help="Untimed iterations first."
    ),
    click.option("--matmul-size", type=click.IntRange(16, 32768), help="Matmul probe size n (CPU 512, devices 4096)."),
    click.option(
        "--straggler-ratio",
        type=click.FloatRange(0.05, 1.0),
        default=0.7,
        show_default=True,
        help="A rank below this fraction of the median matmul GFLOP/s is a straggler.",
    ),
    click.option(
        "--baseline",
        type=click.Path(path_type=Path, dir_okay=False),
        metavar="FILE",
        help="busbw baseline (JSON, or an earlier preflight-report.json) for pass/warn/fail.",
    ),
    click.option("--no-node-check", is_flag=True, help="Skip `msdoctor check --quick` on the first rank of each node."),
)
TASK_FORMATS = ["terminal", "json", "junit", "github"]
TASK_FORMAT_HELP = (
    "junit, github: also write the cluster result as JUnit XML or GitHub annotations (into --out); "
    "the msrun task always writes OUT/preflight-report.json."
)


def _msrun_options(hidden: bool = False) -> Decorator:
    """msrun's own arguments, for a plan and a launch (hidden on `preflight` itself, where they are the old spelling)."""
    return _stack(
        click.option("--worker-num", type=click.IntRange(1), hidden=hidden, help="msrun --worker_num (all nodes)."),
        click.option("--local-worker-num", type=click.IntRange(1), hidden=hidden, help="Workers on this node."),
        click.option("--master-addr", metavar="ADDR", hidden=hidden, help="The master node's address."),
        click.option("--master-port", type=click.IntRange(1, 65535), hidden=hidden, help="The scheduler's port."),
        click.option("--node-rank", type=click.IntRange(0), hidden=hidden, help="This node's rank."),
        click.option(
            "--cluster-time-out", type=click.IntRange(1), hidden=hidden, help="msrun --cluster_time_out seconds."
        ),
    )


LOG_DIR = click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="msrun --log_dir (default OUT/msrun_log).",
)


@click.group("preflight", cls=WholeSummaryGroup, invoke_without_command=True)
@TASK_OPTIONS
@_common_options(TASK_FORMATS, TASK_FORMAT_HELP)
@_msrun_options(hidden=True)
@click.option("--plan", is_flag=True, hidden=True, help="The same as `msdoctor preflight plan`.")
@click.option("--launch", is_flag=True, hidden=True, help="The same as `msdoctor preflight launch`.")
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    hidden=True,
    help="The same as `preflight launch --log-dir`.",
)
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Deprecated: the same as --format json.")
@click.option(
    "--compare-plans",
    "compare_plans",
    multiple=True,
    hidden=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    metavar="PLAN.json",
    help="The same as `msdoctor preflight compare`.",
)
@click.pass_context
def preflight(
    ctx: click.Context,
    out: Path,
    config: Optional[Path],
    device_target: Optional[str],
    fmt: str,
    min_bytes: Optional[str],
    max_bytes: Optional[str],
    iters: int,
    warmup: int,
    matmul_size: Optional[int],
    straggler_ratio: float,
    baseline: Optional[Path],
    python: Optional[str],
    no_node_check: bool,
    plan: bool,
    launch: bool,
    worker_num: Optional[int],
    local_worker_num: Optional[int],
    master_addr: Optional[str],
    master_port: Optional[int],
    node_rank: Optional[int],
    cluster_time_out: Optional[int],
    log_dir: Optional[Path],
    as_json: bool,
    compare_plans: tuple[Path, ...],
) -> int:
    """Check every rank of a multi-node job through msrun: versions, env, HCCL timeouts, collectives, bandwidth.

    \b
    On every node (only --node_rank differs), this command is msrun's task:
      msrun --worker_num 4 --local_worker_num 2 --master_addr 10.0.0.1 --master_port 18118 \\
            --node_rank R --join True --cluster_time_out 120 --log_dir LOGS \\
            python -m msdoctor preflight --out OUT
    Before that, on every node (about a second):
      msdoctor preflight plan --worker-num 4 --local-worker-num 2 --master-addr 10.0.0.1 \\
            --master-port 18118 --node-rank R
    Or let msdoctor run that msrun line on this node: msdoctor preflight launch (the same options).
    The old spellings --plan, --launch and --compare-plans still work.

    Exit codes: 0 every check passed, 1 something failed (every rank exits 1, so msrun --join True
    returns non-zero on every node), 2 bad usage.
    """
    if ctx.invoked_subcommand is not None:
        return int(ExitCode.OK)  # the subcommand does the work
    if plan and launch:
        raise UserError("--plan and --launch are two different runs", "give one of them")
    as_json = as_json or fmt == "json"
    if compare_plans:
        return _compare_plans(list(compare_plans))
    msrun = (worker_num, local_worker_num, master_addr, master_port, node_rank, cluster_time_out)
    task = (
        out,
        config,
        device_target,
        fmt,
        min_bytes,
        max_bytes,
        iters,
        warmup,
        matmul_size,
        straggler_ratio,
        baseline,
        python,
        no_node_check,
    )
    if os.environ.get("MS_ROLE") in ("MS_WORKER", "MS_SCHED") and not (plan or launch):
        return _task(*task)
    if not (plan or launch):
        raise UserError(
            "msdoctor preflight runs under msrun (the same line on every node), or as preflight plan / "
            "preflight launch",
            "msrun --worker_num 4 --local_worker_num 2 --master_addr A --master_port P --node_rank R "
            "--join True --log_dir LOGS python -m msdoctor preflight --out OUT   (see msdoctor preflight -h)",
        )
    if plan:
        return _plan_mode(config, device_target, python, msrun, as_json)
    return _launch_mode(task, msrun, log_dir)


@preflight.command("plan")
@_common_options(["terminal", "json"], "json: the plan's findings as JSON (what `preflight compare` reads).")
@_msrun_options()
def plan_cmd(
    config: Optional[Path],
    device_target: Optional[str],
    fmt: str,
    python: Optional[str],
    worker_num: Optional[int],
    local_worker_num: Optional[int],
    master_addr: Optional[str],
    master_port: Optional[int],
    node_rank: Optional[int],
    cluster_time_out: Optional[int],
) -> int:
    """Before msrun, on this node: arguments, master address, port, devices, interpreter. No collectives.

    \b
    Example, on each node (only --node-rank differs):
      msdoctor preflight plan --worker-num 4 --local-worker-num 2 --master-addr 10.0.0.1 \\
            --master-port 18118 --node-rank R --format json > nodeR.json
    """
    msrun = (worker_num, local_worker_num, master_addr, master_port, node_rank, cluster_time_out)
    return _plan_mode(config, device_target, python, msrun, fmt == "json")


@preflight.command("launch")
@TASK_OPTIONS
@_common_options(TASK_FORMATS, TASK_FORMAT_HELP)
@_msrun_options()
@LOG_DIR
def launch_cmd(
    out: Path,
    config: Optional[Path],
    device_target: Optional[str],
    fmt: str,
    min_bytes: Optional[str],
    max_bytes: Optional[str],
    iters: int,
    warmup: int,
    matmul_size: Optional[int],
    straggler_ratio: float,
    baseline: Optional[Path],
    python: Optional[str],
    no_node_check: bool,
    worker_num: Optional[int],
    local_worker_num: Optional[int],
    master_addr: Optional[str],
    master_port: Optional[int],
    node_rank: Optional[int],
    cluster_time_out: Optional[int],
    log_dir: Optional[Path],
) -> int:
    """The plan, then the msrun line with msdoctor's task on this node (bounded); prints the cluster's verdict."""
    task = (
        out,
        config,
        device_target,
        fmt,
        min_bytes,
        max_bytes,
        iters,
        warmup,
        matmul_size,
        straggler_ratio,
        baseline,
        python,
        no_node_check,
    )
    msrun = (worker_num, local_worker_num, master_addr, master_port, node_rank, cluster_time_out)
    return _launch_mode(task, msrun, log_dir)


@preflight.command("compare")
@click.argument(
    "plans",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    metavar="PLAN.json...",
)
def compare_cmd(plans: tuple[Path, ...]) -> int:
    """Compare every node's `preflight plan --format json` output (give each file)."""
    return _compare_plans(list(plans))


MsrunValues = tuple[Optional[int], Optional[int], Optional[str], Optional[int], Optional[int], Optional[int]]


def _plan_mode(
    config: Optional[Path], device_target: Optional[str], python: Optional[str], msrun: MsrunValues, as_json: bool
) -> int:
    cfg = _load_cfg(config)
    target = resolve_target(python, None)
    args = msrun_args(cfg, *msrun)
    dt = device_target or (cfg.runtime.device_target if cfg is not None else None) or _guess_target()
    return _plan(args, dt, target, as_json)


def _launch_mode(task: tuple[Any, ...], msrun: MsrunValues, log_dir: Optional[Path]) -> int:
    """The plan first, then msrun (``task``: the msrun task's options, in _task's order)."""
    from msdoctor.preflight.plan import check

    (
        out,
        config,
        device_target,
        fmt,
        min_bytes,
        max_bytes,
        iters,
        warmup,
        matmul_size,
        straggler_ratio,
        baseline,
        python,
        no_node_check,
    ) = task
    cfg = _load_cfg(config)
    target = resolve_target(python, None)
    args = msrun_args(cfg, *msrun)
    dt = device_target or (cfg.runtime.device_target if cfg is not None else None) or _guess_target()
    planned = check(args, device_target=dt, expected_python=target, env=_launch_env(target))
    if planned.status >= Status.FAIL:
        _plan_print(args, planned, 0.0)
        click.echo("msdoctor preflight: msrun not started: the plan above has problems", err=True)
        return int(ExitCode.PROBLEMS)
    task_args = _task_args(
        config,
        device_target,
        fmt,
        min_bytes,
        max_bytes,
        iters,
        warmup,
        matmul_size,
        straggler_ratio,
        baseline,
        target,
        no_node_check,
    )
    return run_launch(target, args, out, log_dir or out / "msrun_log", task_args)


def _launch_env(python: str) -> dict[str, str]:
    from msdoctor.preflight.launch import environment

    return environment(python, os.environ)


def _guess_target() -> str:
    import glob

    if glob.glob("/dev/davinci[0-9]*"):
        return "Ascend"
    if glob.glob("/dev/nvidia[0-9]*"):
        return "GPU"
    return "CPU"


def _task_args(
    config: Optional[Path],
    device_target: Optional[str],
    fmt: str,
    min_bytes: Optional[str],
    max_bytes: Optional[str],
    iters: int,
    warmup: int,
    matmul_size: Optional[int],
    straggler_ratio: float,
    baseline: Optional[Path],
    python: Optional[str],
    no_node_check: bool,
) -> list[str]:
    out: list[str] = []
    for flag, value in (
        ("--config", config and Path(config).resolve()),
        ("--device-target", device_target),
        ("--format", fmt),
        ("--min-bytes", min_bytes),
        ("--max-bytes", max_bytes),
        ("--iters", iters),
        ("--warmup", warmup),
        ("--matmul-size", matmul_size),
        ("--straggler-ratio", straggler_ratio),
        ("--baseline", baseline and Path(baseline).resolve()),
        ("--python", python),
    ):
        if value is not None:
            out += [flag, str(value)]
    return out + (["--no-node-check"] if no_node_check else [])


def _task(
    out: Path,
    config: Optional[Path],
    device_target: Optional[str],
    fmt: str,
    min_bytes: Optional[str],
    max_bytes: Optional[str],
    iters: int,
    warmup: int,
    matmul_size: Optional[int],
    straggler_ratio: float,
    baseline: Optional[Path],
    python: Optional[str],
    no_node_check: bool,
) -> int:
    from msdoctor.preflight.bandwidth import BaselineError, load_baseline
    from msdoctor.preflight.ranktask import TaskOptions, main

    if baseline is not None:
        try:
            load_baseline(baseline)  # a bad baseline is exit 2 on every rank before init, not a hang
        except BaselineError as exc:
            raise UserError(
                str(exc),
                'pass a JSON file {"busbw_gbs": {"world/AllReduce/1048576": 12.3}} or an earlier preflight-report.json',
            ) from None
    opts = TaskOptions(
        out=out.resolve(),
        config=config.resolve() if config else None,
        device_target=device_target,
        fmt=fmt,
        min_bytes=_size(min_bytes),
        max_bytes=_size(max_bytes),
        iters=iters,
        warmup=warmup,
        matmul_size=matmul_size,
        straggler_ratio=straggler_ratio,
        baseline=baseline,
        expected_python=python,
        node_check=not no_node_check,
    )
    # a normal exit: a worker that skips MindSpore's teardown (os._exit) is "timed out" for the scheduler, which
    # then fails and makes msrun on node 0 exit 1 (observed on MindSpore 2.7.0)
    return main(opts)


def _plan(args: Any, device_target: str, python: str, as_json: bool) -> int:
    import time

    from msdoctor.preflight.plan import check

    t0 = time.monotonic()
    res = check(args, device_target=device_target, expected_python=python)
    took = time.monotonic() - t0
    if as_json:
        from msdoctor.render.json_report import finding_dict

        click.echo(
            json.dumps(
                {
                    "args": args.as_dict(),
                    "device_target": device_target,
                    "status": res.status.value,
                    "seconds": round(took, 3),
                    "findings": [finding_dict(f) for f in res.findings],
                },
                indent=1,
                default=str,
            )
        )
    else:
        _plan_print(args, res, took)
    return int(ExitCode.PROBLEMS if res.status >= Status.FAIL else ExitCode.OK)


def _compare_plans(paths: list[Path]) -> int:
    from msdoctor.docfile import load_json_file
    from msdoctor.preflight.plan import compare
    from msdoctor.schema import PLAN, require

    plans = []
    for p in paths:
        doc = load_json_file(p, "plan")  # a FIFO, /dev/zero, a flood or deep nesting: exit 2, never a hang
        plans.append(
            require(
                doc,
                PLAN,
                what="the output of `msdoctor preflight plan --format json`",
                fix="write it on each node with: msdoctor preflight plan --format json ... > nodeR.json",
            )
        )
    findings = compare(plans)
    click.echo(f"msdoctor preflight compare: {len(plans)} plans")
    for f in findings:
        click.echo(f"  [{f.status.value:^5}] {f.title}")
        for extra in (f.detail, f"fix: {f.fix}" if f.fix else ""):
            if extra:
                click.echo(f"          {extra}")
    return int(ExitCode.PROBLEMS if any(f.status >= Status.FAIL for f in findings) else ExitCode.OK)


def _plan_print(args: Any, res: Any, took: float) -> None:
    click.echo(
        f"msdoctor preflight plan: node_rank {args.node_rank}, {args.local_worker_num} of "
        f"{args.worker_num} workers, master {args.master_addr}:{args.master_port} ({took:.2f} s)"
    )
    for f in res.findings:
        click.echo(f"  [{f.status.value:^5}] {f.title}")
        if f.status is not Status.PASS:
            if f.detail:
                click.echo(f"          {f.detail}")
            if f.fix:
                click.echo(f"          fix: {f.fix}")
