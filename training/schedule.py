"""Learning-rate schedule and batch layout: pure functions of the config and the optimizer step.

Both are counted in OPTIMIZER steps (one per global batch), never micro-steps: with gradient
accumulation a warmup written in micro-steps would be ``grad_accumulation`` times too long (the
seed's pitfall, checked by :func:`msdoctor.training.config.warnings`).
"""

from __future__ import annotations

import math

from .config import RunConfig, TrainConfig


def get_lr(step: int, t: TrainConfig) -> float:
    """Learning rate of optimizer step ``step`` (0-based): linear warmup, then cosine to min_lr.

    The shape follows nanoGPT's ``get_lr`` and Loshchilov & Hutter 2017 (SGDR, arXiv 1608.03983).
    """
    # 1) linear warmup; step + 1 so that the first update is not made with lr = 0
    if step < t.warmup_steps:
        return t.lr * (step + 1) / (t.warmup_steps + 1)
    # 2) past the end: stay at min_lr
    if step >= t.max_steps:
        return t.min_lr
    # 3) in between: cosine from lr down to min_lr, reaching min_lr at max_steps
    ratio = (step - t.warmup_steps) / max(1, t.max_steps - t.warmup_steps)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return t.min_lr + coeff * (t.lr - t.min_lr)


def rows_of(cfg: RunConfig, rank: int, micro_step: int) -> slice:
    """Which rows of the step's global batch this rank takes at this micro-step.

    The global batch of an optimizer step is ``grad_accumulation x data_parallel x micro_batch_size``
    rows drawn together; micro-step k of rank r takes the k-th block of data_parallel blocks and the
    r-th block inside it. So 2 ranks x 4 rows read exactly the rows 1 rank x 8 rows reads, and a
    data-parallel run follows the same trajectory as a single process with the same global batch.
    """
    b, dp = cfg.train.micro_batch_size, cfg.parallel.data_parallel
    start = (micro_step * dp + rank) * b
    return slice(start, start + b)
