"""Issue 31 item 8: secrets in a MindFormers ``dataset_dir`` URL and in a port holder's command line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers import env_with, run_msdoctor
from msdoctor.redact import command_line, mask_userinfo

REPO = Path(__file__).resolve().parents[1]
QWEN = REPO / "tests/data/training_config/mindformers/r1.5.0/research/qwen1_5/qwen1_5_7b/pretrain_qwen1_5_7b.yaml"
SECRET = "s3cr3tPassw0rdXYZ"


def test_a_dataset_url_is_not_joined_to_the_cwd_and_its_credentials_never_print(tmp_path):
    text = QWEN.read_text()
    import re

    text = re.sub(r"(dataset_dir:\s*)\S.*", rf"\g<1>'https://alice:{SECRET}@data.example.com/wiki/'", text, count=1)
    config = tmp_path / "pretrain.yaml"
    config.write_text(text)
    for fmt in ("terminal", "json", "markdown", "github", "junit", "vscode"):
        for extra in ((), ("--no-redact",)):
            res = run_msdoctor(
                "check",
                "--quick",
                "--only",
                "training-config",
                "--config",
                str(config),
                "--format",
                fmt,
                "-v",
                *extra,
                env=env_with(),
                cwd=tmp_path,
            )
            assert res.returncode in (0, 1), res.stderr
            out = res.stdout + res.stderr
            assert SECRET not in out, (fmt, extra)
            assert "https:/alice" not in out and "https:/data" not in out and f"{tmp_path}/https:" not in out


def test_mask_userinfo():
    assert mask_userinfo(f"s3://u:{SECRET}@h/x") == "s3://<redacted>@h/x"


def test_a_command_line_is_shown_without_secrets_or_escapes():
    argv = [
        "server",
        "--password",
        SECRET,
        f"--api-key={SECRET}",
        f"https://bob:{SECRET}@h/",
        f"TOKEN={SECRET}",
        "\x1b]0;pwned\x07title",
        "\x1b[2Jclear",
    ]
    shown = command_line(argv)
    assert SECRET not in shown and "\x1b" not in shown and "\x07" not in shown
    assert shown.startswith("server --password <redacted> --api-key=<redacted>")


def test_preflight_plan_port_holder_is_redacted(tmp_path):
    from msdoctor.preflight.plan import port_holder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        f"import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        f"s.bind(('127.0.0.1',{port})); s.listen(); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, "--password", SECRET, "\x1b]0;pwned\x07"])
    try:
        holder = None
        for _ in range(100):
            holder = port_holder(port)
            if holder and holder.get("cmdline"):
                break
            time.sleep(0.1)
        assert holder and holder.get("pid") == child.pid
        assert SECRET not in holder["cmdline"] and "\x1b" not in holder["cmdline"]
    finally:
        child.kill()
        child.wait()
