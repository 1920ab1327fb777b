"""The real `msdoctor` command: exit codes, bad input, no tracebacks, no hangs."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, env_with, make_venv, run_json, run_msdoctor


def no_traceback(res: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr


def test_help_and_version() -> None:
    res = run_msdoctor("--help")
    assert res.returncode == 0
    assert "check" in res.stdout and "list-checks" in res.stdout
    res = run_msdoctor("--version")
    assert res.returncode == 0 and res.stdout.startswith("msdoctor ")


def test_cli_start_imports_nothing_heavy() -> None:
    code = (
        "import sys; import msdoctor.cli; "
        "print([m for m in ('rich', 'yaml', 'psutil', 'mindspore', 'numpy', 'msdoctor.runner') if m in sys.modules])"
    )
    out = subprocess.run([BASE_PYTHON, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_check_on_the_test_interpreter(tmp_path: Path) -> None:
    res, data = run_json("check", "--quick", "--only", "python-env", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert data["schema_version"] == 1
    assert list(data)[0] == "schema_version"
    assert (
        data["target"]["executable"] == sys.executable
        or Path(data["target"]["executable"]).resolve() == Path(sys.executable).resolve()
    )
    (c,) = data["checks"]
    assert c["id"] == "python-env" and c["status"] == "pass"
    assert c["proved"] and "PYTHONPATH" in c["proved"][0]


def test_terminal_output_ends_with_summary(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--quick", "--only", "python-env", cwd=tmp_path)
    assert res.returncode == 0
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("msdoctor ") and "target" in lines[0]
    assert "(python-env)" in res.stdout
    assert lines[-1].startswith("1 check: 1 passed") and lines[-1].endswith("healthy")


def test_unknown_check_id_lists_the_known_ones(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--only", "python-evn", cwd=tmp_path)
    assert res.returncode == 2
    assert "unknown check id 'python-evn'" in res.stderr
    assert "did you mean 'python-env'" in res.stderr
    assert "python-env" in res.stderr.split("known check ids:")[1]
    no_traceback(res)


def test_missing_python(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--python", str(tmp_path / "nope" / "python"), cwd=tmp_path)
    assert res.returncode == 2
    assert "no such file or directory" in res.stderr
    no_traceback(res)


def test_directory_without_interpreter(tmp_path: Path) -> None:
    (tmp_path / "emptyenv").mkdir()
    res = run_msdoctor("check", "--python", str(tmp_path / "emptyenv"), cwd=tmp_path)
    assert res.returncode == 2
    assert "holds no Python interpreter" in res.stderr
    no_traceback(res)


def test_env_directory_is_accepted(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "env")
    res, data = run_json("check", "--quick", "--only", "python-env", "--python", str(venv.root), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert data["target"]["prefix"] == str(venv.root)
    assert data["target"]["env_kind"] == "venv"


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_non_python_executable(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--python", "/bin/ls", "--only", "python-env", cwd=tmp_path)
    assert res.returncode == 3
    assert "could not probe the target interpreter" in res.stdout
    assert "/bin/ls exited with status" in res.stdout
    no_traceback(res)


def test_probe_that_prints_garbage(tmp_path: Path) -> None:
    fake = _script(tmp_path / "python", 'echo "Welcome to MyCluster"; echo "{not json"\n')
    res, data = run_json("check", "--python", str(fake), "--only", "python-env", cwd=tmp_path)
    assert res.returncode == 3
    assert data["target"]["probe_error"]
    finding = data["checks"][0]["findings"][0]
    assert finding["status"] == "error"
    assert "did not produce the probe's result" in finding["title"]
    assert "Welcome to MyCluster" in finding["title"]
    assert finding["fix"]


@pytest.mark.slow
def test_hanging_interpreter_times_out(tmp_path: Path) -> None:
    """A target whose start-up hangs (a sitecustomize that sleeps) gives a clear finding, not a hang."""
    venv = make_venv(tmp_path / "slow")
    (venv.site_packages / "sitecustomize.py").write_text("import time\ntime.sleep(120)\n")
    res, data = run_json(
        "check", "--python", venv.python, "--probe-timeout", "2", "--only", "python-env", cwd=tmp_path, timeout=60
    )
    assert res.returncode == 3
    finding = data["checks"][0]["findings"][0]
    assert "did not answer within 2 s" in finding["title"]
    assert "sitecustomize" in finding["fix"]


def test_unwritable_output_is_refused_before_any_work(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = run_msdoctor("check", "--output", str(afile / "report.json"), cwd=tmp_path)
    assert res.returncode == 2 and "does not exist" in res.stderr
    res = run_msdoctor("check", "--output", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 2 and "is a directory" in res.stderr
    no_traceback(res)


def test_output_file_gets_the_format_and_terminal_the_human_view(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old report")
    res = run_msdoctor(
        "check", "--quick", "--only", "python-env", "--format", "json", "--output", str(out), cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())["schema_version"] == 1
    assert "(python-env)" in res.stdout  # the human view
    assert not list(tmp_path.glob(".r.json.*.tmp"))


def test_bad_format_and_conflicting_targets(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--format", "yaml", cwd=tmp_path)
    assert res.returncode == 2 and "'yaml' is not one of" in res.stderr
    res = run_msdoctor("check", "--python", sys.executable, "--conda-env", "ms", cwd=tmp_path)
    assert res.returncode == 2 and "give one of them" in res.stderr
    res = run_msdoctor(
        "check",
        "--conda-env",
        "no-such-env-xyz",
        cwd=tmp_path,
        env=env_with({"HOME": str(tmp_path)}, drop=["CONDA_PREFIX", "CONDA_EXE", "CONDA_PYTHON_EXE"]),
    )
    assert res.returncode == 2 and "no conda environment of that name" in res.stderr


def test_config_errors_name_file_and_line(tmp_path: Path) -> None:
    res = run_msdoctor("check", "--config", str(tmp_path / "missing.yaml"), cwd=tmp_path)
    assert res.returncode == 2 and "missing.yaml: no such file" in res.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  num_layers: 2\n   hidden_size: 64\n")
    res = run_msdoctor("check", "--config", str(bad), cwd=tmp_path)
    assert res.returncode == 2
    assert f"{bad}:3:" in res.stderr and "malformed YAML" in res.stderr
    no_traceback(res)


def test_conda_env_by_name(tmp_path: Path) -> None:
    """A conda layout (root/envs/NAME/bin/python) found from CONDA_EXE without running conda."""
    root = tmp_path / "miniconda3"
    env_dir = root / "envs" / "ms"
    venv = make_venv(env_dir)
    (env_dir / "conda-meta").mkdir()
    (root / "bin").mkdir(parents=True)
    _script(root / "bin" / "conda", "exit 0\n")
    env = env_with({"CONDA_EXE": str(root / "bin" / "conda")}, drop=["CONDA_PREFIX"])
    res, data = run_json("check", "--conda-env", "ms", "--quick", "--only", "python-env", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    assert data["target"]["env_kind"] == "conda" and data["target"]["env_name"] == "ms"
    assert Path(data["target"]["prefix"]) == venv.root


def test_python_m_msdoctor_works() -> None:
    res = subprocess.run([BASE_PYTHON, "-m", "msdoctor", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("msdoctor ")


@pytest.mark.slow
def test_live_timeout_option_bounds_the_live_probe(tmp_path: Path) -> None:
    """--live-timeout reaches the live MindSpore probe: a target whose every start takes 3 s exceeds 1 s."""
    venv = make_venv(tmp_path / "slowstart", layered=True)
    (venv.site_packages / "sitecustomize.py").write_text("import time\ntime.sleep(3)\n")
    res, data = run_json(
        "check",
        "--python",
        venv.python,
        "--only",
        "device-target",
        "--device-target",
        "CPU",
        "--live-timeout",
        "1",
        cwd=tmp_path,
        timeout=120,
    )
    codes = {f["code"]: f for f in data["checks"][0]["findings"]}
    assert codes["live-timeout"]["title"].startswith("the live device probe did not finish within 1 s")
    assert res.returncode == 1


def test_missing_project_directory_is_a_usage_error(tmp_path: Path) -> None:
    for cmd in (["check", "--quick"], ["report"], ["fix-kernel", "--dry-run"], ["vscode", "init", "--dry-run"]):
        res = run_msdoctor(*cmd, "--project", str(tmp_path / "nope"), cwd=tmp_path)
        assert res.returncode == 2, (cmd, res.stdout, res.stderr)
        assert "does not exist" in res.stderr
        no_traceback(res)


def test_every_option_has_help_and_subcommands_show_their_whole_summary() -> None:
    """Every option of every command (and of vscode's subcommand) says what it does; a group's command list
    (vscode --help) shows each subcommand's summary whole, not cut at click's 45 characters."""
    import click

    from msdoctor.cli import COMMANDS, cli

    ctx = click.Context(cli)
    seen, groups = 0, []
    todo = [(name, cli.get_command(ctx, name)) for name in COMMANDS]
    while todo:
        name, cmd = todo.pop()
        assert cmd is not None, name
        for p in cmd.params:
            if isinstance(p, click.Option) and p.name != "help":
                seen += 1
                assert (p.help or "").strip(), f"msdoctor {name} {'/'.join(p.opts)} has no help text"
        if isinstance(cmd, click.Group):
            groups.append(name)
            todo += [(f"{name} {sub}", cmd.get_command(ctx, sub)) for sub in cmd.list_commands(ctx)]
    assert seen > 100 and "vscode" in groups
    for name in groups:
        out = " ".join(run_msdoctor(*name.split(), "--help").stdout.split())
        group = cli.get_command(ctx, name)
        assert isinstance(group, click.Group)
        for sub in group.list_commands(ctx):
            summary = group.get_command(ctx, sub).get_short_help_str(limit=1000)  # type: ignore[union-attr]
            assert not summary.endswith("...") and f"{sub} {summary}" in out, (name, sub, out)
    init = " ".join(run_msdoctor("vscode", "--help").stdout.split())
    assert "init Write .vscode/tasks.json: check, fix-kernel and train tasks." in init
