"""The memory plan for people (a rich table) and for programs (a JSON-able dict)."""

from __future__ import annotations

import dataclasses
from typing import Any

from msdoctor.memory.plan import Plan
from msdoctor.memory.suggest import Suggestion
from msdoctor.memory.sources import MSDOCTOR_ORIGINS, OPTION_OF
from msdoctor.memory.spec import MEASURE_HINT
from msdoctor.memory.units import GIB, fmt_count, fmt_gib
from msdoctor.shipped import path as shipped

#: estimator field -> MindFormers key (docs feature/configuration.md)
MINDFORMERS_KEY = {
    "data_parallel": "parallel_config.data_parallel",
    "tensor_parallel": "parallel_config.model_parallel",
    "pipeline_stages": "parallel_config.pipeline_stage",
    "micro_batch_num": "parallel_config.micro_batch_num",
    "sequence_parallel": "parallel_config.use_seq_parallel",
    "micro_batch_size": "runner_config.batch_size",
    "grad_accumulation": "runner_config.gradient_accumulation_steps",
    "flash_attention": "model.model_config.use_flash_attention",
}


def how(plan: Plan, sug: Suggestion) -> list[str]:
    """The edits of a suggestion, spelled as keys of the config's own format."""
    kind = plan.source.kind
    out: list[str] = []
    for field, value in (e for c in sug.changes for e in c.edits):
        if field == "recompute_layers":
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        if kind == "msdoctor":
            if field in MSDOCTOR_ORIGINS:
                out.append(f"{'.'.join(MSDOCTOR_ORIGINS[field])}: {text}")
        elif kind == "mindformers":
            out.extend(_mindformers_edit(field, value, text))
        else:
            if field in OPTION_OF:
                out.append(f"{OPTION_OF[field]} {text}")
    return list(dict.fromkeys(out))


def _mindformers_edit(field: str, value: Any, text: str) -> list[str]:
    if field == "recompute":
        if value == "full":
            return ["recompute_config.recompute: True"]
        return ["recompute_config.select_recompute: True"]
    if field == "optimizer_sharding":
        out = ["parallel.enable_parallel_optimizer: True"]
        if value == "grads":
            out.append("parallel.parallel_optimizer_config.gradient_accumulation_shard: True")
        if value == "params":
            out.append("parallel.parallel_optimizer_config.optimizer_level: level3")
        return out
    if field in MINDFORMERS_KEY:
        return [f"{MINDFORMERS_KEY[field]}: {'True' if value is True else 'False' if value is False else text}"]
    return []


def _problem(p: Any) -> dict:
    return {"key": ".".join(str(k) for k in p.keys), "line": p.line, "message": p.message}


def to_json(plan: Plan) -> dict:
    """Every component in bytes, the capacity, verdict and suggestions."""
    est, src = plan.estimate, plan.source
    dev = est.device
    return {
        "config": str(src.path) if src.path else None,
        "kind": src.kind,
        "model": dataclasses.asdict(src.model),
        "setup": dataclasses.asdict(src.setup),
        "params_total": est.params_total,
        "params_on_device": est.params_on_device,
        "stage": est.stage,
        "stages": [dataclasses.asdict(s) for s in est.stages],
        "components": [
            {
                "key": c.key,
                "label": c.label,
                "bytes": c.bytes,
                "gib": round(c.bytes / GIB, 4),
                "kind": c.kind,
                "why": c.why,
            }
            for c in est.components
        ],
        "allocated_bytes": est.allocated,
        "model_states_bytes": est.model_states,
        "total_bytes": est.total,
        "capacity": {
            "bytes": dev.capacity,
            "gib": None if dev.capacity is None else round(dev.capacity / GIB, 4),
            "target": dev.target,
            "source": dev.source,
            "devices_found": dev.count,
            "notes": list(dev.notes),
        },
        "headroom_bytes": est.headroom,
        "headroom_fraction": None if est.headroom_fraction is None else round(est.headroom_fraction, 4),
        "verdict": est.verdict,
        "may_not_fit": est.may_not_fit,
        "low_bytes": est.low,
        "unconfirmed": [{"key": k, "label": lab, "bytes": b, "why": why} for k, lab, b, why in est.unconfirmed],
        "largest": plan.largest_kind,
        "drivers": [{"field": d.fieldname, "key": d.key, "line": d.line, "value": d.value} for d in plan.drivers()],
        "suggestions": [
            {
                "changes": [
                    {"kind": c.kind, "text": c.text, "cost": c.cost, "edits": {k: v for k, v in c.edits}}
                    for c in s.changes
                ],
                "total_bytes": s.total,
                "total_gib": round(s.total / GIB, 4),
                "verdict": s.verdict,
                "how": how(plan, s),
            }
            for s in plan.suggestions
        ],
        "unknown_keys": [_problem(p) for p in src.unknown],
        "notes": list(src.notes) + list(est.notes) + list(plan.notes),
    }


#: unknown keys printed one per line; the rest are counted (the JSON output lists all)
MAX_LISTED = 20

VERDICT_STYLE = {"fits": "green", "tight": "yellow", "does not fit": "bold red", "unknown": "dim"}


def verdict_line(plan: Plan) -> str:
    est = plan.estimate
    if est.capacity is None:
        return (
            f"estimate {fmt_gib(est.total)} per device; capacity unknown "
            f"({'; '.join(est.device.notes) or 'no device found'}): pass --device-memory, e.g. 64GiB"
        )
    frac = est.headroom_fraction or 0.0
    room = f"{frac:.1%} headroom" if frac >= 0 else f"{fmt_gib(est.total - est.capacity)} over"
    line = (
        f"{est.verdict}{': may not fit' if est.may_not_fit else ''}: {fmt_gib(est.total)} of "
        f"{fmt_gib(est.capacity)} per device ({room}; capacity from {est.device.source})"
    )
    return line + "\n" + band_lines(est) + ("\n" + driver_line(plan) if est.verdict != "fits" else "")


def driver_line(plan: Plan) -> str:
    """The config values the largest kind of term scales with, each with its key and line."""
    kind = "activations" if plan.largest_kind == "activation" else "model states"
    got = [f"{d.key} = {d.value}" + (f" (line {d.line})" if d.line else "") for d in plan.drivers()]
    return f"  {kind} weigh most; they scale with: " + (", ".join(got) if got else "(defaults only)")


def band_lines(est: Any) -> str:
    """The band (low end without the unconfirmed terms), the terms, and how to settle it."""
    out = [f"  band: {fmt_gib(est.low)} to {fmt_gib(est.total)}; not confirmed on hardware:"]
    out += [f"    - {label} {fmt_gib(b)}: {why}" for _key, label, b, why in est.unconfirmed]
    if est.may_not_fit:
        out.append(f"  what decides it: whether these terms are resident at the peak; {MEASURE_HINT}")
    return "\n".join(out)


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    """Fixed-width rows (label, GiB, bytes); plain text so logs and pipes keep one row per line."""
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    return [f"  {a:<{w0}}  {b:>{w1}}  {c:>{w2}}" for a, b, c in rows]


def render_terminal(plan: Plan, console: Any, verbose: bool = False) -> None:
    est = plan.estimate
    _print_setup(plan, console)
    _print_components(plan, console, verbose)
    console.print(verdict_line(plan), style=VERDICT_STYLE.get(est.verdict))
    for note in list(est.device.notes) if est.capacity is not None else []:
        console.print(f"  note: {note}", style="dim")
    _print_suggestions(plan, console)
    _print_notes(plan, console, verbose)


def _print_setup(plan: Plan, console: Any) -> None:
    """The config, the model's shape and the training setup the estimate is for."""
    est, src = plan.estimate, plan.source
    m, s = src.model, src.setup
    console.print(f"{src.path or 'config'} ({src.kind} config)")
    console.print(
        f"  model: {m.num_layers} layers, hidden {m.hidden_size}, {m.num_heads} heads"
        + (f" ({m.kv_heads} KV)" if m.kv_heads != m.num_heads else "")
        + f", FFN {m.ffn} {m.activation}, vocab {m.vocab_size}: {fmt_count(est.params_total)} parameters",
        style="dim",
    )
    console.print(
        f"  setup: seq {s.seq_length}, micro-batch {s.micro_batch_size}, accumulation {s.grad_accumulation}, "
        f"dp {s.data_parallel} x tp {s.tensor_parallel} x pp {s.pipeline_stages}"
        + (f" x cp {s.context_parallel}" if s.context_parallel > 1 else "")
        + f", {s.precision} compute / {s.param_dtype} weights, {s.optimizer}, recompute {s.recompute}, "
        f"sharding {s.optimizer_sharding}, flash {'on' if s.flash_attention else 'off'}"
        + (", SP" if s.sequence_parallel else "")
        + (f", {s.pipeline_scheduler} schedule" if s.pipeline_stages > 1 else "")
        + (f" ({s.seq_split_num} sequence chunks)" if s.pipeline_scheduler == "seqpipe" and s.seq_split_num > 1 else "")
        + (f", {s.framework} convention" if s.framework != "mindspore" else ""),
        style="dim",
    )


def _print_components(plan: Plan, console: Any, verbose: bool) -> None:
    """The table of components, total, model states and capacity; with verbose, where each number comes from."""
    est, s = plan.estimate, plan.source.setup
    where = f" (stage {est.stage} of {s.pipeline_stages})" if s.pipeline_stages > 1 else ""
    console.print(f"memory per device{where}:")
    rows = [("component", "GiB", "bytes")]
    rows += [(c.label, f"{c.bytes / GIB:.2f}", f"{c.bytes:,}") for c in est.components]
    rows.append(("total", f"{est.total / GIB:.2f}", f"{est.total:,}"))
    rows.append(("  of which model states", f"{est.model_states / GIB:.2f}", f"{est.model_states:,}"))
    if est.capacity is not None:
        rows.append(("capacity", f"{est.capacity / GIB:.2f}", f"{est.capacity:,}"))
    lines = _table(rows)
    console.print(lines[0], style="dim")
    for line in lines[1 : len(est.components) + 1]:
        console.print(line)
    for line in lines[len(est.components) + 1 :]:
        console.print(line, style="bold")
    if verbose:
        console.print("why:")
        for c in est.components:
            console.print(f"  {c.label}: {c.why}", style="dim")
        console.print(f"  capacity: {est.device.source}", style="dim")
        for st in est.stages if s.pipeline_stages > 1 else ():
            console.print(
                f"  stage {st.stage}: {st.layers} layers, {fmt_count(st.params)} params, {st.total / GIB:.2f} GiB",
                style="dim",
            )


def _print_suggestions(plan: Plan, console: Any) -> None:
    """The smallest changes that fit, with the config keys to set; or that none within reach does."""
    if plan.suggestions:
        console.print("smallest changes that fit:")
        for i, sug in enumerate(plan.suggestions, 1):
            console.print(f"  {i}. {sug.text}  -> {fmt_gib(sug.total)} ({sug.verdict})")
            console.print(f"     cost: {sug.cost}", style="dim")
            edits = how(plan, sug)
            if edits:
                console.print(f"     set: {'; '.join(edits)}", style="cyan")
    elif plan.estimate.verdict == "does not fit":
        console.print(
            "no change within reach (recompute, sharding, sequence parallel, micro-batch, layout of these "
            "devices) fits: more devices are needed",
            style="bold red",
        )


def _print_notes(plan: Plan, console: Any, verbose: bool) -> None:
    """Unknown config keys, the notes of the source, estimate and plan; with verbose, how to measure instead."""
    est, src = plan.estimate, plan.source
    for p in src.unknown[:MAX_LISTED]:
        where = f"{src.path}:{p.line}" if p.line else str(src.path)
        console.print(f"  unknown key {'.'.join(str(k) for k in p.keys)} ({where}): {p.message}", style="yellow")
    if len(src.unknown) > MAX_LISTED:
        console.print(
            f"  ... and {len(src.unknown) - MAX_LISTED} more unknown keys (all of them: --format json)", style="yellow"
        )
    for note in list(src.notes) + list(est.notes) + list(plan.notes):
        console.print(f"  note: {note}", style="dim")
    if verbose:
        console.print(
            "  the estimate is a formula (msdoctor.memory.estimator names each term's source); for a "
            "measured figure on Ascend, compile one rank per pipeline stage with MindSpore's DryRun: "
            "msrun --sim_level=1 --sim_rank_id=R (or MS_SIMULATION_LEVEL=1 RANK_ID=R) and GLOG_v=1, "
            f"then read 'Used peak memory usage' ({shipped('docs/memory.md')})",
            style="dim",
        )
