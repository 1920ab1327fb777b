"""What the training-config rules read around the config (devices, disk, data, checkpoint size, step time),
and the bounds of physical sense; loaded when the check runs (checks/training_config/__init__.py)."""

from __future__ import annotations

from typing import Any, Optional

from msdoctor.context import Context
from msdoctor.model import Finding, Location

from msdoctor.domain.run_plan import Resolved
from msdoctor.domain.training_setup import TRAINING_SETUP

from .rules import DEFAULT_MAX_LOST_HOURS, Env, Fact


def _option(ctx: Context, name: str) -> Any:
    extra = ctx.options.extra.get("training_config") or {}
    return extra.get(name)


def _first(*facts: Optional[Fact]) -> Optional[Fact]:
    return next((f for f in facts if f is not None), None)


def _directive(res: Resolved, name: str) -> Optional[Fact]:
    v = res.directives.get(name)
    return Fact(v.value, f"`# msdoctor: {name}` at {res.path}:{v.line}") if v is not None else None


def _opt(ctx: Context, name: str, flag: str) -> Optional[Fact]:
    value = _option(ctx, name)
    return Fact(value, flag) if value is not None else None


def _local_devices(ctx: Context) -> Optional[Fact]:
    """Devices of this node: npu-smi's chips, else nvidia-smi's GPUs (None when neither is here)."""
    from msdoctor.facts.npu_smi import NPU_SMI

    try:
        info = ctx.get(NPU_SMI)
    except Exception:  # noqa: BLE001 - npu-smi problems are the device checks' to report
        info = None
    if info is not None and info.chips:
        return Fact(len(info.chips), f"npu-smi info: {len(info.chips)} chips on this node")
    try:
        from msdoctor.facts.nvidia import NVIDIA

        gpus = ctx.get(NVIDIA)
        count = len(getattr(gpus, "gpus", None) or []) if gpus is not None else 0
    except Exception:  # noqa: BLE001 - nvidia-smi problems are the device checks' to report
        count = 0
    if count:
        return Fact(count, f"nvidia-smi: {count} GPUs on this node")
    return None


def gather_env(ctx: Context, cfg: Any, res: Resolved, setup: Any = None) -> Env:
    """Everything outside the file that the rules read (I/O happens here, not in the rules)."""
    from msdoctor.facts.config import requested_device_target

    from . import gather

    base = ctx.project_dir
    env = Env()
    cluster_total, cluster_node = gather.cluster_layout(ctx.environ)
    env.devices = _first(_opt(ctx, "devices", "--devices"), _directive(res, "devices"), cluster_total)
    stated = _option(ctx, "devices_per_node") or "devices_per_node" in res.directives or cluster_node
    local = None if stated else _local_devices(ctx)
    layout = None
    if res.kind == "msdoctor" and res.devices is not None and res.num_nodes is not None:
        layout = Fact(
            int(res.devices.value) // max(1, int(res.num_nodes.value)),
            f"runtime.device_num / runtime.num_nodes in {res.path}",
        )
    env.devices_per_node = _first(
        _opt(ctx, "devices_per_node", "--devices-per-node"),
        _directive(res, "devices_per_node"),
        cluster_node,
        local,
        layout,
    )
    if ctx.options.device_target:
        env.device_target = Fact(requested_device_target(ctx), "--device-target")
    env.base_global_batch = _opt(ctx, "base_global_batch", "--base-global-batch")
    env.max_lost_hours = _first(
        _opt(ctx, "max_lost_hours", "--max-lost-hours"),
        _directive(res, "max_lost_hours"),
        Fact(DEFAULT_MAX_LOST_HOURS, "msdoctor's default"),
    )  # type: ignore[assignment]
    max_files = int(getattr(getattr(cfg.run, "data", None), "max_files", 400)) if cfg.run is not None else 400
    env.data = gather.inspect_data(res, base, max_files)
    ckpt_dir = gather.resolve_path(str(res.ckpt_dir.value), base)
    env.ckpt_dir = str(ckpt_dir)
    env.disk_free, env.ckpt_existing = gather.free_space(ckpt_dir)
    env.ckpt_writable = gather.writable(ckpt_dir)
    try:
        from msdoctor.memory.estimator import total_params

        if setup is None:
            setup = ctx.get(TRAINING_SETUP)  # the one reading of the file, shared with memory-fit
        if setup is None or not setup.ok:
            raise ValueError("; ".join(p.message for p in (setup.problems if setup else [])) or "no setup")
        source = setup.source
        env.params = total_params(source.model)
        total = res.layout_product
        dpn = env.devices_per_node
        ranks = min(total, int(dpn.value)) if dpn is not None else total
        env.ckpt_size = gather.checkpoint_size(res, source, ranks)
        if dpn is None and res.kind == "mindformers" and total > 1:
            env.ckpt_size = type(env.ckpt_size)(
                env.ckpt_size.bytes, env.ckpt_size.why + " (devices per node unknown: all ranks counted on one disk)"
            )
    except Exception as exc:  # noqa: BLE001 - the memory-fit check reports config problems with their lines
        env.ckpt_size_problem = f"the model shape could not be read ({str(exc).splitlines()[0]}); see memory-fit"
    tps = _first(_opt(ctx, "tokens_per_second", "--tokens-per-second"), _directive(res, "tokens_per_second"))
    if tps is not None and float(tps.value) > 0:
        tokens = res.global_batch * int(res.seq_length.value or 0)
        env.step_time = Fact(
            tokens / float(tps.value), f"{tokens:,} tokens per step at {float(tps.value):g} tokens/s ({tps.source})"
        )
    else:
        env.step_time = gather.measured_step_time(res, base)
    return env


#: Resolved field -> the estimator's LIMITS name (the same bounds of physical sense for both checks)
_BOUNDED = {
    "micro_batch": "micro_batch_size",
    "data_parallel": "data_parallel",
    "tensor_parallel": "tensor_parallel",
    "pipeline_stages": "pipeline_stages",
    "context_parallel": "context_parallel",
    "micro_batch_num": "micro_batch_num",
    "grad_accumulation": "grad_accumulation",
    "interleave": "micro_batch_num",
    "num_heads": "num_heads",
    "num_kv_heads": "num_kv_heads",
    "num_layers": "num_layers",
    "seq_length": "seq_length",
    "vpp": "virtual_pipeline_chunks",
    "devices": "devices",
    "mtp_depth": "mtp_layers",
}


def out_of_bounds(res: Resolved) -> list[Finding]:
    """Values past the bounds of physical sense (msdoctor.memory.validate.LIMITS), as error findings with key
    and line: the rules would otherwise enumerate divisors of, or allocate per stage of, a number like 10**12."""
    from msdoctor.memory.validate import LIMITS

    out: list[Finding] = []
    for name, limit_name in _BOUNDED.items():
        val = getattr(res, name, None)
        value = getattr(val, "value", None)
        limit = LIMITS[limit_name]
        if val is not None and isinstance(value, int) and not isinstance(value, bool) and value > limit:
            key = ".".join(str(k) for k in val.keys)
            out.append(
                Finding.error(
                    f"impossible value: {key} = {value:,} is past any real training run (at most {limit:,})",
                    detail="a typo or a corrupted file; the training-config rules are not run on it",
                    fix=f"correct {key} in {res.path}",
                    location=Location(str(res.path), val.line) if res.path else None,
                )
            )
    return out
