"""Issue 31 items 3 and 7: ``msdoctor train`` never writes over project files, and the trainer never writes
through a symbolic link planted in the run directory."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from helpers import env_with, run_msdoctor

TINY = {
    "runtime": {"device_target": "CPU"},
    "model": {"num_layers": 1, "hidden_size": 32, "num_heads": 2, "vocab_size": 128},
    "train": {"micro_batch_size": 2, "seq_length": 16, "max_steps": 2, "warmup_steps": 0},
}


def config(tmp_path: Path, **top) -> Path:
    path = tmp_path / "cfg" / "train.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({**TINY, **top}))
    return path


@pytest.mark.parametrize("name", ["..", "../..", "/tmp/elsewhere", "a/b", ".", "x\\y"])
def test_a_run_name_that_leaves_runs_is_refused(tmp_path, name):
    project = tmp_path / "project"
    project.mkdir()
    (project / "config.yaml").write_text("mine\n")
    res = run_msdoctor(
        "train", "--config", str(config(tmp_path, name=name)), "--quick", cwd=project, env=env_with(), timeout=120
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "name" in res.stderr and "plain directory name" in res.stderr
    assert (project / "config.yaml").read_text() == "mine\n"
    assert sorted(os.listdir(project)) == ["config.yaml"]


def test_output_dir_dot_in_a_project_is_refused_and_nothing_is_replaced(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("config.yaml", "metrics.csv", "config.json", "check-report.json"):
        (project / name).write_text(f"the user's {name}\n")
    res = run_msdoctor(
        "train",
        "--config",
        str(config(tmp_path)),
        "--output-dir",
        ".",
        "--quick",
        cwd=project,
        env=env_with(),
        timeout=120,
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "not a run directory" in res.stderr and "Traceback" not in res.stderr
    for name in ("config.yaml", "metrics.csv", "config.json", "check-report.json"):
        assert (project / name).read_text() == f"the user's {name}\n"
    assert not (project / ".msdoctor.lock").exists()


def test_a_run_directory_is_recognised_by_its_manifest(tmp_path):
    from msdoctor.training import runlock

    run = tmp_path / "run"
    assert runlock.is_run_directory(run)  # not there yet
    run.mkdir()
    assert runlock.is_run_directory(run)  # empty
    (run / "notes.txt").write_text("x")
    assert not runlock.is_run_directory(run)
    runlock.write_manifest(run, "demo")
    assert runlock.is_run_directory(run)
    assert json.loads((run / runlock.RUN_MANIFEST).read_text())["name"] == "demo"
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    os.symlink(tmp_path / "nowhere", other / runlock.LOCK_NAME)  # a link is no manifest
    assert not runlock.is_run_directory(other)


# item 7: the trainer's files in the run directory


def test_the_trainer_log_is_never_written_through_a_link(tmp_path):
    from msdoctor.training.errors import TrainerError
    from msdoctor.training.logs import Metrics, setup_logging

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(victim, run / "train.log")
    with pytest.raises(TrainerError, match="symbolic link"):
        setup_logging(run, 0)
    os.symlink(victim, run / "metrics.csv")
    Metrics(run, None, False).file.close()  # the link is replaced (rename), never written through
    assert not (run / "metrics.csv").is_symlink()
    assert victim.read_text() == "keep\n"


def test_the_metrics_scratch_file_replaces_a_planted_link(tmp_path):
    from msdoctor.training.logs import Metrics

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(victim, run / "metrics.csv.tmp")
    m = Metrics(run, None, False)
    m.file.close()
    assert victim.read_text() == "keep\n" and (run / "metrics.csv").read_text().startswith("step")


def test_the_run_lock_is_never_a_link(tmp_path):
    from msdoctor.training import runlock
    from msdoctor.training.errors import TrainerError

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(victim, run / runlock.LOCK_NAME)
    with pytest.raises(TrainerError, match="symbolic link"):
        runlock.acquire(run, "test")
    assert victim.read_text() == "keep\n"


def test_stderr_log_is_never_written_through_a_link(tmp_path):
    from msdoctor.errors import UserError
    from msdoctor.supervisor import start

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(victim, run / "stderr.log")
    launch = SimpleNamespace(
        argv=[sys.executable, "-c", "import sys; sys.stderr.write('planted\\n')"], env=dict(os.environ)
    )
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(UserError, match="symbolic link"):
            start(launch, run, SimpleNamespace(fd=fd), None)
    finally:
        os.close(fd)
    assert victim.read_text() == "keep\n"


@pytest.mark.parametrize(
    "files",
    [
        [],
        {"state.json": 5},
        {"../../etc/passwd": {"bytes": 1, "sha256": "x"}},
        {"/etc/passwd": {"bytes": 1, "sha256": "x"}},
        {"state.json": {"bytes": "12", "sha256": None}},
        "nope",
    ],
)
def test_a_hand_edited_checkpoint_manifest_is_distrusted_not_a_crash(tmp_path, files):
    """Item 14: a MANIFEST.json edited by hand at --resume: the checkpoint does not verify (it is moved aside by
    the existing corruption path), no AttributeError, nothing read outside the checkpoint."""
    from msdoctor.training import checkpoint as ckpt

    step = tmp_path / "step_00000010"
    step.mkdir()
    (step / "state.json").write_text("{}")
    (step / ckpt.MANIFEST).write_text(json.dumps({"step": 10, "files": files}))
    why = ckpt.verify(step)
    assert why is not None and ckpt.MANIFEST in why
