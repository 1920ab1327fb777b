"""Issue 31, items 1 and 14: the shared writer (msdoctor.fsutil) never writes through a planted link, and a write
that fails is exit 2 with the path and the fix.

A cloned repository controls its .vscode/ folder: a dangling ``settings.json.bak`` or ``tasks.json.bak`` link
pointed at a site-packages ``*.pth`` used to be "free", and the backup copy created the link's target with the
project's content (code execution at the next interpreter start).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, env_with, run_msdoctor
from msdoctor import fsutil
from msdoctor.errors import UserError


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)


def test_a_dangling_backup_link_is_taken_not_followed(tmp_path):
    victim = tmp_path / "site-packages" / "evil.pth"
    victim.parent.mkdir()
    path = tmp_path / "proj" / ".vscode" / "settings.json"
    plant(path.with_name("settings.json.bak"), victim)
    path.write_text('{"import os; os.system(1)": 1}\n')
    backup = fsutil.atomic_write(path, '{"new": 1}\n', backup=True)
    assert not victim.exists(), "the backup was written through the dangling link"
    assert os.path.islink(path.with_name("settings.json.bak"))
    assert backup is not None and backup != path.with_name("settings.json.bak") and not backup.is_symlink()
    assert backup.read_text() == '{"import os; os.system(1)": 1}\n'
    assert path.read_text() == '{"new": 1}\n'


def test_make_backup_skips_every_taken_name(tmp_path):
    path = tmp_path / "kernel.json"
    path.write_text("old")
    victim = tmp_path / "elsewhere"
    plant(path.with_name("kernel.json.bak"), victim)
    made = fsutil.make_backup(path, b"old")
    assert not victim.exists() and made.read_text() == "old" and made.name.endswith(".bak")


def test_a_backup_name_linked_to_an_existing_file_leaves_it_alone(tmp_path):
    other = tmp_path / "precious"
    other.write_text("keep me")
    path = tmp_path / "tasks.json"
    path.write_text("old")
    plant(path.with_name("tasks.json.bak"), other)
    fsutil.atomic_write(path, "new")
    assert other.read_text() == "keep me"


def test_backup_path_counts_a_dangling_link_as_taken(tmp_path):
    path = tmp_path / "a.json"
    plant(tmp_path / "a.json.bak", tmp_path / "nowhere")
    assert fsutil.backup_path(path) != tmp_path / "a.json.bak"


def test_vscode_init_never_writes_through_a_dangling_backup_link(tmp_path):
    victim = tmp_path / "site-packages" / "zz-evil.pth"
    victim.parent.mkdir()
    tasks = tmp_path / ".vscode" / "tasks.json"
    plant(tasks.with_name("tasks.json.bak"), victim)
    tasks.write_text('{"version": "2.0.0", "tasks": []}\nimport os\n'.replace("\nimport os\n", "\n"))
    res = run_msdoctor("vscode", "init", "--python", BASE_PYTHON, "--project", str(tmp_path), env=env_with())
    assert res.returncode == 0, res.stderr
    assert not victim.exists(), "vscode init created the dangling link's target"
    assert os.path.islink(tasks.with_name("tasks.json.bak"))
    made = [p for p in tasks.parent.glob("tasks.json.*.bak") if not p.is_symlink()]
    assert len(made) == 1 and made[0].read_text().startswith('{"version"')


@pytest.mark.parametrize(
    "code, words",
    [
        (errno.ENOSPC, "no space left"),
        (errno.EROFS, "read-only"),
        (errno.ENOTDIR, "is a file"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_a_failed_write_is_a_user_error_with_the_path(tmp_path, monkeypatch, code, words):
    path = tmp_path / "report.json"

    def full(*a, **k):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fsutil, "_temp_name", full)
    with pytest.raises(UserError) as info:
        fsutil.atomic_write(path, "x", backup=False)
    assert isinstance(info.value, OSError)  # callers that handle OSError still do
    assert str(path) in info.value.message and words in info.value.message and info.value.fix


def test_a_write_under_a_file_is_exit_2(tmp_path):
    (tmp_path / "file").write_text("x")
    res = run_msdoctor(
        "check",
        "--quick",
        "--only",
        "python-env",
        "--format",
        "json",
        "--output",
        str(tmp_path / "file" / "r.json"),
        env=env_with(),
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr and str(tmp_path / "file") in res.stderr


@pytest.mark.parametrize("addr", ["a" * 300, "x" * 64 + ".example.com"])
def test_an_impossible_master_address_is_exit_2(tmp_path, addr):
    res = run_msdoctor(
        "preflight",
        "--plan",
        "--worker-num",
        "2",
        "--local-worker-num",
        "2",
        "--master-addr",
        addr,
        "--master-port",
        "8118",
        "--node-rank",
        "0",
        env=env_with(),
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "--master-addr" in res.stderr and "Traceback" not in res.stderr


def test_an_impossible_master_address_in_train_is_exit_2(tmp_path):
    config = tmp_path / "t.yaml"
    config.write_text(
        "runtime: {device_target: CPU}\nmodel: {num_layers: 1, hidden_size: 32, num_heads: 2, "
        "vocab_size: 256}\ntrain: {micro_batch_size: 2, seq_length: 16, max_steps: 2, warmup_steps: 0}\n"
    )
    res = run_msdoctor(
        "train",
        "--config",
        str(config),
        "--master-addr",
        "a" * 300,
        "--quick",
        "--output-dir",
        str(tmp_path / "run"),
        env=env_with(),
        cwd=tmp_path,
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "master_addr" in res.stderr and "253" in res.stderr


@pytest.mark.parametrize("flag", ["--log-dir", "--out"])
def test_preflight_launch_output_under_a_file_is_exit_2(tmp_path, flag):
    (tmp_path / "afile").write_text("x")
    extra = [flag, str(tmp_path / "afile" / "sub")] + (["--out", str(tmp_path / "out")] if flag == "--log-dir" else [])
    res = run_msdoctor(
        "preflight",
        "--launch",
        "--worker-num",
        "1",
        "--local-worker-num",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "8124",
        "--node-rank",
        "0",
        *extra,
        env=env_with(),
        timeout=120,
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert flag in res.stderr and "is a file" in res.stderr and "internal error" not in res.stderr


def test_make_dirs_maps_the_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="a part of the path is a file"):
        fsutil.make_dirs(tmp_path / "f" / "d", "--out")
