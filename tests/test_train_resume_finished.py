"""`msdoctor train --resume` on a run that already reached train.max_steps (issue 29, item 6).

The run directory holds a checkpoint written by the trainer's own checkpoint code (manifest, SHA-256), at
the config's last step; `--resume` must say the run is finished, what resuming means, how to train further
(`--max-steps N`), start nothing (no checks, no trainer) and exit 0.
"""

from __future__ import annotations

from pathlib import Path

from helpers import REPO, run_msdoctor
from msdoctor.commands.train import finished_run
from msdoctor.training import checkpoint as ckpt

TINY = REPO / "training/configs/tiny-cpu.yaml"


def _checkpoint(run: Path, step: int) -> None:
    ckpt.save(run / "checkpoints", step, {"weights.bin": lambda p: p.write_bytes(b"\0" * 64)}, {"note": "test"})


def test_resume_of_a_finished_run_says_so_and_how_to_train_further(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _checkpoint(run, 1000)  # tiny-cpu.yaml: train.max_steps 1000
    res = run_msdoctor("train", "--config", str(TINY), "--output-dir", str(run), "--resume", cwd=tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "is finished: its newest checkpoint is step 1000, and train.max_steps is 1000" in out
    assert "--resume continues an interrupted run" in out and "--resume --max-steps 2000" in out
    assert "nothing was started" in out
    assert not (run / "check-report.json").exists()  # no gate ran
    assert "nothing to do" not in out


def test_a_run_with_steps_left_or_a_raised_total_is_not_finished(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _checkpoint(run, 750)
    assert finished_run(run, 1000, TINY) is None
    _checkpoint(run, 1000)
    assert finished_run(run, 1000, TINY) is not None
    assert finished_run(run, 2000, TINY) is None  # --max-steps 2000: training continues


def test_a_corrupt_final_checkpoint_does_not_count(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _checkpoint(run, 750)
    _checkpoint(run, 1000)
    (ckpt.step_dir(run / "checkpoints", 1000) / "weights.bin").write_bytes(b"\1" * 64)  # same size, other bytes
    assert finished_run(run, 1000, TINY) is None  # the trainer resumes from 750
