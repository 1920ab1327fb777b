"""``msdoctor train``: the gate in front of the trainer, through the real installed command.

The device-target, memory-fit and the other checks are the real ones, run against this CPU
machine (no Ascend here, so a config asking for Ascend must be refused). A failing check from a
third-party plugin is injected the way a plugin is installed: a dist-info with an entry point in
the ``msdoctor.checks`` group, on PYTHONPATH.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from helpers import env_with, msdoctor_exe, run_msdoctor

REPO = Path(__file__).resolve().parents[1]
#: the gate's live probe starts MindSpore (about 5 s of a gate's 6; --quick: under 1 s). A test whose point is
#: a static check's refusal passes --quick and runs in the fast tier; the live probe is proved by
#: test_quick_leaves_the_live_probe_out_and_says_so and the Ascend refusal, each once.
slow = pytest.mark.slow

TINY = {
    "name": "gate-tiny",
    "runtime": {"device_target": "CPU", "device_num": 1},
    "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
    "train": {"micro_batch_size": 8, "seq_length": 64, "max_steps": 300, "warmup_steps": 6},
    "logging": {"every_steps": 1, "tensorboard": False},
    "checkpoint": {"every_steps": 0},
}


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tiny_config(tmp_path: Path, **sections: dict) -> Path:
    data = json.loads(json.dumps(TINY))
    data["data"] = {"cache_dir": str(tmp_path / "tokens")}
    for key, values in sections.items():
        data.setdefault(key, {}).update(values)
    return write_yaml(tmp_path / "train.yaml", data)


def report_status(run_dir: Path) -> dict[str, str]:
    data = json.loads((run_dir / "check-report.json").read_text())
    return {c["id"]: c["status"] for c in data["checks"]}


def assert_not_started(run_dir: Path) -> None:
    """The trainer writes train.log first and msdoctor writes config.json / stderr.log only to launch it."""
    for name in ("train.log", "config.json", "stderr.log", "metrics.csv", "checkpoints"):
        assert not (run_dir / name).exists(), name


@slow
def test_ascend_config_on_this_cpu_machine_is_refused_with_the_device_target_finding(tmp_path):
    config = tmp_path / "llama2-7b.yaml"
    config.write_text((REPO / "training" / "configs" / "llama2-7b-910b-x8.yaml").read_text())
    run_dir = tmp_path / "run"
    res = run_msdoctor("train", "--config", str(config), "--output-dir", str(run_dir), cwd=tmp_path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "device-target" in res.stdout and "Ascend" in res.stdout
    assert "training not started" in res.stderr
    status = report_status(run_dir)
    assert status["device-target"] == "fail"
    assert status["memory-fit"] == "pass"  # the 7B config itself fits 8 x 910B: only the device is missing
    assert_not_started(run_dir)


def test_a_config_that_does_not_fit_memory_is_refused(tmp_path):
    # a 6.4e9-parameter model in fp32 with AdamW: ~100 GiB of weights, gradients and Adam state,
    # against this CPU machine's RAM (on CPU memory-fit compares with the host's available RAM)
    config = tiny_config(
        tmp_path, model={"num_layers": 32, "hidden_size": 4096, "num_heads": 32, "num_kv_heads": 32, "vocab_size": 256}
    )
    run_dir = tmp_path / "run"
    res = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--quick", cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout + res.stderr
    status = report_status(run_dir)
    assert status["memory-fit"] == "fail" and status["device-target"] in ("pass", "warn")
    assert "does not fit" in res.stdout
    assert_not_started(run_dir)


def test_an_invalid_config_lists_all_its_problems_at_once(tmp_path):
    config = write_yaml(
        tmp_path / "bad.yaml",
        {
            "runtime": {"device_num": 2},  # data x tensor x pipeline = 1
            "model": {"hiden_size": 64, "num_heads": 3},  # typo; 64 heads-divisibility below
            "train": {"max_steps": 10, "warmup_steps": 20},
        },
    )
    res = run_msdoctor("train", "--config", str(config), "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    assert res.returncode == 2
    err = res.stderr
    assert "4 problem(s)" in err, err
    assert f"{config}:4: model.hiden_size: unknown key; did you mean 'hidden_size'?" in err
    assert f"{config}:2: runtime.device_num = 2" in err and "train.warmup_steps = 20" in err
    assert "model.hidden_size = 64: must be divisible by num_heads (3)" in err
    assert "docs/training-config.md" in err
    assert not (tmp_path / "run").exists() and "Traceback" not in err


PLUGIN = """
from msdoctor.model import Finding

class GateFixture:
    id = "gate-fixture"
    title = "Gate fixture"
    description = "a third-party check that always fails"

    def run(self, ctx):
        return [Finding.fail("gate fixture refuses this run", detail="injected by the test", fix="none")]
"""


def plugin_site(tmp_path: Path) -> Path:
    """A folder for PYTHONPATH holding the failing gate-fixture plugin, installed as a dist-info with an entry point."""
    site = tmp_path / "site"
    dist = site / "gatefixture-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gatefixture\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[msdoctor.checks]\ngate-fixture = gatefixture_check:GateFixture\n")
    (site / "gatefixture_check.py").write_text(textwrap.dedent(PLUGIN))
    return site


def test_strict_stops_on_a_warning_and_no_plugins_leaves_plugins_out(tmp_path):
    """train takes check's --strict and --no-plugins: the failing plugin is not run, a warning now stops it
    (--quick: the warning is training-config's, a static check; the same statuses as without it, observed)."""
    site = plugin_site(tmp_path)
    run_dir = tmp_path / "run"
    res = run_msdoctor(
        "train",
        "--config",
        str(tiny_config(tmp_path)),
        "--output-dir",
        str(run_dir),
        "--strict",
        "--no-plugins",
        "--quick",
        env=env_with({"PYTHONPATH": str(site)}),
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    status = report_status(run_dir)
    # the tiny config warns (training-config: its learning rate / warmup against its small batch), fails nothing
    assert "gate-fixture" not in status and status["training-config"] == "warn" and "fail" not in status.values(), (
        status
    )
    assert "training not started" in res.stderr
    assert_not_started(run_dir)


def _rows(run_dir: Path) -> list[dict]:
    if not (run_dir / "metrics.csv").exists():
        return []
    with open(run_dir / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


@slow
def test_checks_pass_training_runs_stops_on_sigterm_with_a_checkpoint_and_resumes(tmp_path):
    # 60 steps: the loss falls by more than 2 nats within 40 (observed: 5.55 at step 1, ~3.0 at step 40)
    config = tiny_config(tmp_path, train={"max_steps": 60})
    run_dir = tmp_path / "run"
    argv = [msdoctor_exe(), "train", "--config", str(config), "--output-dir", str(run_dir)]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env_with(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 240
        while len(_rows(run_dir)) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)  # preemption: msdoctor passes it on, the trainer saves and exits
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert "checks passed" in out and "training stopped by signal 15 (SIGTERM)" in err and "--resume" in err
    assert all(s in ("pass", "warn", "skip") for s in report_status(run_dir).values())
    saved = [p.name for p in (run_dir / "checkpoints").glob("step_*")]
    assert len(saved) == 1
    stopped_at = int(saved[0].split("_")[1])
    assert (
        stopped_at >= 5
        and f"stopped by signal {int(signal.SIGTERM)} after step {stopped_at}" in (run_dir / "train.log").read_text()
    )

    again = run_msdoctor("train", "--config", str(config), "--output-dir", str(run_dir), cwd=tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr  # a run directory is never silently reused

    resumed = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--resume", "--quick", cwd=tmp_path, timeout=300
    )  # the full gate ran above; the resume is the point here
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"resume: step {stopped_at} " in (run_dir / "train.log").read_text()
    steps = [int(r["step"]) for r in _rows(run_dir)]
    assert steps == list(range(1, 61))
    assert float(_rows(run_dir)[-1]["loss"]) < float(_rows(run_dir)[0]["loss"]) - 1.0
    assert json.loads((run_dir / "config.json").read_text())["train"]["max_steps"] == 60
    assert os.path.exists(run_dir / "config.yaml")


@slow
def test_a_failed_run_shows_its_log_tail_and_the_likely_cause(tmp_path):
    """bf16 forced onto CPU (train.half_on_cpu): the gate refuses it (MindSpore has no bf16 CPU kernels); a user who
    accepts that finding in msdoctor.toml gets the run, which fails, and the failure is explained from its logs."""
    config = tiny_config(tmp_path, train={"precision": "bf16", "half_on_cpu": True, "max_steps": 20})
    run_dir = tmp_path / "run"
    refused = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--quick", cwd=tmp_path, timeout=300
    )  # training-config refuses it: a static check
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "bf16-on-cpu" in json.dumps(json.loads((run_dir / "check-report.json").read_text()))
    assert report_status(run_dir)["training-config"] == "fail"
    assert_not_started(run_dir)

    (tmp_path / "msdoctor.toml").write_text(
        'ignore = [{ id = "training-config/bf16-on-cpu", reason = "trying bf16 kernels on CPU on purpose" }]\n'
    )
    run_dir = tmp_path / "run2"  # --quick: the trainer's failure is the point, not the gate's live probe
    res = run_msdoctor(
        "train", "--config", str(config), "--output-dir", str(run_dir), "--quick", cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "checks passed" in res.stdout and "training failed" in res.stderr
    assert "train.log <==" in res.stderr  # the end of the logs
    assert "Unsupported data type" in res.stderr  # the MindSpore error line, found anywhere in the logs
    assert "likely cause:" in res.stderr and "[bf16-on-cpu]" in res.stderr  # from msdoctor.explain's catalogue
    assert "training failed:" in (run_dir / "train.log").read_text()


# -- check's options on the gate: each changes what the gate checks, and the trainer agrees ------------------------
def finding_titles(run_dir: Path, check_id: str) -> list[str]:
    data = json.loads((run_dir / "check-report.json").read_text())
    return [f["title"] for c in data["checks"] if c["id"] == check_id for f in c["findings"]]


def invocation(run_dir: Path) -> dict:
    return json.loads((run_dir / "check-report.json").read_text())["facts"]["invocation"]


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One passing `msdoctor train` that three tests read: an Ascend config run with --device-target CPU, with
    --skip of a failing plugin's check, from another directory with --project (a relative data path, the project's
    msdoctor.toml, the default run directory under the project). Each option changes what the gate checks or
    where the trainer reads, and none touches what another one proves; one run instead of three saves two gates
    and two trainer starts (about 15 s each on an idle 2-core machine)."""
    tmp = tmp_path_factory.mktemp("one-run")
    project, elsewhere = tmp / "project", tmp / "elsewhere"
    (project / "corpus").mkdir(parents=True)
    elsewhere.mkdir()
    corpus = project / "corpus" / "a.txt"
    corpus.write_text(Path(textwrap.__file__).read_text())
    (project / "msdoctor.toml").write_text(
        'ignore = [{ id = "training-config/checkpoint-interval", reason = "a smoke run" }]\n'
    )
    data = json.loads(json.dumps(TINY))
    data["runtime"] = {"device_target": "Ascend", "device_num": 1}  # the file says Ascend
    data["data"] = {"cache_dir": str(tmp / "tokens"), "paths": ["corpus/*.txt"]}
    config = write_yaml(tmp / "ascend.yaml", data)
    site = plugin_site(tmp)
    res = run_msdoctor(
        "train",
        "--config",
        str(config),
        "--project",
        str(project),
        "--device-target",
        "CPU",
        "--skip",
        "gate-fixture",
        "--max-steps",
        "8",
        env=env_with({"PYTHONPATH": str(site)}),
        cwd=elsewhere,
        timeout=300,
    )
    return {
        "res": res,
        "project": project,
        "elsewhere": elsewhere,
        "corpus": corpus,
        "config": config,
        "site": site,
        "run_dir": project / "runs" / "gate-tiny",
    }


@slow
def test_device_target_overrides_the_config_for_the_gate_and_the_trainer(tmp_path, one_run):
    """The gate checks the device --device-target names (from --device-target), and the trainer runs on it."""
    cpu = tiny_config(tmp_path)  # the file says CPU
    run_dir = tmp_path / "run-ascend"
    res = run_msdoctor(
        "train",
        "--config",
        str(cpu),
        "--output-dir",
        str(run_dir),
        "--device-target",
        "ascend",
        "--quick",
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert report_status(run_dir)["device-target"] == "fail"
    assert any("requested Ascend (from --device-target)" in t for t in finding_titles(run_dir, "device-target"))
    assert invocation(run_dir)["device_target"] == "Ascend"
    assert_not_started(run_dir)

    ascend = one_run["config"]  # the same file the shared run trained from with --device-target CPU
    refused = run_msdoctor(
        "train",
        "--config",
        str(ascend),
        "--output-dir",
        str(tmp_path / "run-file"),
        "--quick",
        "--project",
        str(one_run["project"]),
        cwd=tmp_path,
        timeout=300,
    )
    assert refused.returncode == 1 and report_status(tmp_path / "run-file")["device-target"] == "fail", refused.stdout
    res, run_dir = one_run["res"], one_run["run_dir"]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert any("requested CPU (from --device-target)" in t for t in finding_titles(run_dir, "device-target"))
    assert json.loads((run_dir / "config.json").read_text())["runtime"]["device_target"] == "CPU"
    assert "CPU x 1" in (run_dir / "train.log").read_text()


@slow
def test_quick_leaves_the_live_probe_out_and_says_so(tmp_path):
    """A failing check from a plugin keeps the trainer from starting, with the full gate (its live probe ran
    MindSpore) and with --quick; the report shows what the gate ran."""
    site = plugin_site(tmp_path)
    env = env_with({"PYTHONPATH": str(site)})
    config = str(tiny_config(tmp_path))
    full, quick = tmp_path / "full", tmp_path / "quick"
    res = run_msdoctor("train", "--config", config, "--output-dir", str(full), env=env, cwd=tmp_path, timeout=300)
    assert res.returncode == 1 and "--quick" not in res.stdout, res.stdout + res.stderr
    assert "gate fixture refuses this run" in res.stdout and "training not started" in res.stderr
    assert report_status(full)["gate-fixture"] == "fail"
    assert_not_started(full)
    facts = json.loads((full / "check-report.json").read_text())["facts"]
    assert facts["mindspore_runtime"]["device_target"] == "CPU"  # the live probe ran MindSpore on the device
    assert invocation(full)["quick"] is False

    res = run_msdoctor(
        "train", "--config", config, "--output-dir", str(quick), "--quick", env=env, cwd=tmp_path, timeout=300
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "warning: --quick: the gate skips the live probes" in res.stdout
    facts = json.loads((quick / "check-report.json").read_text())["facts"]
    assert "mindspore_runtime" not in facts and invocation(quick)["quick"] is True
    assert "the live probe is skipped with --quick" in json.dumps(
        json.loads((quick / "check-report.json").read_text())["checks"]
    )
    assert_not_started(quick)


@slow
def test_skip_leaves_a_check_out_of_the_gate_loudly(tmp_path, one_run):
    env = env_with({"PYTHONPATH": str(one_run["site"])})
    config = str(tiny_config(tmp_path, train={"max_steps": 8}))
    bad = run_msdoctor(
        "train",
        "--config",
        config,
        "--output-dir",
        str(tmp_path / "bad"),
        "--skip",
        "gate-fixtur",
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert bad.returncode == 2 and "unknown check id 'gate-fixtur' (did you mean 'gate-fixture'?)" in bad.stderr
    res, run_dir = one_run["res"], one_run["run_dir"]  # --skip gate-fixture with the failing plugin installed
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    said = "warning: --skip: the gate does not run gate-fixture"
    before, _, after = res.stdout.partition("checks passed")
    assert said in before and said in after.split("msdoctor trainer")[0], res.stdout
    assert "gate-fixture" not in report_status(run_dir) and invocation(run_dir)["skipped"] == ["gate-fixture"]
    assert "training finished" in res.stdout


@slow
def test_project_is_where_the_gate_and_the_trainer_read_relative_paths(one_run):
    """--project: its msdoctor.toml applies, the config's relative data path and run directory are read from it,
    and the trainer runs there (it reads the same files the gate counted)."""
    project, elsewhere, corpus = one_run["project"], one_run["elsewhere"], one_run["corpus"]
    here = elsewhere.parent / "here"
    res = run_msdoctor(
        "train",
        "--config",
        str(one_run["config"]),
        "--output-dir",
        str(here),
        "--device-target",
        "CPU",
        "--quick",
        cwd=elsewhere,
        timeout=300,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert report_status(here)["training-config"] == "fail"  # no corpus/ in the current directory

    res, run_dir = one_run["res"], one_run["run_dir"]  # the same config with --project, from elsewhere
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert run_dir.is_dir() and not (elsewhere / "runs").exists()
    report = json.loads((run_dir / "check-report.json").read_text())
    findings = [f for c in report["checks"] for f in c["findings"]]
    assert [f["suppressed"] for f in findings if f["code"] == "checkpoint-interval"] == ["a smoke run"]
    assert invocation(run_dir)["project"] == str(project)
    gated = [f["title"] for f in findings if "corpus" in json.dumps(f)]  # the gate counted project/corpus/a.txt
    assert len(gated) == 1 and gated[0].startswith(f"dataset: up to {corpus.stat().st_size:,} tokens"), gated
    assert " tokens from 1 files" in (run_dir / "train.log").read_text()  # elsewhere/corpus would be "no files match"
