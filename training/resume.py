"""Checkpoint glue between the run and :mod:`.checkpoint`: what is saved, and how a run is restored.

Saved: the model (``model.ckpt``), the optimizer state without the weights again and the loss
scaler (``optimizer.ckpt``), and ``state.json`` with the step, the data position (the step: the
sampler is a function of seed and step), the seeds, the global batch and the model shape. Only
rank 0 writes: data-parallel replicas are identical.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from . import checkpoint as ckpt
from .config import to_dict

if TYPE_CHECKING:  # pragma: no cover
    from .train import Run


def writers(run: Run) -> dict:
    """What a checkpoint holds: the model, and the optimizer + loss scaler state (not the weights again)."""
    import mindspore as ms

    model_names = {p.name for p in run.net.get_parameters()}
    state = [p for _, p in run.opt.parameters_and_names() if p.name not in model_names]
    if run.scaler is not None and hasattr(run.scaler, "counter"):
        state += [run.scaler.scale_value, run.scaler.counter]
    return {
        "model.ckpt": lambda path: ms.save_checkpoint(run.net, str(path)),
        "optimizer.ckpt": lambda path: ms.save_checkpoint([{"name": p.name, "data": p} for p in state], str(path)),
    }


def expected_bytes(run: Run) -> int:
    """What a checkpoint of this run takes on disk: every saved tensor's bytes (+1% for names and headers)."""
    import numpy as np
    from mindspore import dtype_to_nptype

    model_names = {p.name for p in run.net.get_parameters()}
    tensors = list(run.net.get_parameters()) + [
        p for _, p in run.opt.parameters_and_names() if p.name not in model_names
    ]
    total = sum(int(np.prod(p.shape)) * np.dtype(dtype_to_nptype(p.dtype)).itemsize for p in tensors)
    return int(total * 1.01) + 4096


def save(run: Run, step: int) -> Optional[Path]:
    """Rank 0 writes the checkpoint of ``step`` completed optimizer steps (data-parallel ranks are equal)."""
    if run.rank != 0:
        return None
    existing = ckpt.step_dir(run.run_dir / "checkpoints", step)
    if existing.exists():
        problem = ckpt.verify(existing)
        if problem is None:  # saved already (every_steps and the end coincide)
            return existing
        # a damaged checkpoint of this step (truncated, edited): kept aside, and this step is saved anew
        aside = ckpt.move_aside(existing, problem)
        run.log.info(f"checkpoint: {existing} does not verify ({problem}); moved aside to {aside}, saving it again")
    c = run.cfg
    state = {
        "data": {
            "position": step,
            "seed": c.train.seed,
            "num_tokens": run.tokens_meta["num_tokens"],
            "tokenizer": run.tokens_meta["tokenizer"],
            "files_sha": run.tokens_meta["files_sha"],
        },
        "rng": {
            "mindspore_seed": c.train.seed,
            "sampler": "numpy PCG64 seeded with [seed, 0, step]: the step restores it exactly",
        },
        "global_batch": c.global_batch,
        "model": to_dict(c)["model"],
        "loss_scale": scale_value(run),
    }
    started = time.monotonic()
    path = ckpt.save(
        run.run_dir / "checkpoints",
        step,
        writers(run),
        state,
        c.checkpoint.keep_last,
        run.log.info,
        expected_bytes(run),
    )
    run.log.info(f"checkpoint: {path} ({time.monotonic() - started:.2f} s)")
    return path


def restore(run: Run) -> None:
    """Load the newest complete checkpoint (damaged ones are skipped with a log line; rank 0 moves them aside)."""
    import mindspore as ms

    found = ckpt.find_latest(run.run_dir / "checkpoints", run.log.info, move_corrupt=run.rank == 0)
    if found is None:
        run.log.info("resume: no complete checkpoint yet; starting at step 0")
        return
    if found.state.get("model") != to_dict(run.cfg)["model"]:
        raise RuntimeError(
            f"resume: {found.path} was written for another model shape; start a new run "
            "directory (--output-dir) or restore the model section of the config"
        )
    if found.state.get("global_batch") != run.cfg.global_batch:
        run.log.info(
            f"warning: resume: the global batch was {found.state.get('global_batch')}, now "
            f"{run.cfg.global_batch}: the data order after step {found.step} differs from an unbroken run"
        )
    not_loaded, _ = ms.load_param_into_net(
        run.net, ms.load_checkpoint(str(found.path / "model.ckpt")), strict_load=True
    )
    if not_loaded:
        raise RuntimeError(f"resume: {found.path}/model.ckpt lacks {', '.join(not_loaded[:5])}")
    opt_state = ms.load_checkpoint(str(found.path / "optimizer.ckpt"))
    for name in ("scale_value", "counter"):
        value = opt_state.pop(name, None)
        if value is not None and run.scaler is not None:
            getattr(run.scaler, name).set_data(value)
    ms.load_param_into_net(run.opt, opt_state, strict_load=True)
    run.start_step = found.step
    run.log.info(f"resume: step {found.step} from {found.path}")


def scale_value(run: Run) -> Optional[float]:
    if run.scaler is None:
        return None
    return float(run.scaler.scale_value.asnumpy())
