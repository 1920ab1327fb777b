"""Redaction: no home path, user name or secret reaches any output format unless --no-redact.

The integration test plants secrets where a real user has them: token and key
variables that the probe reports (MS_*, ASCEND_*, HCCL_*), credentials inside a
URL, a home directory and a user name (in HOME / USER, and in a stale PYTHONPATH
entry that the real python-env check reports). It then runs the real `msdoctor
check` in every format and `msdoctor report`, and asserts none of the planted
values appears; with --no-redact they do appear (so the test can fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import env_with, run_msdoctor
from msdoctor.model import CheckResult, Finding, Location, Report, Target
from msdoctor.redact import MASK, Redactor, redact_report

SECRETS = {
    "MS_HUB_TOKEN": "hub-token-9f8e7d6c5b4a",
    "ASCEND_SECRET_KEY": "ascend-secret-1a2b3c4d",
    "HCCL_DB_PASSWORD": "hccl-pass-77aa88bb",
    "MS_CREDENTIAL": "credential-5e6f7a8b",
}
URL_PASSWORD = "url-pass-0c0ffee0"
USER = "zhangwei"


def test_text_rules() -> None:
    r = Redactor(home=("/home/zhangwei",), users=("zhangwei",), hosts=("gpu-node-17",), secrets=("s3cr3t-value",))
    assert r.text("/home/zhangwei/envs/ms/bin/python") == "~/envs/ms/bin/python"
    assert r.text("/home/zhangweix/a") == "/home/zhangweix/a"  # another user's home is not ours
    assert r.text("/data/zhangwei/ckpt and zhangwei@gpu-node-17") == "/data/<user>/ckpt and <user>@<host>"
    assert r.text("pip index https://bob:hunter2@pypi.corp/simple") == f"pip index https://{MASK}@pypi.corp/simple"
    assert r.text("export HF_TOKEN=abc123def456 now") == f"export HF_TOKEN={MASK} now"
    assert r.text("token hf_" + "a" * 34 + " end") == f"token {MASK} end"
    assert r.text("x s3cr3t-value y") == f"x {MASK} y"
    # package names and versions that contain secret-looking words survive
    assert r.text("tokenizers==0.22.1 keyring") == "tokenizers==0.22.1 keyring"
    assert r.value({"tokenizers": "0.22.1", "MS_API_TOKEN": "x" * 8}) == {"tokenizers": "0.22.1", "MS_API_TOKEN": MASK}


def test_generic_and_short_names_are_not_masked() -> None:
    r = Redactor.for_environment({"HOME": "/root", "USER": "root"}, hosts=["vm", "localhost"])
    assert r.users == () and r.hosts == ()
    assert (
        r.text("/root/.pyenv/x /tmp/pytest-of-root/root/usr and vm.max_map_count")
        == "~/.pyenv/x /tmp/pytest-of-root/root/usr and vm.max_map_count"
    )


def test_keep_paths_still_masks_secrets() -> None:
    r = Redactor(home=("/home/zhangwei",), users=("zhangwei",), secrets=("s3cr3t-value",), keep_paths=True)
    assert r.text("/home/zhangwei/x s3cr3t-value") == f"/home/zhangwei/x {MASK}"


def test_report_is_copied_not_changed() -> None:
    f = Finding.warn(
        "bad /home/zhangwei/x",
        location=Location("/home/zhangwei/cfg.yaml", 3),
        evidence={"MS_TOKEN": "t0ken-value-1", "path": "/home/zhangwei/y"},
    )
    rep = Report(
        "0.1",
        Target("/home/zhangwei/env/bin/python"),
        [CheckResult("c", "t", "d", [f])],
        "now",
        0.1,
        facts={"env": {"MS_TOKEN": "t0ken-value-1", "PATH": "/home/zhangwei/bin"}},
    )
    out = redact_report(rep, {"HOME": "/home/zhangwei", "USER": "zhangwei"})
    g = out.results[0].findings[0]
    assert (g.title, g.location.path, g.location.line) == ("bad ~/x", "~/cfg.yaml", 3)
    assert g.evidence == {"MS_TOKEN": MASK, "path": "~/y"}
    assert out.target.executable == "~/env/bin/python" and out.facts["env"]["PATH"] == "~/bin"
    assert rep.results[0].findings[0].title == "bad /home/zhangwei/x"  # original untouched


def planted_env(tmp_path: Path) -> tuple[dict, list[str]]:
    home = tmp_path / "home" / USER
    home.mkdir(parents=True)
    env = env_with(
        {
            **SECRETS,
            "MS_INDEX_URL": f"https://{USER}:{URL_PASSWORD}@pypi.internal.example/simple",
            "HOME": str(home),
            "USER": USER,
            "LOGNAME": USER,
            # a stale entry under the home and one naming the user elsewhere: python-env reports both
            "PYTHONPATH": f"{home}/old-site:/data/{USER}/stale",
        },
        drop=["GITHUB_STEP_SUMMARY", "MSDOCTOR_NO_REDACT"],
    )
    planted = list(SECRETS.values()) + [URL_PASSWORD, str(home), USER]
    return env, planted


@pytest.mark.parametrize("fmt", ["terminal", "json", "junit", "github", "markdown", "vscode"])
def test_no_planted_secret_in_any_format(fmt: str, tmp_path: Path) -> None:
    env, planted = planted_env(tmp_path)
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--format", fmt, "-v", env=env, cwd=tmp_path)
    assert res.returncode in (0, 1), res.stderr
    out = res.stdout + res.stderr
    assert "PYTHONPATH names a directory that does not exist" in out  # the findings are there ...
    if fmt == "vscode":
        # ... the editor must open the files it names, so paths stay; secrets do not
        planted = [p for p in planted if p not in (str(tmp_path / "home" / USER), USER)]
    leaked = [p for p in planted if p in out]
    assert not leaked, f"{fmt} leaks {leaked}"


def test_report_command_is_redacted_and_no_redact_opts_out(tmp_path: Path) -> None:
    env, planted = planted_env(tmp_path)
    out_file = tmp_path / "report.md"
    res = run_msdoctor("report", "--quick", "--only", "python-env", "--output", str(out_file), env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    text = out_file.read_text()
    assert "MS_HUB_TOKEN" in text and "## " in text  # the variable is listed, its value is not
    assert not [p for p in planted if p in text]
    raw = run_msdoctor(
        "check", "--quick", "--only", "python-env", "--format", "json", "--no-redact", env=env, cwd=tmp_path
    )
    # without redaction the same run shows what was planted: the assertions above can fail
    assert SECRETS["MS_HUB_TOKEN"] in raw.stdout and URL_PASSWORD in raw.stdout and f"/data/{USER}/stale" in raw.stdout
