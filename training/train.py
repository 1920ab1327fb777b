"""The reference pretraining loop in MindSpore: setup() -> main() -> fit().

Start it through the gate, which runs every check first and writes the run directory:

    msdoctor train --config training/configs/tiny-cpu.yaml            # one process
    msdoctor train --config training/configs/tiny-cpu-dp2.yaml        # 2 workers through msrun
    msdoctor train --config training/configs/tiny-cpu.yaml --resume   # from the newest checkpoint

or directly, with the resolved config the gate wrote (this is what it launches per device):

    python training/run.py --config runs/tiny-cpu/config.json --run-dir runs/tiny-cpu [--resume]

Steps are optimizer steps (one global batch each). Exit status: 0 done, 1 failed (traceback in
train.log), 2 an error the user can act on (bad input, a full disk, a run directory in use, no
finite optimizer step: one message on stderr and in train.log), 128 + signal number after
SIGTERM (143) / SIGINT (130) (a checkpoint was saved first).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

os.environ.setdefault(
    "GLOG_v", "3"
)  # MindSpore C++ log level ERROR unless asked for (GLOG_v, mindspore.cn env_var_list)

import numpy as np  # noqa: E402

from . import checkpoint as ckpt  # noqa: E402
from . import runlock  # noqa: E402
from .config import ConfigError, RunConfig, from_dict, warnings  # noqa: E402
from .data import DataError, Sampler, TokenFile, make_tokenizer, resolve_files  # noqa: E402
from .errors import EXIT_STATUS, MARK, TrainerError  # noqa: E402
from .flops import flops_per_token, mfu, peak_tflops  # noqa: E402
from .lifecycle import DIE_ENV, Stopper, die_with_parent  # noqa: E402
from .logs import Metrics, Progress, redact, setup_logging  # noqa: E402
from .resume import restore, save, scale_value  # noqa: E402
from .safeopen import open_append  # noqa: E402
from .schedule import get_lr, rows_of  # noqa: E402
from .step import Steps  # noqa: E402


@dataclass
class Run:
    """Everything fit() needs, built by setup()."""

    cfg: RunConfig
    run_dir: Path
    rank: int
    world: int
    log: Any
    net: Any
    opt: Any
    steps: Any  # Steps
    sampler: Sampler
    tokens_meta: dict
    compute: str
    scaler: Any = None
    val_sampler: Optional[Sampler] = None
    start_step: int = 0
    stop_signal: Optional[int] = None


#: the resolved config as JSON, unredacted: msdoctor train puts it here when the run directory's
#: config.json is redacted (a credential in data.paths must reach the trainer, not the shared files)
CONFIG_ENV = "MSDOCTOR_TRAIN_CONFIG"


def load_config(path: Path) -> RunConfig:
    """The resolved JSON the gate writes, or a YAML file (needs PyYAML in this interpreter)."""
    if os.environ.get(CONFIG_ENV):
        return from_dict(json.loads(os.environ[CONFIG_ENV]), path=path)
    text = path.read_text()
    if path.suffix == ".json":
        raw = json.loads(text)
    else:
        import yaml

        raw = yaml.safe_load(text)
    return from_dict(raw, path=path)


def compute_precision(cfg: RunConfig) -> tuple[str, str]:
    """(dtype the matmuls run in, why), following what the device supports."""
    t = cfg.train
    if cfg.runtime.device_target != "CPU" or t.precision == "fp32":
        return t.precision, f"precision {t.precision}"
    if t.half_on_cpu:
        return t.precision, (
            f"precision {t.precision} on CPU (train.half_on_cpu): fp16 is slower than fp32 there, "
            "bf16 has no CPU kernels"
        )
    return "fp32", (
        f"precision fp32 on CPU instead of {t.precision}: bf16 has no CPU kernels and fp16 is 2-3x "
        "slower than fp32 on CPU in MindSpore 2.7 (observed: benchmarks/bench_train.py)"
    )


def setup(cfg: RunConfig, run_dir: Path, resume: bool) -> Run:
    """Device, distribution, data, model, optimizer, step functions, and the checkpoint to resume."""
    from .model import count_params

    rank, world, log, mode, compute = _start(cfg, run_dir)
    train_tokens, val_tokens, meta = _load_data(cfg, log)
    unsupported(cfg)
    net, loss_net = _build_model(cfg, mode, compute, log)
    opt, scaler = _optimizer(cfg, net, compute)
    steps = Steps(cfg, loss_net, opt, scaler, world, mode)
    t = cfg.train
    log.info(
        f"model: {count_params(net):,} parameters; global batch {cfg.global_batch} sequences = "
        f"micro {t.micro_batch_size} x data parallel {cfg.parallel.data_parallel} x accumulation "
        f"{t.grad_accumulation} ({cfg.tokens_per_step:,} tokens per optimizer step)"
    )
    run = Run(
        cfg,
        run_dir,
        rank,
        world,
        log,
        net,
        opt,
        steps,
        Sampler(train_tokens, t.seq_length, t.seed),
        meta,
        compute,
        scaler,
    )
    if cfg.logging.eval_every_steps and len(val_tokens) > t.seq_length + 1:
        run.val_sampler = Sampler(val_tokens, t.seq_length, t.seed)
    if resume:
        restore(run)
    return run


def _start(cfg: RunConfig, run_dir: Path) -> tuple[int, int, Any, str, str]:
    """MindSpore's context and device, the process group, the log: (rank, world, log, parallel mode, compute dtype)."""
    import mindspore as ms

    from .parallel import configure

    ms.set_context(mode=ms.GRAPH_MODE if cfg.train.mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_device(cfg.runtime.device_target)
    rank, world = 0, 1
    if cfg.runtime.device_num > 1:
        from mindspore.communication import get_group_size, get_rank, init

        init()
        rank, world = get_rank(), get_group_size()
    log = setup_logging(run_dir, rank)
    if world != cfg.runtime.device_num:
        raise TrainerError(f"runtime.device_num is {cfg.runtime.device_num} but {world} processes joined")
    mode = configure(cfg, world)
    ms.set_seed(cfg.train.seed)
    compute, why = compute_precision(cfg)
    log.info(f"msdoctor trainer: {cfg.name}, {cfg.runtime.device_target} x {world} ({mode}), {why}")
    if world > 1:  # which process is which rank, for the post-mortem of a failed job (msrun names pids)
        log.info(f"rank {rank} of {world}, pid {os.getpid()}")
    for w in warnings(cfg):
        log.info(f"warning: {w}")
    return rank, world, log, mode, compute


def _load_data(cfg: RunConfig, log: Any) -> tuple[Any, Any, dict]:
    """The token file (built, or reused from the cache), split into training and held-out tokens."""
    tokenizer = make_tokenizer(cfg.data.tokenizer)
    if tokenizer.vocab_size > cfg.model.vocab_size:
        raise DataError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but model.vocab_size is "
            f"{cfg.model.vocab_size}; set model.vocab_size >= {tokenizer.vocab_size}"
        )
    files = resolve_files(cfg.data.paths, cfg.data.max_files)
    tokens = TokenFile.build(files, tokenizer, Path(cfg.data.cache_dir) if cfg.data.cache_dir else None)
    train_tokens, val_tokens = tokens.split(cfg.data.val_fraction, cfg.train.seq_length + 1)
    meta = tokens.meta
    log.info(
        f"data: {meta['num_tokens']:,} tokens from {meta['num_files']} files "
        f"({'reused' if meta['reused'] else 'tokenized into'} {tokens.path}); unigram entropy "
        f"{meta['unigram_entropy']:.3f} nats (the floor for a model that ignores context)"
    )
    return train_tokens, val_tokens, meta


def _build_model(cfg: RunConfig, mode: str, compute: str, log: Any) -> tuple[Any, Any]:
    """The network with its recompute and parallel plan, and the loss cell that trains it (net, loss_net)."""
    from mindspore import nn

    from .model import GPT, LossNet, set_recompute
    from .parallel import apply_plan, assign_stages

    flash = cfg.train.flash_attention and cfg.runtime.device_target == "Ascend"
    net = GPT(cfg.model, cfg.train.seq_length, compute, flash)
    set_recompute(net, cfg.train.recompute)
    log.info(f"attention: {'fused flash (Ascend)' if flash else 'softmax'}; recompute: {cfg.train.recompute}")
    if mode == "semi_auto_parallel":
        apply_plan(net, cfg.parallel.data_parallel, cfg.parallel.tensor_parallel, cfg.parallel.sequence_parallel)
        if cfg.parallel.pipeline_stages > 1:
            assign_stages(net, cfg.parallel.pipeline_stages)
    loss_net = LossNet(net)
    if mode == "semi_auto_parallel" and cfg.parallel.pipeline_stages > 1:
        loss_net = nn.PipelineCell(loss_net, cfg.parallel.micro_batch_num)
    return net, loss_net


def _optimizer(cfg: RunConfig, net: Any, compute: str) -> tuple[Any, Any]:
    """The optimizer, its learning rate a Parameter the step sets, and the loss scaler for fp16 (or None)."""
    import mindspore as ms
    from mindspore import Parameter, Tensor, nn

    from .model import decay_groups

    t = cfg.train
    lr = Parameter(Tensor(get_lr(0, t), ms.float32), name="lr", requires_grad=False)
    if t.optimizer == "adamw":
        opt = nn.AdamWeightDecay(
            decay_groups(net, t.weight_decay), learning_rate=lr, beta1=t.beta1, beta2=t.beta2, eps=t.eps
        )
    else:
        opt = nn.Momentum(decay_groups(net, t.weight_decay), learning_rate=lr, momentum=t.beta1)
    scaler = None
    if compute == "fp16" and t.loss_scale != "none":
        scaler = (
            ms.amp.DynamicLossScaler(t.loss_scale_init, 2, t.loss_scale_window)
            if t.loss_scale == "dynamic"
            else ms.amp.StaticLossScaler(t.loss_scale_init)
        )
    return opt, scaler


def unsupported(cfg: RunConfig) -> None:
    """Keys memory-fit understands but this trainer does not implement: refuse rather than ignore them."""
    out = []
    if cfg.train.param_dtype != "fp32":
        out.append(
            f"train.param_dtype = {cfg.train.param_dtype}: this trainer keeps fp32 weights as the master "
            "copy; set param_dtype: fp32 (train.precision sets the compute dtype)"
        )
    if cfg.parallel.virtual_pipeline_chunks > 1:
        out.append("parallel.virtual_pipeline_chunks > 1: interleaved pipelines are not implemented; set it to 1")
    if out:
        raise TrainerError("unsupported by the reference trainer:\n  " + "\n  ".join(out))


def fit(run: Run, stop_at: Optional[int] = None) -> int:
    """Train from run.start_step to max_steps (or stop_at); returns the exit status."""
    c, log = run.cfg, run.log
    total = c.train.max_steps if stop_at is None else min(stop_at, c.train.max_steps)
    metrics = Metrics(run.run_dir, run.start_step, c.logging.tensorboard) if run.rank == 0 else None
    per_token = flops_per_token(c.model, c.train.seq_length, c.model.padded_vocab_size)
    peak = peak_tflops(c.runtime.device_target, c.runtime.device_peak_tflops, os.environ.get("MSDOCTOR_CHIP", ""))
    if peak:
        log.info(f"MFU estimate against {peak[0]:.3g} TFLOP/s per device ({peak[1]})")
    if run.start_step >= total:
        log.info(
            f"nothing to do: the checkpoint is at step {run.start_step}, and the run ends at step {total} "
            f"(raise train.max_steps to train further)"
        )
        if metrics is not None:
            metrics.close()
        return 0
    progress = Progress(total, run.start_step, run.rank == 0)
    try:
        return _loop(run, total, stop_at, metrics, progress, per_token, peak)
    finally:
        progress.close()
        if metrics is not None:
            metrics.close()


def _loop(
    run: Run, total: int, stop_at: Optional[int], metrics: Any, progress: Progress, per_token: float, peak: Any
) -> int:

    c, log = run.cfg, run.log
    agree = _stop_agreement(run.world)
    done = run.start_step
    applied, loss = 0, float("nan")
    window_steps, window_time = 0, 0.0  # the steps since the last metrics row (throughput is their mean)
    for step in range(run.start_step, total):
        x, y = run.sampler.batch(step, c.global_batch)
        rows = [rows_of(c, _data_rank(run), k) for k in range(c.train.grad_accumulation)]
        batches = [(np.ascontiguousarray(x[r]), np.ascontiguousarray(y[r])) for r in rows]
        started = time.perf_counter()
        loss, norm, finite = run.steps(batches, get_lr(step, c.train))
        elapsed = time.perf_counter() - started
        done = step + 1
        applied += finite
        if step == run.start_step:
            log.info(f"step {done}: compiled and ran the first step in {elapsed:.2f} s")
        if not finite:
            log.info(
                f"step {done}: gradients not finite (fp16 overflow or divergence): update skipped, "
                f"loss scale now {scale_value(run)}"
            )
        tps = c.tokens_per_step / elapsed
        if step != run.start_step:  # the first step compiles the graph: it stands for itself only
            window_steps, window_time = window_steps + 1, window_time + elapsed
        mean_time = window_time / window_steps if window_steps else elapsed
        mean_tps = c.tokens_per_step / mean_time
        row = {
            "step": done,
            "loss": loss,
            "lr": get_lr(step, c.train),
            "grad_norm": norm,
            "loss_scale": scale_value(run),
            "tokens_per_s": mean_tps,
            "step_time": mean_time,
            "mfu_estimate": mfu(mean_tps, per_token, run.world, peak[0] if peak else None),
        }
        if metrics is not None and (done % c.logging.every_steps == 0 or done == total or not finite):
            metrics.write(row)
            window_steps, window_time = 0, 0.0
            if not progress.active:
                mfu_text = f"  MFU {row['mfu_estimate']:.1%}" if row["mfu_estimate"] is not None else ""
                log.info(
                    f"step {done}/{total}  loss {loss:.4f}  lr {row['lr']:.3g}  grad_norm {norm:.3f}  "
                    f"{mean_tps:,.0f} tok/s  {mean_time * 1000:.0f} ms/step{mfu_text}"
                )
        progress.update(done, loss, tps)
        if run.val_sampler is not None and done % c.logging.eval_every_steps == 0:
            held_out = evaluate(run)
            log.info(f"step {done}: held-out loss {held_out:.4f}")
            if metrics is not None and metrics.tb is not None:
                metrics.tb.add_scalar("eval/loss", held_out, done)
        if c.checkpoint.every_steps and done % c.checkpoint.every_steps == 0:
            save(run, done)
        if agree(run.stop_signal):
            progress.close()  # a stop is not an end: overflowing first fp16 steps are normal, resume decides
            if c.checkpoint.save_on_exit:
                save(run, done)
            log.info(f"stopped by signal {run.stop_signal} after step {done}; resume with --resume")
            return 128 + (run.stop_signal or signal.SIGTERM)
    progress.close()
    diverged(run, applied, done, loss)
    if c.checkpoint.save_on_exit or stop_at is not None:
        save(run, done)
    log.info(f"finished: {done} optimizer steps")
    return 0


def diverged(run: Run, applied: int, done: int, loss: float) -> None:
    """A run whose optimizer steps were all skipped (inf/nan gradients), or whose loss ends inf/nan, failed."""
    ran = done - run.start_step
    if ran and not applied:
        raise TrainerError(
            f"no optimizer step was finite: all {ran} steps ({run.start_step + 1}..{done}) had inf/nan gradients, "
            "so no update was applied; with fp16, lower train.loss_scale_init or use loss_scale: dynamic; otherwise "
            "lower train.lr (no checkpoint was saved for these steps)"
        )
    if ran and not math.isfinite(loss):
        raise TrainerError(
            f"training diverged: the loss is {loss} at step {done} ({applied} of {ran} steps were applied); "
            "lower train.lr or raise train.warmup_steps, and resume from an earlier checkpoint (no checkpoint was "
            "saved for the last step)"
        )


EVAL_BATCHES = 8


def evaluate(run: Run) -> float:
    """Mean loss on the same EVAL_BATCHES held-out batches every time (every rank evaluates them all)."""
    import mindspore as ms

    rows = run.cfg.train.micro_batch_size
    assert run.val_sampler is not None  # evaluate runs only when a validation split exists
    losses = []
    for i in range(EVAL_BATCHES):
        x, y = run.val_sampler.batch(i, rows, stream=1)
        losses.append(float(run.steps.eval_loss(ms.Tensor(x), ms.Tensor(y)).asnumpy()))
    return sum(losses) / len(losses)


def _data_rank(run: Run) -> int:
    from .parallel import data_rank

    return data_rank(run.rank, run.cfg)


def _stop_agreement(world: int) -> Any:
    """A function flag -> bool that is the same on every rank (a signal may reach ranks at different steps)."""
    if world == 1:
        return lambda flag: flag is not None
    import mindspore as ms
    from mindspore import ops
    from mindspore.communication import GlobalComm

    # a sum of float32 flags: the CPU AllReduce kernel only sums, and only float32 (observed, MindSpore 2.7.0)
    reduce_sum = ops.AllReduce(ops.ReduceOp.SUM, GlobalComm.WORLD_COMM_GROUP)

    def agree(flag: Optional[int]) -> bool:
        return bool(reduce_sum(ms.Tensor([0.0 if flag is None else 1.0], ms.float32)).asnumpy()[0] > 0)

    return agree


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description="msdoctor reference pretraining (MindSpore)")
    parser.add_argument("--config", type=Path, required=True, help="resolved config (.json) or a YAML file")
    parser.add_argument("--run-dir", type=Path, required=True, help="run directory (logs, checkpoints)")
    parser.add_argument("--resume", action="store_true", help="continue from the newest complete checkpoint")
    parser.add_argument("--stop-at", type=int, help="stop after this optimizer step (the schedule is unchanged)")
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 environment value (surrogates, PEP 383) prints escaped
        if getattr(stream, "errors", "") == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args.run_dir.mkdir(parents=True, exist_ok=True)

    def note(message: str) -> None:  # until the run's logger exists
        try:
            with open_append(args.run_dir / "train.log", encoding="utf-8", errors="backslashreplace") as f:
                f.write(redact(message) + "\n")
        except (TrainerError, OSError):  # train.log is a link or unwritable: stderr still says it
            pass

    stopper = Stopper(note)
    stopper.install()
    die_with_parent(note)
    run, lock = None, None
    try:
        cfg = load_config(args.config)
        lock = take_lock(args.run_dir, cfg)
        run = setup(cfg, args.run_dir, args.resume)
        stopper.log = run.log.info
        if run.rank == 0:
            ckpt.clean_stale(args.run_dir / "checkpoints")
        stopper.target, stopper.training = run, True
        return fit(run, args.stop_at)
    except (TrainerError, ConfigError) as exc:  # the user can act on it: one message, no traceback
        message = redact(str(exc))
        (run.log.error if run is not None else note)(f"training stopped: {message}")
        sys.stderr.write(MARK + message.replace("\n", "\n  ") + "\n")
        return EXIT_STATUS
    except Exception as exc:  # noqa: BLE001 - logged with its traceback so `msdoctor train` can explain it
        text = redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        if run is not None:
            run.log.error(f"training failed:\n{text}")
        else:
            note(f"training failed:\n{text}")
            sys.stderr.write(text)
        return 1
    finally:
        if lock is not None:
            runlock.release(lock)


def take_lock(run_dir: Path, cfg: RunConfig) -> Optional[runlock.RunLock]:
    """Join the lock msdoctor train holds, or take the run directory's lock when started by hand."""
    fd = runlock.inherited(run_dir)
    if fd is not None:
        runlock.join(fd, "trainer")
        return None
    if os.environ.get(DIE_ENV) == "1" or cfg.runtime.device_num > 1:
        return None  # msdoctor train (or msrun's launcher) holds it for the whole job
    try:
        lock = runlock.acquire(run_dir, "trainer")
    except runlock.RunDirLocked as exc:
        raise TrainerError(
            f"{exc}: one writer per run directory; wait for it to end, or use another --run-dir"
        ) from None
    if lock.took_over:
        sys.stderr.write(lock.took_over + "\n")
    return lock


if __name__ == "__main__":
    sys.exit(main())
