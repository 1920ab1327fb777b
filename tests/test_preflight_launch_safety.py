"""`preflight --launch` starts no project code in any rank, and leaves no rank behind when it is killed.

The fast tests run the exact rank command (launch.rank_command) from a project directory holding a hostile
``typing.py``; the slow one runs the real msrun (MindSpore 2.7.0, CPU) from such a directory, then kills the
launcher with SIGKILL while the ranks run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from msdoctor.preflight import launch
from helpers import free_port

PY = sys.executable


def hostile_project(tmp: Path) -> tuple[Path, Path]:
    """A project whose typing.py writes a marker file when anything imports it."""
    proj = tmp / "project"
    proj.mkdir()
    marker = tmp / "typing-was-imported"
    (proj / "typing.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\nraise SystemExit(7)\n")
    return proj, marker


def test_the_rank_command_does_not_import_the_projects_modules(tmp_path):
    proj, marker = hostile_project(tmp_path)
    argv = launch.rank_command(["--help"])
    assert argv[:2] == ["python", "-c"] and "-m" not in argv
    r = subprocess.run([PY, *argv[1:]], cwd=proj, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--out" in r.stdout  # msdoctor's preflight ran
    assert not marker.exists()
    # the form it replaces runs the project's typing.py (so this test can fail)
    old = subprocess.run(
        [PY, "-m", "msdoctor", "preflight", "--help"], cwd=proj, capture_output=True, text=True, timeout=120
    )
    assert marker.exists() and old.returncode != 0


def test_msrun_line_uses_the_safe_rank_command_and_ties_ranks_to_msrun():
    from msdoctor.preflight.plan import MsrunArgs
    from msdoctor.training.lifecycle import DIE_ENV

    args = MsrunArgs(
        worker_num=2, local_worker_num=2, master_addr="127.0.0.1", master_port=8118, node_rank=0, cluster_time_out=60
    )
    argv = launch.msrun_argv(PY, args, Path("/logs"), ["--out", "/out"])
    i = argv.index("python")
    assert argv[i:] == launch.rank_command(["--out", "/out"])
    assert launch.environment(PY, {})[DIE_ENV] == "1"


def _tagged(tag: str) -> list[int]:
    """PIDs of processes whose environment holds the tag (the launcher, msrun, the scheduler, the workers)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if tag.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.mindspore
def test_real_msrun_from_a_hostile_project_then_kill_9_leaves_no_rank(tmp_path):
    proj, marker = hostile_project(tmp_path)
    tag = f"MSDOCTOR_TEST_TAG={uuid.uuid4().hex}"
    name, value = tag.split("=")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(PY).parent), os.environ.get("PATH", "")]))
    env.pop("PYTHONPATH", None)
    env[name] = value
    out = tmp_path / "out"
    argv = [
        PY,
        "-I",
        "-m",
        "msdoctor",
        "preflight",
        "--launch",
        "--worker-num",
        "2",
        "--local-worker-num",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--node-rank",
        "0",
        "--cluster-time-out",
        "120",
        "--python",
        PY,
        "--out",
        str(out),
        "--no-node-check",
        "--iters",
        "200",
        "--warmup",
        "5",
    ]
    p = subprocess.Popen(
        argv, cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not launch.joined(out / "msrun_log"):
            assert p.poll() is None, p.stdout.read().decode(errors="replace")[-3000:]
            time.sleep(1)
        assert launch.joined(out / "msrun_log"), "no rank got through init() in 240 s"
        assert not marker.exists(), "a rank imported the project's typing.py"
        ranks = [pid for pid in _tagged(tag) if pid != p.pid]
        assert len(ranks) >= 3, ranks  # msrun, the scheduler and two workers (and the supervisor)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        gone_by = time.monotonic() + 30
        while time.monotonic() < gone_by and _tagged(tag):
            time.sleep(0.5)
        left = _tagged(tag)
        assert not left, [
            Path(f"/proc/{pid}/cmdline").read_bytes()[:200] for pid in left if Path(f"/proc/{pid}").exists()
        ]
    finally:
        for pid in _tagged(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if p.poll() is None:
            p.kill()
            p.wait()
