"""Issue 31 item 13: a non-UTF-8 environment value (GBK bytes in MS_* / ASCEND_*, or HOME) never crashes a
command with UnicodeEncodeError: Python holds such bytes as surrogates (PEP 383); msdoctor's streams and its
file writer show or keep them escaped."""

from __future__ import annotations

import os

import pytest

from helpers import env_with, msdoctor_exe
from msdoctor import fsutil

GBK = "测试".encode("gbk")  # b'\xb2\xe2\xca\xd4'


def run_bytes_env(*args: str, **extra_env: bytes):
    import subprocess

    env = {k.encode(): v.encode("utf-8", "surrogateescape") for k, v in env_with().items()}
    env[b"PYTHONIOENCODING"] = b"utf-8:strict"  # a UTF-8 terminal: strict unless msdoctor relaxes it
    env.update({k.encode(): v for k, v in extra_env.items()})
    return subprocess.run([msdoctor_exe(), *args], env=env, capture_output=True, timeout=300)


@pytest.mark.parametrize(
    "args", [("report", "--no-redact"), ("report",), ("check", "--quick", "-v", "--no-redact", "--only", "python-env")]
)
def test_gbk_bytes_in_the_environment_do_not_crash(args):
    res = run_bytes_env(*args, MS_GBK_VALUE=GBK, ASCEND_GBK=b"/opt/" + GBK)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    assert b"UnicodeEncodeError" not in res.stderr and b"internal error" not in res.stderr


def test_the_writer_keeps_surrogates(tmp_path):
    text = os.fsdecode(b"/root/" + GBK)  # what os.environ holds for such a value
    fsutil.atomic_write(tmp_path / "r.json", '{"home": "%s"}' % text, backup=False)
    assert GBK in (tmp_path / "r.json").read_bytes()
