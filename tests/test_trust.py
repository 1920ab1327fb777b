"""Everything read is bounded, ordinary mistakes are exit 2 with a message, and the verdicts are about the right thing.

Each test is one case a careful user hits (a flooding --python, a YAML alias bomb, a FIFO as --config, a
symlink loop, deep JSON, a Python 2.7 target, a CRLF tasks.json, ...). The commands run as the real
installed ``msdoctor``; a hang or a flood shows as the subprocess timeout, not as a slow pass.
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import subprocess
import time
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, REPO, env_with, run_msdoctor, which_python

TINY = REPO / "training" / "configs" / "tiny-cpu.yaml"


def _msd(*args: str, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess:
    return run_msdoctor(*args, timeout=timeout, **kw)  # type: ignore[arg-type]


def _usage_error(res: subprocess.CompletedProcess, *fragments: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    for frag in fragments:
        assert frag in res.stderr, (frag, res.stderr)


# -- 2. everything read is bounded ----------------------------------------------------------------
def test_a_python_that_floods_stdout_is_stopped_quickly_and_in_little_memory(tmp_path: Path) -> None:
    flood = tmp_path / "python"
    flood.write_text("#!/bin/sh\nyes '{\"a\": 1}'\n")
    flood.chmod(0o755)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    res = _msd("check", "--quick", "--python", str(flood), "--probe-timeout", "30", cwd=tmp_path, timeout=90)
    took = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert res.returncode == 3, res.stdout  # no verdict: the target could not be examined
    assert "wrote more than" in res.stdout
    assert took < 60, took
    # the largest child so far (msdoctor or an earlier one): far below the 19-24 GB of an unbounded read
    assert max(peak_kib, before) < 1024 * 1024, peak_kib


def _alias_bomb(path: Path) -> Path:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghij":
        lines.append(f"{name}: &{name} [" + ",".join(["*" + prev] * 9) + "]")
        prev = name
    path.write_text("\n".join(lines) + "\n")
    assert len(path.read_bytes()) < 400  # the 377-byte "billion laughs"
    return path


@pytest.mark.parametrize("command", [["check", "--quick", "--only", "memory-fit"], ["memory"], ["train"]])
def test_a_yaml_alias_bomb_is_refused_with_file_and_line(tmp_path: Path, command: list[str]) -> None:
    bomb = _alias_bomb(tmp_path / "bomb.yaml")
    res = _msd(*command, "--config", str(bomb), cwd=tmp_path, timeout=60)
    _usage_error(res, f"{bomb}:", "alias bomb")
    assert re.search(re.escape(str(bomb)) + r":\d+: ", res.stderr)


def _five_mb(path: Path) -> Path:
    extra = {f"layer_{i}": {"hidden": i, "name": "x" * 20, "vals": list(range(10))} for i in range(30500)}
    data = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
        "intermediate_size": 11008,
        "max_position_embeddings": 4096,
        "extra": extra,
    }
    if path.suffix == ".json":
        path.write_text(json.dumps(data, indent=1))
    else:
        import yaml

        path.write_text(yaml.safe_dump(data))
    assert 4_500_000 < path.stat().st_size < 5_500_000
    return path


@pytest.mark.parametrize("name", ["config.json", "config.yaml"])
def test_a_5_mb_config_is_read_in_seconds(tmp_path: Path, name: str) -> None:
    cfg = _five_mb(tmp_path / name)
    started = time.monotonic()
    res = _msd("memory", "--config", str(cfg), "--format", "json", cwd=tmp_path, timeout=90)
    assert res.returncode in (0, 1), res.stderr
    assert time.monotonic() - started < 60  # before: more than 100 s for the JSON (quadratic key lines)


def test_key_lines_is_linear() -> None:
    from msdoctor import jsonc

    text = json.dumps({f"k{i}": [i, {"x": i}] for i in range(200_000)}, indent=1)
    started = time.monotonic()
    lines = jsonc.key_lines(text)
    assert time.monotonic() - started < 20  # quadratic: hours
    assert lines[("k199999",)] == text.count("\n", 0, text.index('"k199999"')) + 1
    assert lines[("k199999", 1)] == lines[("k199999",)] + 2 and lines[("k199999", 1, "x")] == lines[("k199999",)] + 3


def test_an_absurdly_large_config_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "huge.json"
    with big.open("w") as fh:
        fh.write('{"pad": "')
        fh.write("x" * (9 * 1024 * 1024))
        fh.write('"}')
    _usage_error(_msd("memory", "--config", str(big), cwd=tmp_path), "larger than 8 MiB")


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_fifo_and_dev_zero_are_refused_everywhere(tmp_path: Path, special: str) -> None:
    if special == "fifo":
        path = tmp_path / "pipe.yaml"
        os.mkfifo(path)
        what = "named pipe"
    else:
        path = Path(special)
        what = "a device"
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"schema_version": 1, "checks": []}))
    for args in (
        ["memory", "--config", str(path)],
        ["check", "--quick", "--only", "memory-fit", "--config", str(path)],
        ["diff", str(report), str(path)],
        ["explain", "--log", str(path), "--no-confirm"],
    ):
        _usage_error(_msd(*args, cwd=tmp_path, timeout=30), what, "regular file")


# -- 4. ordinary mistakes are exit 2 with a message --------------------------------------------------
@pytest.mark.parametrize("command", [["memory"], ["train"], ["check", "--quick", "--only", "memory-fit"]])
def test_symlink_loop_and_path_under_a_file(tmp_path: Path, command: list[str]) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    _usage_error(_msd(*command, "--config", str(loop), cwd=tmp_path), "symbolic link loop")
    plain = tmp_path / "some.yaml"
    plain.write_text("a: 1\n")
    _usage_error(_msd(*command, "--config", str(plain / "sub.yaml"), cwd=tmp_path), "is a file, not a directory")


def test_deep_json_is_refused_as_config_and_as_diff_input(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    _usage_error(_msd("memory", "--config", str(deep), cwd=tmp_path), "nested more than 100 levels")
    _usage_error(_msd("diff", str(deep), str(deep), cwd=tmp_path), "nested more than 100 levels")


@pytest.mark.parametrize(
    "change, line, where",
    [
        (lambda d: d.update(checks={"a": 1}), 9, "checks is an object, expected a list"),
        (lambda d: d.update(facts=[1]), 6, "facts is a list, expected an object or null"),
        (lambda d: d.update(target="x"), 3, "target is a string ('x'), expected an object or null"),
        (
            lambda d: d["checks"][0].update(findings="x"),
            13,
            "checks[0].findings is a string ('x'), expected a list or null",
        ),
        (
            lambda d: d["checks"][0]["findings"].append(3),
            18,
            "checks[0].findings[1] is an integer (3), expected an object",
        ),
        (
            lambda d: d["checks"][0]["findings"][0].update(evidence=[]),
            17,
            "findings[0].evidence is a list, expected an object",
        ),
    ],
)
def test_diff_of_a_report_with_wrong_types(tmp_path: Path, change: object, line: int, where: str) -> None:
    """A hand-edited report of the wrong shape is exit 2 naming the file, the line and the field."""
    good = {
        "schema_version": 1,
        "target": {"executable": "/x/python"},
        "facts": {"env": {}},
        "checks": [{"id": "python-env", "status": "pass", "findings": [{"status": "pass", "title": "ok"}]}],
    }
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(good, indent=1))
    assert _msd("diff", str(a), str(a), cwd=tmp_path).returncode == 0
    bad = json.loads(json.dumps(good))
    change(bad)  # type: ignore[operator]
    b.write_text(json.dumps(bad, indent=1))
    res = _msd("diff", str(a), str(b), cwd=tmp_path)
    _usage_error(res, where)
    assert f"b.json:{line}: not an msdoctor JSON report" in res.stderr + res.stdout


def test_output_dir_under_a_file_is_refused_before_the_checks(tmp_path: Path) -> None:
    plain = tmp_path / "file"
    plain.write_text("")
    res = _msd("train", "--config", str(TINY), "--output-dir", str(plain / "run"), cwd=tmp_path)
    _usage_error(res, "is a file, not a directory")
    assert "Python environment" not in res.stdout  # refused before any check ran


@pytest.mark.parametrize("command", [["check", "--quick"], ["train", "--config", str(TINY)]])
@pytest.mark.parametrize(
    "option, value",
    [("--live-timeout", "inf"), ("--probe-timeout", "-1"), ("--probe-timeout", "nan"), ("--live-timeout", "0")],
)
def test_timeouts_must_be_positive_and_finite(tmp_path: Path, command: list[str], option: str, value: str) -> None:
    res = _msd(*command, option, value, cwd=tmp_path, timeout=30)
    assert res.returncode == 2 and "positive, finite number of seconds" in res.stderr, res.stderr


def test_fix_kernel_on_a_full_vscode_dir_is_a_fix_failure_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from msdoctor.checks.kernel_mismatch import fix as kernel
    from msdoctor.checks.kernel_mismatch.fix import FixFailed, Step

    settings = tmp_path / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")

    # a full disk fails where the data reaches it: the writer's fsync of its temporary file (the real writer,
    # msdoctor.fsutil.atomic_write, turns that into its message; tests/test_hostile_fs.py fills a real tmpfs)
    from msdoctor import fsutil

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil.os, "fsync", full)
    step = Step("vscode", "set", True, data={"path": str(settings), "old": "{}\n", "new": '{"a": 1}\n'})
    with pytest.raises(FixFailed) as info:
        kernel._apply_vscode(step, {}, lambda _line: None)
    monkeypatch.undo()
    assert "full" in str(info.value).lower() or "no space" in str(info.value).lower(), info.value
    assert str(settings) in str(info.value) and "--no-vscode" in (info.value.fix or ""), info.value
    assert settings.read_text() == "{}\n"  # the user's file is untouched
    assert [p.name for p in settings.parent.iterdir()] == ["settings.json"]  # no temporary file left


@pytest.mark.parametrize("version", ["2.7", "3.6"])
def test_a_python_older_than_37_is_said_once(tmp_path: Path, version: str) -> None:
    python = which_python(version)
    if python is None:
        pytest.skip(f"no Python {version} here")
    res = _msd("check", "--python", python, cwd=tmp_path)
    _usage_error(res, f"Python {version}.", "MindSpore", "3.7+")
    assert (res.stdout + res.stderr).count("msdoctor examines") == 1
    assert "TypeError" not in res.stdout + res.stderr


def test_probe_parses_and_runs_on_python_37(tmp_path: Path) -> None:
    python = which_python("3.7")
    if python is None:
        pytest.skip("no Python 3.7 here")
    from msdoctor.facts.live import run_live
    from msdoctor.probe import run_script

    data, _ = run_script(python, "target_probe.py", timeout=60)
    assert data["version"][:2] == [3, 7] and data["cwd"] not in [e["abspath"] for e in data["sys_path"]]
    live = run_live(
        python, None, timeout=60, environ={"PATH": os.environ["PATH"]}, steps=[{"module": "json", "touch": ["dumps"]}]
    )
    assert live.failure is None and live.smoke["steps"][0]["ok"] and live.data["mindspore_missing"]


# -- 5. the verdicts are about the right thing ----------------------------------------------------------
def test_not_installed_is_not_import_fails(tmp_path: Path) -> None:
    python = which_python("3.9") or which_python("3.10")
    if python is None:
        pytest.skip("no other Python here")
    res = _msd("check", "--python", python, "--only", "device-target", "--format", "json", cwd=tmp_path)
    report = json.loads(res.stdout)
    codes = [f.get("code") for f in report["checks"][0]["findings"]]
    # one finding says MindSpore is missing (version-matrix's); device-target says it was skipped because of it
    assert "skipped-mindspore-missing" in codes and "import-failed" not in codes, codes
    assert "<stdin>" not in res.stdout and "import mindspore fails" not in res.stdout


def test_train_gate_checks_the_environment_train_launches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import msdoctor.doctor
    from msdoctor.commands.train import gate, resolve_config
    from msdoctor.doctor import build_options
    from msdoctor.training.launch import environment

    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    seen: dict = {}

    def fake_diagnose(ctx: object, *a: object, **k: object) -> object:
        seen["ctx"] = ctx
        return "diagnosis"

    monkeypatch.setattr(msdoctor.doctor, "diagnose", fake_diagnose)
    facts = resolve_config(TINY, None, (), tmp_path / "run")
    options = build_options(BASE_PYTHON, None, facts.path, None, False, False, 7.0, live_timeout=9.0)
    assert gate(options, facts) == "diagnosis"
    ctx = seen["ctx"]
    assert dict(ctx.environ) == environment(BASE_PYTHON, os.environ) and "PYTHONPATH" not in ctx.environ
    assert (ctx.options.probe_timeout_s, ctx.options.live_timeout_s) == (7.0, 9.0)
    assert "--probe-timeout" in _msd("train", "--help").stdout and "--live-timeout" in _msd("train", "--help").stdout


def test_explain_says_where_the_device_target_came_from(tmp_path: Path) -> None:
    text = "RuntimeError: Unsupported device target Ascend. This process only supports one of the ['CPU']."
    res = _msd("explain", text, "--quick", "--python", BASE_PYTHON, cwd=tmp_path, timeout=300)
    assert "(from the explained error)" in res.stdout and "(from --device-target)" not in res.stdout, res.stdout
    res = _msd("explain", text, "--quick", "--python", BASE_PYTHON, "--device-target", "CPU", cwd=tmp_path, timeout=300)
    assert "(from --device-target)" in res.stdout


def test_terminal_escapes_from_a_kernel_display_name_are_not_shown(tmp_path: Path) -> None:
    kdir = tmp_path / "jp" / "kernels" / "evil"
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/nonexistent/bin/python", "-m", "ipykernel_launcher"],
                "display_name": "evil\x1b]0;pwned\x07\x1b[2J\rname",
                "language": "python",
            }
        )
    )
    env = env_with({"JUPYTER_PATH": str(tmp_path / "jp"), "JUPYTER_DATA_DIR": str(tmp_path / "jd")})
    res = _msd("check", "--quick", "--only", "kernel-mismatch", "--python", BASE_PYTHON, "-v", env=env, cwd=tmp_path)
    assert "evil" in res.stdout
    assert "\x1b" not in res.stdout and "\r" not in res.stdout and "\x07" not in res.stdout


def test_vscode_lines_survive_newlines_and_escapes_in_paths() -> None:
    from msdoctor.commands.check import prepare
    from msdoctor.model import CheckResult, Finding, Location, Report, Target
    from msdoctor.render.vscode import FILE_REGEXP, LOCATED_REGEXP, lines

    f = Finding.fail("bad\nthing \x1b[31mred", location=Location("/x/a\nb.py", 3))
    g = Finding.warn("whole file", location=Location("/x/c\nd.yaml"))
    report = Report(
        "0", Target(executable="/x/python"), [CheckResult("c", "C", "d", [f, g])], "2026-01-01T00:00:00+00:00", 0.0
    )
    out = lines(prepare(report, "vscode", redact=False))
    assert len(out) == 2 and "\x1b" not in "".join(out)
    assert re.match(LOCATED_REGEXP, out[0]) and re.match(FILE_REGEXP, out[1]), out


def test_redaction_gaps_are_closed() -> None:
    from msdoctor.redact import Redactor

    r = Redactor.for_environment({"DB_PASS": "hunter2-secret", "FTP_PWD": "pa55word99", "PWD": "/work/project"})
    text = r.text(
        "/x/key_hf_AbcdefghijklmnopqrstuvwxyZ12/y hunter2-secret pa55word99 cwd /work/project MY_PASS=letmein123"
    )
    assert "hf_" not in text and "hunter2" not in text and "pa55word99" not in text and "letmein123" not in text
    assert "/work/project" in text  # PWD is a directory, not a secret


def test_explain_masks_secrets_in_the_text_it_is_given(tmp_path: Path) -> None:
    token = "hf_" + "A" * 30
    text = f"RuntimeError: Unsupported device target Ascend. This process only supports one of the ['CPU']. {token}"
    res = _msd("explain", text, "--no-confirm", cwd=tmp_path)
    assert res.returncode == 0 and token not in res.stdout and "<redacted>" in res.stdout
    res = _msd("explain", text, "--no-confirm", "--format", "json", cwd=tmp_path)
    assert token not in res.stdout


def test_vscode_files_keep_crlf(tmp_path: Path) -> None:
    tasks = tmp_path / ".vscode" / "tasks.json"
    tasks.parent.mkdir()
    tasks.write_bytes(b'// mine\r\n{\r\n    "version": "2.0.0",\r\n    "tasks": []\r\n}\r\n')
    res = _msd("vscode", "init", "--python", BASE_PYTHON, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    raw = tasks.read_bytes()
    assert b"// mine\r\n" in raw and raw.count(b"\n") == raw.count(b"\r\n") and b"msdoctor: check" in raw
    assert "up to date" in _msd("vscode", "init", "--python", BASE_PYTHON, cwd=tmp_path).stdout


def test_fix_kernel_keeps_crlf_in_vscode_settings(tmp_path: Path) -> None:
    from msdoctor.checks.kernel_mismatch.fix import _vscode_step

    settings = tmp_path / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b'{\r\n    // keep\r\n    "editor.rulers": [80]\r\n}\r\n')

    class T:
        python = BASE_PYTHON

    step = _vscode_step(T(), tmp_path, {}, [])  # type: ignore[arg-type]
    new = step.data["new"]
    assert new.count("\n") == new.count("\r\n") and "// keep" in new and BASE_PYTHON in new
    assert step.data["old"] == settings.read_bytes().decode()


def test_a_fifo_in_the_project_vscode_dir_or_as_a_kernel_json_does_not_hang_the_check(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    os.mkfifo(tmp_path / ".vscode" / "settings.json")
    kdir = tmp_path / "jp" / "kernels" / "k"
    kdir.mkdir(parents=True)
    os.mkfifo(kdir / "kernel.json")
    env = env_with({"JUPYTER_PATH": str(tmp_path / "jp"), "JUPYTER_DATA_DIR": str(tmp_path / "jd")})
    res = _msd(
        "check",
        "--quick",
        "--only",
        "kernel-mismatch",
        "--python",
        BASE_PYTHON,
        "--project",
        str(tmp_path),
        "-v",
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode in (0, 1), res.stdout + res.stderr  # before: blocked in open() until the timeout
