"""msdoctor explain --log-dir on real failures made by the real msrun (MindSpore 2.7.0, CPU, mccl).

One module fixture runs every scenario once, all at the same time (they mostly wait on timeouts): 4 local workers
where rank 2 raises after init, where rank 1 is SIGKILLed, where rank 2 hangs until the others' AllReduce times
out, and 2 nodes x 2 workers where node 1 never starts (node 0 on a veth address of a network namespace pair, as
tests/test_preflight_cluster.py does). MS_NODE_TIMEOUT=8 shortens the scheduler's heartbeat timeout (30 s by
default, observed) so that each run ends in well under a minute. The logs these runs wrote on the
development machine are kept in tests/data/postmortem/msrun/ for the fast tests (tests/test_postmortem.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import netns
from helpers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]

PY = sys.executable
HERE = Path(__file__).resolve().parent
TASK = HERE / "data" / "postmortem" / "task.py"


def _msrun(
    out: Path,
    mode: str,
    bad: int,
    *,
    master: str = "127.0.0.1",
    local: int = 4,
    node_rank=None,
    cluster_time_out: int = 90,
) -> subprocess.Popen:
    """Start msrun with --log_dir out; its terminal output is saved as out/msrun.log, as a user would keep it."""
    out.mkdir(parents=True)
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(Path(PY).parent), os.environ.get("PATH", "")]),
        PM_MODE=mode,
        PM_RANK=str(bad),
        MS_NODE_TIMEOUT="8",
    )
    env.pop("PYTHONPATH", None)
    argv = (
        [
            str(Path(PY).parent / "msrun"),
            "--worker_num",
            "4",
            "--local_worker_num",
            str(local),
            "--master_addr",
            master,
            "--master_port",
            str(free_port()),
            "--join",
            "True",
            "--cluster_time_out",
            str(cluster_time_out),
            "--log_dir",
            str(out),
        ]
        + (["--node_rank", str(node_rank)] if node_rank is not None else [])
        + [str(TASK)]
    )
    log = open(out / "msrun.log", "wb")
    try:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=out, start_new_session=True)
    finally:
        log.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{scenario: (log directory, msrun's exit status, wall seconds)}; every msrun at once."""
    base = tmp_path_factory.mktemp("postmortem")
    hosts = None
    if netns.available() is None:
        try:
            hosts = netns.setup(f"pm{os.getpid() % 10000}", 3000 + os.getpid() % 9000)
        except OSError:
            hosts = None
    procs = {}
    if hosts is not None:  # node 1 never starts: only node 0's msrun runs
        # it waits the whole --cluster_time_out for node 1, so it starts first and waits 30 s (60 before): from
        # their schedulers' first to last log line the other scenarios took 20 (raise), 25 (kill) and 33 s (hang)
        # on the 2-core machine (observed), so this one no longer sets the fixture's time
        (base / "never" / "node1").mkdir(parents=True)
        procs["never"] = (
            base / "never",
            _msrun(base / "never" / "node0", "", 0, master=hosts.master_ip, local=2, node_rank=0, cluster_time_out=30),
        )
    procs.update(
        {
            "raise": (base / "raise", _msrun(base / "raise", "raise", 2)),
            "kill": (base / "kill", _msrun(base / "kill", "kill", 1)),
            "hang": (base / "hang", _msrun(base / "hang", "hang", 2)),
        }
    )
    t0 = time.monotonic()
    out = {}
    try:
        for name, (where, p) in procs.items():
            try:
                p.wait(timeout=400)
            except subprocess.TimeoutExpired:
                pass
            out[name] = (where, p.returncode, time.monotonic() - t0)
    finally:
        for _, p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
        if hosts is not None:
            hosts.teardown()
    print("\npost-mortem scenarios (wall s since start): " + ", ".join(f"{k} {v[2]:.0f}" for k, v in out.items()))
    return out


def _explain(where: Path):
    r = subprocess.run(
        [PY, "-m", "msdoctor", "explain", "--log-dir", str(where), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None), r.stderr


def _kinds(doc) -> dict:
    out: dict = {}
    for c in doc["consequences"]:
        out.setdefault(c["kind"], set()).add(c["rank"])
    return out


def test_a_rank_that_raises_after_init(runs):
    where, rc, _ = runs["raise"]
    assert rc == 1
    code, doc, err = _explain(where)
    assert code == 0, err
    ff = doc["first_failure"]
    assert (ff["rank"], ff["node_rank"], ff["how"]) == (2, 0, "traceback")
    assert ff["error"].startswith("FileNotFoundError:") and ff["log"].endswith("worker_2.log")
    assert ff["time"] and ff["line"]
    kinds = _kinds(doc)
    # the others were killed by msrun, or (on a loaded machine, before msrun got to them) their next AllReduce
    # timed out waiting for rank 2, or their runtime ended them: consequences either way
    assert {r for k in ("killed-by-msrun", "collective-timeout", "ended-by-runtime") for r in kinds.get(k, ())} == {
        0,
        1,
        3,
    }
    assert 2 in kinds["scheduler-timeout"]


def test_a_rank_that_is_sigkilled(runs):
    where, rc, _ = runs["kill"]
    assert rc == 1
    code, doc, err = _explain(where)
    assert code == 0, err
    ff = doc["first_failure"]
    assert (ff["rank"], ff["how"]) == (1, "signal")
    assert "SIGKILL" in ff["error"] and "OOM" in ff["cause"] and "dmesg" in ff["fix"]
    kinds = _kinds(doc)
    assert {r for k in ("killed-by-msrun", "collective-timeout", "ended-by-runtime") for r in kinds.get(k, ())} == {
        0,
        2,
        3,
    }


def test_a_rank_that_hangs_until_the_collectives_time_out(runs):
    where, rc, _ = runs["hang"]
    assert rc == 1
    code, doc, err = _explain(where)
    assert code == 0, err
    ff = doc["first_failure"]
    assert (ff["rank"], ff["how"]) == (2, "hang")
    assert _kinds(doc)["collective-timeout"] == {0, 1, 3}


def test_a_node_that_never_starts(runs):
    if "never" not in runs:
        pytest.skip(f"needs network namespaces: {netns.available() or 'could not create one'}")
    where, rc, _ = runs["never"]
    assert rc == 1
    code, doc, err = _explain(where)  # a directory of node directories
    assert code == 0, err
    ff = doc["first_failure"]
    assert (ff["how"], ff["node_rank"], ff["ranks"]) == ("never-started", 1, [2, 3])
    assert ff["cause"] and "--node_rank" in ff["fix"]
    kinds = _kinds(doc)
    # the scheduler's "cluster not formed" is always there; whether rank 0 or 1 prints its own before msrun kills
    # it is a race (on the 2-core CI machine, under load, neither did: both were killed by msrun)
    assert None in kinds["cluster-not-formed"], kinds
    assert {r for rs in kinds.values() for r in rs} >= {0, 1}, kinds  # the ranks that came are consequences
    # once failed under load with rank 1 read as another kind: the kinds (and each rank's lines) say which
    assert {r for k in ("cluster-not-formed", "killed-by-msrun") for r in kinds.get(k, ())} >= {0, 1}, (
        kinds,
        doc["consequences"],
    )


def test_msdoctor_train_prints_the_post_mortem_when_a_worker_is_sigkilled(tmp_path):
    """msdoctor train with 2 workers through msrun; rank 1's process is SIGKILLed once it trains (as the OOM
    killer would): msdoctor's failure message ends with the post-mortem naming rank 1 and the signal."""
    import yaml

    cfg = {
        "name": "pm-dp2",
        "runtime": {"device_target": "CPU", "device_num": 2, "master_port": free_port(), "cluster_time_out": 90},
        "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
        "parallel": {"data_parallel": 2},
        "train": {"micro_batch_size": 4, "seq_length": 64, "max_steps": 2000, "warmup_steps": 6},
        "data": {"cache_dir": str(tmp_path / "tokens")},
        "logging": {"every_steps": 1, "tensorboard": False},
        "checkpoint": {"every_steps": 0},
    }
    config = tmp_path / "dp2.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    run_dir = tmp_path / "run"
    env = dict(os.environ, MS_NODE_TIMEOUT="8", PATH=os.pathsep.join([str(Path(PY).parent), os.environ["PATH"]]))
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen(
        [str(Path(PY).parent / "msdoctor"), "train", "--config", str(config), "--output-dir", str(run_dir), "--quick"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    log = run_dir / "train_rank1.log"  # the trainer's own log of rank 1: "rank 1 of 2, pid P"
    killed = None
    try:
        deadline = time.monotonic() + 400
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(1)
            metrics = run_dir / "metrics.csv"
            if log.exists() and metrics.exists() and len(metrics.read_text().splitlines()) > 2:
                from msdoctor.preflight.postmortem import scan_file

                killed = scan_file(log).pid
                os.kill(killed, 9)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert killed, f"rank 1 never trained:\n{proc.stdout}"
    assert proc.returncode == 1, out[-3000:] + err[-3000:]
    assert "training failed" in err
    assert "First failure: rank 1 (node_rank 0)" in err and "killed by SIGKILL" in err, err[-3000:]
    # rank 0 is a consequence: killed by msrun, or (its log holds the scheduler process's traceback too: the
    # scheduler runs the same script) a scheduler timeout; never the first failure
    assert re.search(r"ranks? 0[-,: ].*(killed by msrun|heartbeat timeout)", err), err[-3000:]
