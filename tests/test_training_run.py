"""The trainer for real: MindSpore 2.7.0 on this CPU, in subprocesses started from a temp cwd.

MindSpore writes ./rank_0 and ./rewritten_network into the working directory, so every run
starts in tmp_path. The corpus is the standard library's own sources (no download); the
token cache is shared by the tests of one session.
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from helpers import free_port
from msdoctor.training import checkpoint as ckpt
from msdoctor.training import launch
from msdoctor.training.config import RunConfig, from_dict, to_dict

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.mindspore]

#: the smallest model that trains on CPU in seconds: 2 layers, width 64, byte vocabulary
SMALL = {
    "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
    "train": {"micro_batch_size": 8, "seq_length": 64, "max_steps": 40, "warmup_steps": 2},
    "logging": {"every_steps": 1, "tensorboard": False},
    "checkpoint": {"every_steps": 0},
}


@pytest.fixture
def token_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One token cache for this module's tests in this pytest process (function scope, so under
    scripts/test.sh's --dist loadgroup each test may run on any worker; tests/conftest.py)."""
    path = tmp_path_factory.getbasetemp() / "token-cache-training-run"
    path.mkdir(exist_ok=True)
    return path


def merge(base: dict, extra: dict) -> dict:
    out = json.loads(json.dumps(base))
    for section, values in extra.items():
        out.setdefault(section, {}).update(values) if isinstance(values, dict) else out.__setitem__(section, values)
    return out


def write_config(run_dir: Path, raw: dict, cache: Path) -> RunConfig:
    raw = merge(raw, {"data": {"cache_dir": str(cache)}})
    cfg = from_dict(raw)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(to_dict(cfg)))
    return cfg


def trainer(run_dir: Path, *args: str, cwd: Path, timeout: float = 240, popen: bool = False):
    argv = [
        sys.executable,
        str(launch.ENTRY),
        "--config",
        str(run_dir / "config.json"),
        "--run-dir",
        str(run_dir),
        *args,
    ]
    env = dict(os.environ, GLOG_v="3")
    if popen:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"trainer failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def metrics(run_dir: Path) -> dict[int, dict]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return {int(r["step"]): r for r in csv.DictReader(f)}


def token_meta(cache: Path) -> dict:
    metas = [json.loads(p.read_text()) for p in cache.glob("*.json")]
    assert len(metas) == 1, metas
    return metas[0]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunConfig, subprocess.CompletedProcess, Path]:
    """The shipped tiny-cpu config, shortened to 100 steps, its global batch of 8 as 4 x 2 accumulated (the
    accumulation buffers then count in the resume test): one uninterrupted run that the loss test and the resume
    test both read. (run directory, config, the trainer's result, its token cache)."""
    tmp = tmp_path_factory.mktemp("tiny-run")
    cache = tmp_path_factory.getbasetemp() / "token-cache-training-run"  # the token_cache fixture's folder
    cache.mkdir(exist_ok=True)
    raw = yaml.safe_load((REPO / "training" / "configs" / "tiny-cpu.yaml").read_text())
    raw = merge(
        raw,
        {
            "train": {"max_steps": 100, "precision": "bf16", "micro_batch_size": 4, "grad_accumulation": 2},
            "checkpoint": {"every_steps": 25, "keep_last": 2},
            "logging": {"every_steps": 1},
        },
    )
    run_dir = tmp / "run"
    cfg = write_config(run_dir, raw, cache)
    return run_dir, cfg, trainer(run_dir, cwd=tmp), cache


def test_tiny_cpu_loss_falls_below_the_unigram_entropy_of_its_corpus(tiny_run):
    """The shipped tiny-cpu config, shortened: a model that ignores context cannot beat the unigram entropy."""
    run_dir, cfg, res, cache = tiny_run
    rows = metrics(run_dir)
    entropy = token_meta(cache)["unigram_entropy"]
    first = float(rows[1]["loss"])
    last = sum(float(rows[s]["loss"]) for s in range(91, 101)) / 10
    print(f"loss {first:.3f} -> {last:.3f} (mean of steps 91-100); unigram entropy {entropy:.3f} nats")
    assert abs(first - math.log(256)) < 0.2  # a fresh model is close to uniform over the bytes
    assert last < entropy - 0.2, (first, last, entropy)
    assert sorted(rows) == list(range(1, 101))
    assert all(rows[s][c] != "" for s in rows for c in ("lr", "grad_norm", "tokens_per_s", "step_time"))
    # every 25 steps, the newest 2 kept, each complete
    kept = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert kept == ["step_00000075", "step_00000100"]
    assert all(ckpt.verify(run_dir / "checkpoints" / k) is None for k in kept)
    log = (run_dir / "train.log").read_text()
    assert "precision fp32 on CPU instead of bf16" in log  # CPU has no bf16 kernels: said, not hidden
    assert f"global batch {cfg.global_batch} sequences" in res.stdout and cfg.global_batch == 8
    # tensorboardX is in the test extra: the run wrote the same losses as TensorBoard scalars
    tb_loss = {step: value for step, tag, value in tensorboard_scalars(run_dir / "tb") if tag == "train/loss"}
    assert sorted(tb_loss) == list(range(1, 101))
    assert all(abs(tb_loss[s] - float(rows[s]["loss"])) < 1e-5 * max(1.0, tb_loss[s]) for s in rows)


def tensorboard_scalars(tb_dir):
    """(step, tag, value) of every scalar in the TFRecord event files of tb_dir, read back with tensorboardX's protos.

    Read in a subprocess: importing tensorboardX's generated protos here would pin protobuf's upb
    backend in the test process before MindSpore (imported later by other tests in this process)
    sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python for its own old-style _pb2 modules, and
    MindSpore's import would then fail with "Descriptors cannot be created directly"
    (observed).
    """
    code = textwrap.dedent("""
        import json, struct, sys, pathlib
        from tensorboardX.proto import event_pb2
        out = []
        for path in sorted(pathlib.Path(sys.argv[1]).glob("events.out.tfevents.*")):
            data, i = path.read_bytes(), 0
            while i < len(data):  # record: u64 length, u32 crc, payload, u32 crc
                (n,) = struct.unpack("<Q", data[i:i + 8])
                event = event_pb2.Event()
                event.ParseFromString(data[i + 12:i + 12 + n])
                i += 12 + n + 4
                out.extend((event.step, v.tag, v.simple_value) for v in event.summary.value)
        print(json.dumps(out))
        """)
    res = subprocess.run([sys.executable, "-c", code, str(tb_dir)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [tuple(x) for x in json.loads(res.stdout)]


def test_resume_reproduces_the_uninterrupted_run(tmp_path, tiny_run):
    """The uninterrupted 100 steps (with accumulation, so its buffers count) == a new process resuming from its
    step-75 checkpoint, stopped at 90 (--stop-at leaves the schedule as it is), and a third one resuming to 100."""
    one = tiny_run[0]
    two = tmp_path / "two"  # the uninterrupted run's directory as a crash after step 75 would leave it
    shutil.copytree(one, two, ignore=shutil.ignore_patterns("step_00000100", "tb"))
    assert ckpt.find_latest(two / "checkpoints").step == 75
    trainer(two, "--resume", "--stop-at", "90", cwd=tmp_path)
    assert "resume: step 75" in (two / "train.log").read_text()
    assert ckpt.find_latest(two / "checkpoints").step == 90
    assert sorted(metrics(two)) == list(range(1, 91))  # the rows past the checkpoint were dropped, then rewritten
    trainer(two, "--resume", cwd=tmp_path)
    assert "resume: step 90" in (two / "train.log").read_text()
    a, b = metrics(one), metrics(two)
    assert sorted(b) == list(range(1, 101))  # the resumed CSV continues the first one
    diffs = [abs(float(a[s]["loss"]) - float(b[s]["loss"])) for s in range(76, 101)]
    print(f"max |loss difference| over steps 76-100: {max(diffs):.3g}")
    assert max(diffs) <= 1e-6, diffs  # observed: 0.0 (bitwise) on MindSpore 2.7.0 CPU
    assert a[100]["loss"] == b[100]["loss"] and a[80]["lr"] == b[80]["lr"]
    # resuming the finished run says so and changes nothing
    trainer(two, "--resume", cwd=tmp_path)
    assert "nothing to do: the checkpoint is at step 100" in (two / "train.log").read_text()
    assert sorted(metrics(two)) == list(range(1, 101))


def test_kill_9_while_checkpoints_are_written_never_leaves_a_corrupt_one_to_resume(tmp_path, token_cache):
    """SIGKILL at random moments while a checkpoint is being written; resume always finds a complete one."""
    # a wide model on tiny batches: writing its ~40 MB of checkpoint takes longer than a step, so
    # a kill at a random moment mostly lands inside a write; 2 wide layers rather than 4 narrower ones
    # of the same size, as the graph compile of every (re)start grows with depth (observed: first step
    # 4.0 s vs 7.5 s; write 0.13-0.23 s vs a step of 75 ms)
    raw = merge(
        SMALL,
        {
            "model": {"num_layers": 2, "hidden_size": 384, "num_heads": 4, "num_kv_heads": 4},
            "train": {"max_steps": 100000, "warmup_steps": 10, "micro_batch_size": 2, "seq_length": 32},
            "checkpoint": {"every_steps": 1, "keep_last": 2},
            "logging": {"every_steps": 1000},
        },
    )
    run_dir = tmp_path / "run"
    write_config(run_dir, raw, token_cache)
    root = run_dir / "checkpoints"
    rng = random.Random(20240601)
    during_write, resumed_from = 0, []
    for round_no in range(3):
        proc = trainer(run_dir, *(["--resume"] if round_no else []), cwd=tmp_path, popen=True)
        try:
            deadline = time.monotonic() + 180
            first = ckpt.find_latest(root).step if round_no else 0
            # let it write a few checkpoints of its own, then kill inside one of the next writes
            while time.monotonic() < deadline:
                newest = max([int(p.name[5:]) for p in root.glob("step_*")] or [0]) if root.exists() else 0
                if newest >= first + 3 and any(root.glob(".tmp-step_*")):
                    time.sleep(rng.uniform(0, 0.02))
                    break
                # the tight poll only once the writes are near: during import and compile it would take
                # one of the 2 cores from the trainer (observed: its first step compiled in 8-14 s, not 4)
                time.sleep(0.0005 if newest >= first + 2 else 0.05)
            else:
                pytest.fail(f"no checkpoint writes seen: {proc.stderr.read().decode()[-2000:]}")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        writing = any(root.glob(".tmp-step_*"))  # a write the kill interrupted is left behind
        during_write += writing
        for p in root.glob("step_*"):  # every directory under a final name is complete
            assert ckpt.verify(p) is None, (p, ckpt.verify(p))
        found = ckpt.find_latest(root)
        assert found is not None
        resumed_from.append(found.step)
    # the last resume, to the end: it starts where the newest complete checkpoint left off
    last = resumed_from[-1]
    trainer(run_dir, "--resume", "--stop-at", str(last + 2), cwd=tmp_path)
    assert f"resume: step {last} " in (run_dir / "train.log").read_text()
    assert ckpt.find_latest(root).step == last + 2
    assert not list(root.glob(".tmp-*"))  # the killed writers' leftovers were cleaned
    print(f"{during_write} of 3 kills landed during a checkpoint write; resumed from steps {resumed_from}")
    assert during_write >= 2, f"only {during_write} of 3 kills landed during a checkpoint write"


def test_fp16_overflow_skips_the_update_and_lowers_the_loss_scale(tmp_path, token_cache):
    """fp16 on CPU (train.half_on_cpu) with a loss scale that overflows: those steps are skipped and logged."""
    raw = merge(
        SMALL,
        {
            "train": {
                "precision": "fp16",
                "half_on_cpu": True,
                "loss_scale_init": 2.0**24,
                "max_steps": 12,
                "warmup_steps": 1,
            },
            "checkpoint": {"every_steps": 0},
        },
    )
    run_dir = tmp_path / "run"
    write_config(run_dir, raw, token_cache)
    trainer(run_dir, cwd=tmp_path)
    log = (run_dir / "train.log").read_text()
    rows = metrics(run_dir)
    overflowed = {s for s in rows if f"step {s}: gradients not finite" in log}
    assert min(overflowed, default=None) == 1  # 2^24 x the loss overflows fp16 gradients from the first step
    assert len(overflowed) < 12  # and the halved scale lets later steps through
    expected = 2.0**24
    for step in sorted(rows):  # the dynamic scaler's rule: halve on overflow (window 1000 not reached)
        if step in overflowed:
            expected /= 2
            assert rows[step]["grad_norm"] in ("", "inf")
        assert float(rows[step]["loss_scale"]) == expected, step
    skipped = len(overflowed)
    import mindspore as ms

    opt = ms.load_checkpoint(str(ckpt.find_latest(run_dir / "checkpoints").path / "optimizer.ckpt"))
    # the optimizer counted only the applied updates: the skipped ones never reached the weights
    assert int(opt["global_step"].asnumpy()[0]) == 12 - skipped


def test_shard_strategies_reach_every_planned_primitive():
    """Semi-auto parallel cannot run on CPU; the strategies the Ascend configs rely on are checked as declared."""
    from msdoctor.training.config import ModelConfig
    from msdoctor.training.flops import matmul_params
    from msdoctor.training.model import GPT, count_params
    from msdoctor.training.parallel import apply_plan, shard_plan

    m = ModelConfig(num_layers=2, hidden_size=64, num_heads=8, num_kv_heads=4, vocab_size=256)
    net = GPT(m, 32, "bf16", flash=True)  # built, not run: the fused kernel has no CPU implementation
    set_count = apply_plan(net, dp=2, tp=2)
    plan = shard_plan(2, 2)
    blk = net.blocks[0]
    assert blk.attn.wq.matmul.in_strategy == plan["column"]["matmul"]
    assert blk.attn.wo.matmul.in_strategy == plan["row"]["matmul"]
    assert blk.mlp.w3.matmul.in_strategy == plan["column"]["matmul"]
    assert blk.mlp.w2.matmul.in_strategy == plan["row"]["matmul"]
    assert blk.attn.qk.in_strategy == plan["attention"]["qk"]
    assert blk.attn.rope_q.mul_cos.in_strategy == plan["rotary"]["mul_cos"]
    assert blk.attn.flash.in_strategy == plan["attention"]["flash"]
    # every primitive the plan names exists in the model and got its strategy
    from msdoctor.training.parallel import kind_of

    expected = 0
    for name, cell in net.cells_and_names():
        for attr, strategy in plan.get(kind_of(name, cell), {}).items():
            assert getattr(cell, attr).in_strategy == strategy, (name, attr)
            expected += 1
    assert set_count == expected > 100
    # the FLOPs formula counts exactly the model's matmul weights (all but the embedding table)
    assert matmul_params(m, 256) == count_params(net) - 256 * 64 - (2 * 2 + 1) * 64


def test_data_parallel_over_msrun_matches_one_process_with_the_same_global_batch(tmp_path, token_cache):
    """2 CPU workers x 4 sequences through msrun vs 1 process x 8: the same losses step by step."""
    steps = 6
    base = merge(SMALL, {"train": {"max_steps": steps, "warmup_steps": 1}})
    single = tmp_path / "single"
    write_config(single, base, token_cache)
    trainer(single, cwd=tmp_path)
    dp_dir = tmp_path / "dp2"
    cfg = write_config(
        dp_dir,
        merge(
            base,
            {
                "runtime": {"device_num": 2, "master_port": free_port(), "cluster_time_out": 60},
                "parallel": {"data_parallel": 2},
                "train": {"micro_batch_size": 4},
            },
        ),
        token_cache,
    )
    how = launch.build(cfg, sys.executable, dp_dir, False, os.environ)
    assert how.argv[0].endswith("msrun") and "--join=True" in how.argv
    res = subprocess.run(how.argv, env=how.env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    worker_logs = "\n".join(p.read_text()[-2000:] for p in sorted((dp_dir / "msrun_log").glob("*.log")))
    assert res.returncode == 0, f"{res.stdout[-2000:]}\n{res.stderr[-2000:]}\n{worker_logs}"
    assert "CPU x 2 (data_parallel)" in (dp_dir / "train.log").read_text()
    a, b = metrics(single), metrics(dp_dir)
    pairs = [(float(a[s]["loss"]), float(b[s]["loss"])) for s in range(1, steps + 1)]
    print("single vs dp2 losses:", pairs)
    assert all(abs(x - y) <= 1e-4 * abs(x) for x, y in pairs), pairs
    assert pairs[-1][0] < pairs[0][0]


def test_recompute_changes_memory_not_math_and_held_out_loss_is_logged(tmp_path, token_cache):
    """train.recompute none / selective / full: the same losses (recompute repeats the forward, nothing else)."""
    runs, procs = {}, {}
    # the three run at once, each in its own cwd (./rank_0): most of a run is import and a graph compile
    # that leave the other core idle (observed: 9 s user in 21 s wall)
    try:
        for mode in ("none", "selective", "full"):
            write_config(
                tmp_path / mode,
                merge(SMALL, {"train": {"max_steps": 4, "recompute": mode}, "logging": {"eval_every_steps": 2}}),
                token_cache,
            )
            (tmp_path / f"cwd-{mode}").mkdir()
            procs[mode] = trainer(tmp_path / mode, cwd=tmp_path / f"cwd-{mode}", popen=True)
        for mode, proc in procs.items():
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, f"{mode}: trainer failed ({proc.returncode}):\n{err.decode()[-3000:]}"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    for mode in procs:
        run_dir = tmp_path / mode
        runs[mode] = [metrics(run_dir)[s]["loss"] for s in range(1, 5)]
        log = (run_dir / "train.log").read_text()
        assert f"recompute: {mode}" in log and "step 4: held-out loss" in log
    assert runs["none"] == runs["selective"] == runs["full"], runs
