"""The training-config rules: pure functions of a resolved config and the facts around it.

Each ``rule_*`` takes a :class:`msdoctor.domain.run_plan.Resolved` and an :class:`Env` (what the check found
out: devices, free disk, the datasets, a throughput) and returns findings; :func:`evaluate`
runs them all. Nothing here reads a file or the environment, so tests call them directly.
Every finding points at the key's file:line and gives the exact edit. Sources of each rule
are in docs/training-config-check.md and next to the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from msdoctor.model import Finding, Location

from msdoctor.domain.pipeline import stage_layers
from msdoctor.domain.run_plan import Resolved, Val

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
DEFAULT_MAX_LOST_HOURS = 2.0

LINEAR_RULE = "linear rule (Goyal et al. 2017, arXiv:1706.02677, section 2.1: lr proportional to the batch)"
SQRT_RULE = ("square-root rule for Adam-type optimizers (Malladi et al. 2022, arXiv:2205.10287: lr proportional to "
             "the square root of the batch)")
BUBBLE_SOURCE = ("Narayanan et al. 2021, arXiv:2104.04473, section 2.2: bubble time / ideal time = (p - 1) / m, "
                 "(p - 1) / (v m) with v interleaved chunks")
BF16_CPU = ("MindSpore 2.7 has no bf16 CPU kernels for MatMul, Mul, Softmax, Sum, SiLU or Gather: the first step "
            "stops with `TypeError: Select CPU operator[MatMul] fail! Unsupported data type!` (observed: mindspore "
            "2.7.0 CPU wheel, ops.matmul on two bfloat16 tensors); only Cast, Add, Reshape and Transpose run")
BF16_GPU = ("MindSpore's bfloat16 support page lists the operators with bf16 kernels and says 'Currently, only Ascend "
            "backend has adapted operators' (https://www.mindspore.cn/docs/en/r2.5.0/api_python/bfloat16_support.html)")
FP16_SOURCE = ("fp16 has 5 exponent bits: small gradients underflow to 0 and large ones overflow to inf; loss "
               "scaling shifts them into range and dynamic scaling halves the scale on overflow (Micikevicius et al. "
               "2018, arXiv:1710.03740, section 3.2)")
MF_DYNAMIC_SCALE = ("runner_wrapper:\n  type: MFTrainOneStepCell\n  scale_sense:\n"
                    "    type: DynamicLossScaleUpdateCell\n"
                    "    loss_scale_value: 65536\n    scale_factor: 2\n    scale_window: 1000\n"
                    "(as mindspore-lab/mindformers configs/gpt2/pretrain_gpt2_13b_fp16.yaml ships it, with "
                    "loss_scale_value 4294967296)")


@dataclass(frozen=True)
class Fact:
    """A number from outside the file, with where it came from ("--devices-per-node", "npu-smi: 8 chips")."""

    value: Any
    source: str


@dataclass
class DataFacts:
    """One dataset path as found on disk.

    Attributes:
        val: the path as written, with its key.
        resolved: the path checked (relative paths resolved against the launch directory).
        placeholder: the value is a template to fill in ("", /path/to/..., <...>).
        exists, readable: what the file system says.
        kind: mindrecord | megatron | text-glob | stdlib.
        sequences: records (MindRecord rows, Megatron sequences), None when not counted.
        tokens: tokens (Megatron) or bytes of text (an upper bound of the tokens), None when not counted.
        files: files found.
        note: how it was counted, or why not.
    """

    val: Val
    resolved: str
    placeholder: bool = False
    exists: bool = True
    readable: bool = True
    kind: str = "unknown"
    sequences: Optional[int] = None
    tokens: Optional[int] = None
    files: int = 0
    note: str = ""


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes one checkpoint takes on the checkpoint directory's disk, and how they were counted."""

    bytes: int
    why: str


@dataclass
class Env:
    """What the check found out around the config (tests build it by hand)."""

    devices: Optional[Fact] = None
    devices_per_node: Optional[Fact] = None
    device_target: Optional[Fact] = None  # --device-target (overrides the file's)
    base_global_batch: Optional[Fact] = None  # --base-global-batch (overrides the file's)
    ckpt_dir: Optional[str] = None  # the checkpoint directory, resolved
    disk_free: Optional[Fact] = None  # bytes free on the file system holding ckpt_dir
    ckpt_existing: int = 0  # bytes of checkpoints already in ckpt_dir (kept, so they count as room)
    ckpt_writable: Optional[bool] = None  # this user can create / write the checkpoint directory
    ckpt_size: Optional[CheckpointSize] = None
    ckpt_size_problem: Optional[str] = None  # why the size is unknown
    params: Optional[int] = None  # parameters of the model (for the batch-range rule)
    data: list = field(default_factory=list)  # DataFacts
    step_time: Optional[Fact] = None  # seconds per optimizer step, stated or measured
    max_lost_hours: Fact = field(default_factory=lambda: Fact(DEFAULT_MAX_LOST_HOURS, "msdoctor's default"))


# -- helpers ---------------------------------------------------------------------------
def _loc(res: Resolved, v: Optional[Val]) -> Location:
    """The key's line; for a key the file lacks, the line of its nearest parent that is there."""
    if v is None:
        return Location(str(res.path))
    line = v.line
    if line is None and v.keys and not str(v.keys[0]).startswith(("-", "#")):
        line = res.line_of(*v.keys)
    return Location(str(res.path), line)


def _set(res: Resolved, v: Val, new: Any) -> str:
    """The edit that sets a key: ``file:line: set a.b: 3`` (or where to add it when absent)."""
    if v.keys and str(v.keys[0]).startswith("# msdoctor"):
        return f"{res.where(v)}: change the comment to `{v.keys[0]}={new}`"
    if v.line:
        return f"{res.where(v)}: set {v.key}: {new}"
    parent = v.keys[:-1]
    pline = res.line_of(*parent) if parent else None
    where = f"{res.path}:{pline}" if pline else str(res.path)
    under = f" under {'.'.join(str(k) for k in parent)}" if parent else ""
    return f"{where}: add {v.keys[-1]}: {new}{under}"


def _gib(n: float) -> str:
    """A size for a person: GiB for large values, MiB / KiB below."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n)} B"


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
            return epochs * per_epoch, (f"{ek} x {per_epoch} global batches in the dataset ({seqs} records // "
                                        f"{res.global_batch}; lr_schedule.total_steps is -1 or absent)")
        return None, (f"lr_schedule.total_steps is -1 or absent, so MindFormers takes {ek} x the dataset size in "
                      "global batches, and the dataset was not counted")
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
    lines = [f"global batch {gb} sequences = {res.batch_formula()}"
             + (f" ({gb * seq:,} tokens of {res.seq_length.key} {seq})" if seq else "")]
    lines.append(f"optimizer steps: {total if total is not None else 'unknown'} ({total_why})")
    if warm is not None:
        lines.append(f"warmup: {warm} optimizer steps ({warm_why}) = {warm * gb:,} sequences; each optimizer step "
                     f"is {micro_per_step} micro-batch(es) of {res.micro_batch.value} per device ({acc.key} "
                     f"{acc.value}), so a warmup meant in micro-batches would be {micro_per_step}x too long")
    else:
        lines.append(f"warmup: {warm_why}")
    if total is not None and seq:
        lines.append(f"tokens seen: {total * gb * seq:,}")
    out = [Finding.passed(
        f"global batch {gb} sequences (" + " x ".join(f"{v.keys[-1]} {v.value}" for v in res.batch_terms) + "); "
        + (f"{total} optimizer steps" + (f" ({res.total_steps.key})" if res.total_steps is not None else "")
           if total is not None else
           f"optimizer steps = {res.epochs.value if res.epochs else 1} epoch(s) x the dataset size in global batches")
        + "; warmup " + (f"{warm} optimizer steps" + (f" ({_warm_key(res)})" if _warm_key(res) else "")
                         if warm is not None else
                         f"{float(res.warmup_ratio.value):.0%} of them" if res.warmup_ratio is not None else "unknown"),
        proved="; ".join(lines),
        evidence={"global_batch": gb, "batch_terms": {v.key: v.value for v in res.batch_terms},
                  "total_steps": total, "warmup_steps": warm, "seq_length": seq},
        location=_loc(res, res.micro_batch), code="resolved",
    )]
    for note in res.notes:
        key = note.split(" ", 1)[0]
        v = next((x for x in (res.grad_accumulation, res.micro_batch_num) if x.key == key), None)
        out.append(Finding.warn(
            f"{note.split(':', 1)[0]}",
            detail=note + ". The global batch above is what MindFormers will really use.",
            fix=(_set(res, v, 1) + " (it has no effect), and raise "
                 + ("parallel_config.micro_batch_num" if int(res.pipeline_stages.value) > 1 else
                    "runner_config.batch_size or data_parallel") + " for a larger batch") if v is not None else None,
            location=_loc(res, v), code="ignored-key",
        ))
    return out


# -- 2. learning rate vs global batch ----------------------------------------------------------
def rule_lr(res: Resolved, env: Env) -> list[Finding]:
    gb = res.global_batch
    lr = res.lr.value
    if lr is None:
        return [Finding.skipped("no learning rate in the config", reason="neither lr_schedule.learning_rate nor "
                                "optimizer.learning_rate is set", code="lr-vs-batch")]
    if res.kind == "mindformers" and res.lr_scale is not None and res.lr_scale.value:
        factor = res.lr_scale_factor.value if res.lr_scale_factor else 256
        return [Finding.passed(
            f"learning rate scaled by MindFormers (lr_scale): {lr:g} x devices x batch per device / {factor:g}",
            proved=f"{res.lr_scale.said()}: MindFormers' BaseTrainer.learning_rate_scale multiplies "
            f"{res.lr.key} {lr:g} by device_num x train_dataset.batch_size / lr_scale_factor {factor:g} (the "
            f"{LINEAR_RULE}); for an Adam-type optimizer the {SQRT_RULE} is the better-founded choice",
            location=_loc(res, res.lr_scale), code="lr-vs-batch",
        )]
    base = _base_batch(res, env)
    conv = ("train.base_global_batch: N" if res.kind == "msdoctor" else "a comment `# msdoctor: base_global_batch=N`")
    if base is None:
        return [Finding.skipped(
            f"learning rate {lr:g} at global batch {gb}: the batch it was tuned for is not stated",
            reason=f"state it with {conv} in the file, or --base-global-batch N, and msdoctor checks the lr against "
            f"the {SQRT_RULE if _is_adam(res) else LINEAR_RULE}",
            location=_loc(res, res.lr), code="lr-vs-batch",
        )]
    b0 = int(base.value)
    adam = _is_adam(res)
    lin = lr * gb / b0
    sq = lr * math.sqrt(gb / b0)
    implied, rule = (sq, SQRT_RULE) if adam else (lin, LINEAR_RULE)
    if b0 == gb:
        return [Finding.passed(
            f"learning rate {lr:g} was tuned for this global batch ({gb})",
            proved=f"{res.lr.said()} with {base.key} = {b0} ({res.where(base)}) equal to the global batch "
            f"{res.batch_formula()}",
            location=_loc(res, res.lr), code="lr-vs-batch",
        )]
    ratio = gb / b0
    other = f"the linear rule would give {lin:.3g}" if adam else f"the square-root rule would give {sq:.3g}"
    base_edit = (_set(res, base, gb) if base.line or not str(base.keys[0]).startswith("--")
                 else f"--base-global-batch {gb}")
    return [Finding.warn(
        f"learning rate {lr:g} was tuned for global batch {b0}, the run uses {gb} ({ratio:.3g}x): "
        f"the {'square-root' if adam else 'linear'} rule gives {implied:.3g}",
        detail=f"{res.lr.said()} ({res.where(res.lr)}), tuned for "
        + (f"`{base.key}={b0}`" if base.key.startswith("#") else f"{base.key} = {b0}")
        + (f" ({res.where(base)})" if base.line else "") + "; global batch "
        f"{res.batch_formula()}. {rule}: {lr:g} x {'sqrt' if adam else ''}({gb}/{b0}) = {implied:.3g}; {other}. "
        "An lr left at the old batch's value makes a larger batch train slower, a smaller one oscillate or diverge.",
        fix=f"{_set(res, res.lr, f'{implied:.3g}')}, then {base_edit} (or keep the lr and the batch the lr was "
        "tuned for)",
        location=_loc(res, res.lr), code="lr-vs-batch",
        evidence={"lr": lr, "global_batch": gb, "base_global_batch": b0, "implied_lr": implied,
                  "rule": "sqrt" if adam else "linear"},
    )]


# -- 3. warmup share ---------------------------------------------------------------------------
def rule_warmup(res: Resolved, env: Env) -> list[Finding]:
    total, total_why = total_steps(res, env)
    warm, warm_why = warmup_steps(res, env, total)
    lo, hi = WARMUP_RANGE
    if warm == 0 and (total is None or total >= WARMUP_MIN_STEPS):
        key0 = res.warmup_ratio or res.warmup_steps or Val(0, ("lr_schedule", "warmup_ratio") if res.kind ==
                                                         "mindformers" else ("train", "warmup_steps"), None, False)
        new0: Any = 0.02 if key0.keys[-1] == "warmup_ratio" else (max(1, round(0.02 * total)) if total else 0.02)
        edit = key0
        if key0.keys[-1] == "warmup_steps" and not total and res.kind == "mindformers":
            edit = Val(0, key0.keys[:-1] + ("warmup_ratio",), None, False)  # it takes precedence over warmup_steps
        return [Finding.warn(
            f"no learning-rate warmup ({warm_why})",
            detail="Starting at the peak learning rate lets the first updates, made while Adam's second-moment "
            "estimates are still near zero, destabilise training; Pythia (arXiv:2304.01373) warms up over 1%, "
            "MindFormers' pretraining configs over 3% of the optimizer steps.",
            fix=_set(res, edit, new0) + " (2% of the optimizer steps)",
            location=_loc(res, key0), code="warmup-share", evidence={"warmup_steps": 0, "total_steps": total})]
    if total is None or warm is None:
        return [Finding.skipped("warmup share unknown", reason=f"total: {total_why}; warmup: {warm_why}",
                                code="warmup-share")]
    if total < WARMUP_MIN_STEPS:
        return [Finding.skipped(f"warmup share not judged: {total} optimizer steps is a smoke-test length",
                                reason=f"the 1-3% rule is for runs of at least {WARMUP_MIN_STEPS} steps",
                                code="warmup-share")]
    share = warm / total if total else 0.0
    key = res.warmup_ratio or res.warmup_steps or Val(0, ("lr_schedule", "warmup_ratio") if res.kind == "mindformers"
                                                      else ("train", "warmup_steps"), None, False)
    if lo <= share <= hi:
        return [Finding.passed(f"warmup {warm} of {total} optimizer steps ({share:.1%})",
                               proved=f"{warm_why}, within {lo:.0%}-{hi:.0%} of {total_why}",
                               location=_loc(res, key), code="warmup-share")]
    good = max(1, round(0.02 * total))
    new: Any = 0.02 if key.keys[-1] == "warmup_ratio" else good
    return [Finding.warn(
        f"warmup is {share:.1%} of the run ({warm} of {total} optimizer steps), outside {lo:.0%}-{hi:.0%}",
        detail=f"{warm_why}; total {total_why}. Warmup counts optimizer steps (one per global batch of "
        f"{res.global_batch}), "
        "not micro-batches: " + ("too short a warmup lets the first large updates destabilise Adam's moments; "
                                 if share < lo else "too long a warmup spends the run at a low learning rate; ")
        + "Pythia (arXiv:2304.01373) warms up over 1%, MindFormers' pretraining configs over 3%.",
        fix=_set(res, key, new) + (f" ({good} optimizer steps, 2%)" if new != good else " (2%)"),
        location=_loc(res, key), code="warmup-share",
        evidence={"warmup_steps": warm, "total_steps": total, "share": share},
    )]


# -- 4. effective batch range ------------------------------------------------------------------
def rule_batch_range(res: Resolved, env: Env) -> list[Finding]:
    gb = res.global_batch
    lo, hi = BATCH_RANGE
    acc = _accumulation(res)
    src = ("GPT-3 (arXiv:2005.14165, Table 2.1) used 256-1536 sequences of 2048 tokens, Llama 2 "
           "(arXiv:2307.09288) 1024 of 4096")
    if res.finetune:
        # finetuning keeps its own conventions: Llama 2's SFT used 64 sequences per step (arXiv:2307.09288,
        # section 3.1), MindFormers' finetune configs 8-128; the pretraining range does not apply
        return [Finding.passed(
            f"global batch {gb} sequences (a finetune run: the {lo}-{hi} pretraining range does not apply)",
            proved=f"{res.batch_formula()}; finetune because {res.finetune}; supervised finetuning uses small "
            "batches (Llama 2 SFT: 64 sequences, arXiv:2307.09288 section 3.1)",
            location=_loc(res, acc), code="batch-range")]
    if lo <= gb <= hi:
        return [Finding.passed(f"global batch {gb} sequences is in the usual {lo}-{hi}",
                               proved=f"{res.batch_formula()}; {src}", location=_loc(res, acc), code="batch-range")]
    if env.params is not None and env.params < BATCH_RANGE_MIN_PARAMS:
        return [Finding.passed(
            f"global batch {gb} sequences (outside {lo}-{hi}, which is for LLMs: this model has "
            f"{env.params / 1e6:.1f}M parameters)",
            proved=f"{res.batch_formula()}; the {lo}-{hi} range ({src}) starts at 125M-parameter models",
            location=_loc(res, acc), code="batch-range")]
    per = max(1, gb // max(1, int(acc.value)))
    want = lo if gb < lo else hi
    new_acc = max(1, round(want / per))
    return [Finding.warn(
        f"global batch {gb} sequences is outside the usual {lo}-{hi} for LLM pretraining",
        detail=f"{res.batch_formula()}. {src}. "
        + ("A small batch gives noisy gradients and a poor use of the devices per step; "
           if gb < lo else "Beyond the critical batch size more sequences per step stop reducing the steps needed; ")
        + "a warning, not a rule: keep it if it was chosen on purpose.",
        fix=f"{_set(res, acc, new_acc)} (global batch {per * new_acc}); retune the learning rate with it",
        location=_loc(res, acc), code="batch-range", evidence={"global_batch": gb},
    )]


# -- 5. precision ---------------------------------------------------------------------------------
def _target(res: Resolved, env: Env) -> tuple[Optional[str], str]:
    if env.device_target is not None:
        return str(env.device_target.value), env.device_target.source
    return (str(res.device_target.value) if res.device_target.value else None), (
        f"{res.device_target.key} ({res.where(res.device_target)})")


def rule_precision(res: Resolved, env: Env) -> list[Finding]:
    out: list[Finding] = []
    target, target_src = _target(res, env)
    comp, param = res.compute_dtype, res.param_dtype
    if target and target.upper() == "CPU":
        bad = [v for v in (comp, param) if v.value == "bf16"]
        for v in bad:
            new = "fp32" if res.kind == "msdoctor" else '"float32"'
            out.append(Finding.fail(
                f"{v.key} is bf16 on CPU ({target_src}): MindSpore has no bf16 CPU kernels",
                detail=f"{BF16_CPU}. The job would stop at its first step.",
                fix=_set(res, v, new) + (
                    " (or set train.half_on_cpu: false: the trainer then runs fp32 on CPU)" if res.kind == "msdoctor"
                    else " (fp16 also runs on CPU, 2-3x slower than fp32)"),
                location=_loc(res, v), code="bf16-on-cpu",
            ))
    if target and target.upper() == "GPU":
        for v in (x for x in (comp, param) if x.value == "bf16"):
            out.append(Finding.warn(
                f"{v.key} is bf16 on GPU ({target_src}): MindSpore documents bf16 operators for Ascend only",
                detail=f"{BF16_GPU}. Not verified on a GPU by msdoctor: if the first step runs, the kernels exist.",
                fix=_set(res, v, "fp16" if res.kind == "msdoctor" else '"float16"')
                + " with dynamic loss scaling, or fp32",
                location=_loc(res, v), code="bf16-on-gpu",
            ))
    if comp.value == "fp16" and res.loss_scale.value != "dynamic":
        ls = res.loss_scale
        how = ("static loss scale" if ls.value == "static" else "no loss scaling")
        fix = (_set(res, ls, "dynamic") if res.kind == "msdoctor" else
               f"{res.where(ls) if ls.line else res.path}: set\n{MF_DYNAMIC_SCALE}")
        out.append(Finding.warn(
            f"fp16 compute ({comp.key}) with {how} ({ls.key}"
            + (f" = {ls.value}" if ls.given else ", not set") + ")",
            detail=f"{FP16_SOURCE}. A fixed scale either overflows (loss nan, skipped steps) or leaves small "
            "gradients at zero; the loss stops falling hours in.",
            fix=fix, location=_loc(res, ls if ls.line else comp), code="fp16-no-dynamic-scale",
        ))
    if not out:
        out.append(Finding.passed(
            f"precision: compute {comp.value}, weights {param.value}"
            + (f", loss scaling {res.loss_scale.value}" if comp.value == "fp16" else ""),
            proved=f"{comp.said()}, {param.said()} on {target or 'an unstated device'}"
            + (f" ({target_src})" if target else "")
            + ("; fp16 with dynamic loss scaling" if comp.value == "fp16" else "")
            + ("; " + "; ".join(n for n in res.notes if "runs as fp32" in n) if res.kind == "msdoctor" else ""),
            location=_loc(res, comp), code="precision",
        ))
    return out


# -- 6. parallel layout ------------------------------------------------------------------------------
def _divisors(n: int) -> list[int]:
    from msdoctor.memory.suggest import _divisors as divisors  # O(sqrt n)

    return divisors(n)


def rule_layout(res: Resolved, env: Env) -> list[Finding]:
    """The layout against the job's devices, tensor parallelism against the heads and the node, then the pipeline."""
    return _layout_devices(res, env) + _tp_heads(res) + _tp_node(res, env) + _pipeline(res, env)


def _layout_devices(res: Resolved, env: Env) -> list[Finding]:
    """data x tensor x pipeline (x context) parallel equals the job's devices."""
    out: list[Finding] = []
    dp, tp, pp, cp = (int(v.value) for v in (res.data_parallel, res.tensor_parallel, res.pipeline_stages,
                                              res.context_parallel))
    product = res.layout_product
    terms = f"{res.data_parallel.key} {dp} x {res.tensor_parallel.key} {tp} x {res.pipeline_stages.key} {pp}" + (
        f" x {res.context_parallel.key} {cp}" if cp > 1 else "")
    devices = env.devices
    if devices is None and res.devices is not None:
        devices = Fact(int(res.devices.value), f"{res.devices.key} ({res.where(res.devices)})")
    if devices is None:
        out.append(Finding.skipped(
            f"layout uses {product} devices ({terms}); the job's device count is not known",
            reason="pass --devices N or add `# msdoctor: devices=N` to the file to check it", code="layout-devices"))
    elif product != int(devices.value):
        n = int(devices.value)
        rest = tp * pp * cp
        fix = (_set(res, res.data_parallel, n // rest) if n % rest == 0 else
               f"choose data x model x pipeline parallel that multiply to {n}")
        out.append(Finding.fail(
            f"layout needs {product} devices ({terms}), the job has {n} ({devices.source})",
            detail="MindSpore requires data_parallel x model_parallel x pipeline_stage (x context_parallel) to equal "
            "the number of devices (MindFormers parallel_config docs); the job fails at startup after it was queued.",
            fix=fix, location=_loc(res, res.data_parallel), code="layout-devices",
        ))
    else:
        out.append(Finding.passed(f"layout {terms} = {product} device(s)",
                                  proved=f"equals the {devices.value} devices ({devices.source})",
                                  location=_loc(res, res.data_parallel), code="layout-devices"))
    return out


def _tp_heads(res: Resolved) -> list[Finding]:
    """Tensor parallelism splits whole attention and KV heads (GLM's fused projection: a warning)."""
    out: list[Finding] = []
    tp = int(res.tensor_parallel.value)
    heads, kv = int(res.num_heads.value or 0), int(res.num_kv_heads.value or 0)
    if heads and kv:
        bad = [(name, n) for name, n in (("attention heads", heads), ("KV heads", kv)) if n % tp]
        glm = "glm" in res.model_type.lower()
        if bad and glm and heads % tp == 0:
            # ChatGLM2/3/4 in MindFormers project Q, K and V with one fused matrix sharded as a whole over
            # model_parallel (mindformers/models/glm2/glm2_transformer.py): MindSpore redistributes the KV groups
            out.append(Finding.warn(
                f"{res.tensor_parallel.key} = {tp} does not divide the {kv} KV groups ({res.num_kv_heads.key})",
                detail=f"{res.model_type}: MindFormers shards GLM's fused query_key_value projection as a whole "
                "(glm2_transformer.py), so the job runs, but MindSpore inserts redistributions of the KV groups "
                "between the projection and attention in every layer.",
                fix=_set(res, res.tensor_parallel, max(d for d in _divisors(kv) if d <= tp))
                + " with more data or pipeline parallelism, if the communication shows in the step time",
                location=_loc(res, res.tensor_parallel), code="tp-heads"))
        elif bad:
            ok = [d for d in _divisors(math.gcd(heads, kv)) if d <= max(tp, 1) * 8]
            out.append(Finding.fail(
                f"{res.tensor_parallel.key} = {tp} does not divide the " + " and ".join(
                    f"{name} ({n})" for name, n in bad),
                detail=f"{res.num_heads.said()}, {res.num_kv_heads.said()}: tensor parallelism splits whole heads "
                "(Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053, section 3); MindFormers' Llama attention "
                "raises ValueError when n_kv_head is not divisible by model_parallel "
                "(mindformers/models/llama/llama_transformer.py, r1.5.0), after the job was queued.",
                fix=_set(res, res.tensor_parallel, max(d for d in ok if d <= tp) if any(d <= tp for d in ok) else 1)
                + f" (values that divide both: {', '.join(map(str, ok))})",
                location=_loc(res, res.tensor_parallel), code="tp-heads",
            ))
        else:
            out.append(Finding.passed(f"{res.tensor_parallel.key} = {tp} divides {heads} heads and {kv} KV heads",
                                      proved=f"{heads} % {tp} == 0 and {kv} % {tp} == 0",
                                      location=_loc(res, res.tensor_parallel), code="tp-heads"))
    return out


def _tp_node(res: Resolved, env: Env) -> list[Finding]:
    """Tensor parallelism within one node."""
    out: list[Finding] = []
    tp, pp = int(res.tensor_parallel.value), int(res.pipeline_stages.value)
    dpn = env.devices_per_node
    if tp > 1:
        if dpn is None:
            out.append(Finding.skipped(
                f"{res.tensor_parallel.key} = {tp}: devices per node unknown",
                reason="no npu-smi / nvidia-smi / rank table here; pass --devices-per-node N or add "
                "`# msdoctor: devices_per_node=N`",
                code="tp-node"))
        elif tp > int(dpn.value):
            out.append(Finding.warn(
                f"{res.tensor_parallel.key} = {tp} spans nodes ({dpn.value} devices per node, {dpn.source})",
                detail="Tensor parallelism all-reduces activations in every layer, forward and backward; across "
                "nodes that traffic runs over the slower inter-node network (Narayanan et al. 2021, "
                "arXiv:2104.04473, section 3.3: keep tensor parallelism within a node, pipeline across nodes).",
                fix=_set(res, res.tensor_parallel, int(dpn.value)) + f" and {res.pipeline_stages.key} "
                f"{pp * tp // int(dpn.value) if (pp * tp) % int(dpn.value) == 0 else pp} (the same device count)",
                location=_loc(res, res.tensor_parallel), code="tp-node",
            ))
        else:
            out.append(Finding.passed(f"{res.tensor_parallel.key} = {tp} stays within a node",
                                      proved=f"{tp} <= {dpn.value} devices per node ({dpn.source})",
                                      location=_loc(res, res.tensor_parallel), code="tp-node"))
    return out


def _suggest_offset(layers: int, pp: int) -> list[int]:
    """Extra layers on the middle stages first (the first holds the embedding, the last the head and loss)."""
    rem = layers % pp
    offs = [0] * pp
    order = list(range(1, pp - 1)) + [pp - 1, 0]
    for i in range(rem):
        offs[order[i % len(order)]] += 1
    return offs


def _pipeline(res: Resolved, env: Env) -> list[Finding]:
    pp = int(res.pipeline_stages.value)
    if pp <= 1:
        return []
    if not res.num_layers.value:
        return [Finding.skipped(f"{res.pipeline_stages.key} = {pp}: the number of layers is not in the file",
                                reason="model_config has no num_layers / num_hidden_layers (a pretrained_model_dir "
                                "config.json is not read)", code="pp-layers")]
    out: list[Finding] = []
    layers = int(res.num_layers.value or 0)
    mtp = int(res.mtp_depth.value) if res.mtp_depth is not None and res.mtp_depth.value else 0
    # DeepSeek: LayerSetting(num_layers + mtp_depth), in the MindFormers repository's deepseek3 model
    # (https://gitee.com/mindspore/mindformers, file deepseek2_model.py of the deepseek3 example)
    layers += mtp
    vpp = int(res.vpp.value) if res.vpp else 1
    offset = res.offset.value if res.offset is not None else None
    counts, why = stage_layers(layers, pp, vpp, offset)
    okey = res.offset or Val(0, ("model", "model_config", "offset"), None, False)
    if counts is None:
        if res.kind == "mindformers":
            fix = _set(res, okey, _suggest_offset(layers, pp)) if vpp == 1 else (
                f"{res.where(okey)}: set offset to a {vpp} x {pp} list summing to {layers % (pp * vpp)}")
        else:
            fix = _set(res, res.pipeline_stages, max(d for d in _divisors(layers) if d <= pp))
        out.append(Finding.fail(
            f"{res.pipeline_stages.key} = {pp} does not split the {layers} layers: {why}",
            detail=f"{res.num_layers.said()}" + (f" + {res.mtp_depth.said()}" if mtp and res.mtp_depth else "")
            + f", {res.pipeline_stages.said()}"
            + (f", pp_interleave_num {vpp}" if vpp > 1 else "")
            + (f", {okey.said()}" if res.offset is not None else "")
            + ". MindFormers' LayerSetting raises ValueError at model build (mindformers/models/utils.py).",
            fix=fix, location=_loc(res, okey if res.offset is not None else res.pipeline_stages), code="pp-layers",
        ))
    else:
        spread = max(counts) - min(counts)
        out.append(Finding.passed(
            f"pipeline stages get {counts} layers",
            proved=f"{layers} layers" + (f" ({res.num_layers.value} + {res.mtp_depth.key} {mtp})" if mtp and res.mtp_depth else "")
            + f" over {pp} stages" + (f" x {vpp} chunks" if vpp > 1 else "")
            + (f" with {okey.said()}" if res.offset is not None else "") + (
                f"; uneven by {spread}: the slowest stage sets the pace" if spread > 1 else ""),
            location=_loc(res, res.pipeline_stages), code="pp-layers"))
    m = int(res.micro_batch_num.value)
    if m < pp:
        out.append(Finding.fail(
            f"{res.micro_batch_num.key} = {m} is below {res.pipeline_stages.key} = {pp}",
            detail="With fewer micro-batches than stages some stages never have work at the same time: the pipeline "
            f"never fills and at least {pp - m} of {pp} stages idle through every step ({BUBBLE_SOURCE}).",
            fix=_set(res, res.micro_batch_num, 4 * pp) + f" (bubble {(pp - 1) / (4 * pp * vpp):.0%} of the ideal step)",
            location=_loc(res, res.micro_batch_num), code="pp-micro-batches",
        ))
    else:
        bubble = (pp - 1) / (m * vpp)
        share = (pp - 1) / (m * vpp + pp - 1)
        out.append(Finding.passed(
            f"{res.micro_batch_num.key} = {m} >= {pp} stages: pipeline bubble {bubble:.0%} of the ideal step "
            f"({share:.0%} of the step time)",
            proved=f"{m} >= {pp}; {BUBBLE_SOURCE}",
            location=_loc(res, res.micro_batch_num), code="pp-micro-batches",
            evidence={"bubble": bubble, "bubble_share": share}))
    return out


# -- 7. checkpoints --------------------------------------------------------------------------------
def rule_checkpoint_disk(res: Resolved, env: Env) -> list[Finding]:
    keep = int(res.ckpt_keep.value or 0)
    if res.kind == "mindformers" and not keep and res.ckpt_every is None:
        return [Finding.warn(
            "no CheckpointMonitor in callbacks: this run saves no checkpoints",
            detail="A crash, a preemption or a node failure then loses the whole run.",
            fix=f"{res.where(res.ckpt_keep)}: add to callbacks:\n  - type: CheckpointMonitor\n    prefix: \"model\"\n"
            "    save_checkpoint_steps: 500\n    keep_checkpoint_max: 3",
            location=_loc(res, res.ckpt_keep), code="checkpoint-disk")]
    if env.ckpt_writable is False:
        where = env.ckpt_dir or res.ckpt_dir.value
        return [Finding.fail(
            f"the checkpoint directory {where} cannot be written",
            detail="Neither it nor its nearest existing parent is writable by this user: the first save fails, "
            "after the first checkpoint interval of training.",
            fix=f"{_set(res, res.ckpt_dir, '<a writable directory>')} (or make {where} writable)",
            location=_loc(res, res.ckpt_dir), code="checkpoint-disk")]
    if env.ckpt_size is None:
        return [Finding.skipped("checkpoint size unknown",
                                reason=env.ckpt_size_problem or "the model shape could not be read",
                                code="checkpoint-disk")]
    size = env.ckpt_size.bytes
    # msdoctor's trainer writes the new checkpoint, then prunes (training/checkpoint.py save): keep_last + 1 at
    # the peak; MindSpore's ModelCheckpoint, which MindFormers' CheckpointMonitor extends, removes the oldest
    # file before it writes the next (mindspore/train/callback/_checkpoint.py, _save_ckpt): keep_checkpoint_max
    copies = keep + 1 if res.kind == "msdoctor" else keep
    peak = " + 1 being written" if res.kind == "msdoctor" else " (the oldest is removed before the next is written)"
    need = copies * size
    where = env.ckpt_dir or res.ckpt_dir.value
    if env.disk_free is None:
        return [Finding.skipped(f"checkpoint {_gib(size)} x {copies} = {_gib(need)}: free space unknown",
                                reason=f"could not read the free space of {where}", code="checkpoint-disk")]
    free = int(env.disk_free.value)
    room = free + env.ckpt_existing
    sized = (f"one checkpoint {_gib(size)} ({env.ckpt_size.why}); {res.ckpt_keep.said()}{peak} = "
             f"{copies} copies = {_gib(need)}; {_gib(free)} free at {env.disk_free.source}"
             + (f" + {_gib(env.ckpt_existing)} of checkpoints already there" if env.ckpt_existing else ""))
    ev = {"checkpoint_bytes": size, "copies": copies, "needed_bytes": need, "free_bytes": free,
          "existing_bytes": env.ckpt_existing}
    if room >= need:
        return [Finding.passed(f"{copies} checkpoints of {_gib(size)} fit in {_gib(room)} at {where}",
                               proved=sized, location=_loc(res, res.ckpt_keep), evidence=ev, code="checkpoint-disk")]
    fits = max(0, room // size - (copies - keep)) if size else 0
    fix = (_set(res, res.ckpt_keep, fits) + f" ({fits + copies - keep} copies fit), or free "
           f"{_gib(need - room)} at {where}"
           if fits >= 1 else f"free at least {_gib(need - room)} at {where}, or point "
           f"{res.ckpt_dir.key} at a larger disk ({res.where(res.ckpt_dir)})")
    return [Finding.fail(
        f"checkpoints do not fit: {copies} x {_gib(size)} = {_gib(need)} needed, {_gib(room)} available at {where}",
        detail=sized + ". The save fails with `OSError: [Errno 28] No space left on device` when the disk fills, "
        "hours or days into the run.",
        fix=fix, location=_loc(res, res.ckpt_keep), evidence=ev, code="checkpoint-disk",
    )]


def rule_checkpoint_interval(res: Resolved, env: Env) -> list[Finding]:
    every = res.ckpt_every
    limit = float(env.max_lost_hours.value)
    if every is None or not int(every.value):
        if res.kind == "msdoctor":
            key = Val(0, ("checkpoint", "every_steps"), res.line_of("checkpoint", "every_steps"))
            return [Finding.warn(
                "checkpoint.every_steps is 0: checkpoints only at the end and on SIGTERM",
                detail="A crash (not a clean stop) loses the whole run.",
                fix=_set(res, key, 500), location=_loc(res, key), code="checkpoint-interval")]
        return []
    if env.step_time is None:
        return [Finding.skipped(
            f"time between checkpoints unknown ({every.said()})",
            reason="no throughput stated or measured: add `# msdoctor: tokens_per_second=N` (the whole job's "
            "tokens/s) or pass --tokens-per-second N; a finished run in the output directory is read too",
            location=_loc(res, every), code="checkpoint-interval")]
    step = float(env.step_time.value)
    hours = int(every.value) * step / 3600
    if hours <= limit:
        return [Finding.passed(
            f"a checkpoint every {hours:.2g} h ({every.value} steps x {step:.3g} s)",
            proved=f"{every.said()} x {step:.3g} s per optimizer step ({env.step_time.source}) = {hours:.2g} h <= "
            f"{limit:g} h ({env.max_lost_hours.source})", location=_loc(res, every), code="checkpoint-interval")]
    steps = max(1, int(limit * 3600 // step))
    return [Finding.warn(
        f"a crash can lose {hours:.1f} h: a checkpoint only every {every.value} steps x {step:.3g} s",
        detail=f"{every.said()}; {step:.3g} s per optimizer step ({env.step_time.source}); more than the {limit:g} h "
        f"allowed ({env.max_lost_hours.source}; change it with --max-lost-hours or `# msdoctor: max_lost_hours=H`).",
        fix=_set(res, every, steps) + f" (every {steps * step / 3600:.2g} h)",
        location=_loc(res, every), code="checkpoint-interval",
        evidence={"hours": hours, "step_time_s": step, "every_steps": int(every.value)})]


# -- 8. data ------------------------------------------------------------------------------------------
def rule_data(res: Resolved, env: Env) -> list[Finding]:
    if res.kind == "msdoctor" and not res.data_paths:
        return [Finding.passed("data: the Python standard library's own sources (data.paths is empty)",
                               proved="msdoctor's trainer reads the target interpreter's stdlib *.py when data.paths "
                               "is empty (training/data.py)", code="data")]
    if not env.data:
        return [Finding.skipped("no training dataset path in the config",
                                reason="train_dataset.data_loader has no dataset_dir / data_path msdoctor reads",
                                code="data")]
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
            fix=_set(res, v, "/your/dataset/path" if res.kind == "msdoctor" else
                     "/your/dataset (a directory of *.mindrecord files, or one .mindrecord file)"),
            location=_loc(res, v), code="data-placeholder")
    if not d.exists:
        return Finding.fail(
            f"{v.key}: {d.resolved} " + ("matches no file" if d.kind == "text-glob" else "does not exist"),
            detail=d.note or "The job fails when it builds the dataset, after it was queued.",
            fix=_set(res, v, "<an existing path>") + " (check the mount and the spelling)",
            location=_loc(res, v), code="data-missing")
    if not d.readable:
        return Finding.fail(
            f"{v.key}: {d.resolved} is not readable", detail=d.note,
            fix=f"chmod -R a+rX {d.resolved} (or run as a user who can read it)",
            location=_loc(res, v), code="data-unreadable")
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
                location=_loc(res, first), code="data-too-small")
        return Finding.passed(f"dataset: {n:,} sequences = {n // gb:,} global batches of {gb}",
                              proved="; ".join(f"{d.resolved}: {d.note}" for d in usable),
                              location=_loc(res, first), code="data")
    if all(t is not None for t in toks) and seq:
        n = sum(int(t) for t in toks)
        need = gb * (seq + 1)
        if n < need:
            return Finding.fail(
                f"dataset holds at most {n:,} tokens, less than one global batch ({gb} x {seq + 1} = {need:,})",
                detail="; ".join(f"{d.resolved}: {d.note}" for d in usable),
                fix=f"add text to {first.key}, or shorten {res.seq_length.key} / the global batch",
                location=_loc(res, first), code="data-too-small")
        return Finding.passed(f"dataset: up to {n:,} tokens, {n // need:,} global batches",
                              proved="; ".join(f"{d.resolved}: {d.note}" for d in usable),
                              location=_loc(res, first), code="data")
    return Finding.passed(f"dataset paths exist and are readable ({len(usable)})",
                          proved="; ".join(f"{d.resolved}: {d.note or 'exists'}" for d in usable),
                          location=_loc(res, first), code="data")


def rule_directives(res: Resolved, env: Env) -> list[Finding]:
    from msdoctor.shipped import path as shipped

    return [Finding.warn(msg, detail=f"msdoctor reads `# msdoctor: key=value` comments ({shipped('docs/training-config-check.md')})",
                         fix=f"{res.path}:{line}: correct or remove the comment",
                         location=Location(str(res.path), line), code="directive")
            for line, msg in res.directive_problems]


RULES: tuple[Callable[[Resolved, Env], list[Finding]], ...] = (
    rule_batch, rule_lr, rule_warmup, rule_batch_range, rule_precision, rule_layout,
    rule_checkpoint_disk, rule_checkpoint_interval, rule_data, rule_directives,
)


def evaluate(res: Resolved, env: Env) -> list[Finding]:
    """Every rule's findings for one config (pure)."""
    out: list[Finding] = []
    for rule in RULES:
        out += rule(res, env)
    return out
