"""training-config rules 1-4, the optimization schedule: global batch, optimizer steps and warmup; the learning rate
against the global batch; the warmup share; the global batch range (sources beside each constant)."""

from __future__ import annotations

import math
from typing import Any, Optional

from msdoctor.domain.run_plan import Resolved, Val
from msdoctor.model import Finding

from .common import Env, _loc, _set


#: the usual LLM-pretraining global batch, in sequences: GPT-3 (Brown et al. 2020, arXiv:2005.14165,
#: Table 2.1) used 0.5M-3.2M tokens of 2048 = 256-1536 sequences; Llama 2 (Touvron et al. 2023,
#: arXiv:2307.09288, section 2.2) 4M tokens = 1024 sequences of 4096.
BATCH_RANGE = (256, 1024)


#: below this many parameters the batch range above does not apply (GPT-3 Small, 125M, is the
#: smallest model of that table)
BATCH_RANGE_MIN_PARAMS = 100_000_000


#: warmup as a share of the optimizer steps: Pythia (Biderman et al. 2023, arXiv:2304.01373)
#: warms up over 1%; MindFormers' pretraining configs ship warmup_ratio 0.03
#: (mindspore-lab/mindformers configs/llama2/pretrain_llama2_7b.yaml).
WARMUP_RANGE = (0.01, 0.03)


WARMUP_MIN_STEPS = 100  # shorter runs (smoke tests) are not held to the share


LINEAR_RULE = "linear rule (Goyal et al. 2017, arXiv:1706.02677, section 2.1: lr proportional to the batch)"


SQRT_RULE = (
    "square-root rule for Adam-type optimizers (Malladi et al. 2022, arXiv:2205.10287: lr proportional to "
    "the square root of the batch)"
)


def _accumulation(res: Resolved) -> Val:
    """The key that multiplies the global batch without more devices or memory."""
    if res.kind == "mindformers" and int(res.pipeline_stages.value) > 1:
        return res.micro_batch_num
    return res.grad_accumulation


def total_steps(res: Resolved, env: Env) -> tuple[Optional[int], str]:
    """Optimizer steps of the run and how they were derived ("" reason when known)."""
    if res.total_steps is not None:
        return int(res.total_steps.value), res.total_steps.said()
    if res.kind == "mindformers":
        seqs = dataset_sequences(env)
        epochs = int(res.epochs.value) if res.epochs else 1
        ek = res.epochs.said() if res.epochs else "1 epoch"
        if seqs is not None and res.global_batch:
            per_epoch = seqs // res.global_batch
            return epochs * per_epoch, (
                f"{ek} x {per_epoch} global batches in the dataset ({seqs} records // "
                f"{res.global_batch}; lr_schedule.total_steps is -1 or absent)"
            )
        return None, (
            f"lr_schedule.total_steps is -1 or absent, so MindFormers takes {ek} x the dataset size in "
            "global batches, and the dataset was not counted"
        )
    return None, "no total steps"


def warmup_steps(res: Resolved, env: Env, total: Optional[int]) -> tuple[Optional[int], str]:
    if res.warmup_ratio is not None:  # MindFormers: warmup_ratio takes precedence
        if total is None:
            return None, f"{res.warmup_ratio.said()} of the total steps (unknown)"
        return int(total * float(res.warmup_ratio.value)), f"{res.warmup_ratio.said()} x {total} total steps"
    if res.warmup_epochs is not None:
        seqs = dataset_sequences(env)
        if seqs is None or not res.global_batch:
            return None, f"{res.warmup_epochs.said()} x the dataset size (not counted)"
        per_epoch = seqs // res.global_batch
        return int(float(res.warmup_epochs.value) * per_epoch), f"{res.warmup_epochs.said()} x {per_epoch} steps"
    if res.warmup_steps is not None:
        return int(res.warmup_steps.value), res.warmup_steps.said()
    return 0, "no warmup key (0 steps)"


def dataset_sequences(env: Env) -> Optional[int]:
    counted = [d.sequences for d in env.data if d.sequences is not None]
    return sum(counted) if counted and len(counted) == len(env.data) else None


def _base_batch(res: Resolved, env: Env) -> Optional[Val]:
    if env.base_global_batch is not None:
        return Val(int(env.base_global_batch.value), (env.base_global_batch.source,), None)
    return res.base_global_batch


def _is_adam(res: Resolved) -> bool:
    name = str(res.optimizer.value).lower()
    return "sgd" not in name and "momentum" not in name  # AdamW, AdamWeightDecay, FP32StateAdamWeightDecay, Lamb


def _warm_key(res: Resolved) -> str:
    v = res.warmup_ratio or res.warmup_epochs or res.warmup_steps
    return v.key if v is not None else ""


# -- 1. global batch, optimizer steps, warmup ------------------------------------------------
def rule_batch(res: Resolved, env: Env) -> list[Finding]:
    gb = res.global_batch
    seq = int(res.seq_length.value or 0)
    total, total_why = total_steps(res, env)
    warm, warm_why = warmup_steps(res, env, total)
    acc = _accumulation(res)
    micro_per_step = int(acc.value) * int((res.interleave.value if res.interleave else 1) or 1)
    lines = [
        f"global batch {gb} sequences = {res.batch_formula()}"
        + (f" ({gb * seq:,} tokens of {res.seq_length.key} {seq})" if seq else "")
    ]
    lines.append(f"optimizer steps: {total if total is not None else 'unknown'} ({total_why})")
    if warm is not None:
        lines.append(
            f"warmup: {warm} optimizer steps ({warm_why}) = {warm * gb:,} sequences; each optimizer step "
            f"is {micro_per_step} micro-batch(es) of {res.micro_batch.value} per device ({acc.key} "
            f"{acc.value}), so a warmup meant in micro-batches would be {micro_per_step}x too long"
        )
    else:
        lines.append(f"warmup: {warm_why}")
    if total is not None and seq:
        lines.append(f"tokens seen: {total * gb * seq:,}")
    out = [
        Finding.passed(
            f"global batch {gb} sequences ("
            + " x ".join(f"{v.keys[-1]} {v.value}" for v in res.batch_terms)
            + "); "
            + (
                f"{total} optimizer steps" + (f" ({res.total_steps.key})" if res.total_steps is not None else "")
                if total is not None
                else f"optimizer steps = {res.epochs.value if res.epochs else 1} epoch(s) x the dataset size in global batches"
            )
            + "; warmup "
            + (
                f"{warm} optimizer steps" + (f" ({_warm_key(res)})" if _warm_key(res) else "")
                if warm is not None
                else f"{float(res.warmup_ratio.value):.0%} of them"
                if res.warmup_ratio is not None
                else "unknown"
            ),
            proved="; ".join(lines),
            evidence={
                "global_batch": gb,
                "batch_terms": {v.key: v.value for v in res.batch_terms},
                "total_steps": total,
                "warmup_steps": warm,
                "seq_length": seq,
            },
            location=_loc(res, res.micro_batch),
            code="resolved",
        )
    ]
    for note in res.notes:
        key = note.split(" ", 1)[0]
        v = next((x for x in (res.grad_accumulation, res.micro_batch_num) if x.key == key), None)
        out.append(
            Finding.warn(
                f"{note.split(':', 1)[0]}",
                detail=note + ". The global batch above is what MindFormers will really use.",
                fix=(
                    _set(res, v, 1)
                    + " (it has no effect), and raise "
                    + (
                        "parallel_config.micro_batch_num"
                        if int(res.pipeline_stages.value) > 1
                        else "runner_config.batch_size or data_parallel"
                    )
                    + " for a larger batch"
                )
                if v is not None
                else None,
                location=_loc(res, v),
                code="ignored-key",
            )
        )
    return out


# -- 2. learning rate vs global batch ----------------------------------------------------------
def rule_lr(res: Resolved, env: Env) -> list[Finding]:
    gb = res.global_batch
    lr = res.lr.value
    if lr is None:
        return [
            Finding.skipped(
                "no learning rate in the config",
                reason="neither lr_schedule.learning_rate nor optimizer.learning_rate is set",
                code="lr-vs-batch",
            )
        ]
    if res.kind == "mindformers" and res.lr_scale is not None and res.lr_scale.value:
        factor = res.lr_scale_factor.value if res.lr_scale_factor else 256
        return [
            Finding.passed(
                f"learning rate scaled by MindFormers (lr_scale): {lr:g} x devices x batch per device / {factor:g}",
                proved=f"{res.lr_scale.said()}: MindFormers' BaseTrainer.learning_rate_scale multiplies "
                f"{res.lr.key} {lr:g} by device_num x train_dataset.batch_size / lr_scale_factor {factor:g} (the "
                f"{LINEAR_RULE}); for an Adam-type optimizer the {SQRT_RULE} is the better-founded choice",
                location=_loc(res, res.lr_scale),
                code="lr-vs-batch",
            )
        ]
    base = _base_batch(res, env)
    conv = "train.base_global_batch: N" if res.kind == "msdoctor" else "a comment `# msdoctor: base_global_batch=N`"
    if base is None:
        return [
            Finding.skipped(
                f"learning rate {lr:g} at global batch {gb}: the batch it was tuned for is not stated",
                reason=f"state it with {conv} in the file, or --base-global-batch N, and msdoctor checks the lr against "
                f"the {SQRT_RULE if _is_adam(res) else LINEAR_RULE}",
                location=_loc(res, res.lr),
                code="lr-vs-batch",
            )
        ]
    b0 = int(base.value)
    adam = _is_adam(res)
    lin = lr * gb / b0
    sq = lr * math.sqrt(gb / b0)
    implied, rule = (sq, SQRT_RULE) if adam else (lin, LINEAR_RULE)
    if b0 == gb:
        return [
            Finding.passed(
                f"learning rate {lr:g} was tuned for this global batch ({gb})",
                proved=f"{res.lr.said()} with {base.key} = {b0} ({res.where(base)}) equal to the global batch "
                f"{res.batch_formula()}",
                location=_loc(res, res.lr),
                code="lr-vs-batch",
            )
        ]
    ratio = gb / b0
    other = f"the linear rule would give {lin:.3g}" if adam else f"the square-root rule would give {sq:.3g}"
    base_edit = (
        _set(res, base, gb) if base.line or not str(base.keys[0]).startswith("--") else f"--base-global-batch {gb}"
    )
    return [
        Finding.warn(
            f"learning rate {lr:g} was tuned for global batch {b0}, the run uses {gb} ({ratio:.3g}x): "
            f"the {'square-root' if adam else 'linear'} rule gives {implied:.3g}",
            detail=f"{res.lr.said()} ({res.where(res.lr)}), tuned for "
            + (f"`{base.key}={b0}`" if base.key.startswith("#") else f"{base.key} = {b0}")
            + (f" ({res.where(base)})" if base.line else "")
            + "; global batch "
            f"{res.batch_formula()}. {rule}: {lr:g} x {'sqrt' if adam else ''}({gb}/{b0}) = {implied:.3g}; {other}. "
            "An lr left at the old batch's value makes a larger batch train slower, a smaller one oscillate or diverge.",
            fix=f"{_set(res, res.lr, f'{implied:.3g}')}, then {base_edit} (or keep the lr and the batch the lr was "
            "tuned for)",
            location=_loc(res, res.lr),
            code="lr-vs-batch",
            evidence={
                "lr": lr,
                "global_batch": gb,
                "base_global_batch": b0,
                "implied_lr": implied,
                "rule": "sqrt" if adam else "linear",
            },
        )
    ]


# -- 3. warmup share ---------------------------------------------------------------------------
def rule_warmup(res: Resolved, env: Env) -> list[Finding]:
    total, total_why = total_steps(res, env)
    warm, warm_why = warmup_steps(res, env, total)
    lo, hi = WARMUP_RANGE
    if warm == 0 and (total is None or total >= WARMUP_MIN_STEPS):
        key0 = (
            res.warmup_ratio
            or res.warmup_steps
            or Val(
                0,
                ("lr_schedule", "warmup_ratio") if res.kind == "mindformers" else ("train", "warmup_steps"),
                None,
                False,
            )
        )
        new0: Any = 0.02 if key0.keys[-1] == "warmup_ratio" else (max(1, round(0.02 * total)) if total else 0.02)
        edit = key0
        if key0.keys[-1] == "warmup_steps" and not total and res.kind == "mindformers":
            edit = Val(0, key0.keys[:-1] + ("warmup_ratio",), None, False)  # it takes precedence over warmup_steps
        return [
            Finding.warn(
                f"no learning-rate warmup ({warm_why})",
                detail="Starting at the peak learning rate lets the first updates, made while Adam's second-moment "
                "estimates are still near zero, destabilise training; Pythia (arXiv:2304.01373) warms up over 1%, "
                "MindFormers' pretraining configs over 3% of the optimizer steps.",
                fix=_set(res, edit, new0) + " (2% of the optimizer steps)",
                location=_loc(res, key0),
                code="warmup-share",
                evidence={"warmup_steps": 0, "total_steps": total},
            )
        ]
    if total is None or warm is None:
        return [
            Finding.skipped(
                "warmup share unknown", reason=f"total: {total_why}; warmup: {warm_why}", code="warmup-share"
            )
        ]
    if total < WARMUP_MIN_STEPS:
        return [
            Finding.skipped(
                f"warmup share not judged: {total} optimizer steps is a smoke-test length",
                reason=f"the 1-3% rule is for runs of at least {WARMUP_MIN_STEPS} steps",
                code="warmup-share",
            )
        ]
    share = warm / total if total else 0.0
    key = (
        res.warmup_ratio
        or res.warmup_steps
        or Val(
            0, ("lr_schedule", "warmup_ratio") if res.kind == "mindformers" else ("train", "warmup_steps"), None, False
        )
    )
    if lo <= share <= hi:
        return [
            Finding.passed(
                f"warmup {warm} of {total} optimizer steps ({share:.1%})",
                proved=f"{warm_why}, within {lo:.0%}-{hi:.0%} of {total_why}",
                location=_loc(res, key),
                code="warmup-share",
            )
        ]
    good = max(1, round(0.02 * total))
    new: Any = 0.02 if key.keys[-1] == "warmup_ratio" else good
    return [
        Finding.warn(
            f"warmup is {share:.1%} of the run ({warm} of {total} optimizer steps), outside {lo:.0%}-{hi:.0%}",
            detail=f"{warm_why}; total {total_why}. Warmup counts optimizer steps (one per global batch of "
            f"{res.global_batch}), "
            "not micro-batches: "
            + (
                "too short a warmup lets the first large updates destabilise Adam's moments; "
                if share < lo
                else "too long a warmup spends the run at a low learning rate; "
            )
            + "Pythia (arXiv:2304.01373) warms up over 1%, MindFormers' pretraining configs over 3%.",
            fix=_set(res, key, new) + (f" ({good} optimizer steps, 2%)" if new != good else " (2%)"),
            location=_loc(res, key),
            code="warmup-share",
            evidence={"warmup_steps": warm, "total_steps": total, "share": share},
        )
    ]


# -- 4. effective batch range ------------------------------------------------------------------
def rule_batch_range(res: Resolved, env: Env) -> list[Finding]:
    gb = res.global_batch
    lo, hi = BATCH_RANGE
    acc = _accumulation(res)
    src = (
        "GPT-3 (arXiv:2005.14165, Table 2.1) used 256-1536 sequences of 2048 tokens, Llama 2 "
        "(arXiv:2307.09288) 1024 of 4096"
    )
    if res.finetune:
        # finetuning keeps its own conventions: Llama 2's SFT used 64 sequences per step (arXiv:2307.09288,
        # section 3.1), MindFormers' finetune configs 8-128; the pretraining range does not apply
        return [
            Finding.passed(
                f"global batch {gb} sequences (a finetune run: the {lo}-{hi} pretraining range does not apply)",
                proved=f"{res.batch_formula()}; finetune because {res.finetune}; supervised finetuning uses small "
                "batches (Llama 2 SFT: 64 sequences, arXiv:2307.09288 section 3.1)",
                location=_loc(res, acc),
                code="batch-range",
            )
        ]
    if lo <= gb <= hi:
        return [
            Finding.passed(
                f"global batch {gb} sequences is in the usual {lo}-{hi}",
                proved=f"{res.batch_formula()}; {src}",
                location=_loc(res, acc),
                code="batch-range",
            )
        ]
    if env.params is not None and env.params < BATCH_RANGE_MIN_PARAMS:
        return [
            Finding.passed(
                f"global batch {gb} sequences (outside {lo}-{hi}, which is for LLMs: this model has "
                f"{env.params / 1e6:.1f}M parameters)",
                proved=f"{res.batch_formula()}; the {lo}-{hi} range ({src}) starts at 125M-parameter models",
                location=_loc(res, acc),
                code="batch-range",
            )
        ]
    per = max(1, gb // max(1, int(acc.value)))
    want = lo if gb < lo else hi
    new_acc = max(1, round(want / per))
    return [
        Finding.warn(
            f"global batch {gb} sequences is outside the usual {lo}-{hi} for LLM pretraining",
            detail=f"{res.batch_formula()}. {src}. "
            + (
                "A small batch gives noisy gradients and a poor use of the devices per step; "
                if gb < lo
                else "Beyond the critical batch size more sequences per step stop reducing the steps needed; "
            )
            + "a warning, not a rule: keep it if it was chosen on purpose.",
            fix=f"{_set(res, acc, new_acc)} (global batch {per * new_acc}); retune the learning rate with it",
            location=_loc(res, acc),
            code="batch-range",
            evidence={"global_batch": gb},
        )
    ]
