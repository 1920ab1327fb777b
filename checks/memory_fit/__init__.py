"""Check: will the --config training run fit in device memory (estimate per device vs capacity).

pass: fits with >= 10% headroom; warn: tight (< 10%); fail: does not fit, the fix lists the
smallest changes that fit; skip: no --config, or no device memory known (no device here and no
cap in the config); error: impossible values in the config, each at its file:line. Options.extra
may carry ``device_memory`` ("64GiB", as ``msdoctor memory --device-memory``) and
``memory_overrides`` (a msdoctor.memory.Overrides). The estimate is msdoctor.memory's.
"""

from __future__ import annotations

from typing import Any, Optional

from msdoctor.context import Context
from msdoctor.facts.config import CONFIG
from msdoctor.model import Finding, Location

SUMMARY_KEYS = (
    "parameters",
    "gathered_parameters",
    "gradients",
    "master_weights",
    "optimizer_states",
    "accumulation",
    "activations",
    "recompute_working_set",
    "logits",
)


def _breakdown(plan: Any) -> str:
    from msdoctor.memory.units import GIB

    est = plan.estimate
    parts = [f"{c.label} {c.bytes / GIB:.2f}" for c in est.components if c.bytes and c.key in SUMMARY_KEYS]
    rest = sum(c.bytes for c in est.components if c.key not in SUMMARY_KEYS)
    parts.append(f"other {rest / GIB:.2f}")
    stage = f" on pipeline stage {est.stage}" if est.setup.pipeline_stages > 1 else ""
    return f"per device{stage}, GiB: " + " + ".join(parts)


def _suggestions(plan: Any) -> Optional[str]:
    from msdoctor.memory.render import how
    from msdoctor.memory.units import fmt_gib

    lines = []
    for i, sug in enumerate(plan.suggestions, 1):
        edits = "; ".join(how(plan, sug))
        lines.append(f"{i}. {sug.text} -> {fmt_gib(sug.total)} ({sug.cost})" + (f"; set {edits}" if edits else ""))
    return "\n".join(lines) or None


def _location(plan: Any) -> Optional[Location]:
    """The file, at the key the largest term scales with most directly (runner_config.batch_size for activations)."""
    src = plan.source
    if not src.path:
        return None
    line = next((d.line for d in plan.drivers() if d.line), None)
    return Location(str(src.path), line)


def _drivers(plan: Any) -> str:
    kind = "activations" if plan.largest_kind == "activation" else "model states"
    got = [f"{d.key} = {d.value}" + (f" (line {d.line})" if d.line else "") for d in plan.drivers()]
    return f"{kind} weigh most; they scale with {', '.join(got)}. " if got else ""


def evaluate(plan: Any, config_arg: str) -> list[Finding]:
    """Findings for a finished plan (pure: the estimate, capacity and suggestions are in it)."""
    from msdoctor.memory.spec import MEASURE_HINT
    from msdoctor.memory.units import fmt_gib

    est, src = plan.estimate, plan.source
    out: list[Finding] = []
    evidence = {
        "total_bytes": est.total,
        "capacity_bytes": est.capacity,
        "capacity_source": est.device.source,
        "verdict": est.verdict,
        "stage": est.stage,
        "params_total": est.params_total,
        "components": {c.key: c.bytes for c in est.components},
    }
    notes = list(src.notes) + list(est.notes) + list(plan.notes)
    detail = _breakdown(plan) + (". " + "; ".join(notes) if notes else "")
    more = f"details and every formula: msdoctor memory --config {config_arg} -v"
    if est.capacity is None:
        out.append(
            Finding.skipped(
                f"device memory unknown: the estimate is {fmt_gib(est.total)} per device",
                reason=f"{'; '.join(est.device.notes) or 'no device memory found'}. {detail}. Set "
                + ("runtime.device_memory" if src.kind == "msdoctor" else "context.max_device_memory")
                + " (e.g. 58GB on a 64 GB 910B), or run where the devices are",
                evidence=evidence,
            )
        )
    elif est.verdict == "fits":
        out.append(
            Finding.passed(
                f"fits: {fmt_gib(est.total)} of {fmt_gib(est.capacity)} per device "
                f"({est.headroom_fraction:.0%} headroom)",
                proved=f"estimated {fmt_gib(est.total)} per device ({detail}) against {fmt_gib(est.capacity)} "
                f"from {est.device.source}: at least 10% headroom",
                evidence=evidence,
            )
        )
    else:
        tight = est.verdict == "tight"
        title = (
            f"tight: may not fit: {fmt_gib(est.total)} of {fmt_gib(est.capacity)} per device, "
            f"{fmt_gib(est.low)} without the terms not confirmed on hardware"
            if est.may_not_fit
            else f"tight: {fmt_gib(est.total)} of {fmt_gib(est.capacity)} per device "
            f"({est.headroom_fraction:.1%} headroom, under 10%)"
            if tight
            else f"does not fit: needs {fmt_gib(est.total)} per device, {fmt_gib(est.capacity)} available "
            f"({est.device.source})"
        )
        band = (
            "Not confirmed on hardware: "
            + "; ".join(f"{lab} {fmt_gib(b)} ({w})" for _k, lab, b, w in est.unconfirmed)
            + ". "
        )
        why = (
            band
            + (
                "These terms decide it; " + MEASURE_HINT + "."
                if est.may_not_fit
                else "A longer sequence, allocator fragmentation or a runtime update can tip it into an "
                "out-of-memory error hours into the queue."
            )
            if tight
            else band
            + "The run will stop with an out-of-memory error when it starts training, after the job was queued."
        )
        fix = _suggestions(plan) or ("no change within reach fits: more devices are needed" if not tight else None)
        if fix:
            fix = f"smallest changes that fit:\n{fix}\n({more})"
        maker = Finding.warn if tight else Finding.fail
        out.append(
            maker(
                title,
                detail=f"{detail}. {_drivers(plan)}{why}",
                fix=fix or more,
                location=_location(plan),
                evidence=evidence,
                code="tight" if tight else "does-not-fit",
            )
        )
    for p in src.relevant_unknown:
        keys = ".".join(str(k) for k in p.keys)
        out.append(
            Finding.warn(
                f"unknown key {keys} in {src.path.name if src.path else 'the config'}",
                detail=f"{p.message}. A misspelt key is ignored by the framework too, so the setting it was meant to "
                "change is not applied and the estimate above uses the default.",
                fix=f"correct or remove {keys}",
                location=Location(str(src.path), p.line) if src.path else None,
                code="unknown-key",
            )
        )
    return out


class MemoryFitCheck:
    id = "memory-fit"
    title = "Training memory fit"
    description = "Will the --config training run fit in device memory (estimate per device vs capacity)"
    order = 70  # place in reports: environment first, then stack, devices, editors, project
    needs_config = True

    def run(self, ctx: Context) -> list[Finding]:
        cfg = ctx.get(CONFIG)
        if cfg is None:
            return [
                Finding.skipped("no training config", reason="pass --config FILE to estimate its memory per device")
            ]
        from msdoctor.domain.training_setup import TRAINING_SETUP
        from msdoctor.memory.plan import make_plan
        from msdoctor.memory.units import SizeError

        setup = ctx.get(TRAINING_SETUP)  # read once per run, shared with training-config
        if setup is None:
            return [
                Finding.skipped("no training config", reason="pass --config FILE to estimate its memory per device")
            ]
        if not setup.ok:
            return [
                Finding.error(
                    f"impossible value: {'.'.join(str(k) for k in p.keys)}: {p.message}",
                    detail=p.render(setup.path),
                    fix=f"correct {'.'.join(str(k) for k in p.keys)} in {setup.path}",
                    location=Location(str(setup.path), p.line) if setup.path else None,
                    code="impossible-value",
                )
                for p in setup.problems
            ]
        try:
            plan = make_plan(setup.source, ctx, device_memory=ctx.options.extra.get("device_memory"))
        except SizeError as exc:
            return [Finding.error(f"device memory: {exc}", fix="give a size such as 64GiB")]
        return evaluate(plan, str(cfg.path))
