"""Writes onto a full disk and a read-only file system are exit 2 naming the path, the reason and the fix, said
once (the shared writer, msdoctor.fsutil: one message, no caller wrapping it again).

The file systems are real: each case runs msdoctor in a private mount namespace (``unshare -m``) on a 64 KiB
tmpfs filled with zeros (ENOSPC), or on a read-only bind mount of a directory (``mount -o remount,bind,ro``:
EROFS). That needs root and unshare(1); elsewhere the tests skip and say so. Nothing is mounted outside the
namespace, and it ends with the test's shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import env_with, msdoctor_exe

CONFIG = (
    "runtime: {device_target: CPU}\nmodel: {num_layers: 1, hidden_size: 32, num_heads: 2, vocab_size: 256}\n"
    "train: {micro_batch_size: 2, seq_length: 16, max_steps: 2, warmup_steps: 0}\n"
)

#: mounts MNT inside the namespace; $1 = the mount point, $2 = the source (bind) or the 4 KiB blocks to fill
FULL = 'mount -t tmpfs -o size=64k msdoctor-test "$1" && (dd if=/dev/zero of="$1/filler" bs=4k count="$2" 2>/dev/null; true)'
READ_ONLY = 'mount --bind "$2" "$1" && mount -o remount,bind,ro "$1"'


def _namespace_usable() -> str:
    if os.geteuid() != 0:
        return "needs root: a tmpfs or a read-only bind mount is made in a private mount namespace (unshare -m)"
    if shutil.which("unshare") is None:
        return "needs unshare(1) from util-linux for a private mount namespace"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return f"unshare -m is refused here (a container without CAP_SYS_ADMIN?): {probe.stderr.decode()[-200:]}"
    return ""


SKIP = _namespace_usable()
pytestmark = pytest.mark.skipif(bool(SKIP), reason=SKIP)


def _run_mounted(setup: str, mnt: Path, arg2: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``msdoctor argv`` in a private mount namespace where ``setup`` has mounted ``mnt``."""
    mnt.mkdir(exist_ok=True)
    script = f'set -e; {setup}; shift 2; exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(mnt), arg2, msdoctor_exe(), *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=env_with({"JUPYTER_DATA_DIR": str(cwd / "jupyter")}),
    )


def _commands(mnt: Path, config: Path) -> dict[str, list[str]]:
    return {
        "check --output": [
            "check",
            "--quick",
            "--only",
            "python-env",
            "--format",
            "json",
            "--output",
            str(mnt / "r.json"),
        ],
        "report --output": ["report", "--output", str(mnt / "r.md")],
        "train --output-dir": ["train", "--config", str(config), "--quick", "--output-dir", str(mnt / "run")],
        "vscode init": ["vscode", "init", "--project", str(mnt)],
    }


def _assert_said_once(res: subprocess.CompletedProcess, words: str, where: Path) -> None:
    err = res.stderr
    assert res.returncode == 2, (res.returncode, err[-2000:])
    assert "internal error" not in err and "Traceback" not in err, err[-2000:]
    assert words in err and str(where) in err, err[-2000:]
    assert err.count("error:") == 1 and err.count("fix:") == 1, f"the reason is said more than once:\n{err}"


@pytest.mark.parametrize("name", ["check --output", "report --output", "train --output-dir", "vscode init"])
def test_a_full_disk_is_exit_2_naming_the_path_and_the_fix(tmp_path: Path, name: str) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(CONFIG)
    mnt = tmp_path / "mnt"
    res = _run_mounted(FULL, mnt, "16", _commands(mnt, config)[name], tmp_path)
    _assert_said_once(res, "no space left on the device", mnt)
    assert "df -h" in res.stderr


@pytest.mark.parametrize("blocks_left", [1, 4])
def test_train_on_a_nearly_full_disk_is_exit_2_after_the_lock(tmp_path: Path, blocks_left: int) -> None:
    """A few KiB free: the lock is taken, then the run manifest or check-report.json does not fit (the manifest
    was an OSError: exit 3, and an empty manifest was left to mark the directory as a run's)."""
    config = tmp_path / "t.yaml"
    config.write_text(CONFIG)
    mnt = tmp_path / "mnt"
    argv = _commands(mnt, config)["train --output-dir"]
    script = (
        f'set -e; {FULL}; shift 2; set +e; "$@"; rc=$?; '
        'test -s "$1/run/.msdoctor-run.json" -o ! -e "$1/run/.msdoctor-run.json" || echo EMPTY-MANIFEST >&2; '
        "exit $rc"
    )
    mnt.mkdir()
    res = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(mnt),
            str(16 - blocks_left),
            msdoctor_exe(),
            *argv,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=env_with(),
    )
    _assert_said_once(res, "no space left on the device", mnt / "run")
    assert "EMPTY-MANIFEST" not in res.stderr


@pytest.mark.parametrize("name", ["check --output", "train --output-dir", "vscode init", "preflight --out"])
def test_a_read_only_file_system_is_exit_2_naming_the_path_and_the_fix(tmp_path: Path, name: str) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(CONFIG)
    src = tmp_path / "src"
    src.mkdir()
    mnt = tmp_path / "mnt"
    commands = _commands(mnt, config)
    commands["preflight --out"] = [
        "preflight",
        "--launch",
        "--worker-num",
        "1",
        "--local-worker-num",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "8133",
        "--node-rank",
        "0",
        "--out",
        str(mnt / "out"),
    ]
    res = _run_mounted(READ_ONLY, mnt, str(src), commands[name], tmp_path)
    _assert_said_once(res, "read-only", mnt)
    assert "writable file system" in res.stderr
    assert list(src.iterdir()) == []  # nothing reached the directory under the mount


def test_fix_kernel_vscode_on_a_read_only_workspace_says_why_once(tmp_path: Path) -> None:
    """The kernel is registered (its folder is writable); the workspace's .vscode cannot be made: fix-kernel's
    failed step (exit 1, what was done listed) carries the shared writer's reason and fix, said once."""
    src = tmp_path / "src"
    src.mkdir()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f'set -e; {READ_ONLY}; cd "$1"; shift 2; exec "$@"'
    res = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(mnt),
            str(src),
            msdoctor_exe(),
            "fix-kernel",
            "--yes",
            "--vscode",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=env_with({"JUPYTER_DATA_DIR": str(tmp_path / "jupyter")}),
    )
    assert res.returncode == 1, (res.returncode, res.stderr[-2000:])
    assert "the file system is read-only" in res.stderr and str(mnt / ".vscode") in res.stderr, res.stderr
    assert res.stderr.count("error:") == 1 and "rerun with --no-vscode" in res.stderr
    assert list(src.iterdir()) == []
