"""Trust in the trainer: a corrupt checkpoint never wins, the trainer dies with ``msdoctor train``,
one writer per run directory, bad settings refused, run files redacted, errors without tracebacks.

Every scenario was first reproduced by killing and corrupting real tiny runs of MindSpore 2.7.0 on
CPU; the tests do the same with the real trainer (``training/run.py``) or the real installed
``msdoctor train``, on a 2-layer width-64 model with short runs. MindSpore writes ./rank_0 into the
working directory, so every run starts in tmp_path.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import env_with, msdoctor_exe, run_msdoctor
from msdoctor.training import checkpoint as ckpt
from msdoctor.training import launch
from msdoctor.training.config import from_dict, to_dict

REPO = Path(__file__).resolve().parents[1]

TINY = {
    "name": "trust-tiny",
    "runtime": {"device_target": "CPU", "device_num": 1},
    "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
    "train": {"micro_batch_size": 8, "seq_length": 64, "max_steps": 30, "warmup_steps": 2},
    "logging": {"every_steps": 1, "tensorboard": False},
    "checkpoint": {"every_steps": 10, "keep_last": 2},
}


@pytest.fixture
def token_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One token cache for this module's tests in this pytest process. Function scope: a module fixture would make
    the module's eight trainer tests one unit of work for one worker (tests/conftest.py), where they share nothing
    but this cache; this way they spread over the workers."""
    path = tmp_path_factory.getbasetemp() / "token-cache-train-trust"
    path.mkdir(exist_ok=True)
    return path


def merged(**sections: dict) -> dict:
    data = json.loads(json.dumps(TINY))
    for key, values in sections.items():
        data.setdefault(key, {}).update(values)
    return data


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def resolved(run_dir: Path, raw: dict, cache: Path) -> None:
    """The config.json msdoctor train writes for the trainer."""
    raw = json.loads(json.dumps(raw))
    raw.setdefault("data", {})["cache_dir"] = str(cache)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(to_dict(from_dict(raw))))


def trainer(run_dir: Path, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        str(launch.ENTRY),
        "--config",
        str(run_dir / "config.json"),
        "--run-dir",
        str(run_dir),
        *args,
    ]
    return subprocess.run(
        argv, cwd=cwd, env=dict(os.environ, GLOG_v="3"), capture_output=True, text=True, timeout=timeout
    )


def ok(res: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert res.returncode == 0, f"exit {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def losses(run_dir: Path) -> dict[int, str]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return {int(r["step"]): r["loss"] for r in csv.DictReader(f)}


def step_dirs(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "checkpoints").glob("step_*"))


# -- 1. a corrupt newest checkpoint ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.mindspore
def test_a_truncated_newest_checkpoint_is_moved_aside_retrained_saved_and_never_counted(tmp_path, token_cache):
    run_dir = tmp_path / "run"
    resolved(run_dir, TINY, token_cache)
    ok(trainer(run_dir, cwd=tmp_path))
    assert step_dirs(run_dir) == ["step_00000020", "step_00000030"]
    first = losses(run_dir)
    newest = run_dir / "checkpoints" / "step_00000030"
    os.truncate(newest / "model.ckpt", 1000)  # what `truncate -s 1000 .../model.ckpt` does

    res = ok(trainer(run_dir, "--resume", cwd=tmp_path))  # max_steps is 30: it retrains 21..30
    log = (run_dir / "train.log").read_text()
    assert "skipping checkpoint" in log and "moved aside to" in log
    assert "resume: step 20 " in log
    aside = sorted((run_dir / "checkpoints").glob("corrupt-step_00000030-*"))
    assert len(aside) == 1, list((run_dir / "checkpoints").iterdir())
    assert "model.ckpt has 1000 bytes" in (aside[0] / ckpt.CORRUPT_NOTE).read_text()
    assert (aside[0] / "model.ckpt").stat().st_size == 1000  # kept as it was, for inspection
    # the retrained step 30 was saved again, verified, and equals the unbroken run
    assert ckpt.verify(newest) is None, res.stdout[-2000:]
    assert ckpt.find_latest(run_dir / "checkpoints").step == 30
    assert losses(run_dir)[30] == first[30]

    # corrupt it again, and this time continue past it: the good 20 must survive pruning
    os.truncate(newest / "model.ckpt", 1000)
    cfg = json.loads((run_dir / "config.json").read_text())
    cfg["train"]["max_steps"] = 40
    (run_dir / "config.json").write_text(json.dumps(cfg))
    ok(trainer(run_dir, "--resume", cwd=tmp_path))
    kept = step_dirs(run_dir)
    assert kept == ["step_00000030", "step_00000040"], kept  # 30 retrained and saved, 40 new: two good ones
    assert all(ckpt.verify(run_dir / "checkpoints" / k) is None for k in kept)
    assert len(list((run_dir / "checkpoints").glob("corrupt-step_00000030-*"))) == 2


def test_prune_counts_only_checkpoints_that_verify(tmp_path):
    """keep_last 2 with a truncated newest one: the two newest GOOD ones stay, the bad one is moved aside."""
    root = tmp_path / "checkpoints"

    def writer(step: int):
        return {"model.ckpt": lambda p: p.write_bytes(bytes([step]) * 4096)}

    for step in (10, 20, 30):
        ckpt.save(root, step, writer(step), {}, keep_last=None)
    os.truncate(root / "step_00000030" / "model.ckpt", 1000)
    notes: list[str] = []
    deleted = ckpt.prune(root, 2, notes.append)
    assert deleted == []  # 10 and 20 are the two good ones
    assert sorted(p.name for p in root.glob("step_*")) == ["step_00000010", "step_00000020"]
    assert [p.name.startswith("corrupt-step_00000030-") for p in root.glob("corrupt-*")] == [True]
    assert "does not verify (model.ckpt has 1000 bytes" in notes[0]
    # nothing resumes from the moved-aside one, and clean_stale (start of every run) keeps it
    assert ckpt.find_latest(root).step == 20
    ckpt.clean_stale(root)
    assert len(list(root.glob("corrupt-*"))) == 1


# -- 3. bad numbers, empty files, duplicate keys: exit 2 before any check ---------------------------
def _refused(tmp_path: Path, config: Path) -> str:
    run_dir = tmp_path / "run"
    res = run_msdoctor("train", "--config", str(config), "--output-dir", str(run_dir), cwd=tmp_path, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert "checking the environment" not in res.stdout + res.stderr  # refused before any check ran
    assert not run_dir.exists()
    return res.stderr


@pytest.mark.parametrize(
    "text, key",
    [(".nan", "lr"), ("-.inf", "lr"), ("nan", "min_lr"), (".inf", "eps"), ("1.5", "beta2"), ("-0.1", "weight_decay")],
)
def test_float_settings_must_be_finite_and_in_range(tmp_path, text, key):
    config = tmp_path / "bad.yaml"
    body = yaml.safe_dump(merged(), sort_keys=False).replace(
        "  warmup_steps: 2\n", f"  warmup_steps: 2\n  {key}: {text}\n"
    )
    config.write_text(body)
    line = body.splitlines().index(f"  {key}: {text}") + 1
    err = _refused(tmp_path, config)
    assert f"{config}:{line}: train.{key}" in err, err
    assert "finite" in err or "must be" in err or "need" in err


@pytest.mark.parametrize(
    "name, text", [("empty.yaml", ""), ("comments.yaml", "# nothing here yet\n"), ("empty.toml", "# no keys\n")]
)
def test_an_empty_config_is_refused_not_taken_for_all_defaults(tmp_path, name, text):
    config = tmp_path / name
    config.write_text(text)
    err = _refused(tmp_path, config)
    assert f"{config}: the training config is empty" in err and "tiny-cpu.yaml" in err


def test_duplicate_yaml_keys_are_reported_with_both_lines(tmp_path):
    config = tmp_path / "dup.yaml"
    config.write_text(
        "name: dup\ntrain:\n  lr: 3.0e-3\n  max_steps: 30\n  lr: 3.0e-2\nmodel: {num_layers: 2}\n"
        "model: {num_layers: 4}\n"
    )
    err = _refused(tmp_path, config)
    assert f"{config}:5: train.lr: given twice (lines 3 and 5)" in err, err
    assert f"{config}:7: model: given twice (lines 6 and 7)" in err, err


# -- 2. the trainer dies with msdoctor train; one writer per run directory --------------------------
def gate_config(tmp_path: Path, cache: Path, **sections: dict) -> Path:
    data = merged(**sections)
    data.setdefault("data", {})["cache_dir"] = str(cache)
    return write_yaml(tmp_path / "train.yaml", data)


def start_train(config: Path, run_dir: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """msdoctor train in its own process group (as a shell starts a job), output captured."""
    argv = [msdoctor_exe(), "train", "--config", str(config), "--output-dir", str(run_dir), *extra]
    return subprocess.Popen(
        argv,
        cwd=config.parent,
        env=env or env_with(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def rows(run_dir: Path) -> int:
    try:
        return max(0, len((run_dir / "metrics.csv").read_text().splitlines()) - 1)
    except FileNotFoundError:
        return 0


def wait_rows(proc: subprocess.Popen, run_dir: Path, n: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while rows(run_dir) < n and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if rows(run_dir) < n:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"no training progress (exit {proc.returncode}):\n{out[-2000:]}\n{err[-2000:]}")


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def lock_holders(run_dir: Path) -> dict[str, int]:
    data = json.loads((run_dir / ".msdoctor.lock").read_text())
    return {h["what"]: h["pid"] for h in data["holders"]}


@pytest.mark.slow
@pytest.mark.mindspore
def test_sigkill_of_msdoctor_train_kills_the_trainer_a_second_train_is_refused_and_the_stale_lock_is_taken_over(
    tmp_path, token_cache
):
    config = gate_config(tmp_path, token_cache, train={"max_steps": 400})
    run_dir = tmp_path / "run"
    proc = start_train(config, run_dir, "--quick")  # the supervisor is the point here, not the gate's live probe
    try:
        wait_rows(proc, run_dir, 12)  # past the first checkpoint (every 10 steps)
        holders = lock_holders(run_dir)
        assert holders["msdoctor train"] == proc.pid and alive(holders["trainer"])

        # a second msdoctor train on the directory in use: refused at once, naming the PIDs
        second = run_msdoctor(
            "train", "--config", str(config), "--output-dir", str(run_dir), "--resume", cwd=tmp_path, timeout=60
        )
        assert second.returncode == 2, second.stdout + second.stderr
        assert (
            f"PID {proc.pid} (msdoctor train)" in second.stderr
            and f"PID {holders['trainer']} (trainer)" in second.stderr
        )
        assert "checking the environment" not in second.stdout + second.stderr and "Traceback" not in second.stderr

        os.kill(proc.pid, signal.SIGKILL)  # what a scheduler or the OOM killer does
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(holders["trainer"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        died_after = 10 - (deadline - time.monotonic())
        assert not alive(holders["trainer"]), "the trainer outlived msdoctor train"
        print(f"trainer PID {holders['trainer']} gone {died_after:.2f} s after SIGKILL of msdoctor train")
        frozen = (run_dir / "metrics.csv").read_text()
        time.sleep(1.0)
        assert (run_dir / "metrics.csv").read_text() == frozen  # no orphan writes on
    finally:
        if proc.poll() is None:
            proc.kill()

    newest = ckpt.find_latest(run_dir / "checkpoints").step
    resumed = run_msdoctor(
        "train",
        "--config",
        str(config),
        "--output-dir",
        str(run_dir),
        "--resume",
        "--max-steps",
        str(newest + 3),
        "--quick",
        cwd=tmp_path,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (
        f"note: took over the lock of {run_dir}: its holders PID {holders['msdoctor train']} (msdoctor train), "
        f"PID {holders['trainer']} (trainer) ended without releasing it"
    ) in resumed.stdout
    assert f"resume: step {newest} " in (run_dir / "train.log").read_text()
    assert (run_dir / ".msdoctor.lock").read_text() == ""  # released at the end: nothing to take over next time


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_trainer_started_by_hand_takes_the_lock_too(tmp_path, token_cache):
    run_dir = tmp_path / "run"
    resolved(run_dir, TINY, token_cache)
    from msdoctor.training import runlock

    held = runlock.acquire(run_dir, "test holder")
    try:
        res = trainer(run_dir, cwd=tmp_path)
    finally:
        runlock.release(held)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"PID {os.getpid()} (test holder)" in res.stderr and "Traceback" not in res.stderr
    assert not (run_dir / "metrics.csv").exists()


PARENT = """
import os, subprocess, sys, time
# like msrun: the worker in its own session (msrun starts workers with preexec_fn=os.setsid), so only
# the trainer's own parent-death signal and parent watch can end it when this parent dies
child = subprocess.Popen(sys.argv[1:], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=open(os.environ["ERR_LOG"], "w"))
print(child.pid, flush=True)
time.sleep(3600)
"""


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_worker_in_its_own_session_dies_with_its_parent(tmp_path, token_cache):
    """msrun's case: its workers leave its process group, so a group kill does not reach them."""
    run_dir = tmp_path / "run"
    resolved(run_dir, merged(train={"max_steps": 400}), token_cache)
    argv = [sys.executable, str(launch.ENTRY), "--config", str(run_dir / "config.json"), "--run-dir", str(run_dir)]
    env = dict(os.environ, GLOG_v="3", MSDOCTOR_DIE_WITH_PARENT="1", ERR_LOG=str(tmp_path / "err.log"))
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    worker = int(parent.stdout.readline())
    try:
        wait_rows(parent, run_dir, 3)
        parent.kill()  # SIGKILL: the parent gets no chance to pass anything on
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker), "the worker outlived its parent"
    finally:
        if alive(worker):
            os.kill(worker, signal.SIGKILL)


# -- 6. signals -----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.mindspore
def test_ctrl_c_to_the_process_group_is_signal_2_and_exit_130_after_a_checkpoint(tmp_path, token_cache):
    config = gate_config(tmp_path, token_cache, train={"max_steps": 400}, checkpoint={"every_steps": 0})
    run_dir = tmp_path / "run"
    proc = start_train(config, run_dir, "--quick")  # the signal's way through msdoctor train is the point
    try:
        wait_rows(proc, run_dir, 5)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-2000:] + err[-2000:]
    saved = step_dirs(run_dir)
    assert len(saved) == 1
    step = int(saved[0].split("_")[1])
    log = (run_dir / "train.log").read_text()
    assert f"stopped by signal 2 after step {step}" in log, log[-2000:]
    assert "training stopped by signal 2 (SIGINT)" in err and "--resume" in err


# -- 5. common mistakes: one clear message --------------------------------------------------------
def _gate_refuses(tmp_path: Path, config: Path, *extra: str) -> subprocess.CompletedProcess:
    """The gate's training-config check refuses the run: exit 1, no trainer started, no traceback. training-config
    is a static check: --quick leaves out the live probe (MindSpore's start, ~5 s), which proves nothing here."""
    run_dir = tmp_path / "run"
    res = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--quick", *extra, cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert "training not started" in res.stderr and "Traceback" not in res.stdout + res.stderr
    assert json.loads((run_dir / "check-report.json").read_text())  # the report says why
    assert not (run_dir / "train.log").exists() and not (run_dir / "config.json").exists()
    return res


def test_a_data_glob_matching_nothing_is_refused_by_the_gate_not_by_a_trainer_traceback(tmp_path):
    config = write_yaml(tmp_path / "train.yaml", merged(data={"paths": ["corpus/**/*.txt"]}))
    res = _gate_refuses(tmp_path, config)
    assert "corpus/**/*.txt matches no file" in res.stdout, res.stdout[-3000:]
    assert "DataError" not in res.stdout + res.stderr


def test_data_with_fewer_tokens_than_one_global_batch_is_refused_by_the_gate(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("tiny text " * 50)  # 500 bytes; one batch is 8 x 65 = 520 tokens
    config = write_yaml(tmp_path / "train.yaml", merged(data={"paths": ["corpus/*.txt"]}))
    res = _gate_refuses(tmp_path, config)
    assert "training-config" in res.stdout and "data-too-small" in (tmp_path / "run" / "check-report.json").read_text()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode (CI runs as root)")
def test_unreadable_data_files_are_refused_by_the_gate(tmp_path):
    (tmp_path / "corpus").mkdir()
    secret = tmp_path / "corpus" / "b.txt"
    secret.write_text("x" * 10000)
    secret.chmod(0)
    config = write_yaml(tmp_path / "train.yaml", merged(data={"paths": ["corpus/*.txt"]}))
    _gate_refuses(tmp_path, config)
    assert "data-unreadable" in (tmp_path / "run" / "check-report.json").read_text()


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_run_with_no_finite_optimizer_step_fails_and_says_so(tmp_path, token_cache):
    """fp16 with a static loss scale of 2^24 overflows every step: nothing is ever applied (exit 0 before)."""
    config = gate_config(
        tmp_path,
        token_cache,
        train={
            "max_steps": 6,
            "precision": "fp16",
            "half_on_cpu": True,
            "loss_scale": "static",
            "loss_scale_init": 2.0**24,
        },
    )
    run_dir = tmp_path / "run"  # --quick: the trainer is the point here, the gate's live probe is not
    res = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--quick", cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stderr.count("no optimizer step was finite: all 6 steps (1..6) had inf/nan gradients") == 1, res.stderr
    assert "Traceback" not in res.stderr and "the end of its logs" not in res.stderr
    assert "training stopped: no optimizer step was finite" in (run_dir / "train.log").read_text()
    assert not list((run_dir / "checkpoints").glob("step_*")) if (run_dir / "checkpoints").exists() else True


# -- 5. a full disk at checkpoint time ------------------------------------------------------------
def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if os.geteuid() != 0:
        return False
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return res.returncode == 0


@pytest.mark.slow
@pytest.mark.mindspore
def test_a_full_disk_at_checkpoint_time_says_what_it_needs_and_what_is_free(tmp_path, token_cache):
    small = tmp_path / "small"
    if not _mount_tmpfs(small, "2600k"):
        pytest.skip("needs root and mount(2) to make a small tmpfs (CI runs as root); not available here")
    try:
        run_dir = small / "run"
        resolved(run_dir, TINY, token_cache)  # a checkpoint is ~1.9 MB: the one of step 10 fits, step 20 does not
        res = trainer(run_dir, cwd=tmp_path)
        assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-3000:]
        assert "Traceback" not in res.stderr and "Errno 28" not in res.stderr
        line = [x for x in res.stderr.splitlines() if x.startswith("msdoctor trainer: error: ")]
        assert len(line) == 1, res.stderr
        assert "no space left on the device while writing the checkpoint of step 20" in line[0]
        assert "a checkpoint needs about 1." in line[0] and ("MB are free there" in line[0] or "kB are free" in line[0])
        assert "continue from step 10 with --resume" in line[0]
        assert "training stopped: no space left" in (run_dir / "train.log").read_text()
        assert step_dirs(run_dir) == ["step_00000010"] and not list((run_dir / "checkpoints").glob(".tmp-*"))
        print(line[0])
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


# -- 4. the run directory is shared, so it is redacted ---------------------------------------------
@pytest.mark.slow
@pytest.mark.mindspore
def test_credentials_and_home_paths_are_redacted_in_every_run_file_unless_no_redact(tmp_path, token_cache):
    """The issue's case: data.paths ["https://u:pw@host/*.txt"]. Here that glob matches local files (a
    directory named like the URL, as a FUSE mount of a bucket can be), so the gate passes and the trainer runs."""
    home = tmp_path / "home"
    home.mkdir()
    secret_url = "https://alice:s3cretpass@example.com/corpus/*.txt"
    corpus = tmp_path / "https:" / "alice:s3cretpass@example.com" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "a.txt").write_text("some text to train on\n" * 400)
    # a missing tokenizer under the home directory: the gate passes, the trainer stops at setup with a
    # message naming the path (train.log, stderr.log, the terminal)
    config = write_yaml(
        tmp_path / "train.yaml",
        merged(
            data={
                "paths": [secret_url],
                "tokenizer": str(home / "missing" / "tokenizer.json"),
                "cache_dir": str(token_cache),
            }
        ),
    )
    env = env_with({"HOME": str(home), "PYTHONPATH": str(home / "libs"), "MY_SERVICE_TOKEN": "zz9-service-secret"})
    leaks = ("s3cretpass", str(home), "zz9-service-secret")

    run_dir = tmp_path / "run"
    res = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), env=env, cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    # a trainer error the user can act on: one message, no traceback, no log tail
    assert res.stderr.count("data.tokenizer: ~/missing/tokenizer.json is not a file") == 1, res.stderr
    assert "training stopped: data.tokenizer" in res.stderr and "Traceback" not in res.stderr
    files = ["check-report.json", "train.log", "stderr.log", "config.yaml", "config.json"]
    for name in files:
        text = (run_dir / name).read_text()
        assert not [leak for leak in leaks if leak in text], (name, [leak for leak in leaks if leak in text])
    for text in (res.stdout, res.stderr):
        assert not [leak for leak in leaks if leak in text]
    # what was there, masked
    assert "https://<redacted>@example.com/corpus/*.txt" in (run_dir / "config.yaml").read_text()
    assert (
        json.loads((run_dir / "config.json").read_text())["data"]["paths"][0]
        == "https://<redacted>@example.com/corpus/*.txt"
    )
    # the training-config check names the data path resolved (no longer URL-shaped): the credential still goes
    assert "<redacted>@example.com/corpus/*.txt" in (run_dir / "check-report.json").read_text()
    assert "~/missing/tokenizer.json" in (run_dir / "stderr.log").read_text()
    assert "~/missing/tokenizer.json" in (run_dir / "train.log").read_text()

    raw_dir = tmp_path / "raw"  # --quick: the live probe's facts were shown redacted above; this run keeps the raw
    res = run_msdoctor(
        "train",
        "--config",
        str(config),
        "--output-dir",
        str(raw_dir),
        "--no-redact",
        "--quick",
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 1
    assert secret_url in (raw_dir / "config.yaml").read_text()
    assert str(home / "missing" / "tokenizer.json") in (raw_dir / "train.log").read_text()


def test_the_trainer_masks_exactly_what_msdoctor_masks():
    """The trainer cannot import msdoctor: it applies Redactor.rules(); the result must equal Redactor.text()."""
    import re

    from msdoctor.redact import Redactor

    red = Redactor.for_environment(
        {"HOME": "/home/alice", "USER": "alice", "HF_TOKEN": "hf_" + "a" * 30}, hosts=["gpu-node-7"]
    )
    samples = [
        "https://u:pw@host/*.txt and /home/alice/x (not /home/alicex)",
        "alice@gpu-node-7: HF_TOKEN=" + "hf_" + "a" * 30,
        "API_KEY=zzz9999 ghp_" + "b" * 36 + " s3://bucket/data",
        "HOME /home/alice/.cache/msdoctor/tokens/x.bin",
    ]
    for s in samples:
        out = s
        for rx, repl in red.rules():
            out = re.sub(rx, repl, out)
        assert out == red.text(s)
        assert out != s
