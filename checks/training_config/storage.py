"""training-config rules 7 and 8, what the run writes and reads on disk: checkpoints (room on the checkpoint disk,
a writable directory, the time between checkpoints) and the datasets (paths, readability, size)."""

from __future__ import annotations

from typing import Optional

from msdoctor.domain.run_plan import Resolved, Val
from msdoctor.model import Finding

from .common import DataFacts, Env, _loc, _set


def _gib(n: float) -> str:
    """A size for a person: GiB for large values, MiB / KiB below."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n)} B"


# -- 7. checkpoints --------------------------------------------------------------------------------
def rule_checkpoint_disk(res: Resolved, env: Env) -> list[Finding]:
    keep = int(res.ckpt_keep.value or 0)
    if res.kind == "mindformers" and not keep and res.ckpt_every is None:
        return [
            Finding.warn(
                "no CheckpointMonitor in callbacks: this run saves no checkpoints",
                detail="A crash, a preemption or a node failure then loses the whole run.",
                fix=f'{res.where(res.ckpt_keep)}: add to callbacks:\n  - type: CheckpointMonitor\n    prefix: "model"\n'
                "    save_checkpoint_steps: 500\n    keep_checkpoint_max: 3",
                location=_loc(res, res.ckpt_keep),
                code="checkpoint-disk",
            )
        ]
    if env.ckpt_writable is False:
        where = env.ckpt_dir or res.ckpt_dir.value
        return [
            Finding.fail(
                f"the checkpoint directory {where} cannot be written",
                detail="Neither it nor its nearest existing parent is writable by this user: the first save fails, "
                "after the first checkpoint interval of training.",
                fix=f"{_set(res, res.ckpt_dir, '<a writable directory>')} (or make {where} writable)",
                location=_loc(res, res.ckpt_dir),
                code="checkpoint-disk",
            )
        ]
    if env.ckpt_size is None:
        return [
            Finding.skipped(
                "checkpoint size unknown",
                reason=env.ckpt_size_problem or "the model shape could not be read",
                code="checkpoint-disk",
            )
        ]
    size = env.ckpt_size.bytes
    # msdoctor's trainer writes the new checkpoint, then prunes (training/checkpoint.py save): keep_last + 1 at
    # the peak; MindSpore's ModelCheckpoint, which MindFormers' CheckpointMonitor extends, removes the oldest
    # file before it writes the next (mindspore/train/callback/_checkpoint.py, _save_ckpt): keep_checkpoint_max
    copies = keep + 1 if res.kind == "msdoctor" else keep
    peak = " + 1 being written" if res.kind == "msdoctor" else " (the oldest is removed before the next is written)"
    need = copies * size
    where = env.ckpt_dir or res.ckpt_dir.value
    if env.disk_free is None:
        return [
            Finding.skipped(
                f"checkpoint {_gib(size)} x {copies} = {_gib(need)}: free space unknown",
                reason=f"could not read the free space of {where}",
                code="checkpoint-disk",
            )
        ]
    free = int(env.disk_free.value)
    room = free + env.ckpt_existing
    sized = (
        f"one checkpoint {_gib(size)} ({env.ckpt_size.why}); {res.ckpt_keep.said()}{peak} = "
        f"{copies} copies = {_gib(need)}; {_gib(free)} free at {env.disk_free.source}"
        + (f" + {_gib(env.ckpt_existing)} of checkpoints already there" if env.ckpt_existing else "")
    )
    ev = {
        "checkpoint_bytes": size,
        "copies": copies,
        "needed_bytes": need,
        "free_bytes": free,
        "existing_bytes": env.ckpt_existing,
    }
    if room >= need:
        return [
            Finding.passed(
                f"{copies} checkpoints of {_gib(size)} fit in {_gib(room)} at {where}",
                proved=sized,
                location=_loc(res, res.ckpt_keep),
                evidence=ev,
                code="checkpoint-disk",
            )
        ]
    fits = max(0, room // size - (copies - keep)) if size else 0
    fix = (
        _set(res, res.ckpt_keep, fits) + f" ({fits + copies - keep} copies fit), or free {_gib(need - room)} at {where}"
        if fits >= 1
        else f"free at least {_gib(need - room)} at {where}, or point "
        f"{res.ckpt_dir.key} at a larger disk ({res.where(res.ckpt_dir)})"
    )
    return [
        Finding.fail(
            f"checkpoints do not fit: {copies} x {_gib(size)} = {_gib(need)} needed, {_gib(room)} available at {where}",
            detail=sized + ". The save fails with `OSError: [Errno 28] No space left on device` when the disk fills, "
            "hours or days into the run.",
            fix=fix,
            location=_loc(res, res.ckpt_keep),
            evidence=ev,
            code="checkpoint-disk",
        )
    ]


def rule_checkpoint_interval(res: Resolved, env: Env) -> list[Finding]:
    every = res.ckpt_every
    limit = float(env.max_lost_hours.value)
    if every is None or not int(every.value):
        if res.kind == "msdoctor":
            key = Val(0, ("checkpoint", "every_steps"), res.line_of("checkpoint", "every_steps"))
            return [
                Finding.warn(
                    "checkpoint.every_steps is 0: checkpoints only at the end and on SIGTERM",
                    detail="A crash (not a clean stop) loses the whole run.",
                    fix=_set(res, key, 500),
                    location=_loc(res, key),
                    code="checkpoint-interval",
                )
            ]
        return []
    if env.step_time is None:
        return [
            Finding.skipped(
                f"time between checkpoints unknown ({every.said()})",
                reason="no throughput stated or measured: add `# msdoctor: tokens_per_second=N` (the whole job's "
                "tokens/s) or pass --tokens-per-second N; a finished run in the output directory is read too",
                location=_loc(res, every),
                code="checkpoint-interval",
            )
        ]
    step = float(env.step_time.value)
    hours = int(every.value) * step / 3600
    if hours <= limit:
        return [
            Finding.passed(
                f"a checkpoint every {hours:.2g} h ({every.value} steps x {step:.3g} s)",
                proved=f"{every.said()} x {step:.3g} s per optimizer step ({env.step_time.source}) = {hours:.2g} h <= "
                f"{limit:g} h ({env.max_lost_hours.source})",
                location=_loc(res, every),
                code="checkpoint-interval",
            )
        ]
    steps = max(1, int(limit * 3600 // step))
    return [
        Finding.warn(
            f"a crash can lose {hours:.1f} h: a checkpoint only every {every.value} steps x {step:.3g} s",
            detail=f"{every.said()}; {step:.3g} s per optimizer step ({env.step_time.source}); more than the {limit:g} h "
            f"allowed ({env.max_lost_hours.source}; change it with --max-lost-hours or `# msdoctor: max_lost_hours=H`).",
            fix=_set(res, every, steps) + f" (every {steps * step / 3600:.2g} h)",
            location=_loc(res, every),
            code="checkpoint-interval",
            evidence={"hours": hours, "step_time_s": step, "every_steps": int(every.value)},
        )
    ]


# -- 8. data ------------------------------------------------------------------------------------------
def rule_data(res: Resolved, env: Env) -> list[Finding]:
    if res.kind == "msdoctor" and not res.data_paths:
        return [
            Finding.passed(
                "data: the Python standard library's own sources (data.paths is empty)",
                proved="msdoctor's trainer reads the target interpreter's stdlib *.py when data.paths "
                "is empty (training/data.py)",
                code="data",
            )
        ]
    if not env.data:
        return [
            Finding.skipped(
                "no training dataset path in the config",
                reason="train_dataset.data_loader has no dataset_dir / data_path msdoctor reads",
                code="data",
            )
        ]
    out = [f for f in (_data_path(res, d) for d in env.data) if f is not None]
    usable = [d for d in env.data if not d.placeholder and d.exists and d.readable]
    if not usable or len(usable) != len(env.data):
        return out
    return out + [_data_size(res, usable)]


def _data_path(res: Resolved, d: DataFacts) -> Optional[Finding]:
    """What is wrong with one dataset path (a placeholder, missing, unreadable); None when it is usable."""
    v: Val = d.val
    if d.placeholder:
        return Finding.warn(
            f"{v.key} is a placeholder ({v.value!r}): set the dataset path before training",
            detail="The shipped config leaves the dataset to fill in; the job would fail at dataset creation.",
            fix=_set(
                res,
                v,
                "/your/dataset/path"
                if res.kind == "msdoctor"
                else "/your/dataset (a directory of *.mindrecord files, or one .mindrecord file)",
            ),
            location=_loc(res, v),
            code="data-placeholder",
        )
    if not d.exists:
        return Finding.fail(
            f"{v.key}: {d.resolved} " + ("matches no file" if d.kind == "text-glob" else "does not exist"),
            detail=d.note or "The job fails when it builds the dataset, after it was queued.",
            fix=_set(res, v, "<an existing path>") + " (check the mount and the spelling)",
            location=_loc(res, v),
            code="data-missing",
        )
    if not d.readable:
        return Finding.fail(
            f"{v.key}: {d.resolved} is not readable",
            detail=d.note,
            fix=f"chmod -R a+rX {d.resolved} (or run as a user who can read it)",
            location=_loc(res, v),
            code="data-unreadable",
        )
    return None


def _data_size(res: Resolved, usable: list) -> Finding:  # of DataFacts
    """The usable datasets hold at least one global batch: counted in sequences, else in tokens."""
    gb = res.global_batch
    seq = int(res.seq_length.value or 0)
    seqs = [d.sequences for d in usable]
    toks = [d.tokens for d in usable]
    first = usable[0].val
    if all(s is not None for s in seqs):
        n = sum(int(s) for s in seqs)
        if n < gb:
            return Finding.fail(
                f"dataset holds {n} sequences, less than one global batch ({gb})",
                detail="; ".join(f"{d.resolved}: {d.note}" for d in usable) + f"; global batch {res.batch_formula()}. "
                "With drop_remainder the dataset has 0 steps and the run ends, or fails, at once.",
                fix=f"add data, or reduce the global batch below {n} ({res.batch_formula()})",
                location=_loc(res, first),
                code="data-too-small",
            )
        return Finding.passed(
            f"dataset: {n:,} sequences = {n // gb:,} global batches of {gb}",
            proved="; ".join(f"{d.resolved}: {d.note}" for d in usable),
            location=_loc(res, first),
            code="data",
        )
    if all(t is not None for t in toks) and seq:
        n = sum(int(t) for t in toks)
        need = gb * (seq + 1)
        if n < need:
            return Finding.fail(
                f"dataset holds at most {n:,} tokens, less than one global batch ({gb} x {seq + 1} = {need:,})",
                detail="; ".join(f"{d.resolved}: {d.note}" for d in usable),
                fix=f"add text to {first.key}, or shorten {res.seq_length.key} / the global batch",
                location=_loc(res, first),
                code="data-too-small",
            )
        return Finding.passed(
            f"dataset: up to {n:,} tokens, {n // need:,} global batches",
            proved="; ".join(f"{d.resolved}: {d.note}" for d in usable),
            location=_loc(res, first),
            code="data",
        )
    return Finding.passed(
        f"dataset paths exist and are readable ({len(usable)})",
        proved="; ".join(f"{d.resolved}: {d.note or 'exists'}" for d in usable),
        location=_loc(res, first),
        code="data",
    )
