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
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import netns

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]

PY = sys.executable
HERE = Path(__file__).resolve().parent
TASK = HERE / "data" / "postmortem" / "task.py"


def _free_port() -> int:
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _msrun(out: Path, mode: str, bad: int, *, master: str = "127.0.0.1", local: int = 4, node_rank=None,
           cluster_time_out: int = 90) -> subprocess.Popen:
    """Start msrun with --log_dir out; its terminal output is saved as out/msrun.log, as a user would keep it."""
    out.mkdir(parents=True)
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(PY).parent), os.environ.get("PATH", "")]),
               PM_MODE=mode, PM_RANK=str(bad), MS_NODE_TIMEOUT="8")
    env.pop("PYTHONPATH", None)
    argv = [str(Path(PY).parent / "msrun"), "--worker_num", "4", "--local_worker_num", str(local), "--master_addr",
            master, "--master_port", str(_free_port()), "--join", "True", "--cluster_time_out", str(cluster_time_out),
            "--log_dir", str(out)] + (["--node_rank", str(node_rank)] if node_rank is not None else []) + [str(TASK)]
    log = open(out / "msrun.log", "wb")
    try:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=out,
                                start_new_session=True)
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
    procs = {
        "raise": (base / "raise", _msrun(base / "raise", "raise", 2)),
        "kill": (base / "kill", _msrun(base / "kill", "kill", 1)),
        "hang": (base / "hang", _msrun(base / "hang", "hang", 2)),
    }
    if hosts is not None:  # node 1 never starts: only node 0's msrun runs
        (base / "never" / "node1").mkdir(parents=True)
        procs["never"] = (base / "never", _msrun(base / "never" / "node0", "", 0, master=hosts.master_ip, local=2,
                                                 node_rank=0, cluster_time_out=20))
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
    r = subprocess.run([PY, "-m", "msdoctor", "explain", "--log-dir", str(where), "--format", "json"],
                       capture_output=True, text=True, timeout=120)
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
    assert kinds["killed-by-msrun"] == {0, 1, 3}
    assert 2 in kinds["scheduler-timeout"]


def test_a_rank_that_is_sigkilled(runs):
    where, rc, _ = runs["kill"]
    assert rc == 1
    code, doc, err = _explain(where)
    assert code == 0, err
    ff = doc["first_failure"]
    assert (ff["rank"], ff["how"]) == (1, "signal")
    assert "SIGKILL" in ff["error"] and "OOM" in ff["cause"] and "dmesg" in ff["fix"]
    assert _kinds(doc)["killed-by-msrun"] == {0, 2, 3}


def test_a_rank_that_hangs_until_the_collectives_time_out(runs):
    where, rc, wall = runs["hang"]
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
    assert 0 in kinds["cluster-not-formed"] or 1 in kinds["cluster-not-formed"]
    assert {r for rs in kinds.values() for r in rs} >= {0, 1}  # the ranks that came are consequences
