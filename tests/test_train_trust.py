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
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import run_msdoctor
from msdoctor.training import checkpoint as ckpt
from msdoctor.training import launch
from msdoctor.training.config import from_dict, to_dict

REPO = Path(__file__).resolve().parents[1]

TINY = {"name": "trust-tiny", "runtime": {"device_target": "CPU", "device_num": 1},
        "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
        "train": {"micro_batch_size": 8, "seq_length": 64, "max_steps": 30, "warmup_steps": 2},
        "logging": {"every_steps": 1, "tensorboard": False}, "checkpoint": {"every_steps": 10, "keep_last": 2}}


@pytest.fixture(scope="module")
def token_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("token-cache")


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
    argv = [sys.executable, str(launch.ENTRY), "--config", str(run_dir / "config.json"), "--run-dir", str(run_dir),
            *args]
    return subprocess.run(argv, cwd=cwd, env=dict(os.environ, GLOG_v="3"), capture_output=True, text=True,
                          timeout=timeout)


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


@pytest.mark.parametrize("text, key", [(".nan", "lr"), ("-.inf", "lr"), ("nan", "min_lr"), (".inf", "eps"),
                                       ("1.5", "beta2"), ("-0.1", "weight_decay")])
def test_float_settings_must_be_finite_and_in_range(tmp_path, text, key):
    config = tmp_path / "bad.yaml"
    body = yaml.safe_dump(merged(), sort_keys=False).replace("  warmup_steps: 2\n",
                                                             f"  warmup_steps: 2\n  {key}: {text}\n")
    config.write_text(body)
    line = body.splitlines().index(f"  {key}: {text}") + 1
    err = _refused(tmp_path, config)
    assert f"{config}:{line}: train.{key}" in err, err
    assert "finite" in err or "must be" in err or "need" in err


@pytest.mark.parametrize("name, text", [("empty.yaml", ""), ("comments.yaml", "# nothing here yet\n"),
                                        ("empty.toml", "# no keys\n")])
def test_an_empty_config_is_refused_not_taken_for_all_defaults(tmp_path, name, text):
    config = tmp_path / name
    config.write_text(text)
    err = _refused(tmp_path, config)
    assert f"{config}: the training config is empty" in err and "tiny-cpu.yaml" in err


def test_duplicate_yaml_keys_are_reported_with_both_lines(tmp_path):
    config = tmp_path / "dup.yaml"
    config.write_text("name: dup\ntrain:\n  lr: 3.0e-3\n  max_steps: 30\n  lr: 3.0e-2\nmodel: {num_layers: 2}\n"
                      "model: {num_layers: 4}\n")
    err = _refused(tmp_path, config)
    assert f"{config}:5: train.lr: given twice (lines 3 and 5)" in err, err
    assert f"{config}:7: model: given twice (lines 6 and 7)" in err, err
