"""The device-target check judges the device count per msrun worker, as msrun launches them (issue 29, item 4).

`tiny-cpu-dp2.yaml` asks for 2 devices and trains fine on 2 msrun CPU workers, each its own process on its own
CPU device; the live probe (one process) sees 1 CPU device. That is no reason to warn. On GPU/Ascend each of a
node's workers takes one device of that node: a node needs device_num / num_nodes devices, not device_num.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.device_target.live import LiveContext, live_findings
from helpers import REPO, run_msdoctor
from msdoctor.facts.config import load_config
from msdoctor.facts.live import LiveDevice

CONFIGS = REPO / "training/configs"


def _probe(target: str, count: int) -> LiveDevice:
    """What msdoctor/probe/live.py returns after a passing matmul (its JSON keys)."""
    return LiveDevice(
        python="python",
        requested=target,
        timeout_s=60,
        data={
            "mindspore_version": "2.7.0",
            "device": {"device_target": target, "device_id": 0},
            "device_count": count,
            "compute": {"finite": True, "max_abs_err": 1e-6, "max_rel_err": 1e-7, "seconds": 0.01},
        },
    )


def _too_few(target: str, count: int, wanted: int) -> list:
    found = live_findings(_probe(target, count), LiveContext(target, "python", "", {}, wanted))
    return [f for f in found if f.code == "too-few-devices"]


def test_cpu_workers_each_have_their_own_device() -> None:
    assert not _too_few("CPU", 1, 2)


@pytest.mark.parametrize("target", ["GPU", "Ascend"])
def test_accelerators_are_counted_for_this_nodes_workers(target: str) -> None:
    assert _too_few(target, 1, 2) and "one device each" in _too_few(target, 1, 2)[0].title
    assert not _too_few(target, 2, 2)


def test_the_config_asks_per_node() -> None:
    assert load_config(CONFIGS / "tiny-cpu-2nodes.yaml").devices_per_node == 2  # device_num 4 over 2 nodes
    assert load_config(CONFIGS / "tiny-cpu-dp2.yaml").devices_per_node == 2


@pytest.mark.slow
def test_dp2_config_gets_no_device_count_warning(tmp_path: Path) -> None:
    """The real live probe (MindSpore 2.7.0 CPU) against the README's data-parallel example."""
    out = tmp_path / "r.json"
    res = run_msdoctor(
        "check",
        "--only",
        "device-target",
        "--config",
        str(CONFIGS / "tiny-cpu-dp2.yaml"),
        "--format",
        "json",
        "--output",
        str(out),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(out.read_text())
    findings = [f for c in report["checks"] for f in c["findings"]]
    assert report["facts"]["mindspore_runtime"]["device_count"] == 1  # the probe's one process: one CPU device
    assert not [f for f in findings if f.get("code") == "too-few-devices"], findings
