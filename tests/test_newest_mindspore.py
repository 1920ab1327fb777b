"""The newest supported MindSpore, as `pip install mindspore` gives it today: live probe, import smoke, trainer.

The rest of the suite runs on the oldest supported release (MindSpore 2.7.0 in .venv). scripts/test.sh also
builds .venv-newest (scripts/constraints/newest.txt, Python 3.12 where available) and passes it here through
MSDOCTOR_TEST_NEWEST_PYTHON; msdoctor is not installed there, it examines that interpreter with --python as it
would a user's, and the bundled trainer runs under it (training/run.py loads itself from its file).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import check_of, run_json, run_msdoctor

REPO = Path(__file__).resolve().parents[1]
NEWEST = os.environ.get("MSDOCTOR_TEST_NEWEST_PYTHON", "")
PINNED = next(
    line.split("==", 1)[1].strip()
    for line in (REPO / "scripts" / "constraints" / "newest.txt").read_text().splitlines()
    if line.startswith("mindspore==")
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not NEWEST or not os.path.exists(NEWEST),
        reason="MSDOCTOR_TEST_NEWEST_PYTHON is not set: ./scripts/test.sh builds .venv-newest with "
        "the newest MindSpore (scripts/constraints/newest.txt) and sets it",
    ),
]


def test_newest_interpreter_has_the_pinned_release() -> None:
    out = subprocess.run(
        [
            NEWEST,
            "-c",
            "import importlib.metadata as m, sys; print(m.version('mindspore'), '%d.%d' % sys.version_info[:2])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    version, py = out.stdout.split()
    assert version == PINNED and py in ("3.10", "3.11", "3.12")


def test_live_probe_and_import_smoke_pass_on_the_newest_release(tmp_path: Path) -> None:
    res, report = run_json(
        "check",
        "--python",
        NEWEST,
        "--only",
        "python-env,version-matrix,device-target",
        "--format",
        "json",
        cwd=tmp_path,
    )
    vm, dt = check_of(report, "version-matrix"), check_of(report, "device-target")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert vm["status"] in ("pass", "warn") and dt["status"] in ("pass", "warn"), json.dumps(report)[-3000:]
    text = json.dumps(dt)
    assert PINNED in json.dumps(vm) and "CPU" in text
    # the live probe really computed: its matmul finding is a pass, not a skip
    assert any(
        f["status"] == "pass" and "matmul" in (f["title"] + json.dumps(f.get("evidence", {}))).lower()
        for f in dt["findings"]
    ), text[-3000:]


def test_bundled_trainer_trains_on_the_newest_release(tmp_path: Path) -> None:
    cfg = yaml.safe_load((REPO / "training" / "configs" / "tiny-cpu.yaml").read_text())
    cfg["train"]["max_steps"] = 60
    cfg["logging"] = {"every_steps": 1, "tensorboard": False}
    cfg["checkpoint"] = {"every_steps": 0}
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    run_dir = tmp_path / "run"
    res = run_msdoctor(
        "train", "--python", NEWEST, "--config", str(config), "--output-dir", str(run_dir), cwd=tmp_path, timeout=600
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows][-1] == 60
    first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
    assert last < first - 1.0, (first, last)
